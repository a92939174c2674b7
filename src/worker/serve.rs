//! The worker's event loop: one task that owns everything touching the
//! broker. It connects (retrying with backoff), then serves the connection
//! by reacting to one event at a time, each with its own handler:
//!
//! | event | handler |
//! |---|---|
//! | the shutdown future completes | [`Worker::on_signal`] |
//! | the grace period ends | `serve` returns [`Served::Finished`] |
//! | a connection event (blocked, unblocked, failed) | [`Worker::on_broker_event`] |
//! | an answer comes back from the pool | [`Worker::on_solved`] |
//! | the broker settles published answers | [`Worker::on_confirms`] |
//! | a delivery from the jobs queue | [`Worker::on_delivery`] |
//!
//! A handler's error means the connection is lost: everything tied to it
//! (the [`Link`]) is dropped, and the worker connects again.
//!
//! A delivery the handlers take on goes through `Worker::admit` (in
//! `admit.rs`).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use lapin::options::BasicQosOptions;
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tracing::{debug, info, warn};

use super::backoff::Backoff;
use super::confirms::Event;
use super::connect::round_secs;
use super::held::{Publication, Routes};
use super::intake::Pace;
use super::jobs::{self, Solved};
use super::link::{Link, Next};
use super::shutdown::{Drain, Shutdown};
use crate::config::{AmqpSettings, QueueType};
use crate::pool::Pool;
use crate::telemetry::Stats;

/// The worker: the solver pool and what outlives a connection.
pub(super) struct Worker {
    pub amqp: AmqpSettings,
    pub broker: crate::broker::Broker,
    pub prefetch: u16,
    pub routes: Routes,
    pub grace: Duration,
    pub ctx: Arc<jobs::Context>,
    pub pool: Pool,
    pub solved: mpsc::UnboundedReceiver<Solved>,
    /// The next job's key. Delivery tags start again at 1 on every
    /// channel, so they cannot tell one connection's jobs from another's.
    pub next_key: u64,
    /// Jobs handed to the pool whose [`Solved`] has not come back, from
    /// this connection or a lost one: they occupy solver threads either way.
    pub in_pool: usize,
    pub drain: Option<Drain>,
    pub stats: Arc<Stats>,
}

/// How serving one connection ended.
enum Served {
    /// Done: the jobs held are answered or the grace period is over.
    Finished,
    /// The connection (or one of its channels) failed.
    Lost(anyhow::Error),
}

impl Worker {
    /// Connects, serves, and on a lost connection forgets it and connects
    /// again, until asked to stop or unable to go on.
    pub async fn run(&mut self, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
        let mut shutdown = Shutdown::new(shutdown);
        let mut backoff = Backoff::new(self.amqp.reconnect_initial(), self.amqp.reconnect_max());
        let mut lost_at: Option<Instant> = None;
        loop {
            let since = lost_at.unwrap_or_else(Instant::now);
            let Some(opened) = self.connect(&mut shutdown, &mut backoff, since).await? else {
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
            let mut link = Link::new(
                opened,
                &self.amqp.jobs_queue,
                self.prefetch,
                self.amqp.queue_type == QueueType::Quorum,
                self.routes.clone(),
                Arc::clone(&self.stats),
            );
            let opened_at = Instant::now();
            self.stats.metrics.connected();
            info!(
                worker = %self.ctx.worker_id,
                queue = %self.amqp.jobs_queue,
                threads = self.pool.threads(),
                prefetch = self.prefetch,
                "consuming"
            );
            match self.serve(&mut link, &mut shutdown).await {
                Served::Finished => {
                    self.log_drained(link.jobs.len());
                    link.close().await;
                    self.stats.metrics.disconnected();
                    info!("stopped");
                    return self.outcome();
                }
                Served::Lost(error) => {
                    self.stats.metrics.disconnected();
                    // Work of the lost connection still queued in the pool is skipped.
                    self.ctx.generation.fetch_add(1, Ordering::AcqRel);
                    let returned = link.forget().await;
                    if self.drain.is_some() {
                        warn!(
                            error = format!("{error:#}"),
                            "connection to the broker lost while stopping; the jobs held go back to the queue"
                        );
                        self.log_drained(0);
                        info!("stopped");
                        return self.outcome();
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

    /// How the worker's run ends once it has stopped.
    fn outcome(&mut self) -> anyhow::Result<()> {
        match self.drain.take().and_then(|drain| drain.failure) {
            Some(failure) => Err(failure),
            None => Ok(()),
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
            // Read once a turn: lapin's view of it takes a lock.
            let blocked = link.blocked();
            if !blocked && let Err(e) = self.advance(link).await {
                return Served::Lost(e);
            }
            if self.drain.is_some()
                && !link.intake.consuming()
                && !link.intake.has_suspects()
                && link.jobs.is_empty()
                && link.confirms.is_empty()
            {
                return Served::Finished;
            }
            let room = !blocked && self.in_pool < self.pool.capacity();
            let handled = tokio::select! {
                biased;
                () = shutdown.wait(), if !shutdown.fired() => {
                    self.on_signal(link).await;
                    Ok(())
                }
                () = &mut link.grace_over, if self.drain.is_some() => {
                    warn!(
                        unfinished = link.in_progress(),
                        "grace period over: unfinished jobs stay unacknowledged and will be redelivered"
                    );
                    return Served::Finished;
                }
                event = link.events.next(), if link.events_open => self.on_broker_event(link, event).await,
                Some(solved) = self.solved.recv() => {
                    self.on_solved(link, solved);
                    Ok(())
                }
                event = link.confirms.next(), if !link.confirms.is_empty() => {
                    self.on_confirms(link, event).await
                }
                // Wakes the loop when the last acknowledgements are out:
                // redelivered jobs wait for that to run alone.
                () = link.acks.all_sent(), if link.acks.sending() => Ok(()),
                _ = pulse.tick() => Ok(()),
                delivery = link.intake.next(), if room => self.on_delivery(link, delivery).await,
            };
            if let Err(e) = handled {
                return Served::Lost(e);
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
        self.start_drain(link, None);
        let cancel = link.intake.cancel(&link.session.jobs);
        if let Err(e) = bounded(cancel, self.amqp.connect_timeout()).await {
            warn!(error = format!("{e:#}"), "cannot cancel the consumer");
            link.intake.mark_ended();
        }
    }

    /// A connection event: a resource alarm begins or ends, or the
    /// connection failed.
    async fn on_broker_event(
        &mut self,
        link: &mut Link,
        event: Option<lapin::Event>,
    ) -> anyhow::Result<()> {
        match event {
            Some(lapin::Event::ConnectionBlocked(reason)) => {
                if link.blocked_at.is_none() {
                    warn!(
                        reason = %reason,
                        in_progress = link.jobs.len(),
                        "the broker blocked the connection (resource alarm); taking no new jobs and holding results until it unblocks"
                    );
                    link.blocked_at = Some(Instant::now());
                    self.stats.metrics.blocked(true);
                }
            }
            Some(lapin::Event::ConnectionUnblocked) => {
                self.stats.metrics.blocked(false);
                if let Some(since) = link.blocked_at.take() {
                    info!(
                        blocked_secs = round_secs(since.elapsed()),
                        held_results = link.parked.len(),
                        "the broker unblocked the connection; taking jobs again"
                    );
                }
                for publication in std::mem::take(&mut link.parked) {
                    link.publish(publication);
                }
            }
            Some(lapin::Event::Error(e)) => {
                return Err(anyhow::Error::from(e).context("the connection failed"));
            }
            Some(_) => {}
            None => link.events_open = false,
        }
        Ok(())
    }

    /// An answer back from the pool: publish it (or park it while blocked).
    fn on_solved(&mut self, link: &mut Link, solved: Solved) {
        self.in_pool -= 1;
        let Some(body) = solved.body else {
            return;
        };
        let Some(publication) = link.answered(solved.key, body, solved.statuses) else {
            debug!(
                key = solved.key,
                "answer to a job of a lost connection dropped; the broker redelivers the job"
            );
            return;
        };
        link.publish_or_park(publication);
    }

    /// Settles every confirm that has come in, then acknowledges their jobs
    /// together.
    async fn on_confirms(
        &mut self,
        link: &mut Link,
        first: Event<Publication>,
    ) -> anyhow::Result<()> {
        let mut event = Some(first);
        while let Some(confirmed) = event {
            match link.settle(confirmed)? {
                Next::Nothing => {}
                Next::Publish(publication) => link.publish_or_park(publication),
                Next::Redeclare(publication) => {
                    bounded(
                        link.redeclare_results_queue(crate::broker::results_queue_arguments(
                            &self.amqp,
                        )),
                        self.amqp.connect_timeout(),
                    )
                    .await?;
                    link.publish_or_park(publication);
                }
            }
            event = if link.confirms.is_empty() {
                None
            } else {
                ready_now(link.confirms.next())
            };
        }
        link.acks.flush();
        Ok(())
    }

    /// A delivery (or the end of the consumer's stream).
    async fn on_delivery(
        &mut self,
        link: &mut Link,
        delivery: Option<lapin::Result<lapin::message::Delivery>>,
    ) -> anyhow::Result<()> {
        let delivery = match delivery {
            Some(Ok(delivery)) => delivery,
            Some(Err(e)) => return Err(anyhow::Error::from(e).context("the jobs channel failed")),
            None => {
                if !link.intake.mark_ended() && self.drain.is_none() {
                    // The queue was deleted, or an operator cancelled the
                    // consumer: connect again, which declares the queue
                    // again and consumes anew.
                    anyhow::bail!("the broker cancelled the consumer");
                }
                return Ok(());
            }
        };
        // Held from now on, whether it runs now or waits as a suspect: no
        // `multiple` acknowledgement may cover it unanswered.
        link.acks.hold(delivery.delivery_tag);
        if delivery.redelivered {
            self.stats.metrics.job_redelivered();
        }
        let alone = link.jobs.is_empty();
        let (now, cancel) = link.intake.sort(delivery, alone);
        if let Some(delivery) = now {
            self.admit(link, delivery);
        } else if cancel {
            self.stats.metrics.quarantine();
            info!(
                in_progress = link.jobs.len(),
                "a redelivered job arrived: finishing the jobs held, then running redelivered jobs one at a time"
            );
        }
        if cancel && self.drain.is_none() {
            let cancel = link.intake.cancel(&link.session.jobs);
            bounded(cancel, self.amqp.connect_timeout()).await?;
        }
        Ok(())
    }

    /// Between consumers: starts the next suspect once it can run alone,
    /// or, with none left, starts the next consumer (unless stopping).
    /// Each broker call is bounded, as every one on the event loop: one
    /// that gets no answer (lapin writes nothing once the broker blocks
    /// the connection) fails the connection rather than stall the loop.
    async fn advance(&mut self, link: &mut Link) -> anyhow::Result<()> {
        if link.intake.consuming() || link.intake.cancelling() {
            return Ok(());
        }
        if link.intake.has_suspects() {
            let alone = link.jobs.is_empty() && link.confirms.is_empty() && link.acks.is_idle();
            if !alone {
                return Ok(());
            }
            // A round trip on the jobs channel: the broker has read the
            // acknowledgements sent before it, so a crash on the next job
            // cannot take the previous ones back.
            let qos = async {
                link.session
                    .jobs
                    .basic_qos(1, BasicQosOptions { global: false })
                    .await
                    .context("cannot reach the broker on the jobs channel")
            };
            bounded(qos, self.amqp.connect_timeout()).await?;
            if let Some(delivery) = link.intake.take_suspect() {
                debug!(
                    left = link.intake.suspects(),
                    "running a redelivered job alone"
                );
                self.admit(link, delivery);
            }
            return Ok(());
        }
        if self.drain.is_none() {
            let subscribe = link.intake.subscribe(&link.session.jobs);
            bounded(subscribe, self.amqp.connect_timeout()).await?;
            let pace = match link.intake.pace() {
                Pace::Full => "full",
                Pace::Careful => "careful",
            };
            debug!(pace, "consuming again");
        }
        Ok(())
    }

    fn start_drain(&mut self, link: &mut Link, failure: Option<anyhow::Error>) {
        self.stats.metrics.stopping();
        self.drain = Some(Drain {
            answered_before: self.stats.total_jobs(),
            failure,
        });
        link.grace_over
            .as_mut()
            .reset(tokio::time::Instant::now() + self.grace);
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

/// The output of `future` if it is ready at once, without waiting.
fn ready_now<F: Future>(future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(output) => Some(output),
        std::task::Poll::Pending => None,
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
