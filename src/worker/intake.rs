//! How jobs come in: the consumer, its prefetch, and the quarantine of
//! redelivered jobs.
//!
//! A quorum queue counts a delivery for every job held by a consumer that
//! goes away, acknowledged or not: a worker that crashes, is killed or
//! loses its connection adds one to the `x-delivery-count` of every job it
//! held, and a job over `x-delivery-limit` is dead-lettered. A poison job
//! (one that crashes every worker it reaches) would take the jobs held
//! beside it along to the dead-letter queue. So a job delivered before
//! (a *suspect*: `x-delivery-count` at least 1) runs alone:
//!
//! - A new consumer starts *careful*, with a prefetch of 1: the jobs a
//!   crashed worker held come back first, and they come one at a time, each
//!   answered and acknowledged before the broker hands over the next. The
//!   first job that is not a suspect switches the consumer to the full
//!   prefetch.
//! - A suspect arriving at a full-prefetch consumer, or at a careful one
//!   while the worker holds another job, puts the worker in *quarantine*:
//!   it cancels the consumer, finishes the other jobs it holds, then runs
//!   the suspects one at a time, in random order, each after the
//!   acknowledgements before it have reached the broker; then it consumes
//!   again, carefully.
//!
//! A poison job then crashes workers alone and is dead-lettered after the
//! delivery limit, while a job that was held beside it counts a delivery
//! for the first crash only, or for a few in the worst case (a quarantine
//! can still hold several suspects while one of them runs).
//!
//! A `basic.cancel` has a cost of its own on RabbitMQ 3.10: a job the queue
//! had already sent when the cancel reached the channel, and that the
//! worker never receives, goes back to the queue with one more delivery
//! counted, though no worker crashed. A quarantine at the full pace can
//! therefore count a delivery for up to a prefetch of jobs; a poison job
//! caught that way is dead-lettered after one crash fewer. The other ways
//! to stop a consumer cost more: a per-consumer prefetch cannot be lowered
//! on a running consumer, RabbitMQ refuses `channel.flow`, and a job held
//! unstarted while a suspect runs counts a delivery at every crash.

use anyhow::Context;
use lapin::message::Delivery;
use lapin::options::{BasicCancelOptions, BasicConsumeOptions, BasicQosOptions};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{Channel, Consumer};
use tokio_stream::StreamExt;

/// The prefetch of a consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pace {
    /// One job at a time: redelivered jobs are expected.
    Careful,
    /// The configured prefetch.
    Full,
}

/// How [`Intake::sort`] places a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sorted {
    /// Start it now; otherwise it is a suspect, to wait until it can run
    /// alone.
    pub now: bool,
    /// Cancel the consumer now (to change its pace).
    pub cancel: bool,
}

/// The consumer of the jobs queue and its pace. The suspects themselves
/// wait among the jobs the link holds (`link.rs`).
pub(crate) struct Intake {
    queue: ShortString,
    prefetch: u16,
    consumer: Option<Consumer>,
    /// The pace of the current consumer, or of the next one.
    pace: Pace,
    /// A `basic.cancel` was sent; the stream ends once the deliveries
    /// already sent are read.
    cancelling: bool,
    /// The queue counts deliveries (a quorum queue): its
    /// `x-delivery-count` is the broker's. On a classic queue the header,
    /// if any, is the producer's, and no delivery is a suspect.
    counted: bool,
}

impl Intake {
    /// Takes over a consumer started carefully (prefetch 1); `counted`:
    /// the queue counts deliveries (a quorum queue).
    pub(crate) fn new(consumer: Consumer, queue: &str, prefetch: u16, counted: bool) -> Intake {
        Intake {
            queue: ShortString::from(queue),
            prefetch,
            consumer: Some(consumer),
            pace: Pace::Careful,
            cancelling: false,
            counted,
        }
    }

    /// Whether a consumer is open (deliveries may still come).
    pub(crate) fn consuming(&self) -> bool {
        self.consumer.is_some()
    }

    pub(crate) fn cancelling(&self) -> bool {
        self.cancelling
    }

    /// The next delivery; pending forever while no consumer is open.
    pub(crate) async fn next(&mut self) -> Option<lapin::Result<Delivery>> {
        match self.consumer.as_mut() {
            Some(consumer) => consumer.next().await,
            None => std::future::pending().await,
        }
    }

    /// Records that the consumer's stream ended (or is given up on), and
    /// returns whether the worker asked for that (`false`: the broker
    /// cancelled the consumer).
    pub(crate) fn mark_ended(&mut self) -> bool {
        self.consumer = None;
        std::mem::replace(&mut self.cancelling, false)
    }

    /// Sorts a delivery: whether to start it now, or keep it until it can
    /// run alone, and whether the consumer must now be cancelled. `alone`
    /// tells whether the worker holds no other job, running or waiting.
    pub(crate) fn sort(&mut self, delivery: &Delivery, alone: bool) -> Sorted {
        if self.counted && is_suspect(delivery) {
            if self.pace == Pace::Careful && alone {
                return Sorted {
                    now: true,
                    cancel: false,
                };
            }
            // Quarantine: stop deliveries, finish what is held, then run
            // the suspects alone and go on carefully. At the careful pace
            // too: a suspect is run only once the consumer has stopped
            // (see `Worker::advance`), so a consumer left open would keep
            // it waiting for good.
            let cancel = !self.cancelling;
            self.pace = Pace::Careful;
            Sorted { now: false, cancel }
        } else {
            // A fresh job: the redelivered ones are behind us.
            let cancel = self.pace == Pace::Careful && !self.cancelling;
            if cancel {
                self.pace = Pace::Full;
            }
            Sorted { now: true, cancel }
        }
    }

    /// Sends `basic.cancel`; the stream then yields what was already sent
    /// and ends.
    pub(crate) async fn cancel(&mut self, channel: &Channel) -> anyhow::Result<()> {
        let Some(consumer) = self.consumer.as_ref() else {
            return Ok(());
        };
        if self.cancelling {
            return Ok(());
        }
        self.cancelling = true;
        channel
            .basic_cancel(consumer.tag(), BasicCancelOptions::default())
            .await
            .context("cannot cancel the consumer")
    }

    /// Starts a consumer at the pace due.
    pub(crate) async fn subscribe(&mut self, channel: &Channel) -> anyhow::Result<()> {
        let prefetch = match self.pace {
            Pace::Careful => 1,
            Pace::Full => self.prefetch,
        };
        channel
            .basic_qos(prefetch, BasicQosOptions { global: false })
            .await
            .context("cannot set the prefetch (basic.qos)")?;
        let consumer = channel
            .basic_consume(
                self.queue.clone(),
                ShortString::from(""),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .with_context(|| format!("cannot consume from {}", self.queue))?;
        self.consumer = Some(consumer);
        Ok(())
    }

    pub(crate) fn pace(&self) -> Pace {
        self.pace
    }
}

/// Whether the broker delivered this job before: it marks the delivery
/// `redelivered`, and a quorum queue's `x-delivery-count` is at least 1.
/// Only the broker's word counts: a producer can set any header, so the
/// count is read only on a delivery the broker flags as a redelivery, and
/// only from a queue that counts ([`Intake`] asks only a quorum queue's
/// deliveries: a classic queue passes the producer's header on).
pub(crate) fn is_suspect(delivery: &Delivery) -> bool {
    if !delivery.redelivered {
        return false;
    }
    let Some(headers) = delivery.properties.headers() else {
        return false;
    };
    let count = match headers.inner().get("x-delivery-count") {
        Some(AMQPValue::ShortShortInt(n)) => i64::from(*n),
        Some(AMQPValue::ShortShortUInt(n)) => i64::from(*n),
        Some(AMQPValue::ShortInt(n)) => i64::from(*n),
        Some(AMQPValue::ShortUInt(n)) => i64::from(*n),
        Some(AMQPValue::LongInt(n)) => i64::from(*n),
        Some(AMQPValue::LongUInt(n)) => i64::from(*n),
        Some(AMQPValue::LongLongInt(n)) => *n,
        _ => 0,
    };
    count > 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use lapin::BasicProperties;

    /// A delivery as the broker sends it: redelivered when it counted one.
    fn delivery(tag: u64, count: Option<i64>) -> Delivery {
        forged(tag, count, count.is_some_and(|n| n > 0))
    }

    /// A delivery with any header and flag.
    fn forged(tag: u64, count: Option<i64>, redelivered: bool) -> Delivery {
        let mut properties = BasicProperties::default();
        if let Some(count) = count {
            let mut headers = FieldTable::default();
            headers.insert("x-delivery-count".into(), AMQPValue::LongLongInt(count));
            properties = properties.with_headers(headers);
        }
        let mut delivery = Delivery::mock(tag, "".into(), "jobs".into(), redelivered, Vec::new());
        delivery.properties = properties;
        delivery
    }

    fn intake(pace: Pace) -> Intake {
        Intake {
            queue: "jobs".into(),
            prefetch: 64,
            consumer: None,
            pace,
            cancelling: false,
            counted: true,
        }
    }

    const NOW: Sorted = Sorted {
        now: true,
        cancel: false,
    };
    const WAIT_AND_CANCEL: Sorted = Sorted {
        now: false,
        cancel: true,
    };
    const WAIT: Sorted = Sorted {
        now: false,
        cancel: false,
    };

    #[test]
    fn on_a_classic_queue_no_delivery_is_a_suspect() {
        let mut intake = intake(Pace::Full);
        intake.counted = false;
        // A genuine redelivery carrying a producer's header.
        assert_eq!(intake.sort(&forged(1, Some(3), true), false), NOW);
    }

    #[test]
    fn suspects_are_jobs_delivered_before() {
        assert!(!is_suspect(&delivery(1, None)));
        assert!(!is_suspect(&delivery(1, Some(0))));
        assert!(is_suspect(&delivery(1, Some(1))));
        assert!(is_suspect(&delivery(1, Some(7))));
    }

    #[test]
    fn a_producer_set_delivery_count_changes_nothing() {
        assert!(!is_suspect(&forged(1, Some(1), false)));
        assert!(!is_suspect(&forged(1, Some(99), false)));
        // A redelivery on a classic queue carries no count.
        assert!(!is_suspect(&forged(1, None, true)));
    }

    #[test]
    fn careful_runs_a_lone_suspect_and_speeds_up_on_a_fresh_job() {
        let mut intake = intake(Pace::Careful);
        assert_eq!(intake.sort(&delivery(1, Some(1)), true), NOW);
        assert_eq!(intake.pace(), Pace::Careful);
        let sorted = intake.sort(&delivery(3, None), false);
        assert!(
            sorted.now && sorted.cancel,
            "a fresh job ends the careful pace"
        );
        assert_eq!(intake.pace(), Pace::Full);
    }

    #[test]
    fn a_suspect_that_cannot_run_alone_stops_a_careful_consumer_too() {
        // A new consumer right after a quarantine, the last suspect still
        // running: the next suspect must wait, and the consumer stop, or
        // it would wait for good (it runs only once the consumer is gone).
        let mut intake = intake(Pace::Careful);
        assert_eq!(intake.sort(&delivery(2, Some(1)), false), WAIT_AND_CANCEL);
        assert_eq!(intake.pace(), Pace::Careful);
        intake.cancelling = true;
        // The worker holds the suspect before it: this one is not alone.
        assert_eq!(
            intake.sort(&delivery(3, Some(4)), false),
            WAIT,
            "one cancel is enough"
        );
    }

    #[test]
    fn a_suspect_at_full_pace_starts_a_quarantine() {
        let mut intake = intake(Pace::Full);
        assert_eq!(intake.sort(&delivery(1, None), false), NOW);
        assert_eq!(intake.sort(&delivery(2, Some(1)), false), WAIT_AND_CANCEL);
        assert_eq!(intake.pace(), Pace::Careful);
        intake.cancelling = true;
        // Already cancelling: deliveries still in flight are sorted the
        // same way, with no second cancel.
        assert_eq!(intake.sort(&delivery(3, Some(2)), false), WAIT);
        assert_eq!(intake.sort(&delivery(4, None), false), NOW);
        assert_eq!(intake.pace(), Pace::Careful);
    }
}
