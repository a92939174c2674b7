//! Waits between attempts to reach the broker: exponential, capped, with
//! jitter, so a fleet of workers that lost the broker together does not
//! come back in step.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// The wait before each attempt: attempt `n` (from 0) waits a random time
/// between half and all of `min(max, initial x 2^n)` ("equal jitter"), so
/// waits grow, never exceed `max`, and never fall under half the step.
pub(crate) struct Backoff {
    initial: Duration,
    max: Duration,
    attempt: u32,
    random: Random,
}

impl Backoff {
    pub(crate) fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff {
            initial: initial.min(max),
            max,
            attempt: 0,
            random: Random::new(),
        }
    }

    /// The wait before the next attempt.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let step = self
            .initial
            .checked_mul(1u32 << self.attempt.min(31))
            .map_or(self.max, |d| d.min(self.max));
        self.attempt = self.attempt.saturating_add(1);
        let half = step / 2;
        let span = u64::try_from((step - half).as_nanos()).unwrap_or(u64::MAX);
        half + Duration::from_nanos(self.random.below(span.saturating_add(1)))
    }

    /// Attempts made since the last reset.
    pub(crate) fn attempts(&self) -> u32 {
        self.attempt
    }

    /// Starts again from `initial`.
    pub(crate) fn reset(&mut self) {
        self.attempt = 0;
    }
}

/// xorshift64*, seeded from the standard library's per-process random
/// hash keys: enough to spread workers apart, no extra dependency.
pub(crate) struct Random(u64);

impl Random {
    pub(crate) fn new() -> Random {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        Random(hasher.finish() | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        self.next() % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_cap_with_jitter() {
        let initial = Duration::from_millis(100);
        let max = Duration::from_millis(1000);
        let mut backoff = Backoff::new(initial, max);
        let steps = [100u64, 200, 400, 800, 1000, 1000, 1000];
        for step in steps {
            let wait = backoff.next_delay();
            let step = Duration::from_millis(step);
            assert!(wait >= step / 2 && wait <= step, "{wait:?} for {step:?}");
        }
        assert_eq!(backoff.attempts(), steps.len() as u32);
        backoff.reset();
        assert!(backoff.next_delay() <= initial);
    }

    #[test]
    fn jitter_spreads_the_waits() {
        let mut backoff = Backoff::new(Duration::from_secs(10), Duration::from_secs(10));
        let waits: std::collections::HashSet<Duration> =
            (0..50).map(|_| backoff.next_delay()).collect();
        assert!(waits.len() > 40, "{} distinct waits of 50", waits.len());
        let mut other = Backoff::new(Duration::from_secs(10), Duration::from_secs(10));
        assert_ne!(
            (0..5).map(|_| other.next_delay()).collect::<Vec<_>>(),
            (0..5).map(|_| backoff.next_delay()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn many_attempts_stay_capped() {
        let max = Duration::from_secs(30);
        let mut backoff = Backoff::new(Duration::from_millis(1), max);
        for _ in 0..200 {
            assert!(backoff.next_delay() <= max);
        }
        let mut tiny = Backoff::new(Duration::from_nanos(1), Duration::from_nanos(1));
        assert!(tiny.next_delay() <= Duration::from_nanos(1));
    }
}
