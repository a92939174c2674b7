//! Publishing: where a job's answer goes ([`Routes`]), every property of
//! a message the worker publishes (an answer, a job being dead-lettered,
//! a returned answer sent on), a message in flight ([`Publication`]), and
//! what to do with it once the broker has settled it ([`route`]).
//!
//! A [`Publication`] is one message on its way: the job it belongs to (by
//! its key), where it was sent, and its body, kept until the broker
//! confirms it so a returned message can be matched and sent again.

use std::sync::Arc;
use std::time::Duration;

use lapin::message::BasicReturnMessage;
use lapin::options::BasicPublishOptions;
use lapin::types::{AMQPValue, ChannelId, FieldTable, LongString, ShortString};
use lapin::{BasicProperties, Channel};

use super::confirms::{Published, Sending};
use super::jobs::Key;
use crate::config::AmqpSettings;
use crate::protocol::{DEAD_REASON_HEADER, TRACEPARENT, is_traceparent};

/// The W3C `traceparent` header of a job, if it carries a well-formed one
/// ([`is_traceparent`]).
pub(crate) fn traceparent(job: &BasicProperties) -> Option<&str> {
    let value = match job.headers().as_ref()?.inner().get(TRACEPARENT)? {
        AMQPValue::LongString(text) => std::str::from_utf8(text.as_bytes()).ok()?,
        AMQPValue::ShortString(text) => text.as_str(),
        // Some clients send string headers as bytes (RabbitMQ's `x` type).
        AMQPValue::ByteArray(bytes) => std::str::from_utf8(bytes.as_slice()).ok()?,
        _ => return None,
    };
    is_traceparent(value).then_some(value)
}

/// The properties of a job's answer: persistent JSON, the job's
/// correlation id (else its message id), and its `traceparent` carried
/// onward.
/// `trace` is the job's [`traceparent`], read once by the caller.
pub(crate) fn answer_properties(job: &BasicProperties, trace: Option<&str>) -> BasicProperties {
    let properties = result_properties(reply_correlation(job).as_ref());
    match trace {
        Some(trace) => {
            let mut headers = FieldTable::default();
            headers.insert(TRACEPARENT.into(), AMQPValue::LongString(trace.into()));
            properties.with_headers(headers)
        }
        None => properties,
    }
}

/// Properties of a result message: persistent JSON, with the job's
/// `correlation_id`, else its `message_id`, else none.
fn result_properties(correlation_id: Option<&ShortString>) -> BasicProperties {
    let properties = BasicProperties::default()
        .with_delivery_mode(2)
        .with_content_type("application/json".into());
    match correlation_id {
        Some(id) => properties.with_correlation_id(id.clone()),
        None => properties,
    }
}

/// The `correlation_id` a job's result carries.
fn reply_correlation(job: &BasicProperties) -> Option<ShortString> {
    job.correlation_id()
        .clone()
        .or_else(|| job.message_id().clone())
}

/// A dead-lettered job's properties: the job's own, with the reason added
/// in [`DEAD_REASON_HEADER`].
pub(crate) fn dead_letter_properties(
    job: &BasicProperties,
    reason: Option<&str>,
) -> BasicProperties {
    let mut headers = job.headers().clone().unwrap_or_default();
    let reason = reason.unwrap_or("the answer could not be delivered");
    headers.insert(
        DEAD_REASON_HEADER.into(),
        AMQPValue::LongString(LongString::from(reason)),
    );
    job.clone().with_headers(headers)
}

/// Hands `publication` to lapin on `channel` (persistent, `mandatory`),
/// with `properties`, without waiting for it to be written.
pub(crate) fn send(
    channel: &Channel,
    publication: &Publication,
    properties: BasicProperties,
) -> Sending {
    let channel = channel.clone();
    let routing_key = publication.routing_key.clone();
    let body = Arc::clone(&publication.body);
    Box::pin(async move {
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
    })
}

/// Where answers go: the results queue, unless a job's `reply_to` names
/// another queue. A `reply_to` naming one of the service's own queues (the
/// jobs queue, the dead-letter queue) is ignored: an answer sent there
/// would come back as a job, or sit among the dead letters.
#[derive(Debug, Clone)]
pub(crate) struct Routes {
    pub results_queue: ShortString,
    /// The results queue's arguments, as the topology declares it (for a
    /// redeclaration after someone deleted it).
    pub results_queue_arguments: FieldTable,
    pub dead_letter_queue: ShortString,
    own_queues: [ShortString; 2],
}

impl Routes {
    pub(crate) fn new(amqp: &AmqpSettings) -> Routes {
        Routes {
            results_queue: amqp.results_queue.as_str().into(),
            results_queue_arguments: crate::broker::results_queue_arguments(amqp),
            dead_letter_queue: amqp.dead_letter_queue.as_str().into(),
            own_queues: [
                amqp.jobs_queue.as_str().into(),
                amqp.dead_letter_queue.as_str().into(),
            ],
        }
    }

    /// The queue a job's answer goes to first, and the `reply_to` that was
    /// refused, if any (for the caller to warn about).
    pub(crate) fn destination(
        &self,
        reply_to: Option<&ShortString>,
    ) -> (ShortString, Option<ShortString>) {
        match reply_to {
            Some(queue) if queue.as_str().is_empty() => (self.results_queue.clone(), None),
            Some(queue) if self.own_queues.contains(queue) => {
                (self.results_queue.clone(), Some(queue.clone()))
            }
            Some(queue) => (queue.clone(), None),
            None => (self.results_queue.clone(), None),
        }
    }
}

/// Publications of one answer to one queue: the first, and retries after a
/// nack or after declaring a missing results queue again. A `reply_to`
/// queue that refuses them all is given up for the results queue, which
/// gets as many; only when that refuses them all is the job dead-lettered.
pub(crate) const MAX_PUBLISH_ATTEMPTS: u32 = 3;

/// How long a refused publication (a nack) waits before its next attempt,
/// after `attempts` of them: 2.5 s, then 20 s. A quorum results queue that
/// lost its leader nacks for as long as the election takes (about 6 s
/// measured on a three-node cluster, more than 15 s once on a machine at a
/// load of 8); attempts spread over 22.5 s outlast it, where attempts at once would dead-letter jobs whose answers could
/// have been delivered a few seconds later.
pub(crate) fn retry_delay(attempts: u32) -> Duration {
    Duration::from_millis(2500) * 8u32.saturating_pow(attempts.saturating_sub(1)).min(8)
}

/// What a publication carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Carries {
    /// The job's answer.
    Answer,
    /// The job itself, on its way to the dead-letter queue because its
    /// answer could not be delivered.
    DeadLetter,
}

/// A message published and not yet settled: an answer, or a job being
/// dead-lettered.
pub(crate) struct Publication {
    /// The job it answers; `None` for a returned answer whose job is no
    /// longer known, re-sent to the results queue.
    pub job: Option<Key>,
    pub carries: Carries,
    pub routing_key: ShortString,
    pub body: Arc<Vec<u8>>,
    /// Publications of this message so far, this one included.
    pub attempts: u32,
    /// The broker returned it: its queue does not exist.
    pub returned: bool,
    /// The properties it was first sent with, for a returned answer whose
    /// job is no longer known (`None`: taken from the job).
    pub sent_with: Option<Box<BasicProperties>>,
    /// The channel it was last published on (0 until it is).
    pub channel: ChannelId,
}

impl Publication {
    /// The first publication of a job's answer.
    pub(crate) fn answer(job: Key, routing_key: ShortString, body: Vec<u8>) -> Publication {
        Publication {
            job: Some(job),
            carries: Carries::Answer,
            routing_key,
            body: Arc::new(body),
            attempts: 1,
            returned: false,
            sent_with: None,
            channel: 0,
        }
    }

    /// A returned answer whose job is no longer known, to send to the
    /// results queue with the properties it was first sent with.
    pub(crate) fn orphan(results_queue: ShortString, message: BasicReturnMessage) -> Publication {
        Publication {
            job: None,
            carries: Carries::Answer,
            routing_key: results_queue,
            body: Arc::new(message.delivery.data),
            attempts: 1,
            returned: false,
            // Its correlation_id and traceparent, as the job gave them.
            sent_with: Some(Box::new(message.delivery.properties)),
            channel: 0,
        }
    }

    /// The job itself, on its way to the dead-letter queue.
    pub(crate) fn dead_letter(
        job: Option<Key>,
        dead_letter_queue: ShortString,
        body: &Arc<Vec<u8>>,
    ) -> Publication {
        Publication {
            job,
            carries: Carries::DeadLetter,
            routing_key: dead_letter_queue,
            body: Arc::clone(body),
            attempts: 1,
            returned: false,
            sent_with: None,
            channel: 0,
        }
    }

    /// The properties of a returned answer whose job is no longer known:
    /// those it was first sent with.
    pub(crate) fn sent_with(&self) -> BasicProperties {
        self.sent_with
            .as_deref()
            .cloned()
            .unwrap_or_else(|| result_properties(None))
    }

    /// The same message, published once more to `routing_key`.
    pub(crate) fn again(self, routing_key: ShortString) -> Publication {
        Publication {
            routing_key,
            attempts: self.attempts + 1,
            returned: false,
            ..self
        }
    }

    /// The same message sent again where it went, its attempts unchanged:
    /// it waited for its queue, which had not refused it.
    pub(crate) fn resent(self) -> Publication {
        Publication {
            returned: false,
            ..self
        }
    }

    /// The same answer sent to `queue` instead, as a first attempt there.
    pub(crate) fn redirect(self, queue: ShortString) -> Publication {
        Publication {
            routing_key: queue,
            attempts: 1,
            returned: false,
            ..self
        }
    }
}

impl Published for Publication {
    fn is(&self, message: &BasicReturnMessage) -> bool {
        self.routing_key == message.delivery.routing_key && *self.body == message.delivery.data
    }

    fn returned(&self) -> bool {
        self.returned
    }

    fn set_returned(&mut self) {
        self.returned = true;
    }
}

/// What to do with a publication the broker has settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// Delivered where it was sent: acknowledge the job.
    Ack,
    /// Its `reply_to` queue does not exist, or refused it
    /// [`MAX_PUBLISH_ATTEMPTS`] times: send it to the results queue.
    ToResultsQueue,
    /// The broker refused it (a nack): publish it again.
    Retry,
    /// The results queue does not exist: declare it again, then publish
    /// the answer again.
    RedeclareResultsQueue,
    /// The answer could not be delivered in [`MAX_PUBLISH_ATTEMPTS`]: the
    /// job goes to the dead-letter queue, with the reason in a header.
    DeadLetter,
    /// Not even the dead-letter queue took the job: it goes back to the
    /// jobs queue.
    Requeue,
    /// A re-sent answer of a job no longer known reached the results queue.
    Done,
    /// A re-sent answer of a job no longer known was returned as well.
    Lost,
}

/// Where a publication goes once the broker has settled it: `acked` is the
/// broker's confirm, and `publication.returned` whether it came back
/// unroutable first.
pub(crate) fn route(publication: &Publication, acked: bool, results_queue: &str) -> Route {
    if publication.job.is_none() {
        return if publication.returned {
            Route::Lost
        } else {
            Route::Done
        };
    }
    let delivered = acked && !publication.returned;
    if publication.carries == Carries::DeadLetter {
        return if delivered {
            Route::Ack
        } else {
            Route::Requeue
        };
    }
    if delivered {
        return Route::Ack;
    }
    let to_results_queue = publication.routing_key.as_str() == results_queue;
    if acked && !to_results_queue {
        // A reply_to queue that does not exist: not worth a retry.
        return Route::ToResultsQueue;
    }
    if publication.attempts >= MAX_PUBLISH_ATTEMPTS {
        // A result is dropped only when the results queue cannot take it.
        return if to_results_queue {
            Route::DeadLetter
        } else {
            Route::ToResultsQueue
        };
    }
    if acked {
        Route::RedeclareResultsQueue
    } else {
        Route::Retry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESULTS: &str = "sudoku.results";
    const KEY: Key = Key {
        generation: 0,
        tag: 1,
    };

    fn with_trace(value: &str) -> BasicProperties {
        let mut headers = FieldTable::default();
        headers.insert(TRACEPARENT.into(), AMQPValue::LongString(value.into()));
        BasicProperties::default().with_headers(headers)
    }

    #[test]
    fn a_well_formed_traceparent_is_carried_onward() {
        let trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(traceparent(&with_trace(trace)), Some(trace));
        let answer = answer_properties(
            &with_trace(trace).with_correlation_id("c".into()),
            Some(trace),
        );
        assert_eq!(traceparent(&answer), Some(trace));
        assert_eq!(
            answer.correlation_id().as_ref().map(|c| c.as_str()),
            Some("c")
        );
        // The same header sent as bytes, as some clients send strings.
        let mut headers = FieldTable::default();
        headers.insert(
            TRACEPARENT.into(),
            AMQPValue::ByteArray(trace.as_bytes().to_vec().into()),
        );
        let job = BasicProperties::default().with_headers(headers);
        assert_eq!(traceparent(&job), Some(trace));
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "not a trace",
        ] {
            let job = with_trace(bad);
            assert_eq!(traceparent(&job), None, "{bad}");
            assert!(
                answer_properties(&job, traceparent(&job))
                    .headers()
                    .is_none(),
                "{bad}"
            );
        }
        assert_eq!(traceparent(&BasicProperties::default()), None);
    }

    #[test]
    fn answers_never_go_to_the_services_own_queues() {
        let routes = Routes::new(&AmqpSettings::default());
        let to = |reply_to: Option<&str>| {
            let reply_to = reply_to.map(ShortString::from);
            let (queue, refused) = routes.destination(reply_to.as_ref());
            (queue.to_string(), refused.map(|q| q.to_string()))
        };
        assert_eq!(to(None), (RESULTS.into(), None));
        assert_eq!(to(Some("")), (RESULTS.into(), None));
        assert_eq!(to(Some("client.replies")), ("client.replies".into(), None));
        assert_eq!(
            to(Some("amq.rabbitmq.reply-to.g1h2AA")),
            ("amq.rabbitmq.reply-to.g1h2AA".into(), None)
        );
        assert_eq!(to(Some(RESULTS)), (RESULTS.into(), None));
        for own in ["sudoku.jobs", "sudoku.jobs.dead"] {
            assert_eq!(to(Some(own)), (RESULTS.into(), Some(own.into())));
        }
    }

    fn publication(job: Option<Key>, to: &str, returned: bool) -> Publication {
        Publication {
            job,
            carries: Carries::Answer,
            routing_key: to.into(),
            body: Arc::new(b"{}".to_vec()),
            attempts: 1,
            returned,
            sent_with: None,
            channel: 0,
        }
    }

    #[test]
    fn a_confirmed_answer_acknowledges_its_job() {
        let answer = publication(Some(KEY), RESULTS, false);
        assert_eq!(route(&answer, true, RESULTS), Route::Ack);
        let answer = publication(Some(KEY), "client.replies", false);
        assert_eq!(route(&answer, true, RESULTS), Route::Ack);
    }

    #[test]
    fn a_returned_reply_goes_to_the_results_queue() {
        let answer = publication(Some(KEY), "client.gone", true);
        assert_eq!(route(&answer, true, RESULTS), Route::ToResultsQueue);
    }

    #[test]
    fn a_missing_results_queue_is_declared_again_a_bounded_number_of_times() {
        let mut answer = publication(Some(KEY), RESULTS, true);
        for _ in 1..MAX_PUBLISH_ATTEMPTS {
            assert_eq!(route(&answer, true, RESULTS), Route::RedeclareResultsQueue);
            answer = answer.again(RESULTS.into());
            answer.returned = true;
        }
        assert_eq!(answer.attempts, MAX_PUBLISH_ATTEMPTS);
        assert_eq!(route(&answer, true, RESULTS), Route::DeadLetter);
    }

    #[test]
    fn a_refused_answer_is_retried_then_dead_lettered() {
        let mut answer = publication(Some(KEY), RESULTS, false);
        for _ in 1..MAX_PUBLISH_ATTEMPTS {
            assert_eq!(route(&answer, false, RESULTS), Route::Retry);
            answer = answer.again(RESULTS.into());
        }
        assert_eq!(route(&answer, false, RESULTS), Route::DeadLetter);
    }

    #[test]
    fn a_reply_refused_every_time_goes_to_the_results_queue_before_any_dead_letter() {
        let mut answer = publication(Some(KEY), "client.replies", false);
        for _ in 1..MAX_PUBLISH_ATTEMPTS {
            assert_eq!(route(&answer, false, RESULTS), Route::Retry);
            answer = answer.again("client.replies".into());
        }
        assert_eq!(route(&answer, false, RESULTS), Route::ToResultsQueue);
        // The results queue gets every attempt of its own.
        let mut answer = answer.redirect(RESULTS.into());
        for _ in 1..MAX_PUBLISH_ATTEMPTS {
            assert_eq!(route(&answer, false, RESULTS), Route::Retry);
            answer = answer.again(RESULTS.into());
        }
        assert_eq!(route(&answer, false, RESULTS), Route::DeadLetter);
        assert_eq!(route(&answer, true, RESULTS), Route::Ack);
    }

    #[test]
    fn refused_attempts_are_spread_over_more_than_a_leader_election() {
        assert_eq!(retry_delay(1), Duration::from_millis(2500));
        assert_eq!(retry_delay(2), Duration::from_secs(20));
        // An election measured at 6 s, and past 15 s on a loaded machine.
        let spread: Duration = (1..MAX_PUBLISH_ATTEMPTS).map(retry_delay).sum();
        assert!(spread >= Duration::from_secs(22), "{spread:?}");
    }

    #[test]
    fn a_dead_letter_is_acknowledged_once_delivered_else_requeued() {
        let mut dead = publication(Some(KEY), "sudoku.jobs.dead", false);
        dead.carries = Carries::DeadLetter;
        assert_eq!(route(&dead, true, RESULTS), Route::Ack);
        assert_eq!(route(&dead, false, RESULTS), Route::Requeue);
        dead.returned = true;
        assert_eq!(route(&dead, true, RESULTS), Route::Requeue);
    }

    #[test]
    fn answers_of_unknown_jobs_are_done_or_lost() {
        assert_eq!(
            route(&publication(None, RESULTS, false), true, RESULTS),
            Route::Done
        );
        assert_eq!(
            route(&publication(None, RESULTS, true), true, RESULTS),
            Route::Lost
        );
        assert_eq!(
            route(&publication(None, RESULTS, false), false, RESULTS),
            Route::Done
        );
    }
}
