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
use lapin::options::BasicPublishOptions;
use lapin::types::ShortString;
use lapin::{Acker, BasicProperties};
use tracing::{Span, debug, error, warn};

use super::acks::Acks;
use super::amqp::{self, Events, Opened, Session};
use super::confirms::{Confirms, Event};
use super::held::{Held, Publication, Route, Routes, route};
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
        routes: Routes,
        stats: Arc<Stats>,
    ) -> Link {
        Link {
            session: opened.session,
            intake: Intake::new(opened.consumer, queue, prefetch),
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
        properties: &BasicProperties,
        acker: Acker,
        span: Span,
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
        self.stats.job_received();
        self.jobs.insert(
            key,
            Held {
                tag,
                acker,
                delivered_at: Instant::now(),
                routing_key,
                properties: amqp::result_properties(amqp::reply_correlation(properties).as_ref()),
                statuses: StatusCounts::default(),
                span,
            },
        );
    }

    /// Publishes an answer, or holds it back while the broker blocks the
    /// connection.
    pub async fn publish_or_park(&mut self, publication: Publication) -> anyhow::Result<()> {
        if self.blocked_at.is_some() {
            self.parked.push(publication);
            return Ok(());
        }
        self.publish(publication).await
    }

    /// Publishes an answer without waiting for its confirm. An error means
    /// the channel failed.
    pub async fn publish(&mut self, publication: Publication) -> anyhow::Result<()> {
        let properties = match publication.job.and_then(|key| self.jobs.get(&key)) {
            Some(job) => job.properties.clone(),
            None => amqp::result_properties(None),
        };
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

    /// Acts on a confirm ([`route`]): acknowledges the job, hands it back,
    /// or gives back the answer to send again. An error means the channel
    /// failed.
    pub fn settle(&mut self, event: Event<Publication>) -> anyhow::Result<Option<Publication>> {
        let (publication, acked) = match event {
            Event::Settled(publication, acked) => (
                publication,
                acked.context("lost the publisher confirm of a result")?,
            ),
            Event::Orphan(message) => {
                warn!(
                    routing_key = %excerpt(message.delivery.routing_key.as_str()),
                    "a returned result matches no result in flight; sending it to the results queue"
                );
                return Ok(Some(Publication {
                    job: None,
                    routing_key: self.routes.results_queue.clone(),
                    body: message.delivery.data,
                    returned: false,
                }));
            }
        };
        let key = publication.job;
        let span = key
            .and_then(|key| self.jobs.get(&key))
            .map_or_else(Span::none, |job| job.span.clone());
        match route(&publication, acked, self.routes.results_queue.as_str()) {
            Route::Ack => self.acknowledge(key, &publication.routing_key),
            Route::ToResultsQueue => {
                warn!(
                    parent: &span,
                    reply_to = %excerpt(publication.routing_key.as_str()),
                    results_queue = %self.routes.results_queue,
                    "reply_to queue does not exist; sending the result to the results queue"
                );
                return Ok(Some(Publication {
                    routing_key: self.routes.results_queue.clone(),
                    returned: false,
                    ..publication
                }));
            }
            Route::Requeue => {
                warn!(
                    parent: &span,
                    routing_key = %excerpt(publication.routing_key.as_str()),
                    "the broker refused a result (nack); the job goes back to the queue"
                );
                self.requeue(key);
            }
            Route::NoResultsQueue => {
                error!(parent: &span, results_queue = %self.routes.results_queue, "the results queue does not exist; the job goes back to the queue");
                self.requeue(key);
            }
            Route::Lost => {
                error!(results_queue = %self.routes.results_queue, "the results queue does not exist; a returned result is lost");
            }
            Route::Done => {}
        }
        Ok(None)
    }

    /// The job's answer is confirmed: acknowledge it at the next flush,
    /// with the others confirmed meanwhile.
    fn acknowledge(&mut self, key: Option<u64>, routing_key: &ShortString) {
        if let Some(job) = key.and_then(|key| self.jobs.remove(&key)) {
            self.stats
                .job_answered(&job.statuses, job.delivered_at.elapsed());
            debug!(parent: &job.span, routing_key = %excerpt(routing_key.as_str()), "answered");
            self.acks.ready(job.tag, job.acker, job.span);
        }
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
