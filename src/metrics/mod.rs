//! What operators watch a worker through: Prometheus metrics and the
//! health state behind `/livez` and `/readyz`.
//!
//! [`Metrics`] holds the worker's Prometheus registry (every metric is
//! named `sudokud_*`) and its health: when the event loop last ticked,
//! and whether it is connected, consuming or stopping. The worker feeds it
//! through [`crate::telemetry::Stats`], in the same calls that feed the
//! throughput line, so the two always agree; [`serve`] serves it over
//! HTTP when `metrics.listen` is set.
//!
//! A job counts once in `sudokud_jobs_total`, under its overall status
//! ([`overall_status`]); each of its puzzles counts once in
//! `sudokud_puzzles_total`.

pub mod probe;
mod server;

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::protocol::AnswerStatus;
use crate::protocol::{StatusCounts, Tally};

pub use server::{Server, serve};

/// A label set of one label, such as `status="solved"`.
type Label = [(&'static str, &'static str); 1];

/// A label whose value is a queue's name.
type QueueLabel = [(&'static str, String); 1];

/// Upper bounds of the `sudokud_job_duration_seconds` buckets: from a
/// millisecond (an easy puzzle on a near broker) to a minute (the longest
/// deadline a puzzle may ask for).
const DURATION_BUCKETS_SECS: [f64; 16] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0,
];

/// How often the worker's event loop wakes at least, so that its ticks
/// show it responsive while nothing happens.
pub const PULSE: Duration = Duration::from_secs(1);

/// The interval the event loop waits on beside its work, so it ticks at
/// least every [`PULSE`].
pub fn pulse() -> tokio::time::Interval {
    let mut pulse = tokio::time::interval(PULSE);
    pulse.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    pulse
}

/// The status a job counts under in `sudokud_jobs_total`: the last of
/// `solved`, `unsolvable`, `invalid`, `timeout`, `error` (the protocol's
/// order, from best to worst) that any of its puzzles has. A one-puzzle
/// job counts under its puzzle's status; a batch is `solved` only if every
/// puzzle is, and `error` if any puzzle is.
pub fn overall_status(statuses: &StatusCounts) -> AnswerStatus {
    AnswerStatus::ALL
        .into_iter()
        .rev()
        .find(|&status| statuses.get(status) > 0)
        // Never used: every answered job has at least one answer.
        .unwrap_or(AnswerStatus::Error)
}

/// The worker's Prometheus registry and health state.
pub struct Metrics {
    registry: Registry,
    /// The series of `sudokud_jobs_total` and `sudokud_puzzles_total`, in
    /// [`AnswerStatus::ALL`] order (handles on the families' counters).
    jobs: [Counter; 5],
    puzzles: [Counter; 5],
    job_duration: Histogram,
    in_flight: Gauge,
    connected: Gauge,
    blocked: Gauge,
    reconnects: Counter,
    redelivered: Counter,
    quarantines: Counter,
    generated: Counter,
    candidates: Counter,
    solver_threads: Gauge,
    queue_unreachable: Family<QueueLabel, Gauge>,
    health: Health,
}

/// What `/livez` and `/readyz` answer from.
struct Health {
    started: Instant,
    /// Milliseconds from `started` to the event loop's last tick.
    last_tick_ms: AtomicU64,
    connected: AtomicBool,
    consuming: AtomicBool,
    /// The broker blocks the connection (a resource alarm).
    blocked: AtomicBool,
    stopping: AtomicBool,
    /// Queues the worker cannot reach (their node is down), by name.
    unreachable: Mutex<BTreeSet<String>>,
}

impl Default for Metrics {
    fn default() -> Self {
        let jobs = Family::<Label, Counter>::default();
        let puzzles = Family::<Label, Counter>::default();
        // Every status from the start, at 0: rates and sums need the
        // series to exist before the first job of that status.
        let series = |family: &Family<Label, Counter>| {
            AnswerStatus::ALL
                .map(|status| family.get_or_create(&[("status", status.as_str())]).clone())
        };
        let mut metrics = Metrics {
            registry: Registry::with_prefix("sudokud"),
            jobs: series(&jobs),
            puzzles: series(&puzzles),
            job_duration: Histogram::new(DURATION_BUCKETS_SECS),
            in_flight: Gauge::default(),
            connected: Gauge::default(),
            blocked: Gauge::default(),
            reconnects: Counter::default(),
            redelivered: Counter::default(),
            quarantines: Counter::default(),
            generated: Counter::default(),
            candidates: Counter::default(),
            solver_threads: Gauge::default(),
            queue_unreachable: Family::default(),
            health: Health::new(),
        };
        metrics.register(jobs, puzzles);
        metrics
    }
}

impl Metrics {
    /// Registers every metric with its help text; `jobs` and `puzzles` are
    /// the families of [`Metrics::jobs`] and [`Metrics::puzzles`].
    fn register(&mut self, jobs: Family<Label, Counter>, puzzles: Family<Label, Counter>) {
        let build_info = Family::<Label, Gauge>::default();
        build_info
            .get_or_create(&[("version", env!("CARGO_PKG_VERSION"))])
            .set(1);
        let registry = &mut self.registry;
        registry.register(
            "jobs",
            "Jobs answered (result confirmed by the broker, job acknowledged), by status; a batch counts once, under its worst puzzle status",
            jobs,
        );
        registry.register("puzzles", "Puzzles answered, by status", puzzles);
        registry.register(
            "job_duration_seconds",
            "Time from a job's delivery to the broker's confirm of its result",
            self.job_duration.clone(),
        );
        registry.register(
            "jobs_in_flight",
            "Jobs delivered to this worker and not yet answered or handed back",
            self.in_flight.clone(),
        );
        registry.register(
            "broker_connected",
            "1 while the worker has a connection to the broker, else 0",
            self.connected.clone(),
        );
        registry.register(
            "broker_blocked",
            "1 while the broker blocks the worker's connection (a memory or disk alarm: no answer can be published), else 0",
            self.blocked.clone(),
        );
        registry.register(
            "broker_reconnects",
            "Connections to the broker opened again after one was lost",
            self.reconnects.clone(),
        );
        registry.register(
            "jobs_redelivered",
            "Jobs the broker flagged as delivered before: a consumer that held them went away (a crashed, killed or disconnected worker); from a quorum queue each is run alone",
            self.redelivered.clone(),
        );
        registry.register(
            "quarantines",
            "Times this worker stopped consuming to run redelivered jobs one at a time",
            self.quarantines.clone(),
        );
        registry.register(
            "generated_puzzles",
            "Puzzles made by generation jobs (answered and acknowledged)",
            self.generated.clone(),
        );
        registry.register(
            "generation_candidates",
            "Candidate puzzles generation jobs drew, kept or not",
            self.candidates.clone(),
        );
        registry.register(
            "solver_threads",
            "Threads solving puzzles",
            self.solver_threads.clone(),
        );
        registry.register(
            "queue_unreachable",
            "1 while the worker cannot reach this queue (a classic results or dead-letter queue whose node is down: the answers for it wait), else 0",
            self.queue_unreachable.clone(),
        );
        registry.register(
            "build_info",
            "Always 1; the version label names the running build",
            build_info,
        );
    }
}

impl Health {
    /// Just started: not connected, never ticked.
    fn new() -> Health {
        Health {
            started: Instant::now(),
            last_tick_ms: AtomicU64::new(0),
            connected: AtomicBool::new(false),
            consuming: AtomicBool::new(false),
            blocked: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            unreachable: Mutex::new(BTreeSet::new()),
        }
    }
}

impl Metrics {
    pub(crate) fn job_received(&self) {
        self.in_flight.inc();
    }

    /// A job answered: counted once under its overall status, each of its
    /// puzzles under its own, its latency in the histogram.
    /// A generation job counts its puzzles made and candidates drawn
    /// instead of answers.
    pub(crate) fn job_answered(
        &self,
        statuses: &StatusCounts,
        generated: Option<Tally>,
        latency: Duration,
    ) {
        self.in_flight.dec();
        self.job_duration.observe(latency.as_secs_f64());
        if let Some(generated) = generated {
            let overall = overall_status(statuses);
            for (status, job) in AnswerStatus::ALL.into_iter().zip(&self.jobs) {
                if status == overall {
                    job.inc();
                }
            }
            self.generated.inc_by(generated.puzzles);
            self.candidates.inc_by(generated.tried);
            return;
        }
        let overall = overall_status(statuses);
        for ((status, job), puzzle) in AnswerStatus::ALL
            .into_iter()
            .zip(&self.jobs)
            .zip(&self.puzzles)
        {
            if status == overall {
                job.inc();
            }
            let n = statuses.get(status);
            if n > 0 {
                puzzle.inc_by(n);
            }
        }
    }

    pub(crate) fn job_returned(&self) {
        self.in_flight.dec();
    }

    /// A job arrived that the broker had delivered before.
    pub(crate) fn job_redelivered(&self) {
        self.redelivered.inc();
    }

    /// The worker stopped consuming to run redelivered jobs alone.
    pub(crate) fn quarantine(&self) {
        self.quarantines.inc();
    }

    /// The event loop is running: `/livez` passes for
    /// `metrics.liveness_timeout_secs` from now.
    pub fn tick(&self) {
        let ms = u64::try_from(self.health.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.health.last_tick_ms.store(ms, Ordering::Relaxed);
    }

    /// The solver pool's size.
    pub fn solver_threads(&self, threads: usize) {
        self.solver_threads
            .set(i64::try_from(threads).unwrap_or(i64::MAX));
    }

    /// A connection to the broker is open and the consumer started.
    pub fn connected(&self) {
        self.connected.set(1);
        self.health.connected.store(true, Ordering::Relaxed);
        self.health.consuming.store(true, Ordering::Relaxed);
    }

    /// A connection was opened again after one was lost.
    pub fn reconnected(&self) {
        self.reconnects.inc();
    }

    /// The connection is lost or closed (and with it any block).
    pub fn disconnected(&self) {
        self.connected.set(0);
        self.health.connected.store(false, Ordering::Relaxed);
        self.health.consuming.store(false, Ordering::Relaxed);
        self.blocked(false);
    }

    /// The broker blocks the connection (a resource alarm), or no longer.
    pub fn blocked(&self, blocked: bool) {
        self.blocked.set(i64::from(blocked));
        self.health.blocked.store(blocked, Ordering::Relaxed);
    }

    /// The worker cannot reach `queue` (its node is down), or can again.
    pub fn queue_unreachable(&self, queue: &str, unreachable: bool) {
        self.queue_unreachable
            .get_or_create(&[("queue", queue.to_string())])
            .set(i64::from(unreachable));
        // Nothing panics while holding this lock; recover all the same.
        let mut queues = self
            .health
            .unreachable
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if unreachable {
            queues.insert(queue.to_string());
        } else {
            queues.remove(queue);
        }
    }

    /// The worker is stopping: it takes no new jobs from now on.
    pub fn stopping(&self) {
        self.health.stopping.store(true, Ordering::Relaxed);
        self.health.consuming.store(false, Ordering::Relaxed);
    }

    /// Time since the event loop last ticked.
    pub fn since_tick(&self) -> Duration {
        let last = Duration::from_millis(self.health.last_tick_ms.load(Ordering::Relaxed));
        self.health.started.elapsed().saturating_sub(last)
    }

    /// `Ok` with a line saying why the worker is ready, or `Err` with a
    /// line saying why not.
    /// A worker that cannot reach a results or dead-letter queue is ready
    /// (it consumes, and answers what it can deliver), and says which.
    pub fn readiness(&self) -> Result<String, &'static str> {
        let health = &self.health;
        if health.stopping.load(Ordering::Relaxed) {
            Err("not ready: stopping, finishing the jobs held")
        } else if !health.connected.load(Ordering::Relaxed) {
            Err("not ready: not connected to the broker")
        } else if !health.consuming.load(Ordering::Relaxed) {
            Err("not ready: connected, not consuming")
        } else if health.blocked.load(Ordering::Relaxed) {
            Err("not ready: the broker blocks the connection (resource alarm)")
        } else {
            let unreachable = health.unreachable.lock().unwrap_or_else(|e| e.into_inner());
            let mut line = String::from("ready: connected to the broker and consuming");
            if !unreachable.is_empty() {
                let queues: Vec<&str> = unreachable.iter().map(String::as_str).collect();
                line.push_str(&format!(
                    "; unreachable (node down, answers for it wait): {}",
                    queues.join(", ")
                ));
            }
            Ok(line)
        }
    }

    /// The registry in the Prometheus text format (version 0.0.4). The
    /// caller makes it consistent by holding the lock the job counters
    /// are updated under ([`crate::telemetry::Stats::encode_metrics`]).
    pub(crate) fn encode(&self) -> String {
        let mut text = String::with_capacity(4096);
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry);
        text
    }
}

/// What [`serve`] serves: the metrics and health state, and the
/// Prometheus text of them with no job half counted. The worker's
/// [`crate::telemetry::Stats`] is one.
pub trait Source: Send + Sync + 'static {
    fn metrics(&self) -> &Metrics;
    /// The Prometheus text of the metrics, consistent with itself.
    fn encode_metrics(&self) -> String;
}

/// The `Content-Type` of [`Metrics::encode`]'s output.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(statuses: &[AnswerStatus]) -> StatusCounts {
        let mut counts = StatusCounts::default();
        for &status in statuses {
            counts.add(status);
        }
        counts
    }

    #[test]
    fn a_batch_counts_under_its_worst_status() {
        use AnswerStatus::*;
        assert_eq!(overall_status(&counts(&[Solved])), Solved);
        assert_eq!(overall_status(&counts(&[Solved, Solved])), Solved);
        assert_eq!(overall_status(&counts(&[Solved, Unsolvable])), Unsolvable);
        assert_eq!(
            overall_status(&counts(&[Unsolvable, Invalid, Solved])),
            Invalid
        );
        assert_eq!(overall_status(&counts(&[Timeout, Invalid])), Timeout);
        assert_eq!(overall_status(&counts(&[Solved, Error, Timeout])), Error);
    }

    #[test]
    fn encodes_every_metric_with_exact_counts() {
        let metrics = Metrics::default();
        metrics.solver_threads(3);
        metrics.job_received();
        metrics.job_received();
        metrics.job_received();
        metrics.job_answered(
            &counts(&[AnswerStatus::Solved]),
            None,
            Duration::from_millis(3),
        );
        metrics.job_answered(
            &counts(&[
                AnswerStatus::Solved,
                AnswerStatus::Invalid,
                AnswerStatus::Solved,
            ]),
            None,
            Duration::from_millis(30),
        );
        metrics.connected();
        metrics.reconnected();
        metrics.job_redelivered();
        metrics.job_redelivered();
        metrics.quarantine();
        let text = metrics.encode();
        for line in [
            "sudokud_jobs_total{status=\"solved\"} 1",
            "sudokud_jobs_total{status=\"invalid\"} 1",
            "sudokud_jobs_total{status=\"error\"} 0",
            "sudokud_puzzles_total{status=\"solved\"} 3",
            "sudokud_puzzles_total{status=\"invalid\"} 1",
            "sudokud_puzzles_total{status=\"timeout\"} 0",
            "sudokud_job_duration_seconds_count 2",
            "sudokud_job_duration_seconds_bucket{le=\"0.005\"} 1",
            "sudokud_job_duration_seconds_bucket{le=\"0.05\"} 2",
            "sudokud_job_duration_seconds_bucket{le=\"+Inf\"} 2",
            "sudokud_jobs_in_flight 1",
            "sudokud_broker_connected 1",
            "sudokud_broker_blocked 0",
            "sudokud_broker_reconnects_total 1",
            "sudokud_jobs_redelivered_total 2",
            "sudokud_quarantines_total 1",
            "# TYPE sudokud_quarantines_total counter",
            "sudokud_solver_threads 3",
            "# TYPE sudokud_job_duration_seconds histogram",
            "# TYPE sudokud_jobs_total counter",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "no line {line:?} in:\n{text}"
            );
        }
        let build = format!(
            "sudokud_build_info{{version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        );
        assert!(text.lines().any(|l| l == build), "{text}");
    }

    #[test]
    fn readiness_follows_the_connection_alarms_and_stopping() {
        let metrics = Metrics::default();
        assert!(metrics.readiness().unwrap_err().contains("not connected"));
        metrics.connected();
        assert!(metrics.readiness().is_ok());
        metrics.blocked(true);
        assert!(metrics.readiness().unwrap_err().contains("resource alarm"));
        metrics.blocked(false);
        assert!(metrics.readiness().is_ok());
        metrics.blocked(true);
        metrics.disconnected();
        assert!(metrics.readiness().unwrap_err().contains("not connected"));
        metrics.connected();
        assert!(
            metrics.readiness().is_ok(),
            "a new connection starts unblocked"
        );
        metrics.stopping();
        assert!(metrics.readiness().unwrap_err().contains("stopping"));
    }

    #[test]
    fn an_unreachable_queue_is_named_by_readyz_and_its_gauge() {
        let metrics = Metrics::default();
        metrics.connected();
        metrics.queue_unreachable("sudoku.results", true);
        let line = metrics.readiness().expect("ready: it consumes");
        assert!(
            line.ends_with("answers for it wait): sudoku.results"),
            "{line}"
        );
        let gauge = "sudokud_queue_unreachable{queue=\"sudoku.results\"}";
        assert!(metrics.encode().lines().any(|l| l == format!("{gauge} 1")));
        metrics.queue_unreachable("sudoku.results", false);
        assert_eq!(
            metrics.readiness().as_deref(),
            Ok("ready: connected to the broker and consuming")
        );
        assert!(metrics.encode().lines().any(|l| l == format!("{gauge} 0")));
    }

    #[test]
    fn a_tick_resets_the_time_since_the_last() {
        let metrics = Metrics::default();
        std::thread::sleep(Duration::from_millis(20));
        assert!(metrics.since_tick() >= Duration::from_millis(20));
        let before = Instant::now();
        metrics.tick();
        // Ticks are kept in whole milliseconds.
        assert!(metrics.since_tick() <= before.elapsed() + Duration::from_millis(1));
    }
}
