//! One broker connection and everything tied to it: the deliveries held on
//! it (one record each, from delivery to acknowledgement), the answers in
//! flight, the acknowledgements, and the answers parked while the broker
//! blocks the connection.
//!
//! The event loop waits on a [`Link`] for what happens next
//! ([`Link::next`]) and has it handled ([`Link::handle`]): the link
//! handles its own events (an alarm, a confirm, the consumer's deliveries)
//! and hands back only a job to start. It settles each answer
//! to the end: acknowledges the job, retries, sends the answer on to the
//! results queue (declaring it again if need be), dead-letters or hands
//! back the job ([`route`]).
//!
//! A [`Link`] is dropped whole when its connection is lost: its deliveries
//! can no longer be acknowledged, so the broker redelivers them, and
//! nothing it held means anything on the next connection.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use lapin::message::Delivery;
use lapin::options::{BasicQosOptions, QueueDeclareOptions};
use lapin::types::{FieldTable, ShortString};
use lapin::{Acker, BasicProperties};
use tokio_stream::StreamExt;
use tracing::{Span, debug, error, field, info, info_span, warn};

use super::acks::Acks;
use super::amqp::{self, Events, Opened, Session};
use super::backoff::Random;
use super::confirms::{Confirms, Event};
use super::intake::{Intake, Pace};
use super::jobs::{Key, Work};
use super::publish::{self, Carries, Publication, Route, Routes, route};
use crate::protocol::{Answered, Generated, StatusCounts, excerpt};
use crate::telemetry::{Stats, round_secs};

/// How long the worker waits, after its last acknowledgement and before
/// closing its channels, for the broker to apply it (see [`Link::close`]).
const ACK_SETTLE_PAUSE: Duration = Duration::from_millis(250);

/// How long acknowledgements already under way may take to be sent when
/// the worker stops.
const ACKS_TIMEOUT: Duration = Duration::from_secs(5);

/// How long closing the channels and the connection may take, together,
/// when the worker stops. With the grace period and [`ACKS_TIMEOUT`], this
/// bounds the whole stop (see docs/reliability.md).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// A delivery the worker holds: from its arrival until it is acknowledged
/// or handed back. It knows everything needed to run, answer and settle
/// the job.
struct Held {
    acker: Acker,
    span: Span,
    /// When it started (was handed to be answered); `None` while it waits,
    /// a suspect, to run alone.
    started_at: Option<Instant>,
    /// Where the answer goes first: the job's `reply_to` if it names a
    /// queue the answer may go to, else the results queue.
    routing_key: ShortString,
    /// The answer's properties, fixed at delivery.
    answer_properties: BasicProperties,
    /// The answer's statuses, once answered.
    statuses: StatusCounts,
    /// For a generation job, what it made, once answered.
    generated: Option<Generated>,
    /// The job's body and properties, kept until it is acknowledged: the
    /// body to run it, and both to dead-letter it as it came if its answer
    /// cannot be delivered.
    job: Arc<Vec<u8>>,
    job_properties: BasicProperties,
    /// Why the job is being dead-lettered, once it is.
    dead_reason: Option<String>,
}

/// What the event loop is to do after a turn of [`Link::next`].
pub(super) enum Turn {
    /// Nothing: the link handled what happened.
    Handled,
    /// Start this job.
    Start(Work),
    /// The grace period is over.
    GraceOver,
}

/// Something that happened on the connection, seen by [`Link::next`] and
/// not yet handled.
pub(super) struct Happened(Happening);

// A delivery is the large one, and the common one: it lives on the stack
// for one turn of the loop, so boxing it would only add an allocation.
#[allow(clippy::large_enum_variant)]
enum Happening {
    GraceOver,
    Event(Option<lapin::Event>),
    Confirm(Event<Publication>),
    AcksSent,
    Delivery(Option<lapin::Result<Delivery>>),
}

/// One open connection and its state.
pub(super) struct Link {
    session: Session,
    intake: Intake,
    events: Events,
    events_open: bool,
    /// Since when the broker blocks the connection (a resource alarm).
    blocked_at: Option<Instant>,
    /// The deliveries held, by delivery tag, started or waiting.
    held: BTreeMap<u64, Held>,
    confirms: Confirms<Publication>,
    /// Answers held back while the broker blocks the connection.
    parked: Vec<Publication>,
    acks: Acks,
    /// Armed when draining starts; polled only from then on.
    grace_over: Pin<Box<tokio::time::Sleep>>,
    routes: Routes,
    /// The connection's generation: its jobs' [`Key::generation`].
    generation: u64,
    /// The bound on every call to the broker from the event loop.
    call_timeout: Duration,
    /// Picks which suspect runs next.
    random: Random,
    stats: Arc<Stats>,
}

/// How a [`Link`] works, fixed for the worker's life.
pub(super) struct LinkSettings {
    pub jobs_queue: String,
    pub prefetch: u16,
    /// The jobs queue counts deliveries (a quorum queue).
    pub counted: bool,
    pub routes: Routes,
    pub call_timeout: Duration,
}

impl Link {
    pub fn new(
        opened: Opened,
        settings: &LinkSettings,
        generation: u64,
        stats: Arc<Stats>,
    ) -> Link {
        Link {
            session: opened.session,
            intake: Intake::new(
                opened.consumer,
                &settings.jobs_queue,
                settings.prefetch,
                settings.counted,
            ),
            events: opened.events,
            events_open: true,
            blocked_at: None,
            held: BTreeMap::new(),
            confirms: Confirms::new(),
            parked: Vec::new(),
            acks: Acks::new(),
            grace_over: Box::pin(tokio::time::sleep(Duration::ZERO)),
            routes: settings.routes.clone(),
            generation,
            call_timeout: settings.call_timeout,
            random: Random::new(),
            stats,
        }
    }

    /// Whether the broker blocks the connection: it said so, or lapin has
    /// heard it and the event loop not yet. lapin then writes nothing, so a
    /// call that waits for the broker would wait for the alarm to clear.
    pub fn blocked(&self) -> bool {
        self.blocked_at.is_some() || self.session.connection.status().blocked()
    }

    /// Jobs held, running or waiting to run alone.
    pub fn in_progress(&self) -> usize {
        self.held.len()
    }

    /// Whether a stopping worker is done with this link: no consumer, no
    /// job held, nothing in flight.
    pub fn is_done(&self) -> bool {
        !self.intake.consuming() && self.held.is_empty() && self.confirms.is_empty()
    }

    /// Waits for the next thing that happens on the connection, for
    /// [`Link::handle`]. `room`: whether a new delivery may be taken;
    /// `draining`: whether the worker is stopping. Cancel-safe: it only
    /// waits, so the event loop may drop it for another event.
    pub async fn next(&mut self, room: bool, draining: bool) -> Happened {
        let happened = tokio::select! {
            biased;
            () = &mut self.grace_over, if draining => Happening::GraceOver,
            event = self.events.next(), if self.events_open => Happening::Event(event),
            event = self.confirms.next(), if !self.confirms.is_empty() => Happening::Confirm(event),
            // Wakes the loop when the last acknowledgements are out:
            // redelivered jobs wait for that to run alone.
            () = self.acks.all_sent(), if self.acks.sending() => Happening::AcksSent,
            delivery = self.intake.next(), if room => Happening::Delivery(delivery),
        };
        Happened(happened)
    }

    /// Handles what [`Link::next`] saw, to the end. An error means the
    /// connection is lost.
    pub async fn handle(&mut self, happened: Happened, draining: bool) -> anyhow::Result<Turn> {
        match happened.0 {
            Happening::GraceOver => return Ok(Turn::GraceOver),
            Happening::Event(event) => self.on_event(event)?,
            Happening::Confirm(event) => self.settle_ready(event).await?,
            Happening::AcksSent => {}
            Happening::Delivery(delivery) => return self.receive(delivery, draining).await,
        }
        Ok(Turn::Handled)
    }

    /// Starts the grace period: [`Link::next`] says when it is over.
    pub fn start_grace(&mut self, grace: Duration) {
        self.grace_over
            .as_mut()
            .reset(tokio::time::Instant::now() + grace);
    }

    /// A connection event: a resource alarm begins or ends, or the
    /// connection failed.
    fn on_event(&mut self, event: Option<lapin::Event>) -> anyhow::Result<()> {
        match event {
            Some(lapin::Event::ConnectionBlocked(reason)) => {
                if self.blocked_at.is_none() {
                    warn!(
                        reason = %reason,
                        in_progress = self.held.len(),
                        "the broker blocked the connection (resource alarm); taking no new jobs and holding results until it unblocks"
                    );
                    self.blocked_at = Some(Instant::now());
                    self.stats.metrics.blocked(true);
                }
            }
            Some(lapin::Event::ConnectionUnblocked) => {
                self.stats.metrics.blocked(false);
                if let Some(since) = self.blocked_at.take() {
                    info!(
                        blocked_secs = round_secs(since.elapsed()),
                        held_results = self.parked.len(),
                        "the broker unblocked the connection; taking jobs again"
                    );
                }
                for publication in std::mem::take(&mut self.parked) {
                    self.publish(publication);
                }
            }
            Some(lapin::Event::Error(e)) => {
                return Err(anyhow::Error::from(e).context("the connection failed"));
            }
            Some(_) => {}
            None => self.events_open = false,
        }
        Ok(())
    }

    /// A delivery (or the end of the consumer's stream): held from now on,
    /// whether it runs now or waits as a suspect, so no `multiple`
    /// acknowledgement may cover it unanswered.
    async fn receive(
        &mut self,
        delivery: Option<lapin::Result<Delivery>>,
        draining: bool,
    ) -> anyhow::Result<Turn> {
        let delivery = match delivery {
            Some(Ok(delivery)) => delivery,
            Some(Err(e)) => return Err(anyhow::Error::from(e).context("the jobs channel failed")),
            None => {
                if !self.intake.mark_ended() && !draining {
                    // The queue was deleted, or an operator cancelled the
                    // consumer: connect again, which declares the queue
                    // again and consumes anew.
                    anyhow::bail!("the broker cancelled the consumer");
                }
                return Ok(Turn::Handled);
            }
        };
        if delivery.redelivered {
            self.stats.metrics.job_redelivered();
        }
        let sorted = self.intake.sort(&delivery, self.held.is_empty());
        let tag = delivery.delivery_tag;
        self.hold(delivery);
        if !sorted.now && sorted.cancel {
            self.stats.metrics.quarantine();
            info!(
                in_progress = self.held.len() - 1,
                "a redelivered job arrived: finishing the jobs held, then running redelivered jobs one at a time"
            );
        }
        if sorted.cancel && !draining {
            let cancel = self.intake.cancel(&self.session.jobs);
            bounded(cancel, self.call_timeout).await?;
        }
        Ok(match sorted.now.then(|| self.start(tag)).flatten() {
            Some(work) => Turn::Start(work),
            None => Turn::Handled,
        })
    }

    /// Records a delivery the worker now holds, with where its answer goes
    /// and the answer's properties.
    fn hold(&mut self, delivery: Delivery) {
        let span = info_span!(
            "job",
            job_id = field::Empty,
            delivery_tag = delivery.delivery_tag,
            trace_id = field::Empty
        );
        if delivery.redelivered {
            debug!(parent: &span, "redelivered job");
        }
        let properties = delivery.properties;
        let (routing_key, refused) = self.routes.destination(properties.reply_to().as_ref());
        if let Some(queue) = refused {
            warn!(
                parent: &span,
                reply_to = %excerpt(queue.as_str()),
                results_queue = %self.routes.results_queue,
                "reply_to names one of the service's own queues; the answer goes to the results queue"
            );
        }
        let trace = publish::traceparent(&properties);
        if let Some(trace) = trace {
            // The trace id: the second of the header's four fields.
            span.record("trace_id", trace.get(3..35).unwrap_or_default());
        }
        let answer_properties = publish::answer_properties(&properties, trace);
        self.held.insert(
            delivery.delivery_tag,
            Held {
                acker: delivery.acker,
                span,
                started_at: None,
                routing_key,
                answer_properties,
                statuses: StatusCounts::default(),
                generated: None,
                job: Arc::new(delivery.data),
                job_properties: properties,
                dead_reason: None,
            },
        );
    }

    /// Starts a held job: the work to answer it.
    fn start(&mut self, tag: u64) -> Option<Work> {
        let job = self.held.get_mut(&tag)?;
        let now = Instant::now();
        job.started_at = Some(now);
        self.stats.job_received();
        Some(Work {
            key: Key {
                generation: self.generation,
                tag,
            },
            body: Arc::clone(&job.job),
            delivered_at: now,
            message_id: job
                .job_properties
                .message_id()
                .as_ref()
                .map(|id| id.to_string()),
            span: job.span.clone(),
        })
    }

    /// Between consumers: starts the next suspect once it can run alone,
    /// or, with none left, starts the next consumer (unless stopping).
    /// Each broker call is bounded, as every one on the event loop: one
    /// that gets no answer (lapin writes nothing once the broker blocks
    /// the connection) fails the connection rather than stall the loop.
    pub async fn advance(&mut self, draining: bool) -> anyhow::Result<Option<Work>> {
        if self.intake.consuming() || self.intake.cancelling() {
            return Ok(None);
        }
        let waiting = || self.held.iter().filter(|(_, job)| job.started_at.is_none());
        if waiting().next().is_some() {
            let alone = self.held.values().all(|job| job.started_at.is_none())
                && self.confirms.is_empty()
                && self.acks.is_idle();
            if !alone {
                return Ok(None);
            }
            // A round trip on the jobs channel: the broker has read the
            // acknowledgements sent before it, so a crash on the next job
            // cannot take the previous ones back.
            let qos = async {
                self.session
                    .jobs
                    .basic_qos(1, BasicQosOptions { global: false })
                    .await
                    .context("cannot reach the broker on the jobs channel")
            };
            bounded(qos, self.call_timeout).await?;
            let tags: Vec<u64> = waiting().map(|(&tag, _)| tag).collect();
            let Some(tag) = pick(&mut self.random, &tags) else {
                return Ok(None);
            };
            debug!(left = tags.len() - 1, "running a redelivered job alone");
            return Ok(self.start(tag));
        }
        if !draining {
            let subscribe = self.intake.subscribe(&self.session.jobs);
            bounded(subscribe, self.call_timeout).await?;
            let pace = match self.intake.pace() {
                Pace::Full => "full",
                Pace::Careful => "careful",
            };
            debug!(pace, "consuming again");
        }
        Ok(None)
    }

    /// Stops taking deliveries: cancels the consumer (bounded in time; if
    /// the broker does not answer, the consumer is given up on).
    pub async fn stop_consuming(&mut self) {
        let cancel = self.intake.cancel(&self.session.jobs);
        if let Err(e) = bounded(cancel, self.call_timeout).await {
            warn!(error = format!("{e:#}"), "cannot cancel the consumer");
            self.intake.mark_ended();
        }
    }

    /// The answer of a held job: published, or parked while the broker
    /// blocks the connection. An answer to a job the link does not hold
    /// (of a lost connection) is dropped: the broker redelivers that job.
    pub fn answer(&mut self, key: Key, answered: Answered) {
        let job = (key.generation == self.generation)
            .then(|| self.held.get_mut(&key.tag))
            .flatten();
        let Some(job) = job else {
            debug!(
                tag = key.tag,
                "answer to a job of a lost connection dropped; the broker redelivers the job"
            );
            return;
        };
        job.statuses = answered.statuses;
        job.generated = answered.generated;
        let publication = Publication::answer(key, job.routing_key.clone(), answered.body);
        self.publish_or_park(publication);
    }

    /// Publishes a message, or holds it back while the broker blocks the
    /// connection.
    fn publish_or_park(&mut self, publication: Publication) {
        if self.blocked_at.is_some() {
            self.parked.push(publication);
            return;
        }
        self.publish(publication);
    }

    /// Publishes a message without waiting for lapin to write it, nor for
    /// its confirm: both come through [`Link::next`] (a failure there means
    /// the channel failed).
    fn publish(&mut self, publication: Publication) {
        let job = publication.job.and_then(|key| self.held.get(&key.tag));
        let properties = match (publication.carries, job) {
            (Carries::Answer, Some(job)) => job.answer_properties.clone(),
            (Carries::DeadLetter, Some(job)) => {
                publish::dead_letter_properties(&job.job_properties, job.dead_reason.as_deref())
            }
            (_, None) => publication.sent_with(),
        };
        let sending = publish::send(&self.session.results, &publication, properties);
        self.confirms.push(sending, publication);
    }

    /// Settles `first` and every other confirm that has come in, then
    /// acknowledges their jobs together.
    async fn settle_ready(&mut self, first: Event<Publication>) -> anyhow::Result<()> {
        let mut event = Some(first);
        while let Some(confirmed) = event {
            self.settle(confirmed).await?;
            event = if self.confirms.is_empty() {
                None
            } else {
                ready_now(self.confirms.next())
            };
        }
        self.acks.flush(self.floor());
        Ok(())
    }

    /// The lowest delivery tag still held unanswered: no `multiple`
    /// acknowledgement may reach it.
    fn floor(&self) -> Option<u64> {
        self.held.keys().next().copied()
    }

    /// Acts on a confirm ([`route`]) to the end: acknowledges the job,
    /// publishes the message again (declaring the results queue again
    /// first if it is gone), dead-letters or hands back the job. An error
    /// means the channel failed.
    async fn settle(&mut self, event: Event<Publication>) -> anyhow::Result<()> {
        let (publication, acked) = match event {
            Event::Settled(publication, acked) => (
                publication,
                acked.context("a result could not be published, or its confirm was lost")?,
            ),
            Event::Orphan(message) => {
                warn!(
                    routing_key = %excerpt(message.delivery.routing_key.as_str()),
                    "a returned result matches no result in flight; sending it to the results queue"
                );
                let publication = Publication::orphan(self.routes.results_queue.clone(), *message);
                self.publish_or_park(publication);
                return Ok(());
            }
        };
        let key = publication.job;
        let route = route(&publication, acked, self.routes.results_queue.as_str());
        if route == Route::Ack {
            // The common case, kept free of the rest's logging work.
            self.acknowledge(key, publication.carries, &publication.routing_key);
            return Ok(());
        }
        let span = key
            .and_then(|key| self.held.get(&key.tag))
            .map_or_else(Span::none, |job| job.span.clone());
        let results_queue = self.routes.results_queue.clone();
        let to = excerpt(publication.routing_key.as_str());
        match route {
            Route::Ack | Route::Done => {}
            Route::ToResultsQueue if acked => {
                warn!(parent: &span, reply_to = %to, results_queue = %results_queue, "reply_to queue does not exist; sending the result to the results queue");
                self.publish_or_park(publication.redirect(results_queue));
            }
            Route::ToResultsQueue => {
                warn!(parent: &span, reply_to = %to, results_queue = %results_queue, attempts = publication.attempts, "the reply_to queue keeps refusing the result (nack); sending it to the results queue");
                self.publish_or_park(publication.redirect(results_queue));
            }
            Route::Retry => {
                warn!(parent: &span, routing_key = %to, attempt = publication.attempts, "the broker refused a result (nack); publishing it again");
                let routing_key = publication.routing_key.clone();
                self.publish_or_park(publication.again(routing_key));
            }
            Route::RedeclareResultsQueue => {
                warn!(parent: &span, results_queue = %results_queue, attempt = publication.attempts, "the results queue does not exist; declaring it again");
                let declare = redeclare(&self.session.jobs, &results_queue);
                bounded(declare, self.call_timeout).await?;
                self.publish_or_park(publication.again(results_queue));
            }
            Route::DeadLetter => {
                let reason = format!(
                    "the answer could not be delivered to {to} in {} attempts ({})",
                    publication.attempts,
                    if acked {
                        "the queue does not exist"
                    } else {
                        "the broker refused it"
                    }
                );
                error!(parent: &span, reason = %reason, "dead-lettering the job");
                self.dead_letter(key, reason);
            }
            Route::Requeue => {
                error!(parent: &span, "the dead-letter queue did not take the job either; it goes back to the queue");
                self.requeue(key);
            }
            Route::Lost => {
                error!(results_queue = %results_queue, "the results queue does not exist; a returned result is lost");
            }
        }
        Ok(())
    }

    /// Publishes the job itself, with `reason`, to the dead-letter queue.
    fn dead_letter(&mut self, key: Option<Key>, reason: String) {
        let Some(job) = key.and_then(|key| self.held.get_mut(&key.tag)) else {
            return;
        };
        job.dead_reason = Some(reason);
        let publication =
            Publication::dead_letter(key, self.routes.dead_letter_queue.clone(), &job.job);
        self.publish_or_park(publication);
    }

    /// The job's answer (or the job, dead-lettered) is confirmed:
    /// acknowledge it at the next flush, with the others confirmed
    /// meanwhile.
    fn acknowledge(&mut self, key: Option<Key>, carries: Carries, to: &ShortString) {
        let Some((tag, job)) = key.and_then(|key| self.held.remove_entry(&key.tag)) else {
            return;
        };
        match carries {
            Carries::Answer => {
                let latency = job.started_at.map_or(Duration::ZERO, |at| at.elapsed());
                self.stats
                    .job_answered(&job.statuses, job.generated, latency);
                debug!(parent: &job.span, routing_key = %excerpt(to.as_str()), "answered");
            }
            Carries::DeadLetter => {
                self.stats.job_returned();
                warn!(parent: &job.span, dead_letter_queue = %excerpt(to.as_str()), "job dead-lettered");
            }
        }
        self.acks.ready(tag, job.acker, job.span);
    }

    /// Hands a job back to the broker unanswered.
    fn requeue(&mut self, key: Option<Key>) {
        if let Some(job) = key.and_then(|key| self.held.remove(&key.tag)) {
            self.stats.job_returned();
            self.acks.nack(job.acker, job.span);
        }
    }

    /// Forgets the jobs held (the connection is lost; the broker redelivers
    /// them) and closes what is left of the connection. Returns how many
    /// jobs it held, waiting suspects included.
    pub async fn forget(self) -> usize {
        for _ in self.held.values().filter(|job| job.started_at.is_some()) {
            self.stats.job_returned();
        }
        // Only a channel may have failed: close the rest.
        amqp::close_quietly(&self.session.connection).await;
        self.held.len()
    }

    /// Waits for acknowledgements under way, then closes the channels and
    /// the connection. Unacknowledged jobs go back to the queue.
    pub async fn close(mut self) {
        let floor = self.floor();
        if !self.acks.drain(floor, ACKS_TIMEOUT).await {
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
        if tokio::time::timeout(CLOSE_TIMEOUT, self.session.close())
            .await
            .is_err()
        {
            warn!("no answer to closing the connection in time; the broker closes it");
        }
    }
}

/// Declares the results queue again (someone deleted it), as the topology
/// declares it.
async fn redeclare(channel: &lapin::Channel, queue: &ShortString) -> anyhow::Result<()> {
    channel
        .queue_declare(
            queue.clone(),
            QueueDeclareOptions::durable(),
            FieldTable::default(),
        )
        .await
        .with_context(|| format!("cannot declare queue {queue}"))?;
    Ok(())
}

/// One of `tags` picked at random: if one of the suspects crashes every
/// worker, the others each have an even chance of being done before it.
fn pick(random: &mut Random, tags: &[u64]) -> Option<u64> {
    if tags.is_empty() {
        return None;
    }
    let n = random.below(tags.len() as u64) as usize;
    tags.get(n).copied()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suspects_are_picked_in_random_order() {
        let mut random = Random::new();
        let mut orders = std::collections::HashSet::new();
        for _ in 0..20 {
            let mut tags: Vec<u64> = (0..6).collect();
            let mut order = Vec::new();
            while let Some(tag) = pick(&mut random, &tags) {
                order.push(tag);
                tags.retain(|&t| t != tag);
            }
            assert_eq!(order.len(), 6);
            orders.insert(order);
        }
        assert!(orders.len() > 1, "always the same order");
        assert_eq!(pick(&mut random, &[]), None);
    }
}
