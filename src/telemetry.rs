//! Logging and the throughput reporter.
//!
//! [`init`] installs the global `tracing` subscriber (`text` or `json`, with
//! an `EnvFilter` from `log.level` that `RUST_LOG` replaces). [`Stats`] is
//! what the worker counts as it answers jobs; [`report_throughput`] turns
//! it into one `throughput` line every `log.throughput_secs`.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use tracing::info;
use tracing_subscriber::EnvFilter;

use crate::config::{LogFormat, LogSettings};
use crate::protocol::{AnswerStatus, StatusCounts, Tally};

/// The filter the worker logs through: `RUST_LOG` when it is set and not
/// empty, else `level`. Unless the directive names `lapin` itself, the AMQP
/// client's own lines are off: every failure it has surfaces through the
/// worker's calls, and the worker reports it in its own words, once (a
/// broker restart would otherwise add a handful of client errors for a
/// fault the worker repairs by itself).
pub fn filter(level: &str) -> anyhow::Result<EnvFilter> {
    let (directive, source) = match std::env::var("RUST_LOG") {
        Ok(value) if !value.trim().is_empty() => (value, "RUST_LOG"),
        _ => (level.to_string(), "log.level"),
    };
    let mut filter = EnvFilter::try_new(&directive)
        .with_context(|| format!("invalid {source} {directive:?}"))?;
    if !directive.contains("lapin") {
        filter = filter.add_directive("lapin=off".parse().context("built-in directive")?);
    }
    Ok(filter)
}

/// Seconds, to a tenth, for logs.
pub(crate) fn round_secs(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 10.0).round() / 10.0
}

/// Installs the global subscriber, writing to standard error. Fails if one
/// is already installed.
pub fn init(log: &LogSettings) -> anyhow::Result<()> {
    let filter = filter(&log.level)?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let installed = match log.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
    installed.map_err(|e| anyhow::anyhow!("cannot install the log subscriber: {e}"))
}

/// Latencies in microseconds, in log-linear buckets: exact below 16 µs,
/// then 16 buckets per power of two (at most 1/16 = 6% too high).
#[derive(Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    samples: u64,
}

const SUB_BITS: u32 = 4;
const SUB: u64 = 1 << SUB_BITS;

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; (SUB + (64 - SUB_BITS as u64) * SUB) as usize],
            samples: 0,
        }
    }
}

impl Histogram {
    pub fn record(&mut self, micros: u64) {
        self.counts[Self::bucket(micros)] += 1;
        self.samples += 1;
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    fn bucket(v: u64) -> usize {
        if v < SUB {
            return v as usize;
        }
        let exp = 63 - v.leading_zeros(); // >= SUB_BITS
        let shift = exp - SUB_BITS;
        let sub = (v >> shift) & (SUB - 1);
        (SUB + u64::from(shift) * SUB + sub) as usize
    }

    /// The largest value bucket `i` holds.
    fn upper_bound(i: usize) -> u64 {
        let i = i as u64;
        if i < SUB {
            return i;
        }
        let shift = (i - SUB) / SUB;
        let sub = (i - SUB) % SUB;
        let lower = (SUB + sub) << shift;
        lower.saturating_add((1u64 << shift) - 1)
    }

    /// The `q` quantile (0 < q <= 1) in microseconds, rounded up to its
    /// bucket's upper bound; 0 when nothing was recorded.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.samples == 0 {
            return 0;
        }
        let rank = ((q * self.samples as f64).ceil() as u64).clamp(1, self.samples);
        let mut seen = 0;
        for (i, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Self::upper_bound(i);
            }
        }
        Self::upper_bound(self.counts.len() - 1)
    }
}

/// One reporting interval's worth of answered jobs.
#[derive(Clone, Default)]
struct Window {
    jobs: u64,
    puzzles: u64,
    statuses: StatusCounts,
    latency: Histogram,
}

/// What the worker has answered, shared between the worker (which records)
/// and the reporter (which takes a [`Throughput`] each interval).
pub struct Stats {
    window: Mutex<(Instant, Window)>,
    in_flight: AtomicU64,
    total_jobs: AtomicU64,
    /// The Prometheus metrics and health state, fed by the same calls.
    pub metrics: crate::metrics::Metrics,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            window: Mutex::new((Instant::now(), Window::default())),
            in_flight: AtomicU64::new(0),
            total_jobs: AtomicU64::new(0),
            metrics: crate::metrics::Metrics::default(),
        }
    }
}

impl crate::metrics::Source for Stats {
    fn metrics(&self) -> &crate::metrics::Metrics {
        &self.metrics
    }

    fn encode_metrics(&self) -> String {
        Stats::encode_metrics(self)
    }
}

impl Stats {
    /// A job was delivered to the worker.
    pub fn job_received(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.metrics.job_received();
    }

    /// A job's result was confirmed and the job acknowledged. `latency` runs
    /// from delivery to confirmation.
    /// A generation job (`generated`) counts its puzzles made, not answers.
    pub fn job_answered(
        &self,
        statuses: &StatusCounts,
        generated: Option<Tally>,
        latency: Duration,
    ) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.total_jobs.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        let mut guard = self.window.lock().unwrap_or_else(|e| e.into_inner());
        let window = &mut guard.1;
        window.jobs += 1;
        window.puzzles += generated.map_or(statuses.total(), |g| g.puzzles);
        window.statuses.merge(statuses);
        window.latency.record(micros);
        // Under the same lock as `encode_metrics`: a scrape sees every
        // counter of a job or none.
        self.metrics.job_answered(statuses, generated, latency);
    }

    /// A job left the worker unanswered (handed back to the broker).
    pub fn job_returned(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.metrics.job_returned();
    }

    /// The Prometheus text of [`Stats::metrics`], consistent with itself:
    /// no job is half counted in it.
    pub fn encode_metrics(&self) -> String {
        let _guard = self.window.lock().unwrap_or_else(|e| e.into_inner());
        self.metrics.encode()
    }

    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Jobs answered since the worker started.
    pub fn total_jobs(&self) -> u64 {
        self.total_jobs.load(Ordering::Relaxed)
    }

    /// The interval since the last call, and starts a new one.
    pub fn take(&self) -> Throughput {
        let now = Instant::now();
        let (start, window) = {
            let mut guard = self.window.lock().unwrap_or_else(|e| e.into_inner());
            let start = std::mem::replace(&mut guard.0, now);
            (start, std::mem::take(&mut guard.1))
        };
        Throughput {
            elapsed: now.duration_since(start),
            jobs: window.jobs,
            puzzles: window.puzzles,
            statuses: window.statuses,
            in_flight: self.in_flight(),
            latency_p50_us: window.latency.quantile(0.50),
            latency_p99_us: window.latency.quantile(0.99),
        }
    }
}

/// One interval of work, as the throughput line reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Throughput {
    pub elapsed: Duration,
    pub jobs: u64,
    pub puzzles: u64,
    pub statuses: StatusCounts,
    pub in_flight: u64,
    pub latency_p50_us: u64,
    pub latency_p99_us: u64,
}

fn per_second(count: u64, elapsed: Duration) -> f64 {
    let rate = count as f64 / elapsed.as_secs_f64().max(1e-9);
    (rate * 10.0).round() / 10.0
}

fn millis(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

impl Throughput {
    pub fn jobs_per_sec(&self) -> f64 {
        per_second(self.jobs, self.elapsed)
    }

    pub fn puzzles_per_sec(&self) -> f64 {
        per_second(self.puzzles, self.elapsed)
    }

    /// Writes the `throughput` line at info level.
    pub fn log(&self) {
        let s = &self.statuses;
        info!(
            jobs_per_sec = self.jobs_per_sec(),
            puzzles_per_sec = self.puzzles_per_sec(),
            jobs = self.jobs,
            puzzles = self.puzzles,
            solved = s.get(AnswerStatus::Solved),
            unsolvable = s.get(AnswerStatus::Unsolvable),
            invalid = s.get(AnswerStatus::Invalid),
            timeout = s.get(AnswerStatus::Timeout),
            error = s.get(AnswerStatus::Error),
            in_flight = self.in_flight,
            latency_p50_ms = millis(self.latency_p50_us),
            latency_p99_ms = millis(self.latency_p99_us),
            interval_secs = (self.elapsed.as_secs_f64() * 10.0).round() / 10.0,
            "throughput"
        );
    }
}

/// Logs a [`Throughput`] line every `every` until the task is dropped.
pub async fn report_throughput(stats: std::sync::Arc<Stats>, every: Duration) {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    stats.take();
    loop {
        ticks.tick().await;
        stats.take().log();
    }
}

/// This process's name, in results (`worker`) and in the names of its
/// connections: `host/pid`.
pub fn process_name() -> String {
    format!(
        "{}/{}",
        gethostname::gethostname().to_string_lossy(),
        std::process::id()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_are_close_and_never_low() {
        let mut h = Histogram::default();
        assert_eq!(h.quantile(0.5), 0);
        for v in 1..=10_000u64 {
            h.record(v);
        }
        for (q, exact) in [(0.5, 5_000u64), (0.99, 9_900), (1.0, 10_000)] {
            let got = h.quantile(q);
            assert!(got >= exact, "q{q}: {got} < {exact}");
            assert!(got as f64 <= exact as f64 * 1.07, "q{q}: {got} vs {exact}");
        }
        let mut small = Histogram::default();
        for v in [0, 3, 3, 15] {
            small.record(v);
        }
        assert_eq!(small.quantile(0.5), 3);
        assert_eq!(small.quantile(1.0), 15);
        let mut huge = Histogram::default();
        huge.record(u64::MAX);
        assert_eq!(huge.quantile(0.5), u64::MAX);
    }

    #[test]
    fn buckets_cover_their_values() {
        for v in (0..100_000u64).chain([u64::MAX / 3, u64::MAX - 1, u64::MAX]) {
            let b = Histogram::bucket(v);
            assert!(Histogram::upper_bound(b) >= v, "{v}");
            if b > 0 {
                assert!(Histogram::upper_bound(b - 1) < v, "{v}");
            }
        }
    }

    #[test]
    fn stats_count_an_interval_and_start_the_next() {
        let stats = Stats::default();
        stats.job_received();
        stats.job_received();
        stats.job_received();
        let mut one = StatusCounts::default();
        one.add(AnswerStatus::Solved);
        let mut batch = StatusCounts::default();
        batch.add(AnswerStatus::Solved);
        batch.add(AnswerStatus::Invalid);
        batch.add(AnswerStatus::Timeout);
        stats.job_answered(&one, None, Duration::from_millis(2));
        stats.job_answered(&batch, None, Duration::from_millis(40));
        let t = stats.take();
        assert_eq!((t.jobs, t.puzzles, t.in_flight), (2, 4, 1));
        assert_eq!(t.statuses.get(AnswerStatus::Solved), 2);
        assert_eq!(t.statuses.get(AnswerStatus::Invalid), 1);
        assert_eq!(t.statuses.get(AnswerStatus::Timeout), 1);
        assert!(t.latency_p50_us >= 2_000 && t.latency_p50_us < 2_200);
        assert!(t.latency_p99_us >= 40_000 && t.latency_p99_us < 43_000);
        stats.job_returned();
        let next = stats.take();
        assert_eq!((next.jobs, next.in_flight, next.latency_p99_us), (0, 0, 0));
        assert_eq!(stats.total_jobs(), 2);
    }
}
