//! `sudokud run`: the worker daemon.
//!
//! One task drives everything that touches the broker, as an event loop:
//! it takes deliveries from the jobs queue while the solver pool has room
//! ([`pool`]), hands each job to the pool ([`jobs`]), publishes each result
//! as it comes back (persistent, `mandatory`, to `reply_to` or the results
//! queue), and acknowledges a job once the broker has confirmed its result
//! ([`confirms`]). Publishing never waits for a confirm, so many results
//! are in flight at once; the prefetch (`basic.qos`) bounds how many jobs
//! the worker holds, and the pool bound keeps undone work on the broker,
//! where other workers can take it.
//!
//! Faults ([`Worker::run`]): a lost connection (broker restart, network
//! cut, missed heartbeats, a failed channel) is logged and repaired by
//! reconnecting with exponential backoff and jitter, declaring the topology
//! again and consuming again. Everything tied to the lost connection is
//! dropped: its deliveries can no longer be acknowledged (the broker
//! redelivers them), so their acknowledgement handles, results awaiting a
//! confirm, and answers still being computed are discarded, and the
//! redelivered jobs are answered afresh. The solver threads carry on
//! throughout; work of the lost connection not yet started is skipped.
//! When the broker blocks the connection (a memory or disk alarm), the
//! worker takes no new jobs and holds back its results until it is
//! unblocked. If the broker stays unreachable longer than
//! `amqp.reconnect_give_up_secs`, the worker stops with an error.
//!
//! Shutdown, as in mini-redis: when the `shutdown` future completes, the
//! worker cancels its consumer, answers the jobs it already holds, waits
//! for their confirms and acknowledgements, then closes its channels and
//! connection. Jobs not done when the grace period ends stay
//! unacknowledged, and the broker redelivers them.

mod acks;
mod amqp;
mod backoff;
mod confirms;
mod intake;
mod jobs;
mod pool;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use lapin::Acker;
use lapin::options::BasicPublishOptions;
use lapin::types::ShortString;
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tracing::{Span, debug, error, field, info, info_span, warn};

pub use amqp::{declare_topology, jobs_queue_arguments};

use crate::config::{AmqpSettings, Settings};
use crate::telemetry::{Stats, StatusCounts, report_throughput};
use acks::Acks;
use amqp::{Events, Opened, Session};
use backoff::Backoff;
use confirms::{Confirms, Event};
use intake::{Intake, Pace};
use jobs::{SolveFn, Solved, Work};
use pool::Pool;

/// This process's name in results: `host/pid`.
pub fn worker_id() -> String {
    format!(
        "{}/{}",
        gethostname::gethostname().to_string_lossy(),
        std::process::id()
    )
}

/// Completes on SIGINT or SIGTERM, logging which.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(term) => Some(term),
            Err(e) => {
                warn!(error = %e, "cannot listen for SIGTERM; only SIGINT stops the worker");
                None
            }
        };
        let sigterm = async {
            match term.as_mut() {
                Some(term) => {
                    term.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => info!(signal = "SIGINT", "signal received"),
            () = sigterm => info!(signal = "SIGTERM", "signal received"),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        info!(signal = "SIGINT", "signal received");
    }
}

/// Runs the worker until `shutdown` completes and the jobs in flight are
/// answered (or the grace period ends), then closes the connection.
///
/// A lost connection is re-established, however often; `run` returns an
/// error only when the broker stays unreachable for longer than
/// `amqp.reconnect_give_up_secs`, refuses the login or the queue arguments,
/// or cancels the consumer. Jobs not acknowledged by then are redelivered
/// by the broker.
pub async fn run(settings: Settings, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
    run_with(settings, shutdown, crate::solver::solve).await
}

async fn run_with(
    settings: Settings,
    shutdown: impl Future<Output = ()>,
    solve: SolveFn,
) -> anyhow::Result<()> {
    let worker_id: Arc<str> = worker_id().into();
    let threads = settings.worker.threads();
    let prefetch = settings.worker.prefetch();
    let stats = Arc::new(Stats::default());
    let _metrics_server = crate::metrics::serve(&settings.metrics, Arc::clone(&stats)).await?;
    let reporter = settings
        .log
        .throughput_interval()
        .map(|every| AbortOnDrop(tokio::spawn(report_throughput(Arc::clone(&stats), every))));

    let pool = Pool::start(threads).context("cannot start the solver threads")?;
    stats.metrics.solver_threads(pool.threads());
    let (done, solved) = mpsc::unbounded_channel();
    let ctx = Arc::new(jobs::Context {
        limits: settings.limits(),
        worker_id: Arc::clone(&worker_id),
        threads: pool.threads(),
        pool: pool.handle(),
        done,
        solve,
        session: Arc::new(AtomicU64::new(0)),
        #[cfg(feature = "fault-injection")]
        abort_on_id: fault_injection::abort_on_id(),
    });
    let mut worker = Worker {
        amqp: settings.amqp.clone(),
        prefetch,
        results_queue: settings.amqp.results_queue.as_str().into(),
        grace: settings.worker.shutdown_grace(),
        ctx,
        pool,
        solved,
        jobs: HashMap::new(),
        next_key: 0,
        in_pool: 0,
        confirms: Confirms::new(),
        parked: Vec::new(),
        acks: Acks::new(),
        drain: None,
        stats,
    };
    let outcome = worker.run(shutdown).await;
    if let Some(reporter) = reporter {
        // The last, partial interval, so the lines add up to every job.
        drop(reporter);
        worker.stats.take().log();
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

    pub fn abort_on_id() -> Option<String> {
        let id = std::env::var(ABORT_ON_ID)
            .ok()
            .filter(|id| !id.is_empty())?;
        tracing::warn!(job_id = %id, "fault injection: a job with this id aborts the process");
        Some(id)
    }
}

/// How long the worker waits, after its last acknowledgement and before
/// closing its channels, for the broker to apply it (see `close`).
const ACK_SETTLE_PAUSE: Duration = Duration::from_millis(250);

/// How long acknowledgements already under way may take to be sent when
/// the worker stops.
const ACKS_TIMEOUT: Duration = Duration::from_secs(5);

/// The output of `future` if it is ready at once, without waiting.
fn ready_now<F: Future>(future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(output) => Some(output),
        std::task::Poll::Pending => None,
    }
}

/// Aborts a spawned task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A job the worker holds: delivered, not yet acknowledged.
struct InFlight {
    /// The delivery tag on the current channel.
    tag: u64,
    acker: Acker,
    delivered_at: Instant,
    reply_to: Option<ShortString>,
    correlation_id: Option<ShortString>,
    statuses: StatusCounts,
    span: Span,
}

/// A result message published and not yet settled.
struct Publication {
    /// The job it answers; `None` for a returned result whose job is no
    /// longer known, re-sent to the results queue.
    job: Option<u64>,
    routing_key: ShortString,
    body: Vec<u8>,
    /// The broker returned it: its queue does not exist.
    returned: bool,
}

impl confirms::Published for Publication {
    fn is(&self, message: &lapin::message::BasicReturnMessage) -> bool {
        self.routing_key == message.delivery.routing_key && self.body == message.delivery.data
    }

    fn returned(&self) -> bool {
        self.returned
    }

    fn set_returned(&mut self) {
        self.returned = true;
    }
}

/// The `shutdown` future, polled until it completes and never after.
struct Shutdown<F> {
    future: Pin<Box<F>>,
    fired: bool,
}

impl<F: Future<Output = ()>> Shutdown<F> {
    /// Completes once, when the shutdown future does; then never again.
    async fn wait(&mut self) {
        if self.fired {
            return std::future::pending().await;
        }
        self.future.as_mut().await;
        self.fired = true;
    }
}

/// The worker was told to stop (or the broker cancelled its consumer) and
/// is finishing the jobs it holds.
struct Drain {
    answered_before: u64,
    /// Why the worker stops, if not because it was asked to.
    failure: Option<anyhow::Error>,
}

/// How serving one connection ended.
enum Served {
    /// Done: the jobs held are answered or the grace period is over.
    Finished,
    /// The connection (or one of its channels) failed.
    Lost(anyhow::Error),
}

struct Worker {
    amqp: AmqpSettings,
    prefetch: u16,
    results_queue: ShortString,
    grace: Duration,
    ctx: Arc<jobs::Context>,
    pool: Pool,
    solved: mpsc::UnboundedReceiver<Solved>,
    /// Jobs held, by the worker's own key: delivery tags start again at 1
    /// on every channel, so they cannot tell one connection's jobs from
    /// another's.
    jobs: HashMap<u64, InFlight>,
    next_key: u64,
    /// Jobs handed to the pool whose [`Solved`] has not come back, from
    /// this connection or a lost one: they occupy solver threads either way.
    in_pool: usize,
    confirms: Confirms<Publication>,
    /// Results held back while the broker blocks the connection.
    parked: Vec<Publication>,
    /// Acknowledgements of the current connection's jobs.
    acks: Acks,
    drain: Option<Drain>,
    stats: Arc<Stats>,
}

impl Worker {
    /// Connects, serves, and on a lost connection forgets it and connects
    /// again, until asked to stop or unable to go on.
    async fn run(&mut self, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
        let mut shutdown = Shutdown {
            future: Box::pin(shutdown),
            fired: false,
        };
        let mut backoff = Backoff::new(self.amqp.reconnect_initial(), self.amqp.reconnect_max());
        let mut lost_at: Option<Instant> = None;
        loop {
            let Some(Opened {
                session,
                consumer,
                mut events,
            }) = self
                .connect(
                    &mut shutdown,
                    &mut backoff,
                    lost_at.unwrap_or_else(Instant::now),
                )
                .await?
            else {
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
            if let Some(lost_at) = lost_at.take() {
                self.stats.metrics.reconnected();
                info!(
                    outage_secs = round_secs(lost_at.elapsed()),
                    attempts = backoff.attempts(),
                    "reconnected"
                );
            }
            let mut intake = Intake::new(consumer, &self.amqp.jobs_queue, self.prefetch);
            let opened_at = Instant::now();
            self.stats.metrics.connected();
            info!(
                worker = %self.ctx.worker_id,
                queue = %self.amqp.jobs_queue,
                threads = self.pool.threads(),
                prefetch = self.prefetch,
                "consuming"
            );
            match self
                .serve(&session, &mut intake, &mut events, &mut shutdown)
                .await
            {
                Served::Finished => {
                    self.log_drained();
                    self.close(&session).await;
                    self.stats.metrics.disconnected();
                    return match self.drain.take().and_then(|drain| drain.failure) {
                        Some(failure) => Err(failure),
                        None => Ok(()),
                    };
                }
                Served::Lost(error) => {
                    self.stats.metrics.disconnected();
                    let returned = self.forget_connection() + intake.forget();
                    // Only a channel may have failed: close the rest.
                    amqp::close_quietly(&session.connection).await;
                    drop(session);
                    if self.drain.is_some() {
                        warn!(
                            error = format!("{error:#}"),
                            "connection to the broker lost while stopping; the jobs held go back to the queue"
                        );
                        self.log_drained();
                        info!("stopped");
                        return match self.drain.take().and_then(|drain| drain.failure) {
                            Some(failure) => Err(failure),
                            None => Ok(()),
                        };
                    }
                    warn!(
                        error = format!("{error:#}"),
                        returned, "connection to the broker lost; reconnecting"
                    );
                    // A connection that stayed up a while starts the waits
                    // afresh; one that failed at once keeps backing off.
                    if opened_at.elapsed() >= self.amqp.reconnect_max() {
                        backoff.reset();
                    }
                    lost_at = Some(Instant::now());
                }
            }
        }
    }

    /// Opens a connection, retrying with backoff. `Ok(None)`: asked to stop
    /// meanwhile. Errors: a permanent refusal, or the broker unreachable
    /// for longer than `amqp.reconnect_give_up_secs` since `since`.
    async fn connect<F: Future<Output = ()>>(
        &mut self,
        shutdown: &mut Shutdown<F>,
        backoff: &mut Backoff,
        since: Instant,
    ) -> anyhow::Result<Option<Opened>> {
        let mut pulse = crate::metrics::pulse();
        loop {
            let amqp = self.amqp.clone();
            let worker_id = Arc::clone(&self.ctx.worker_id);
            let mut attempt = std::pin::pin!(async move { Session::open(&amqp, &worker_id).await });
            let opened = loop {
                tokio::select! {
                    biased;
                    () = shutdown.wait(), if !shutdown.fired => return Ok(None),
                    opened = &mut attempt => break opened,
                    Some(solved) = self.solved.recv() => self.discard(solved),
                    _ = pulse.tick() => self.stats.metrics.tick(),
                }
            };
            let error = match opened {
                Ok(opened) => return Ok(Some(opened)),
                Err(e) if amqp::is_permanent(&e) => return Err(e),
                Err(e) => e,
            };
            let down = since.elapsed();
            if let Some(limit) = self.amqp.reconnect_give_up()
                && down >= limit
            {
                return Err(error.context(format!(
                    "the broker has been unreachable for {} s (amqp.reconnect_give_up_secs is {})",
                    round_secs(down),
                    limit.as_secs()
                )));
            }
            let mut wait = backoff.next_delay();
            if let Some(limit) = self.amqp.reconnect_give_up() {
                // One last attempt when the time is up.
                wait = wait.min(limit.saturating_sub(down));
            }
            warn!(
                error = format!("{error:#}"),
                attempt = backoff.attempts(),
                retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                "cannot reach the broker; retrying"
            );
            let mut pause = std::pin::pin!(tokio::time::sleep(wait));
            loop {
                tokio::select! {
                    biased;
                    () = shutdown.wait(), if !shutdown.fired => return Ok(None),
                    () = &mut pause => break,
                    Some(solved) = self.solved.recv() => self.discard(solved),
                    _ = pulse.tick() => self.stats.metrics.tick(),
                }
            }
        }
    }

    /// Serves one connection until the worker is done or the connection
    /// fails.
    async fn serve<F: Future<Output = ()>>(
        &mut self,
        session: &Session,
        intake: &mut Intake,
        events: &mut Events,
        shutdown: &mut Shutdown<F>,
    ) -> Served {
        // Armed when draining starts; polled only from then on.
        let mut grace_over = std::pin::pin!(tokio::time::sleep(Duration::ZERO));
        let mut events_open = true;
        let mut blocked_at: Option<Instant> = None;
        let mut pulse = crate::metrics::pulse();
        loop {
            self.stats.metrics.tick();
            if blocked_at.is_none()
                && let Err(e) = self.advance(session, intake).await
            {
                return Served::Lost(e);
            }
            if self.drain.is_some()
                && !intake.consuming()
                && !intake.has_suspects()
                && self.jobs.is_empty()
                && self.confirms.is_empty()
            {
                return Served::Finished;
            }
            tokio::select! {
                biased;
                () = shutdown.wait(), if !shutdown.fired => {
                    info!(
                        in_progress = self.jobs.len() + intake.suspects(),
                        grace_secs = self.grace.as_secs(),
                        "shutting down"
                    );
                    self.start_drain(None);
                    grace_over.as_mut().reset(tokio::time::Instant::now() + self.grace);
                    if let Err(e) = bounded(intake.cancel(&session.jobs), self.amqp.connect_timeout()).await {
                        warn!(error = format!("{e:#}"), "cannot cancel the consumer");
                        intake.ended();
                    }
                }
                () = &mut grace_over, if self.drain.is_some() => {
                    warn!(
                        unfinished = self.jobs.len() + intake.suspects(),
                        "grace period over: unfinished jobs stay unacknowledged and will be redelivered"
                    );
                    return Served::Finished;
                }
                event = events.next(), if events_open => match event {
                    Some(lapin::Event::ConnectionBlocked(reason)) => {
                        if blocked_at.is_none() {
                            warn!(
                                reason = %reason,
                                in_progress = self.jobs.len(),
                                "the broker blocked the connection (resource alarm); taking no new jobs and holding results until it unblocks"
                            );
                            blocked_at = Some(Instant::now());
                        }
                    }
                    Some(lapin::Event::ConnectionUnblocked) => {
                        if let Some(since) = blocked_at.take() {
                            info!(
                                blocked_secs = round_secs(since.elapsed()),
                                held_results = self.parked.len(),
                                "the broker unblocked the connection; taking jobs again"
                            );
                        }
                        for publication in std::mem::take(&mut self.parked) {
                            if let Err(e) = self.publish(session, publication).await {
                                return Served::Lost(e);
                            }
                        }
                    }
                    Some(lapin::Event::Error(e)) => {
                        return Served::Lost(anyhow::Error::from(e).context("the connection failed"));
                    }
                    Some(_) => {}
                    None => events_open = false,
                },
                Some(solved) = self.solved.recv() => {
                    self.in_pool -= 1;
                    if let Some(publication) = self.result_of(solved) {
                        if blocked_at.is_some() {
                            self.parked.push(publication);
                        } else if let Err(e) = self.publish(session, publication).await {
                            return Served::Lost(e);
                        }
                    }
                }
                event = self.confirms.next(), if !self.confirms.is_empty() => {
                    // Settle every confirm that has come in, then
                    // acknowledge their jobs together.
                    let mut event = Some(event);
                    while let Some(confirmed) = event {
                        match self.settle(confirmed) {
                            Ok(None) => {}
                            Ok(Some(fallback)) if blocked_at.is_some() => self.parked.push(fallback),
                            Ok(Some(fallback)) => {
                                if let Err(e) = self.publish(session, fallback).await {
                                    return Served::Lost(e);
                                }
                            }
                            Err(e) => return Served::Lost(e),
                        }
                        event = if self.confirms.is_empty() {
                            None
                        } else {
                            ready_now(self.confirms.next())
                        };
                    }
                    self.acks.flush();
                }
                // Wakes the loop when the last acknowledgements are out:
                // redelivered jobs wait for that to run alone.
                () = self.acks.all_sent(), if self.acks.sending() => {}
                // Wakes the loop at least once a second (see `/livez`).
                _ = pulse.tick() => {}
                delivery = intake.next(),
                    if blocked_at.is_none() && self.in_pool < self.pool.capacity() =>
                {
                    match delivery {
                        Some(Ok(delivery)) => {
                            // Held from now on, whether it runs now or
                            // waits as a suspect: no `multiple`
                            // acknowledgement may cover it unanswered.
                            self.acks.hold(delivery.delivery_tag);
                            let alone = self.jobs.is_empty();
                            let (now, cancel) = intake.sort(delivery, alone);
                            if let Some(delivery) = now {
                                self.admit(delivery);
                            } else if cancel {
                                info!(
                                    in_progress = self.jobs.len(),
                                    "a redelivered job arrived: finishing the jobs held, then running redelivered jobs one at a time"
                                );
                            }
                            if cancel
                                && self.drain.is_none()
                                && let Err(e) = intake.cancel(&session.jobs).await
                            {
                                return Served::Lost(e);
                            }
                        }
                        Some(Err(e)) => {
                            return Served::Lost(anyhow::Error::from(e).context("the jobs channel failed"));
                        }
                        None => {
                            if !intake.ended() && self.drain.is_none() {
                                error!("the broker cancelled the consumer (was the jobs queue deleted?); stopping");
                                self.start_drain(Some(anyhow::anyhow!("the broker cancelled the consumer")));
                                grace_over.as_mut().reset(tokio::time::Instant::now() + self.grace);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Between consumers: starts the next suspect once it can run alone,
    /// or, with none left, starts the next consumer (unless stopping).
    async fn advance(&mut self, session: &Session, intake: &mut Intake) -> anyhow::Result<()> {
        if intake.consuming() || intake.cancelling() {
            return Ok(());
        }
        if intake.has_suspects() {
            let alone = self.jobs.is_empty() && self.confirms.is_empty() && self.acks.is_idle();
            if !alone {
                return Ok(());
            }
            // A round trip on the jobs channel: the broker has read the
            // acknowledgements sent before it, so a crash on the next job
            // cannot take the previous ones back.
            session
                .jobs
                .basic_qos(1, lapin::options::BasicQosOptions { global: false })
                .await
                .context("cannot reach the broker on the jobs channel")?;
            if let Some(delivery) = intake.take_suspect() {
                debug!(left = intake.suspects(), "running a redelivered job alone");
                self.admit(delivery);
            }
            return Ok(());
        }
        if self.drain.is_none() {
            intake.subscribe(&session.jobs).await?;
            debug!(
                pace = if intake.pace() == Pace::Full {
                    "full"
                } else {
                    "careful"
                },
                "consuming again"
            );
        }
        Ok(())
    }

    fn start_drain(&mut self, failure: Option<anyhow::Error>) {
        self.stats.metrics.stopping();
        self.drain = Some(Drain {
            answered_before: self.stats.total_jobs(),
            failure,
        });
    }

    fn log_drained(&self) {
        let answered_before = self
            .drain
            .as_ref()
            .map_or(self.stats.total_jobs(), |drain| drain.answered_before);
        info!(
            jobs = self.stats.total_jobs() - answered_before,
            unfinished = self.jobs.len(),
            "drained jobs in flight"
        );
    }

    /// Drops everything tied to a lost connection; returns how many jobs
    /// it held (the broker redelivers them).
    fn forget_connection(&mut self) -> usize {
        // Work of the lost connection still queued in the pool is skipped.
        self.ctx.session.fetch_add(1, Ordering::AcqRel);
        let held = self.jobs.len();
        for _ in 0..held {
            self.stats.job_returned();
        }
        self.jobs.clear();
        self.confirms = Confirms::new();
        self.parked.clear();
        // Acknowledgements not yet sent on the dead channel mean nothing
        // now; dropping them is all there is to do.
        self.acks = Acks::new();
        held
    }

    /// A pool result that arrived while no connection was open.
    fn discard(&mut self, solved: Solved) {
        self.in_pool -= 1;
        debug_assert!(!self.jobs.contains_key(&solved.key));
    }

    fn admit(&mut self, delivery: lapin::message::Delivery) {
        let key = self.next_key;
        self.next_key += 1;
        let span = info_span!(
            "job",
            job_id = field::Empty,
            delivery_tag = delivery.delivery_tag
        );
        let properties = &delivery.properties;
        let reply_to = properties
            .reply_to()
            .clone()
            .filter(|queue| !queue.as_str().is_empty());
        let correlation_id = amqp::reply_correlation(properties);
        let message_id = properties.message_id().as_ref().map(|id| id.to_string());
        if delivery.redelivered {
            debug!(parent: &span, "redelivered job");
        }
        self.stats.job_received();
        self.jobs.insert(
            key,
            InFlight {
                tag: delivery.delivery_tag,
                acker: delivery.acker,
                delivered_at: Instant::now(),
                reply_to,
                correlation_id,
                statuses: StatusCounts::default(),
                span: span.clone(),
            },
        );
        self.in_pool += 1;
        jobs::start(
            &self.ctx,
            Work {
                key,
                body: delivery.data,
                message_id,
                span,
                session: self.ctx.session.load(Ordering::Acquire),
            },
        );
    }

    /// The result message to publish for a job back from the pool; `None`
    /// when the job belonged to a lost connection.
    fn result_of(&mut self, solved: Solved) -> Option<Publication> {
        let Some(job) = self.jobs.get_mut(&solved.key) else {
            debug!(
                key = solved.key,
                "answer to a job of a lost connection dropped; the broker redelivers the job"
            );
            return None;
        };
        let body = solved.body?;
        job.statuses = solved.statuses;
        let routing_key = job
            .reply_to
            .clone()
            .unwrap_or_else(|| self.results_queue.clone());
        Some(Publication {
            job: Some(solved.key),
            routing_key,
            body,
            returned: false,
        })
    }

    /// Publishes a result without waiting for its confirm. An error means
    /// the channel failed.
    async fn publish(&mut self, session: &Session, publication: Publication) -> anyhow::Result<()> {
        let correlation_id = publication
            .job
            .and_then(|key| self.jobs.get(&key))
            .and_then(|job| job.correlation_id.as_ref());
        let properties = amqp::result_properties(correlation_id);
        let confirm = session
            .results
            .basic_publish(
                ShortString::from(""),
                publication.routing_key.clone(),
                BasicPublishOptions {
                    mandatory: true,
                    immediate: false,
                },
                &publication.body,
                properties,
            )
            .await
            .context("cannot publish a result")?;
        self.confirms.push(confirm, publication);
        Ok(())
    }

    /// Acts on a confirm: acknowledges the job, or, if the broker returned
    /// the result, gives back the publication to send to the results queue
    /// instead. An error means the channel failed.
    fn settle(&mut self, event: Event<Publication>) -> anyhow::Result<Option<Publication>> {
        let (publication, acked) = match event {
            Event::Settled(publication, acked) => (
                publication,
                acked.context("lost the publisher confirm of a result")?,
            ),
            Event::Orphan(message) => {
                warn!(
                    routing_key = %message.delivery.routing_key,
                    "a returned result matches no result in flight; sending it to the results queue"
                );
                return Ok(Some(Publication {
                    job: None,
                    routing_key: self.results_queue.clone(),
                    body: message.delivery.data,
                    returned: false,
                }));
            }
        };
        let Some(key) = publication.job else {
            if publication.returned {
                error!(results_queue = %self.results_queue, "the results queue does not exist; a returned result is lost");
            }
            return Ok(None);
        };
        if !acked {
            warn!(
                routing_key = %publication.routing_key,
                "the broker refused a result (nack); the job goes back to the queue"
            );
            self.requeue(key);
            return Ok(None);
        }
        if publication.returned {
            if publication.routing_key == self.results_queue {
                error!(results_queue = %self.results_queue, "the results queue does not exist; the job goes back to the queue");
                self.requeue(key);
                return Ok(None);
            }
            if let Some(job) = self.jobs.get(&key) {
                warn!(
                    parent: &job.span,
                    reply_to = %publication.routing_key,
                    results_queue = %self.results_queue,
                    "reply_to queue does not exist; sending the result to the results queue"
                );
            }
            return Ok(Some(Publication {
                job: Some(key),
                routing_key: self.results_queue.clone(),
                body: publication.body,
                returned: false,
            }));
        }
        if let Some(job) = self.jobs.remove(&key) {
            self.stats
                .job_answered(&job.statuses, job.delivered_at.elapsed());
            debug!(parent: &job.span, routing_key = %publication.routing_key, "answered");
            // Acknowledged at the next flush, with the others confirmed
            // meanwhile.
            self.acks.ready(job.tag, job.acker, job.span);
        }
        Ok(None)
    }

    /// Hands a job back to the broker unanswered.
    fn requeue(&mut self, key: u64) {
        if let Some(job) = self.jobs.remove(&key) {
            self.stats.job_returned();
            self.acks.nack(job.tag, job.acker, job.span);
        }
    }

    /// Waits for acknowledgements under way, then closes the channels and
    /// the connection. Unacknowledged jobs go back to the queue.
    async fn close(&mut self, session: &Session) {
        if !self.acks.drain(ACKS_TIMEOUT).await {
            warn!("acknowledgements not sent in time; the broker will redeliver those jobs");
        }
        if let Some(last) = self.acks.last_sent_at() {
            // A quorum queue may drop acknowledgements that reach it just
            // before their channel closes (RabbitMQ issue #10327): the
            // channel holds back some while earlier ones are applied, and
            // forgets them on close. Those jobs would be answered twice.
            // A short pause after the last one lets the broker apply them
            // first.
            tokio::time::sleep_until((last + ACK_SETTLE_PAUSE).into()).await;
        }
        session.close().await;
        info!("stopped");
    }
}

/// `future`, or an error after `limit`.
async fn bounded<T>(
    future: impl Future<Output = anyhow::Result<T>>,
    limit: Duration,
) -> anyhow::Result<T> {
    tokio::time::timeout(limit, future)
        .await
        .unwrap_or_else(|_| Err(anyhow::anyhow!("no answer within {} s", limit.as_secs())))
}

/// Seconds, to a tenth, for logs.
fn round_secs(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 10.0).round() / 10.0
}
