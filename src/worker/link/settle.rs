//! A link's answers: published (or parked while the broker blocks the
//! connection), and settled to the end once the broker has confirmed
//! them ([`route`]): the job acknowledged, the answer published again
//! (declaring the results queue again first if it is gone) or sent on to
//! the results queue, the job dead-lettered or handed back.

use std::future::Future;
use std::time::Duration;

use anyhow::Context;
use lapin::types::{ChannelId, ShortString};
use tracing::{Span, debug, error, info, warn};

use super::{Link, bounded};
use crate::protocol::{Answered, excerpt};
use crate::worker::amqp;
use crate::worker::confirms::Event;
use crate::worker::jobs::Key;
use crate::worker::publish::{self, Carries, Publication, Route, route};

/// The shortest time between two replacements of the results channel
/// ([`Link::renew_results_channel`]): a queue that refuses every message
/// (full, with `reject-publish`) does not make the link churn channels.
const RENEW_INTERVAL: Duration = Duration::from_secs(1);

impl Link {
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
    pub(super) fn publish_or_park(&mut self, publication: Publication) {
        if self.blocked_at.is_some() {
            self.parked.push(publication);
            return;
        }
        self.publish(publication);
    }

    /// Publishes `publication` again once `delay` has passed (a turn of
    /// [`Link::next`] then fires).
    fn retry_later(&mut self, publication: Publication, delay: Duration) {
        let due = tokio::time::Instant::now() + delay;
        if self.retries.iter().all(|(at, _)| due < *at) {
            self.retry_due.as_mut().reset(due);
        }
        self.retries.push((due, publication));
    }

    /// Publishes every refused answer whose wait is over, and sets the
    /// timer for the next.
    pub(super) fn retry_due_now(&mut self) {
        let now = tokio::time::Instant::now();
        let (due, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.retries)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        self.retries = waiting;
        if let Some(next) = self.retries.iter().map(|(at, _)| *at).min() {
            self.retry_due.as_mut().reset(next);
        }
        for (_, publication) in due {
            self.publish_or_park(publication);
        }
    }

    /// Publishes a message without waiting for lapin to write it, nor for
    /// its confirm: both come through [`Link::next`] (a failure there means
    /// the channel failed).
    pub(super) fn publish(&mut self, mut publication: Publication) {
        publication.channel = self.session.results.id();
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
    pub(super) async fn settle_ready(&mut self, first: Event<Publication>) -> anyhow::Result<()> {
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
    pub(super) fn floor(&self) -> Option<u64> {
        self.held.keys().next().copied()
    }

    /// Acts on a confirm ([`route`]) to the end: acknowledges the job,
    /// publishes the message again (declaring the results queue again
    /// first if it is gone), dead-letters or hands back the job. An error
    /// means the channel failed.
    async fn settle(&mut self, event: Event<Publication>) -> anyhow::Result<()> {
        let Some((publication, acked)) = self.settled(event)? else {
            return Ok(());
        };
        if !acked {
            self.renew_results_channel(publication.channel).await?;
        }
        self.close_drained_channels().await;
        let key = publication.job;
        if publication.returned && self.missing.has(publication.routing_key.as_str()) {
            // Its queue's node is down: it waits for it.
            self.wait_for_queue(publication);
            return Ok(());
        }
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
                let delay = publish::retry_delay(publication.attempts);
                warn!(parent: &span, routing_key = %to, attempt = publication.attempts, retry_in_ms = delay.as_millis() as u64, "the broker refused a result (nack); publishing it again later");
                let routing_key = publication.routing_key.clone();
                self.retry_later(publication.again(routing_key), delay);
            }
            Route::RedeclareResultsQueue => {
                warn!(parent: &span, results_queue = %results_queue, attempt = publication.attempts, "the results queue does not exist; declaring it again");
                if let Some(publication) = self.declare_again(&results_queue, publication).await? {
                    self.publish_or_park(publication.again(results_queue));
                }
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
            Route::Requeue if publication.returned => {
                // Unroutable: the dead-letter queue is gone, or its node is.
                let dead_letter_queue = self.routes.dead_letter_queue.clone();
                let declared = self.declare_again(&dead_letter_queue, publication).await;
                if !matches!(declared, Ok(None)) {
                    let declared_again = declared.is_ok();
                    error!(parent: &span, declared_again, "the dead-letter queue did not take the job either; it goes back to the queue");
                    self.requeue(key);
                }
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

    /// After a nack of a message published on the current results
    /// channel, publishes everything after it on a new channel (at most one
    /// new channel each [`RENEW_INTERVAL`], and none while the broker
    /// blocks the connection: opening one would wait for the alarm to end).
    ///
    /// A channel's refusal can outlast its cause: a channel that first
    /// published to a quorum queue while the queue's leader was down can go
    /// on being refused for that queue long after a new leader is elected,
    /// while a new channel's messages are confirmed (seen with RabbitMQ
    /// 3.10, the results queue's leader killed). Retried on the old
    /// channel, such an answer would be dead-lettered. An error means the
    /// connection failed.
    async fn renew_results_channel(&mut self, nacked_on: ChannelId) -> anyhow::Result<()> {
        if nacked_on != self.session.results.id()
            || self.blocked()
            || self
                .renewed_at
                .is_some_and(|at| at.elapsed() < RENEW_INTERVAL)
        {
            return Ok(());
        }
        let open = amqp::open_results_channel(&self.session.connection);
        let fresh = bounded(open, self.call_timeout).await?;
        let old = std::mem::replace(&mut self.session.results, fresh);
        info!(
            refused_on = old.id(),
            now_on = self.session.results.id(),
            "the broker refused a result; publishing on a new channel from now on"
        );
        self.retired.push(old);
        self.renewed_at = Some(std::time::Instant::now());
        Ok(())
    }

    /// Closes every replaced results channel none of whose messages awaits
    /// its confirm.
    async fn close_drained_channels(&mut self) {
        if self.retired.is_empty() || self.blocked() {
            return;
        }
        let (drained, busy): (Vec<_>, Vec<_>) = std::mem::take(&mut self.retired)
            .into_iter()
            .partition(|channel| {
                let id = channel.id();
                !self.confirms.holds(|publication| publication.channel == id)
            });
        self.retired = busy;
        for channel in drained {
            let close = async {
                channel
                    .close(200, ShortString::from("replaced"))
                    .await
                    .map_err(anyhow::Error::from)
            };
            if let Err(e) = bounded(close, self.call_timeout).await {
                debug!(
                    channel = channel.id(),
                    error = format!("{e:#}"),
                    "cannot close a replaced results channel"
                );
            }
        }
    }

    /// A confirm as [`Link::settle`] acts on it: the publication and the
    /// broker's ack or nack; `None` for a returned message whose
    /// publication is gone, which is sent on to the results queue here. An
    /// error means the channel failed.
    fn settled(
        &mut self,
        event: Event<Publication>,
    ) -> anyhow::Result<Option<(Publication, bool)>> {
        match event {
            Event::Settled(publication, acked) => {
                let acked =
                    acked.context("a result could not be published, or its confirm was lost")?;
                Ok(Some((publication, acked)))
            }
            Event::Orphan(message) => {
                warn!(
                    routing_key = %excerpt(message.delivery.routing_key.as_str()),
                    "a returned result matches no result in flight; sending it to the results queue"
                );
                let publication = Publication::orphan(self.routes.results_queue.clone(), *message);
                self.publish_or_park(publication);
                Ok(None)
            }
        }
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
