//! The jobs a worker holds on its current connection, one record each, the
//! answers in flight to the broker, and what to do with an answer once the
//! broker has settled it ([`route`]).
//!
//! A job is held from its delivery until it is acknowledged or handed back;
//! its record ([`Held`]) knows everything needed to answer and settle it.
//! A [`Publication`] is one answer message on its way: the job it answers
//! (by the worker's key), where it was sent, and its body, kept until the
//! broker confirms it so a returned answer can be matched and sent again.

use std::time::Instant;

use lapin::message::BasicReturnMessage;
use lapin::types::ShortString;
use lapin::{Acker, BasicProperties};
use tracing::Span;

use crate::config::AmqpSettings;
use crate::protocol::StatusCounts;

/// A job the worker holds: delivered, not yet acknowledged.
pub(crate) struct Held {
    /// The delivery tag on the current channel.
    pub tag: u64,
    pub acker: Acker,
    pub delivered_at: Instant,
    /// Where the answer goes first: the job's `reply_to` if it names a
    /// queue the answer may go to, else the results queue.
    pub routing_key: ShortString,
    /// The answer's properties, fixed at delivery (persistent JSON, the
    /// job's correlation id).
    pub properties: BasicProperties,
    /// The answer's statuses, once solved.
    pub statuses: StatusCounts,
    pub span: Span,
}

/// Where answers go: the results queue, unless a job's `reply_to` names
/// another queue. A `reply_to` naming one of the service's own queues (the
/// jobs queue, the dead-letter queue) is ignored: an answer sent there
/// would come back as a job, or sit among the dead letters.
#[derive(Debug, Clone)]
pub(crate) struct Routes {
    pub results_queue: ShortString,
    own_queues: [ShortString; 2],
}

impl Routes {
    pub(crate) fn new(amqp: &AmqpSettings) -> Routes {
        Routes {
            results_queue: amqp.results_queue.as_str().into(),
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

/// An answer message published and not yet settled.
pub(crate) struct Publication {
    /// The job it answers; `None` for a returned answer whose job is no
    /// longer known, re-sent to the results queue.
    pub job: Option<u64>,
    pub routing_key: ShortString,
    pub body: Vec<u8>,
    /// The broker returned it: its queue does not exist.
    pub returned: bool,
}

impl super::confirms::Published for Publication {
    fn is(&self, message: &BasicReturnMessage) -> bool {
        self.routing_key == message.delivery.routing_key && self.body == message.delivery.data
    }

    fn returned(&self) -> bool {
        self.returned
    }

    fn set_returned(&mut self) {
        self.returned = true;
    }
}

/// What to do with an answer the broker has settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// Delivered where it was sent: acknowledge the job.
    Ack,
    /// Its `reply_to` queue does not exist: send it to the results queue.
    ToResultsQueue,
    /// The broker refused it (a nack): the job goes back to the queue.
    Requeue,
    /// The results queue itself does not exist: the job goes back to the
    /// queue.
    NoResultsQueue,
    /// A re-sent answer of a job no longer known reached the results queue.
    Done,
    /// A re-sent answer of a job no longer known was returned as well.
    Lost,
}

/// Where an answer goes once the broker has settled it: `acked` is the
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
    if !acked {
        return Route::Requeue;
    }
    if !publication.returned {
        return Route::Ack;
    }
    if publication.routing_key.as_str() == results_queue {
        Route::NoResultsQueue
    } else {
        Route::ToResultsQueue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESULTS: &str = "sudoku.results";

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

    fn publication(job: Option<u64>, to: &str, returned: bool) -> Publication {
        Publication {
            job,
            routing_key: to.into(),
            body: b"{}".to_vec(),
            returned,
        }
    }

    #[test]
    fn a_confirmed_answer_acknowledges_its_job() {
        let answer = publication(Some(1), RESULTS, false);
        assert_eq!(route(&answer, true, RESULTS), Route::Ack);
        let answer = publication(Some(1), "client.replies", false);
        assert_eq!(route(&answer, true, RESULTS), Route::Ack);
    }

    #[test]
    fn a_returned_reply_goes_to_the_results_queue() {
        let answer = publication(Some(1), "client.gone", true);
        assert_eq!(route(&answer, true, RESULTS), Route::ToResultsQueue);
    }

    #[test]
    fn a_returned_answer_to_the_results_queue_is_not_sent_around_again() {
        let answer = publication(Some(1), RESULTS, true);
        assert_eq!(route(&answer, true, RESULTS), Route::NoResultsQueue);
    }

    #[test]
    fn a_refused_answer_hands_the_job_back() {
        for (to, returned) in [(RESULTS, false), ("client.replies", false), (RESULTS, true)] {
            let answer = publication(Some(1), to, returned);
            assert_eq!(
                route(&answer, false, RESULTS),
                Route::Requeue,
                "{to} {returned}"
            );
        }
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
