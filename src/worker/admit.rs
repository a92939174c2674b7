//! Taking a delivery on ([`Worker::admit`]): the job's key and span, the
//! link holding it until its answer is confirmed, then an answer at once
//! (a message over the size limit, or a job cheap enough to answer on the
//! event loop) or the solver pool.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use tracing::{debug, field, info_span, warn};

use super::jobs::{self, Work};
use super::link::Link;
use super::serve::Worker;
use crate::protocol::{AnswerStatus, JobError, JobId, Rejection, Reply, StatusCounts, excerpt};

impl Worker {
    /// Takes a delivery on: the link holds it, the pool solves it. A
    /// message over `worker.max_message_bytes` is answered `invalid` here
    /// and now, unread and uncopied.
    pub(super) fn admit(&mut self, link: &mut Link, delivery: lapin::message::Delivery) {
        let key = self.next_key;
        self.next_key += 1;
        let span = info_span!(
            "job",
            job_id = field::Empty,
            delivery_tag = delivery.delivery_tag,
            trace_id = field::Empty
        );
        if delivery.redelivered {
            debug!(parent: &span, "redelivered job");
        }
        let message_id = delivery
            .properties
            .message_id()
            .as_ref()
            .map(|id| id.to_string());
        let size = delivery.data.len();
        let body = Arc::new(delivery.data);
        link.hold(
            key,
            delivery.delivery_tag,
            delivery.properties,
            delivery.acker,
            span.clone(),
            Arc::clone(&body),
        );
        let max = self.ctx.limits.max_message_bytes;
        if size > max {
            let rejection = Rejection {
                id: JobId::from_message_id(message_id.as_deref()),
                error: JobError::TooLarge { size, max },
            };
            span.record("job_id", excerpt(rejection.id.as_json()));
            warn!(parent: &span, error = %rejection.error, "job rejected as invalid");
            let answer = Reply::rejected(&rejection, &self.ctx.worker_id).to_json();
            let mut statuses = StatusCounts::default();
            statuses.add(AnswerStatus::Invalid);
            let Some(publication) = link.answered(key, answer, statuses) else {
                return;
            };
            link.publish_or_park(publication);
            return;
        }
        let work = Work {
            key,
            body,
            delivered_at: Instant::now(),
            message_id,
            span,
            generation: self.ctx.generation.load(Ordering::Acquire),
        };
        // A panic here would take the event loop down: the pool then
        // answers the job, with an `error` result if it panics there too.
        let inline = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            jobs::answer_inline(&self.ctx, &work)
        }));
        if let Ok(Some((answer, statuses))) = inline {
            if let Some(publication) = link.answered(key, answer, statuses) {
                link.publish_or_park(publication);
            }
            return;
        }
        self.in_pool += 1;
        jobs::start(&self.ctx, work);
    }
}
