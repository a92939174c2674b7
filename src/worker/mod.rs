//! `sudokud run`: the worker daemon.
//!
//! One task drives everything that touches the broker, as an event loop
//! ([`serve`]): it connects ([`connect`]), takes deliveries from the jobs
//! queue ([`intake`]) while the solver pool has room (`crate::pool`), hands each
//! job to the pool ([`jobs`]), publishes each result as it comes back
//! (persistent, `mandatory`, to `reply_to` or the results queue:
//! [`publish`]), and acknowledges a job once the broker has confirmed its
//! result ([`confirms`], [`acks`]). Everything tied to one connection,
//! the jobs held on it above all, is its [`link`]. Publishing never waits
//! for a confirm, so many results are in flight at once. The prefetch
//! (`basic.qos`) bounds how many jobs the worker holds; the pool admits a
//! few jobs per thread, so a thread finds its next job waiting and the rest
//! stay with the broker's prefetch (docs/worker.md gives the trade-off).
//!
//! Faults: a lost connection (broker restart, network cut, missed
//! heartbeats, a failed channel, the broker cancelling the consumer) is
//! logged and repaired by reconnecting with exponential backoff and
//! jitter, declaring the topology again and consuming again. Everything
//! tied to the lost connection is dropped: its deliveries can no longer be
//! acknowledged (the broker redelivers them), so their acknowledgement
//! handles, results awaiting a confirm, and answers still being computed
//! are discarded, and the redelivered jobs are answered afresh. The solver
//! threads carry on throughout; work of the lost connection not yet
//! started is skipped. When the broker blocks the connection (a memory or
//! disk alarm), the worker takes no new jobs and holds back its results
//! until it is unblocked. If the broker stays unreachable longer than
//! `amqp.reconnect_give_up_secs`, the worker stops with an error.
//!
//! Shutdown ([`shutdown`]), as in mini-redis: when the `shutdown` future completes, the
//! worker cancels its consumer, answers the jobs it already holds, waits
//! for their confirms and acknowledgements, then closes its channels and
//! connection. Jobs not done when the grace period ends stay
//! unacknowledged, and the broker redelivers them.

mod acks;
mod amqp;
mod backoff;
mod confirms;
mod connect;
mod intake;
mod jobs;
mod link;
mod publish;
mod serve;
mod shutdown;

use std::future::Future;
use std::sync::Arc;

pub use shutdown::shutdown_signal;

use crate::config::Settings;
use crate::protocol::SolveFn;
use crate::telemetry::{Stats, report_throughput};
use serve::Worker;

pub use crate::telemetry::process_name as worker_id;

/// Runs the worker until `shutdown` completes and the jobs in flight are
/// answered (or the grace period ends), then closes the connection.
///
/// A lost connection is re-established, however often (a consumer the
/// broker cancels too: the worker connects and consumes again); `run`
/// returns an error only when the broker stays unreachable for longer than
/// `amqp.reconnect_give_up_secs`, or refuses the login or the queue
/// arguments. Jobs not acknowledged by then are redelivered by the broker.
pub async fn run(settings: Settings, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
    run_with(settings, shutdown, crate::solver::solve).await
}

async fn run_with(
    settings: Settings,
    shutdown: impl Future<Output = ()>,
    solve: SolveFn,
) -> anyhow::Result<()> {
    let worker_id: Arc<str> = worker_id().into();
    let stats = Arc::new(Stats::default());
    let _metrics_server = crate::metrics::serve(&settings.metrics, Arc::clone(&stats)).await?;
    let reporter = settings
        .log
        .throughput_interval()
        .map(|every| AbortOnDrop(tokio::spawn(report_throughput(Arc::clone(&stats), every))));

    let mut worker = Worker::new(settings, worker_id, Arc::clone(&stats), solve)?;
    let outcome = worker.run(shutdown).await;
    if let Some(reporter) = reporter {
        // The last, partial interval, so the lines add up to every job.
        drop(reporter);
        stats.take().log();
    }
    outcome
}

/// Test-only fault injection, compiled in only with the `fault-injection`
/// cargo feature (never in a release build meant for production).
#[cfg(feature = "fault-injection")]
mod fault_injection {
    /// Environment variable naming a job id (as JSON text, e.g. `"poison"`
    /// with the quotes) whose delivery aborts the process, so tests can
    /// make a job that kills every worker it reaches.
    pub const ABORT_ON_ID: &str = "SUDOKUD_FAULT_ABORT_ON_ID";

    pub(super) fn abort_on_id() -> Option<String> {
        let id = std::env::var(ABORT_ON_ID)
            .ok()
            .filter(|id| !id.is_empty())?;
        tracing::warn!(job_id = %id, "fault injection: a job with this id aborts the process");
        Some(id)
    }
}

/// Aborts a spawned task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
