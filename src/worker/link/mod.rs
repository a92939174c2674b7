//! One broker connection and everything tied to it: the deliveries held on
//! it (one record each, from delivery to acknowledgement), the answers in
//! flight, the acknowledgements, and the answers parked while the broker
//! blocks the connection.
//!
//! The event loop waits on a [`Link`] for what happens next
//! ([`Link::next`]) and has it handled ([`Link::handle`]): the link
//! handles its own events (an alarm, a confirm, the consumer's deliveries)
//! and hands back only a job to start.
//!
//! The link's fields are its own, its work in three files beside this
//! one: `receive` (a delivery held, sorted, started; the consumer
//! restarted), `settle` (an answer published, parked, and settled to the
//! end: the job acknowledged, the answer retried or sent on to the results
//! queue, which is declared again if need be, the job dead-lettered or
//! handed back) and `missing` (a results or dead-letter queue whose node
//! is down: what waits for it, and declaring it again until it is back).
//!
//! A [`Link`] is dropped whole when its connection is lost: its deliveries
//! can no longer be acknowledged, so the broker redelivers them, and
//! nothing it held means anything on the next connection.

mod missing;
mod receive;
mod settle;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lapin::message::Delivery;
use lapin::types::ShortString;
use lapin::{Acker, BasicProperties};
use tokio_stream::StreamExt;
use tracing::{Span, debug, info, warn};

use super::acks::Acks;
use super::amqp::{self, Events, Opened, Session};
use super::backoff::Random;
use super::confirms::{Confirms, Event};
use super::intake::Intake;
use super::jobs::Work;
use super::publish::{Publication, Routes};
use crate::broker::is_home_node_down;
use crate::protocol::{StatusCounts, Tally};
use crate::telemetry::{Stats, round_secs};
use missing::Missing;

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
    generated: Option<Tally>,
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
    RetryDue,
    ConfirmCheck,
    Recheck,
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
    /// Since when it does not: the link's start or the end of the last
    /// block. A confirm's wait counts from here at the earliest.
    unblocked_at: Instant,
    /// The deliveries held, by delivery tag, started or waiting.
    held: BTreeMap<u64, Held>,
    confirms: Confirms<Publication>,
    /// Answers held back while the broker blocks the connection.
    parked: Vec<Publication>,
    /// Answers the broker refused, each with when to publish it again
    /// ([`publish::retry_delay`]); `retry_due` fires at the earliest.
    retries: Vec<(tokio::time::Instant, Publication)>,
    retry_due: Pin<Box<tokio::time::Sleep>>,
    /// Results channels replaced after a nack ([`Link::renew_results_channel`]),
    /// each closed once nothing published on it awaits its confirm.
    retired: Vec<lapin::Channel>,
    /// When the results channel was last replaced.
    renewed_at: Option<Instant>,
    /// The queues it cannot reach, and what waits for them.
    missing: Missing,
    /// `amqp.confirm_timeout_secs`; `None`: no deadline.
    confirm_timeout: Option<Duration>,
    /// Fires when the oldest publication's confirm deadline may be past.
    confirm_check: Pin<Box<tokio::time::Sleep>>,
    acks: Acks,
    /// Armed when draining starts; polled only from then on.
    grace_over: Pin<Box<tokio::time::Sleep>>,
    routes: Routes,
    /// The connection's generation: its jobs' `Key::generation`.
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
    pub confirm_timeout: Option<Duration>,
}

impl Link {
    pub fn new(
        opened: Opened,
        settings: &LinkSettings,
        generation: u64,
        stats: Arc<Stats>,
    ) -> Link {
        for queue in &opened.unreachable {
            stats.metrics.queue_unreachable(queue.as_str(), true);
        }
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
            unblocked_at: Instant::now(),
            held: BTreeMap::new(),
            confirms: Confirms::new(),
            parked: Vec::new(),
            retries: Vec::new(),
            retry_due: Box::pin(tokio::time::sleep(Duration::ZERO)),
            retired: Vec::new(),
            renewed_at: None,
            missing: Missing::new(opened.unreachable),
            confirm_timeout: settings.confirm_timeout,
            confirm_check: Box::pin(tokio::time::sleep(Duration::ZERO)),
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
        !self.intake.consuming()
            && self.held.is_empty()
            && self.confirms.is_empty()
            && self.retries.is_empty()
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
            () = &mut self.retry_due, if !self.retries.is_empty() => Happening::RetryDue,
            () = &mut self.confirm_check, if self.confirm_deadline_applies() => Happening::ConfirmCheck,
            () = &mut self.missing.recheck, if self.missing.any() => Happening::Recheck,
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
            Happening::RetryDue => self.retry_due_now(),
            Happening::ConfirmCheck => self.check_confirm_deadline()?,
            Happening::Recheck => self.recheck_missing().await?,
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
                self.unblocked_at = Instant::now();
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
                let error = anyhow::Error::from(e);
                if is_home_node_down(&error) {
                    // Only the channel of a declaration that the broker
                    // refused (see `missing`): the connection is fine.
                    debug!(
                        error = format!("{error:#}"),
                        "a declaration's channel closed"
                    );
                    return Ok(());
                }
                return Err(error.context("the connection failed"));
            }
            Some(_) => {}
            None => self.events_open = false,
        }
        Ok(())
    }

    /// Whether a confirm deadline is to be watched: one is set, a
    /// publication awaits its confirm, and the broker does not block the
    /// connection (it then reads nothing, so confirms wait for the end of
    /// the alarm, and so does the deadline).
    fn confirm_deadline_applies(&self) -> bool {
        self.confirm_timeout.is_some()
            && self.blocked_at.is_none()
            && self.confirms.oldest_unconfirmed().is_some()
    }

    /// The oldest publication's confirm is due: past its deadline the
    /// connection counts as failed (a node cut from its cluster confirms
    /// nothing, while its heartbeats go on), else look again at the
    /// deadline of whichever publication is oldest now.
    fn check_confirm_deadline(&mut self) -> anyhow::Result<()> {
        let (Some(limit), Some(oldest)) =
            (self.confirm_timeout, self.confirms.oldest_unconfirmed())
        else {
            return Ok(());
        };
        if self.blocked() {
            // lapin has heard of a block the loop has not handled yet:
            // look again later rather than at once.
            self.confirm_check
                .as_mut()
                .reset(tokio::time::Instant::now() + limit);
            return Ok(());
        }
        let waiting_since = oldest.max(self.unblocked_at);
        let waited = waiting_since.elapsed();
        if waited >= limit {
            anyhow::bail!(
                "no publisher confirm from the broker for {} s (amqp.confirm_timeout_secs is {}): this node cannot confirm; trying the next",
                round_secs(waited),
                limit.as_secs()
            );
        }
        self.confirm_check
            .as_mut()
            .reset((waiting_since + limit).into());
        Ok(())
    }

    /// Forgets the jobs held (the connection is lost; the broker redelivers
    /// them) and closes what is left of the connection. Returns how many
    /// jobs it held, waiting suspects included.
    pub async fn forget(self) -> usize {
        self.forget_missing();
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
        self.forget_missing();
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

/// `future`, or an error after `limit`.
async fn bounded<T>(
    future: impl Future<Output = anyhow::Result<T>>,
    limit: Duration,
) -> anyhow::Result<T> {
    tokio::time::timeout(limit, future)
        .await
        .unwrap_or_else(|_| Err(anyhow::anyhow!("no answer within {} s", limit.as_secs())))
}
