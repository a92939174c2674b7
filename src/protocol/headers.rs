//! The AMQP headers the contract names: the W3C trace context a job may
//! carry onto its answer, and the reason a job the worker dead-letters
//! carries.

/// The header that carries W3C trace context (`traceparent`): a job's
/// well-formed one is carried onto its answer.
pub const TRACEPARENT: &str = "traceparent";

/// The header a job the worker dead-letters carries: why its answer could
/// not be delivered.
pub const DEAD_REASON_HEADER: &str = "x-sudokud-reason";

/// Whether `value` is a well-formed W3C `traceparent`:
/// `version-traceid-parentid-flags`, lowercase hex, ids not all zero,
/// version `ff` refused, and nothing after the flags in version `00`.
pub fn is_traceparent(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    let hex = |part: &str, len: usize| {
        part.len() == len
            && part
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let nonzero = |part: &str| part.bytes().any(|b| b != b'0');
    parts.len() >= 4
        && hex(parts[0], 2)
        && parts[0] != "ff"
        && hex(parts[1], 32)
        && nonzero(parts[1])
        && hex(parts[2], 16)
        && nonzero(parts[2])
        && hex(parts[3], 2)
        && (parts[0] != "00" || parts.len() == 4)
}
