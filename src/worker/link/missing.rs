//! Queues a link cannot reach: a classic results or dead-letter queue
//! lives on one node, and while that node is down RabbitMQ can neither
//! declare it (NOT_FOUND "home node ... is down") nor route to it
//! (publications come back unroutable). The worker serves on without it:
//! the answers returned by such a queue wait here, their jobs held and
//! unacknowledged, and every [`RECHECK`] the queue is declared again; once
//! that succeeds, the answers waiting for it are published again.

use std::collections::BTreeSet;
use std::pin::Pin;
use std::time::Duration;

use anyhow::Context;
use lapin::Connection;
use lapin::options::QueueDeclareOptions;
use lapin::types::{FieldTable, ShortString};
use tracing::{info, warn};

use super::{Link, bounded};
use crate::broker::is_home_node_down;
use crate::worker::publish::Publication;

/// How often a missing queue is declared again.
const RECHECK: Duration = Duration::from_secs(5);

/// The queues a link cannot reach and the publications waiting for them.
pub(super) struct Missing {
    queues: BTreeSet<ShortString>,
    /// Publications a queue of `queues` returned, each waiting for it.
    waiting: Vec<Publication>,
    /// Fires when the missing queues are to be declared again.
    pub(super) recheck: Pin<Box<tokio::time::Sleep>>,
}

impl Missing {
    /// `queues`: those the connection could not declare.
    pub(super) fn new(queues: Vec<ShortString>) -> Missing {
        Missing {
            queues: queues.into_iter().collect(),
            waiting: Vec::new(),
            recheck: Box::pin(tokio::time::sleep(RECHECK)),
        }
    }

    /// Whether any queue is missing.
    pub(super) fn any(&self) -> bool {
        !self.queues.is_empty()
    }

    pub(super) fn has(&self, queue: &str) -> bool {
        self.queues.iter().any(|q| q.as_str() == queue)
    }

    pub(super) fn queues(&self) -> impl Iterator<Item = &ShortString> {
        self.queues.iter()
    }
}

impl Link {
    /// `queue` cannot be reached: its node is down.
    pub(super) fn queue_missing(&mut self, queue: &ShortString) {
        if self.missing.has(queue.as_str()) {
            return;
        }
        warn!(
            queue = %queue,
            "this queue's node is down; answers for it wait until it is back"
        );
        self.stats.metrics.queue_unreachable(queue.as_str(), true);
        if !self.missing.any() {
            self.missing
                .recheck
                .as_mut()
                .reset(tokio::time::Instant::now() + RECHECK);
        }
        self.missing.queues.insert(queue.clone());
    }

    /// Keeps `publication`, returned by a missing queue, until that queue
    /// is back.
    pub(super) fn wait_for_queue(&mut self, publication: Publication) {
        self.missing.waiting.push(publication);
    }

    /// Declares `queue` again after it returned `publication`:
    /// `Ok(Some(publication))` once declared, for the caller to send it
    /// again; `Ok(None)` when the queue's node is down (the queue is
    /// missing from now on, and the publication waits for it). An error
    /// otherwise.
    pub(super) async fn declare_again(
        &mut self,
        queue: &ShortString,
        publication: Publication,
    ) -> anyhow::Result<Option<Publication>> {
        let arguments = self.routes.results_queue_arguments.clone();
        let declare = redeclare(&self.session.connection, queue, arguments);
        match bounded(declare, self.call_timeout).await {
            Ok(()) => Ok(Some(publication)),
            Err(e) if is_home_node_down(&e) => {
                self.queue_missing(queue);
                self.wait_for_queue(publication);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Declares each missing queue again; a queue that is back gets the
    /// publications waiting for it. Errors only if the connection fails.
    pub(super) async fn recheck_missing(&mut self) -> anyhow::Result<()> {
        let queues: Vec<ShortString> = self.missing.queues().cloned().collect();
        for queue in queues {
            let arguments = self.routes.results_queue_arguments.clone();
            let declare = redeclare(&self.session.connection, &queue, arguments);
            match bounded(declare, self.call_timeout).await {
                Ok(()) => self.queue_back(&queue),
                Err(e) if is_home_node_down(&e) => {}
                Err(e) => {
                    if !self.session.connection.status().connected() {
                        return Err(e.context("the connection failed"));
                    }
                    warn!(queue = %queue, error = format!("{e:#}"), "cannot declare this queue again yet");
                }
            }
        }
        self.missing
            .recheck
            .as_mut()
            .reset(tokio::time::Instant::now() + RECHECK);
        Ok(())
    }

    /// `queue` is declared again: publish what waited for it.
    fn queue_back(&mut self, queue: &ShortString) {
        self.missing.queues.remove(queue);
        self.stats.metrics.queue_unreachable(queue.as_str(), false);
        let (due, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.missing.waiting)
            .into_iter()
            .partition(|p| p.routing_key == *queue);
        self.missing.waiting = waiting;
        info!(
            queue = %queue,
            waiting = due.len(),
            "the queue is back; publishing what waited for it"
        );
        for publication in due {
            self.publish_or_park(publication.resent());
        }
    }

    /// The link is over: its missing queues are no longer its to report
    /// (the next connection finds out for itself).
    pub(super) fn forget_missing(&self) {
        for queue in self.missing.queues() {
            self.stats.metrics.queue_unreachable(queue.as_str(), false);
        }
    }
}

/// Declares a results or dead-letter queue (`queue`, with `arguments`, as
/// the topology declares it) on a channel of its own, closed afterwards:
/// a refusal closes only that channel.
async fn redeclare(
    connection: &Connection,
    queue: &ShortString,
    arguments: FieldTable,
) -> anyhow::Result<()> {
    let channel = connection
        .create_channel()
        .await
        .context("cannot open a channel to declare a queue")?;
    channel
        .queue_declare(queue.clone(), QueueDeclareOptions::durable(), arguments)
        .await
        .with_context(|| format!("cannot declare queue {queue}"))?;
    let _ = channel.close(200, ShortString::from("declared")).await;
    Ok(())
}
