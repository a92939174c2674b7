//! A link's deliveries: each held from its arrival ([`Link::hold`]),
//! sorted by the intake (start now, or wait as a suspect to run alone),
//! and started ([`Link::start`]), and the consumer restarted between
//! quarantines ([`Link::advance`]).

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use lapin::message::Delivery;
use lapin::options::BasicQosOptions;
use tracing::{debug, field, info, info_span, warn};

use super::{Held, Link, Turn, bounded};
use crate::protocol::{StatusCounts, excerpt};
use crate::worker::backoff::Random;
use crate::worker::intake::Pace;
use crate::worker::jobs::{Key, Work};
use crate::worker::publish;

impl Link {
    /// A delivery (or the end of the consumer's stream): held from now on,
    /// whether it runs now or waits as a suspect, so no `multiple`
    /// acknowledgement may cover it unanswered.
    pub(super) async fn receive(
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
