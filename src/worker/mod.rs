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
//! Shutdown, as in mini-redis: when the `shutdown` future completes, the
//! worker cancels its consumer, answers the jobs it already holds, waits
//! for their confirms and acknowledgements, then closes its channels and
//! connection. Jobs not done when the grace period ends stay
//! unacknowledged, and the broker redelivers them.

mod amqp;
mod confirms;
mod jobs;
mod pool;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use lapin::Acker;
use lapin::options::{BasicAckOptions, BasicCancelOptions, BasicNackOptions, BasicPublishOptions};
use lapin::types::ShortString;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_stream::StreamExt;
use tracing::{Span, debug, error, field, info, info_span, warn};

pub use amqp::{declare_topology, jobs_queue_arguments};

use crate::config::Settings;
use crate::telemetry::{Stats, StatusCounts, report_throughput};
use amqp::Session;
use confirms::{Confirms, Event};
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
/// Returns an error when the broker cannot be reached or the connection
/// fails; jobs not acknowledged by then are redelivered by the broker.
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
    let reporter = settings
        .log
        .throughput_interval()
        .map(|every| AbortOnDrop(tokio::spawn(report_throughput(Arc::clone(&stats), every))));

    let session = Session::open(&settings.amqp, prefetch, &worker_id).await?;
    let pool = Pool::start(threads).context("cannot start the solver threads")?;
    let (done, solved) = mpsc::unbounded_channel();
    let ctx = Arc::new(jobs::Context {
        limits: settings.limits(),
        worker_id: Arc::clone(&worker_id),
        threads: pool.threads(),
        pool: pool.handle(),
        done,
        solve,
    });
    info!(
        worker = %worker_id,
        queue = %settings.amqp.jobs_queue,
        threads = pool.threads(),
        prefetch,
        "consuming"
    );
    let mut worker = Worker {
        results_queue: settings.amqp.results_queue.as_str().into(),
        grace: settings.worker.shutdown_grace(),
        session,
        ctx,
        pool,
        solved,
        jobs: HashMap::new(),
        in_pool: 0,
        confirms: Confirms::new(),
        acks: JoinSet::new(),
        stats,
    };
    let served = worker.serve(shutdown).await;
    if let Some(reporter) = reporter {
        // The last, partial interval, so the lines add up to every job.
        drop(reporter);
        worker.stats.take().log();
    }
    worker.close().await;
    served
}

/// How long the worker waits, after its last acknowledgements and before
/// closing its channels, for the broker to apply them (see `close`).
const ACK_SETTLE_PAUSE: Duration = Duration::from_millis(250);

/// Aborts a spawned task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A job the worker holds: delivered, not yet acknowledged.
struct InFlight {
    acker: Acker,
    delivered_at: Instant,
    reply_to: Option<ShortString>,
    correlation_id: Option<ShortString>,
    statuses: StatusCounts,
    span: Span,
}

/// A result message published and not yet settled.
struct Publication {
    /// The job it answers (its delivery tag); `None` for a returned result
    /// whose job is no longer known, re-sent to the results queue.
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

struct Worker {
    results_queue: ShortString,
    grace: Duration,
    session: Session,
    ctx: Arc<jobs::Context>,
    pool: Pool,
    solved: mpsc::UnboundedReceiver<Solved>,
    jobs: HashMap<u64, InFlight>,
    /// Jobs handed to the pool whose result has not come back.
    in_pool: usize,
    confirms: Confirms<Publication>,
    acks: JoinSet<()>,
    stats: Arc<Stats>,
}

impl Worker {
    async fn serve(&mut self, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
        let mut shutdown = std::pin::pin!(shutdown);
        // Armed when shutdown starts; polled only from then on.
        let mut grace_over = std::pin::pin!(tokio::time::sleep(Duration::ZERO));
        let mut draining = false;
        let mut consuming = true;
        let mut answered_before_shutdown = 0;
        let mut outcome = Ok(());
        loop {
            if !consuming && self.jobs.is_empty() && self.confirms.is_empty() {
                break;
            }
            tokio::select! {
                biased;
                () = &mut shutdown, if !draining => {
                    info!(in_progress = self.jobs.len(), grace_secs = self.grace.as_secs(), "shutting down");
                    draining = true;
                    grace_over.as_mut().reset(tokio::time::Instant::now() + self.grace);
                    answered_before_shutdown = self.stats.total_jobs();
                    if consuming {
                        consuming = self.cancel_consumer().await;
                    }
                }
                () = &mut grace_over, if draining => {
                    warn!(
                        unfinished = self.jobs.len(),
                        "grace period over: unfinished jobs stay unacknowledged and will be redelivered"
                    );
                    break;
                }
                Some(solved) = self.solved.recv() => {
                    self.in_pool -= 1;
                    self.publish_result(solved).await?;
                }
                event = self.confirms.next(), if !self.confirms.is_empty() => {
                    if let Some(fallback) = self.settle(event)? {
                        self.publish(fallback).await?;
                    }
                }
                delivery = self.session.consumer.next(), if consuming && self.in_pool < self.pool.capacity() => {
                    match delivery {
                        Some(Ok(delivery)) => self.admit(delivery),
                        Some(Err(e)) => return Err(e).context("the jobs channel failed"),
                        None => {
                            consuming = false;
                            if !draining {
                                error!("the broker cancelled the consumer (was the jobs queue deleted?); stopping");
                                outcome = Err(anyhow::anyhow!("the broker cancelled the consumer"));
                                draining = true;
                                grace_over.as_mut().reset(tokio::time::Instant::now() + self.grace);
                                answered_before_shutdown = self.stats.total_jobs();
                            }
                        }
                    }
                }
            }
        }
        info!(
            jobs = self.stats.total_jobs() - answered_before_shutdown,
            unfinished = self.jobs.len(),
            "drained jobs in flight"
        );
        outcome
    }

    /// Stops deliveries; the consumer stream then yields what the broker
    /// already sent and ends. Returns whether the stream is still open.
    async fn cancel_consumer(&mut self) -> bool {
        let tag = self.session.consumer.tag();
        match self
            .session
            .jobs
            .basic_cancel(tag, BasicCancelOptions::default())
            .await
        {
            Ok(()) => true,
            Err(e) => {
                warn!(error = %e, "cannot cancel the consumer");
                false
            }
        }
    }

    fn admit(&mut self, delivery: lapin::message::Delivery) {
        let key = delivery.delivery_tag;
        let span = info_span!("job", job_id = field::Empty, delivery_tag = key);
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
            },
        );
    }

    async fn publish_result(&mut self, solved: Solved) -> anyhow::Result<()> {
        let Some(job) = self.jobs.get_mut(&solved.key) else {
            error!(
                delivery_tag = solved.key,
                "a result for a job the worker does not hold"
            );
            return Ok(());
        };
        job.statuses = solved.statuses;
        let routing_key = job
            .reply_to
            .clone()
            .unwrap_or_else(|| self.results_queue.clone());
        self.publish(Publication {
            job: Some(solved.key),
            routing_key,
            body: solved.body,
            returned: false,
        })
        .await
    }

    /// Publishes a result without waiting for its confirm.
    async fn publish(&mut self, publication: Publication) -> anyhow::Result<()> {
        let correlation_id = publication
            .job
            .and_then(|key| self.jobs.get(&key))
            .and_then(|job| job.correlation_id.as_ref());
        let properties = amqp::result_properties(correlation_id);
        let confirm = self
            .session
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
    /// instead.
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
            let span = job.span;
            let acker = job.acker;
            self.acks.spawn(async move {
                match acker.ack(BasicAckOptions::default()).await {
                    Ok(true) => {}
                    Ok(false) => error!(parent: &span, "acknowledgement not sent: the channel is closed; the broker will redeliver the job"),
                    Err(e) => error!(parent: &span, error = %e, "cannot acknowledge a job; the broker will redeliver it"),
                }
            });
            // Finished acknowledgements are reaped here rather than waited
            // for; `close` waits for the rest.
            while self.acks.try_join_next().is_some() {}
        }
        Ok(None)
    }

    /// Hands a job back to the broker unanswered.
    fn requeue(&mut self, key: u64) {
        if let Some(job) = self.jobs.remove(&key) {
            self.stats.job_returned();
            let span = job.span;
            let acker = job.acker;
            self.acks.spawn(async move {
                let options = BasicNackOptions {
                    multiple: false,
                    requeue: true,
                };
                if let Err(e) = acker.nack(options).await {
                    error!(parent: &span, error = %e, "cannot requeue a job; the broker will redeliver it");
                }
            });
        }
    }

    /// Waits for acknowledgements under way, then closes the channels and
    /// the connection. Unacknowledged jobs go back to the queue.
    async fn close(mut self) {
        let mut acked = !self.acks.is_empty();
        while let Some(joined) = self.acks.join_next().await {
            acked = true;
            if let Err(e) = joined {
                error!(error = %e, "an acknowledgement task failed");
            }
        }
        drop(self.pool);
        if acked {
            // A quorum queue may drop acknowledgements that reach it just
            // before their channel closes (RabbitMQ issue #10327): the
            // channel holds back some while earlier ones are applied, and
            // forgets them on close. Those jobs would be answered twice.
            // A short pause lets the broker apply them first.
            tokio::time::sleep(ACK_SETTLE_PAUSE).await;
        }
        for (name, channel) in [
            ("results", &self.session.results),
            ("jobs", &self.session.jobs),
        ] {
            if let Err(e) = channel
                .close(200, ShortString::from("worker stopping"))
                .await
            {
                debug!(channel = name, error = %e, "channel already closed");
            }
        }
        if let Err(e) = self
            .session
            .connection
            .close(200, ShortString::from("worker stopping"))
            .await
        {
            debug!(error = %e, "connection already closed");
        }
        info!("stopped");
    }
}
