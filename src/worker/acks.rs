//! Acknowledgements of the jobs channel: coalesced, and sent in order.
//!
//! Every acknowledgement is work for the broker (on a quorum queue, a log
//! entry of its own), so jobs whose results are confirmed together are
//! acknowledged together, with one `basic.ack` carrying `multiple`. That
//! frame acknowledges every outstanding delivery up to its tag, so it is
//! sent only for a tag below every delivery the worker still holds
//! unanswered (the floor its caller passes to [`Acks::flush`]). Confirmed
//! jobs above that floor are acknowledged one by one.
//!
//! All frames go through one task, in the order they are decided: a
//! `multiple` acknowledgement can then never reach the broker before a
//! single acknowledgement or a `nack` of a tag it covers (which would be
//! an unknown tag to the broker, and close the channel).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use lapin::Acker;
use lapin::options::{BasicAckOptions, BasicNackOptions};
use tokio::sync::{Notify, mpsc};
use tracing::{Span, warn};

enum Command {
    Ack {
        acker: Acker,
        multiple: bool,
        span: Span,
    },
    Requeue {
        acker: Acker,
        span: Span,
    },
}

/// The acknowledgements of one channel. Dropping it drops the ones not yet
/// sent (the channel is gone; the broker redelivers those jobs).
pub(crate) struct Acks {
    commands: mpsc::UnboundedSender<Command>,
    /// Commands handed to the sender and not yet sent.
    unsent: Arc<AtomicUsize>,
    sent: Arc<Notify>,
    sender: tokio::task::JoinHandle<()>,
    /// Confirmed jobs not yet acknowledged, by delivery tag.
    ready: BTreeMap<u64, (Acker, Span)>,
    last_sent_at: Option<Instant>,
}

impl Acks {
    pub(crate) fn new() -> Acks {
        let (commands, mut queue) = mpsc::unbounded_channel::<Command>();
        let unsent = Arc::new(AtomicUsize::new(0));
        let sent = Arc::new(Notify::new());
        let sender = {
            let unsent = Arc::clone(&unsent);
            let sent = Arc::clone(&sent);
            tokio::spawn(async move {
                while let Some(command) = queue.recv().await {
                    send(command).await;
                    unsent.fetch_sub(1, Ordering::AcqRel);
                    sent.notify_waiters();
                }
            })
        };
        Acks {
            commands,
            unsent,
            sent,
            sender,
            ready: BTreeMap::new(),
            last_sent_at: None,
        }
    }

    /// The job's result is confirmed: acknowledge it at the next
    /// [`Acks::flush`].
    pub(crate) fn ready(&mut self, tag: u64, acker: Acker, span: Span) {
        self.ready.insert(tag, (acker, span));
    }

    /// Hands the job back to the broker unanswered, now.
    pub(crate) fn nack(&mut self, acker: Acker, span: Span) {
        self.submit(Command::Requeue { acker, span });
    }

    /// Sends the acknowledgements of the confirmed jobs: one `multiple`
    /// for those below `floor`, the lowest tag still held unanswered
    /// (`None`: nothing is), one each for the others.
    pub(crate) fn flush(&mut self, floor: Option<u64>) {
        if self.ready.is_empty() {
            return;
        }
        let (multiple, singles) = plan(floor, std::mem::take(&mut self.ready));
        if let Some((acker, span)) = multiple {
            self.submit(Command::Ack {
                acker,
                multiple: true,
                span,
            });
        }
        for (acker, span) in singles {
            self.submit(Command::Ack {
                acker,
                multiple: false,
                span,
            });
        }
        self.last_sent_at = Some(Instant::now());
    }

    /// Whether every acknowledgement decided so far has been sent.
    pub(crate) fn is_idle(&self) -> bool {
        self.ready.is_empty() && self.unsent.load(Ordering::Acquire) == 0
    }

    /// When the last acknowledgements were handed to the sender.
    pub(crate) fn last_sent_at(&self) -> Option<Instant> {
        self.last_sent_at
    }

    /// Whether acknowledgements handed to the sender are still unsent.
    pub(crate) fn sending(&self) -> bool {
        self.unsent.load(Ordering::Acquire) > 0
    }

    /// Completes once every acknowledgement handed to the sender is sent.
    pub(crate) async fn all_sent(&self) {
        loop {
            let sent = self.sent.notified();
            if !self.sending() {
                return;
            }
            sent.await;
        }
    }

    /// Flushes (below `floor`, as [`Acks::flush`]) and waits until
    /// everything is sent, at most `limit`. Returns whether it all went out.
    pub(crate) async fn drain(&mut self, floor: Option<u64>, limit: Duration) -> bool {
        self.flush(floor);
        tokio::time::timeout(limit, self.all_sent()).await.is_ok()
    }

    fn submit(&mut self, command: Command) {
        self.unsent.fetch_add(1, Ordering::AcqRel);
        if self.commands.send(command).is_err() {
            // The sender is gone only when `self` is being dropped.
            self.unsent.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Splits the confirmed jobs: the highest of those below `floor`, the
/// lowest held tag (acknowledged with `multiple`, which covers the rest of
/// them), and the others, above it, in tag order.
fn plan<T>(floor: Option<u64>, mut ready: BTreeMap<u64, T>) -> (Option<T>, Vec<T>) {
    let floor = floor.unwrap_or(u64::MAX);
    let above = ready.split_off(&floor);
    let multiple = ready.into_values().next_back();
    (multiple, above.into_values().collect())
}

impl Drop for Acks {
    fn drop(&mut self) {
        self.sender.abort();
    }
}

async fn send(command: Command) {
    match command {
        Command::Ack {
            acker,
            multiple,
            span,
        } => match acker.ack(BasicAckOptions { multiple }).await {
            Ok(true) => {}
            Ok(false) => warn!(
                parent: &span,
                "acknowledgement not sent: the channel is closed; the broker will redeliver the job"
            ),
            Err(e) => warn!(
                parent: &span,
                error = %e,
                "cannot acknowledge a job; the broker will redeliver it"
            ),
        },
        Command::Requeue { acker, span } => {
            let options = BasicNackOptions {
                multiple: false,
                requeue: true,
            };
            if let Err(e) = acker.nack(options).await {
                warn!(parent: &span, error = %e, "cannot requeue a job; the broker will redeliver it");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(held: &[u64], ready: &[u64]) -> (Option<u64>, Vec<u64>) {
        let ready = ready.iter().map(|&tag| (tag, tag)).collect();
        plan(held.iter().copied().min(), ready)
    }

    #[test]
    fn one_multiple_acknowledgement_below_every_held_job() {
        // Nothing held: everything confirmed goes in one frame.
        assert_eq!(plan_of(&[], &[3, 1, 2]), (Some(3), vec![]));
        // Job 4 still held: 5 and 7 must not be covered by a `multiple`.
        assert_eq!(plan_of(&[4, 6], &[1, 2, 5, 7]), (Some(2), vec![5, 7]));
        // The oldest job held: nothing can be coalesced.
        assert_eq!(plan_of(&[1], &[2, 3]), (None, vec![2, 3]));
        assert_eq!(plan_of(&[1], &[]), (None, vec![]));
    }

    #[test]
    fn a_multiple_acknowledgement_never_covers_a_held_job() {
        for held_tag in 1..20u64 {
            let ready: Vec<u64> = (1..20).filter(|&t| t != held_tag).collect();
            let (multiple, singles) = plan_of(&[held_tag], &ready);
            if let Some(tag) = multiple {
                assert!(tag < held_tag);
            }
            let covered = multiple.map_or(0, |t| t as usize);
            assert_eq!(covered + singles.len(), ready.len());
        }
    }
}
