//! One broker connection and everything tied to it: the jobs held on it,
//! the answers in flight, the acknowledgements, and the answers parked
//! while the broker blocks the connection.
//!
//! A [`Link`] is dropped whole when its connection is lost: its deliveries
//! can no longer be acknowledged, so the broker redelivers them, and
//! nothing it held means anything on the next connection.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use lapin::options::{BasicPublishOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{Acker, BasicProperties};
use tracing::{Span, debug, error, warn};

use super::acks::Acks;
use super::amqp::{self, Events, Opened, Session};
use super::confirms::{Confirms, Event, Sending};
use super::held::{
    Carries, Held, Publication, Route, Routes, answer_properties, route, traceparent,
};
use super::intake::Intake;
use crate::protocol::{StatusCounts, excerpt};
use crate::telemetry::Stats;

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

/// What to do after settling a confirm.
pub(super) enum Next {
    Nothing,
    /// Publish this message (again).
    Publish(Publication),
    /// Declare the results queue again, then publish this answer.
    Redeclare(Publication),
}

/// The header a dead-lettered job carries: why its answer was not
/// delivered.
pub const DEAD_REASON_HEADER: &str = "x-sudokud-reason";

/// A dead-lettered job's properties: the job's own, with the reason added.
fn dead_letter_properties(job: &Held) -> BasicProperties {
    let mut headers = job.job_properties.headers().clone().unwrap_or_default();
    let reason = job
        .dead_reason
        .as_deref()
        .unwrap_or("the answer could not be delivered");
    headers.insert(
        DEAD_REASON_HEADER.into(),
        AMQPValue::LongString(LongString::from(reason)),
    );
    job.job_properties.clone().with_headers(headers)
}

/// One open connection and its state.
pub(super) struct Link {
    pub session: Session,
    pub intake: Intake,
    pub events: Events,
    pub events_open: bool,
    /// Since when the broker blocks the connection (a resource alarm).
    pub blocked_at: Option<Instant>,
    /// The jobs held, by the worker's key.
    pub jobs: HashMap<u64, Held>,
    pub confirms: Confirms<Publication>,
    /// Answers held back while the broker blocks the connection.
    pub parked: Vec<Publication>,
    pub acks: Acks,
    /// Armed when draining starts; polled only from then on.
    pub grace_over: Pin<Box<tokio::time::Sleep>>,
    routes: Routes,
    stats: Arc<Stats>,
}

impl Link {
    pub fn new(
        opened: Opened,
        queue: &str,
        prefetch: u16,
        counted: bool,
        routes: Routes,
        stats: Arc<Stats>,
    ) -> Link {
        Link {
            session: opened.session,
            intake: Intake::new(opened.consumer, queue, prefetch, counted),
            events: opened.events,
            events_open: true,
            blocked_at: None,
            jobs: HashMap::new(),
            confirms: Confirms::new(),
            parked: Vec::new(),
            acks: Acks::new(),
            grace_over: Box::pin(tokio::time::sleep(Duration::ZERO)),
            routes,
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
        self.jobs.len() + self.intake.suspects()
    }

    /// Records a delivery the worker now holds under `key`, with where its
    /// answer goes and the answer's properties.
    pub fn hold(
        &mut self,
        key: u64,
        tag: u64,
        properties: BasicProperties,
        acker: Acker,
        span: Span,
        job: Arc<Vec<u8>>,
    ) {
        let (routing_key, refused) = self.routes.destination(properties.reply_to().as_ref());
        if let Some(queue) = refused {
            warn!(
                parent: &span,
                reply_to = %excerpt(queue.as_str()),
                results_queue = %self.routes.results_queue,
                "reply_to names one of the service's own queues; the answer goes to the results queue"
            );
        }
        let trace = traceparent(&properties);
        if let Some(trace) = trace {
            // The trace id: the second of the header's four fields.
            span.record("trace_id", trace.get(3..35).unwrap_or_default());
        }
        self.stats.job_received();
        self.jobs.insert(
            key,
            Held {
                tag,
                acker,
                delivered_at: Instant::now(),
                routing_key,
                properties: answer_properties(&properties, trace),
                statuses: StatusCounts::default(),
                span,
                job,
                job_properties: properties,
                dead_reason: None,
            },
        );
    }

    /// The answer of a held job, to publish; `None` when the job is not
    /// held (it belonged to a lost connection).
    pub fn answered(
        &mut self,
        key: u64,
        body: Vec<u8>,
        statuses: StatusCounts,
    ) -> Option<Publication> {
        let job = self.jobs.get_mut(&key)?;
        job.statuses = statuses;
        Some(Publication::answer(key, job.routing_key.clone(), body))
    }

    /// Publishes an answer, or holds it back while the broker blocks the
    /// connection.
    pub fn publish_or_park(&mut self, publication: Publication) {
        if self.blocked_at.is_some() {
            self.parked.push(publication);
            return;
        }
        self.publish(publication);
    }

    /// Publishes a message without waiting for lapin to write it, nor for
    /// its confirm: both come through [`Link::confirms`] (a failure there
    /// means the channel failed).
    pub fn publish(&mut self, publication: Publication) {
        let job = publication.job.and_then(|key| self.jobs.get(&key));
        let properties = match (publication.carries, job) {
            (Carries::Answer, Some(job)) => job.properties.clone(),
            (Carries::DeadLetter, Some(job)) => dead_letter_properties(job),
            (_, None) => publication
                .sent_with
                .as_deref()
                .cloned()
                .unwrap_or_else(|| amqp::result_properties(None)),
        };
        let channel = self.session.results.clone();
        let routing_key = publication.routing_key.clone();
        let body = Arc::clone(&publication.body);
        let sending: Sending = Box::pin(async move {
            channel
                .basic_publish(
                    ShortString::from(""),
                    routing_key,
                    BasicPublishOptions {
                        mandatory: true,
                        immediate: false,
                    },
                    body.as_slice(),
                    properties,
                )
                .await
        });
        self.confirms.push(sending, publication);
    }

    /// Acts on a confirm ([`route`]): acknowledges the job, retries,
    /// dead-letters or hands back the job, or gives back a message to
    /// publish again. An error means the channel failed.
    pub fn settle(&mut self, event: Event<Publication>) -> anyhow::Result<Next> {
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
                return Ok(Next::Publish(Publication {
                    job: None,
                    carries: Carries::Answer,
                    routing_key: self.routes.results_queue.clone(),
                    body: Arc::new(message.delivery.data),
                    attempts: 1,
                    returned: false,
                    // Its correlation_id and traceparent, as the job gave them.
                    sent_with: Some(Box::new(message.delivery.properties)),
                }));
            }
        };
        let key = publication.job;
        let route = route(&publication, acked, self.routes.results_queue.as_str());
        if route == Route::Ack {
            // The common case, kept free of the rest's logging work.
            self.acknowledge(key, publication.carries, &publication.routing_key);
            return Ok(Next::Nothing);
        }
        let span = key
            .and_then(|key| self.jobs.get(&key))
            .map_or_else(Span::none, |job| job.span.clone());
        let results_queue = self.routes.results_queue.clone();
        let to = excerpt(publication.routing_key.as_str());
        let next = match route {
            Route::Ack => Next::Nothing,
            Route::ToResultsQueue if acked => {
                warn!(parent: &span, reply_to = %to, results_queue = %results_queue, "reply_to queue does not exist; sending the result to the results queue");
                Next::Publish(publication.redirect(results_queue))
            }
            Route::ToResultsQueue => {
                warn!(parent: &span, reply_to = %to, results_queue = %results_queue, attempts = publication.attempts, "the reply_to queue keeps refusing the result (nack); sending it to the results queue");
                Next::Publish(publication.redirect(results_queue))
            }
            Route::Retry => {
                warn!(parent: &span, routing_key = %to, attempt = publication.attempts, "the broker refused a result (nack); publishing it again");
                let routing_key = publication.routing_key.clone();
                Next::Publish(publication.again(routing_key))
            }
            Route::RedeclareResultsQueue => {
                warn!(parent: &span, results_queue = %results_queue, attempt = publication.attempts, "the results queue does not exist; declaring it again");
                Next::Redeclare(publication.again(results_queue))
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
                self.dead_letter(key, reason)
            }
            Route::Requeue => {
                error!(parent: &span, "the dead-letter queue did not take the job either; it goes back to the queue");
                self.requeue(key);
                Next::Nothing
            }
            Route::Lost => {
                error!(results_queue = %results_queue, "the results queue does not exist; a returned result is lost");
                Next::Nothing
            }
            Route::Done => Next::Nothing,
        };
        Ok(next)
    }

    /// The job itself, with `reason`, to publish to the dead-letter queue.
    fn dead_letter(&mut self, key: Option<u64>, reason: String) -> Next {
        let Some(job) = key.and_then(|key| self.jobs.get_mut(&key)) else {
            return Next::Nothing;
        };
        job.dead_reason = Some(reason);
        Next::Publish(Publication {
            job: key,
            carries: Carries::DeadLetter,
            routing_key: self.routes.dead_letter_queue.clone(),
            body: Arc::clone(&job.job),
            attempts: 1,
            returned: false,
            sent_with: None,
        })
    }

    /// Declares the results queue again (someone deleted it), as the
    /// topology declares it (`arguments`).
    pub async fn redeclare_results_queue(&mut self, arguments: FieldTable) -> anyhow::Result<()> {
        self.session
            .jobs
            .queue_declare(
                self.routes.results_queue.clone(),
                QueueDeclareOptions::durable(),
                arguments,
            )
            .await
            .with_context(|| format!("cannot declare queue {}", self.routes.results_queue))?;
        Ok(())
    }

    /// The job's answer (or the job, dead-lettered) is confirmed:
    /// acknowledge it at the next flush, with the others confirmed
    /// meanwhile.
    fn acknowledge(&mut self, key: Option<u64>, carries: Carries, to: &ShortString) {
        let Some(job) = key.and_then(|key| self.jobs.remove(&key)) else {
            return;
        };
        match carries {
            Carries::Answer => {
                self.stats
                    .job_answered(&job.statuses, job.delivered_at.elapsed());
                debug!(parent: &job.span, routing_key = %excerpt(to.as_str()), "answered");
            }
            Carries::DeadLetter => {
                self.stats.job_returned();
                warn!(parent: &job.span, dead_letter_queue = %excerpt(to.as_str()), "job dead-lettered");
            }
        }
        self.acks.ready(job.tag, job.acker, job.span);
    }

    /// Hands a job back to the broker unanswered.
    fn requeue(&mut self, key: Option<u64>) {
        if let Some(job) = key.and_then(|key| self.jobs.remove(&key)) {
            self.stats.job_returned();
            self.acks.nack(job.tag, job.acker, job.span);
        }
    }

    /// Forgets the jobs held (the connection is lost; the broker redelivers
    /// them) and closes what is left of the connection. Returns how many
    /// jobs it held, suspects included.
    pub async fn forget(self) -> usize {
        let held = self.jobs.len();
        for _ in 0..held {
            self.stats.job_returned();
        }
        // Only a channel may have failed: close the rest.
        amqp::close_quietly(&self.session.connection).await;
        held + self.intake.suspects()
    }

    /// Waits for acknowledgements under way, then closes the channels and
    /// the connection. Unacknowledged jobs go back to the queue.
    pub async fn close(mut self) {
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
        if tokio::time::timeout(CLOSE_TIMEOUT, self.session.close())
            .await
            .is_err()
        {
            warn!("no answer to closing the connection in time; the broker closes it");
        }
    }
}
