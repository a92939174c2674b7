//! What a dead letter says: its id, why and from where it was
//! dead-lettered, how often and when ([`DeadLetter`], read from the
//! headers the broker adds), and the listing `sudokud dead list` prints.

use std::time::{Duration, SystemTime};

use lapin::message::BasicGetMessage;
use lapin::types::{AMQPValue, FieldTable};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::protocol::DEAD_REASON_HEADER;

/// One dead-lettered job, as `sudokud dead list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// 1 for the head of the queue.
    pub position: usize,
    /// The job's `id` (a string as it is, anything else as JSON text), else
    /// its `message_id` property; `None` if it has neither.
    pub id: Option<String>,
    /// Why it was first dead-lettered: `x-first-death-reason`, else the
    /// oldest `x-death` entry's reason (`delivery_limit`, `rejected`,
    /// `expired`, `maxlen`), else, for a job the worker dead-lettered
    /// itself, its `x-sudokud-reason` (why its answer could not be
    /// delivered).
    pub reason: Option<String>,
    /// The queue it was first dead-lettered from.
    pub queue: Option<String>,
    /// Times it was dead-lettered: the sum of the `x-death` counts, or 1
    /// for a job the worker dead-lettered itself.
    pub deaths: u64,
    /// When it was last dead-lettered.
    pub time: Option<SystemTime>,
    /// Size of the job message.
    pub bytes: usize,
}

/// The ids a dead letter answers to in `--id`: the job's `id` and its
/// `message_id` property.
pub(super) fn job_ids(message: &BasicGetMessage) -> Vec<String> {
    let mut ids = Vec::with_capacity(2);
    if let Some(id) = body_id(&message.delivery.data) {
        ids.push(id);
    }
    if let Some(id) = message.delivery.properties.message_id() {
        ids.push(id.to_string());
    }
    ids
}

/// The `id` field of a JSON job: a string as it is, anything else as its
/// JSON text; `None` if the body is not a JSON object with an `id`.
fn body_id(body: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Head<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
    }
    let head: Head<'_> = serde_json::from_slice(body).ok()?;
    let raw = head.id?;
    match serde_json::from_str::<String>(raw.get()) {
        Ok(text) => Some(text),
        Err(_) => Some(raw.get().to_string()),
    }
}

pub(super) fn describe(position: usize, message: &BasicGetMessage) -> DeadLetter {
    let properties = &message.delivery.properties;
    let headers = properties.headers().as_ref();
    let header = |name: &str| headers.and_then(|h| h.inner().get(name));
    let deaths: Vec<&FieldTable> = match header("x-death") {
        Some(AMQPValue::FieldArray(entries)) => entries
            .as_slice()
            .iter()
            .filter_map(|entry| match entry {
                AMQPValue::FieldTable(table) => Some(table),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    // x-death lists the most recent death first.
    let broker_reason = header("x-first-death-reason").and_then(text).or_else(|| {
        deaths
            .last()
            .and_then(|d| d.inner().get("reason"))
            .and_then(text)
    });
    // A job the worker dead-lettered itself carries its reason instead.
    let worker_reason = header(DEAD_REASON_HEADER).and_then(text);
    let queue = header("x-first-death-queue").and_then(text).or_else(|| {
        deaths
            .last()
            .and_then(|d| d.inner().get("queue"))
            .and_then(text)
    });
    let count = deaths
        .iter()
        .map(|d| d.inner().get("count").and_then(number).unwrap_or(1))
        .sum::<u64>()
        .max(u64::from(worker_reason.is_some()));
    let time = deaths
        .iter()
        .filter_map(|d| d.inner().get("time").and_then(number))
        .max()
        .map(|secs| SystemTime::UNIX_EPOCH + Duration::from_secs(secs));
    DeadLetter {
        position,
        id: body_id(&message.delivery.data)
            .or_else(|| properties.message_id().as_ref().map(|id| id.to_string())),
        reason: broker_reason.or(worker_reason),
        queue,
        deaths: count,
        time,
        bytes: message.delivery.data.len(),
    }
}

fn text(value: &AMQPValue) -> Option<String> {
    match value {
        AMQPValue::LongString(s) => Some(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        AMQPValue::ShortString(s) => Some(s.as_str().to_string()),
        _ => None,
    }
}

fn number(value: &AMQPValue) -> Option<u64> {
    match *value {
        AMQPValue::ShortShortUInt(n) => Some(n.into()),
        AMQPValue::ShortUInt(n) => Some(n.into()),
        AMQPValue::LongUInt(n) => Some(n.into()),
        AMQPValue::Timestamp(n) => Some(n),
        AMQPValue::ShortShortInt(n) => u64::try_from(n).ok(),
        AMQPValue::ShortInt(n) => u64::try_from(n).ok(),
        AMQPValue::LongInt(n) => u64::try_from(n).ok(),
        AMQPValue::LongLongInt(n) => u64::try_from(n).ok(),
        _ => None,
    }
}

/// A table (or JSON lines) of dead letters.
pub fn write_listing(
    out: &mut impl std::io::Write,
    letters: &[DeadLetter],
    json: bool,
) -> std::io::Result<()> {
    let time = |letter: &DeadLetter| {
        letter
            .time
            .map(|t| humantime::format_rfc3339_seconds(t).to_string())
    };
    if json {
        for letter in letters {
            let line = serde_json::json!({
                "position": letter.position,
                "id": letter.id,
                "reason": letter.reason,
                "deaths": letter.deaths,
                "time": time(letter),
                "queue": letter.queue,
                "bytes": letter.bytes,
            });
            writeln!(out, "{line}")?;
        }
        return Ok(());
    }
    if letters.is_empty() {
        return Ok(());
    }
    let rows: Vec<[String; 7]> = letters
        .iter()
        .map(|letter| {
            let or_dash = |value: Option<String>| value.unwrap_or_else(|| "-".into());
            [
                letter.position.to_string(),
                or_dash(letter.id.clone()),
                or_dash(letter.reason.clone()),
                letter.deaths.to_string(),
                or_dash(time(letter)),
                or_dash(letter.queue.clone()),
                letter.bytes.to_string(),
            ]
        })
        .collect();
    let header = [
        "#",
        "ID",
        "REASON",
        "DEATHS",
        "LAST DEATH",
        "QUEUE",
        "BYTES",
    ]
    .map(String::from);
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        writeln!(out, "{}", cells.join("  ").trim_end())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_come_from_the_body() {
        assert_eq!(
            body_id(br#"{"id": "job-42", "puzzle": "1"}"#).as_deref(),
            Some("job-42")
        );
        assert_eq!(
            body_id(br#"{"puzzle": "1", "id": 7}"#).as_deref(),
            Some("7")
        );
        assert_eq!(
            body_id(br#"{"id": {"a": 1}}"#).as_deref(),
            Some(r#"{"a": 1}"#)
        );
        assert_eq!(body_id(br#"{"puzzle": "1"}"#), None);
        assert_eq!(body_id(b"not json"), None);
    }
}
