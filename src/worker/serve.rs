//! The worker: one task that owns everything touching the broker. It
//! connects ([`Connector`]), then serves the connection ([`Link`]) by
//! reacting to one event at a time:
//!
//! | event | handler |
//! |---|---|
//! | the shutdown future completes | [`Worker::on_signal`] |
//! | an answer comes back from the pool | [`Link::answer`] |
//! | the grace period ends | `serve` returns [`Served::Finished`] |
//! | a connection event, a confirm, a delivery | [`Link::handle`], which hands back a job to start |
//! | a job to start | [`Worker::admit`] |
//!
//! An error means the connection is lost: everything tied to it (the
//! [`Link`]) is dropped, and the worker connects again.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio::sync::mpsc;
use tracing::{info, warn};

use super::connect::Connector;
use super::jobs::{self, Context, Solvers, Work};
use super::link::{Link, LinkSettings, Turn};
use super::publish::Routes;
use super::shutdown::{Drain, Shutdown};
use crate::config::{QueueType, Settings};
use crate::pool::Pool;
use crate::protocol::{JobError, JobId, Rejection, SolveFn};
use crate::telemetry::Stats;

/// The worker: the solver pool and what outlives a connection.
pub(super) struct Worker {
    connector: Connector,
    link: LinkSettings,
    grace: Duration,
    solvers: Solvers,
    drain: Option<Drain>,
    stats: Arc<Stats>,
}

/// How serving one connection ended.
enum Served {
    /// Done: the jobs held are answered or the grace period is over.
    Finished,
    /// The connection (or one of its channels) failed.
    Lost(anyhow::Error),
}

impl Worker {
    /// The worker of `settings`, its solver threads started; `solve` is
    /// the solver (a parameter so tests can make it fail).
    pub fn new(
        settings: Settings,
        worker_id: Arc<str>,
        stats: Arc<Stats>,
        solve: SolveFn,
    ) -> anyhow::Result<Worker> {
        let broker = crate::broker::Broker::new(&settings.amqp)?;
        let pool =
            Pool::start(settings.worker.threads()).context("cannot start the solver threads")?;
        stats.metrics.solver_threads(pool.threads());
        // Both series from the start, at 0: alerts and sums need them.
        for queue in [
            &settings.amqp.results_queue,
            &settings.amqp.dead_letter_queue,
        ] {
            stats.metrics.queue_unreachable(queue, false);
        }
        let (done, solved) = mpsc::unbounded_channel();
        let ctx = Arc::new(Context {
            limits: settings.limits(),
            worker_id: Arc::clone(&worker_id),
            threads: pool.threads(),
            pool: pool.handle(),
            done,
            solve,
            max_job: settings.worker.max_job(),
            generation: Arc::default(),
            #[cfg(feature = "fault-injection")]
            abort_on_id: super::fault_injection::abort_on_id(),
        });
        let amqp = &settings.amqp;
        Ok(Worker {
            connector: Connector::new(amqp, broker, worker_id, Arc::clone(&stats)),
            link: LinkSettings {
                jobs_queue: amqp.jobs_queue.clone(),
                prefetch: settings.worker.prefetch(),
                counted: amqp.queue_type == QueueType::Quorum,
                routes: Routes::new(amqp),
                call_timeout: amqp.connect_timeout(),
                confirm_timeout: amqp.confirm_timeout(),
            },
            grace: settings.worker.shutdown_grace(),
            solvers: Solvers::new(pool, ctx, solved),
            drain: None,
            stats,
        })
    }

    /// Connects, serves, and on a lost connection forgets it and connects
    /// again, until asked to stop or unable to go on.
    pub async fn run(&mut self, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
        let mut shutdown = Shutdown::new(shutdown);
        loop {
            let opened = self
                .connector
                .open(&mut shutdown, &mut self.solvers)
                .await?;
            let Some(opened) = opened else {
                // Asked to stop while not connected: nothing is held.
                info!(
                    in_progress = 0,
                    grace_secs = self.grace.as_secs(),
                    "shutting down"
                );
                info!(jobs = 0, unfinished = 0, "drained jobs in flight");
                info!("stopped");
                return Ok(());
            };
            let generation = self.solvers.generation();
            let mut link = Link::new(opened, &self.link, generation, Arc::clone(&self.stats));
            self.stats.metrics.connected();
            info!(
                worker = %self.solvers.ctx().worker_id,
                queue = %self.link.jobs_queue,
                threads = self.solvers.threads(),
                prefetch = self.link.prefetch,
                "consuming"
            );
            match self.serve(&mut link, &mut shutdown).await {
                Served::Finished => {
                    self.log_drained(link.in_progress());
                    link.close().await;
                    self.stats.metrics.disconnected();
                    info!("stopped");
                    return Ok(());
                }
                Served::Lost(error) => {
                    self.stats.metrics.disconnected();
                    // Work of the lost connection still queued in the pool is skipped.
                    self.solvers.connection_lost();
                    let returned = link.forget().await;
                    if self.drain.is_some() {
                        warn!(
                            error = format!("{error:#}"),
                            "connection to the broker lost while stopping; the jobs held go back to the queue"
                        );
                        self.log_drained(0);
                        info!("stopped");
                        return Ok(());
                    }
                    warn!(
                        error = format!("{error:#}"),
                        returned, "connection to the broker lost; reconnecting"
                    );
                    self.connector.lost();
                }
            }
        }
    }

    /// Serves one connection until the worker is done or the connection
    /// fails.
    async fn serve<F: Future<Output = ()>>(
        &mut self,
        link: &mut Link,
        shutdown: &mut Shutdown<F>,
    ) -> Served {
        // Keeps /livez fresh while nothing else happens.
        let mut pulse = crate::metrics::pulse();
        loop {
            self.stats.metrics.tick();
            let draining = self.drain.is_some();
            // Read once a turn: lapin's view of it takes a lock.
            let blocked = link.blocked();
            if !blocked {
                match link.advance(draining).await {
                    Ok(Some(work)) => self.admit(link, work),
                    Ok(None) => {}
                    Err(e) => return Served::Lost(e),
                }
            }
            if draining && link.is_done() {
                return Served::Finished;
            }
            let room = !blocked && self.solvers.has_room();
            // Waiting only: whatever wins, the others lose nothing.
            let happened = tokio::select! {
                biased;
                () = shutdown.wait(), if !shutdown.fired() => {
                    self.on_signal(link).await;
                    continue;
                }
                Some(solved) = self.solvers.next() => {
                    if let Some(answered) = solved.answered {
                        link.answer(solved.key, answered);
                    }
                    continue;
                }
                happened = link.next(room, draining) => happened,
                _ = pulse.tick() => continue,
            };
            let turn = link.handle(happened, draining).await;
            match turn {
                Ok(Turn::Handled) => {}
                Ok(Turn::Start(work)) => self.admit(link, work),
                Ok(Turn::GraceOver) => {
                    warn!(
                        unfinished = link.in_progress(),
                        "grace period over: unfinished jobs stay unacknowledged and will be redelivered"
                    );
                    return Served::Finished;
                }
                Err(e) => return Served::Lost(e),
            }
        }
    }

    /// Asked to stop: cancel the consumer and drain within the grace period.
    async fn on_signal(&mut self, link: &mut Link) {
        info!(
            in_progress = link.in_progress(),
            grace_secs = self.grace.as_secs(),
            "shutting down"
        );
        self.stats.metrics.stopping();
        self.drain = Some(Drain {
            answered_before: self.stats.total_jobs(),
        });
        link.start_grace(self.grace);
        link.stop_consuming().await;
    }

    /// Takes a job on: an answer at once (a message over the size limit,
    /// or a job cheap enough to answer on the event loop), else the pool.
    /// A message over `worker.max_message_bytes` is answered `invalid`
    /// unread.
    fn admit(&mut self, link: &mut Link, work: Work) {
        let ctx = self.solvers.ctx();
        let max = ctx.limits.max_message_bytes;
        let size = work.body.len();
        if size > max {
            let rejection = Rejection {
                id: JobId::from_message_id(work.message_id.as_deref()),
                error: JobError::TooLarge { size, max },
            };
            let _entered = work.span.enter();
            let rejected = jobs::rejected(ctx, &work.span, &rejection);
            link.answer(work.key, rejected);
            return;
        }
        // A panic here would take the event loop down: the pool then
        // answers the job, with an `error` result if it panics there too.
        let inline = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            jobs::answer_inline(ctx, &work)
        }));
        if let Ok(Some(answered)) = inline {
            link.answer(work.key, answered);
            return;
        }
        self.solvers.submit(work);
    }

    fn log_drained(&self, unfinished: usize) {
        let answered_before = self
            .drain
            .as_ref()
            .map_or(self.stats.total_jobs(), |drain| drain.answered_before);
        info!(
            jobs = self.stats.total_jobs() - answered_before,
            unfinished, "drained jobs in flight"
        );
    }
}
