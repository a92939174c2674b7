//! Publisher confirms in flight, and which results the broker returned.
//!
//! Results are published `mandatory`. When the broker cannot route one
//! (its `reply_to` queue does not exist) it sends `basic.return` and then
//! the `basic.ack` of that message. lapin hands a returned message to
//! whichever confirm it completes next, and when one `basic.ack` with
//! `multiple` completes several confirms, which of them carries it is
//! arbitrary; it may even be the confirm of a result published later. So:
//!
//! - a returned message is matched to its publication by content
//!   ([`Published::is`]: routing key and body), not by the confirm that
//!   carries it;
//! - no publication is handed back as settled before every confirm that
//!   completed before it has been looked at, since one of those may carry
//!   its returned message.
//!
//! The second point holds because confirms are observed in completion
//! order: each confirm is polled with its own waker, which queues the
//! confirm's key when lapin completes it (lapin completes confirms one at a
//! time on its I/O thread and wakes right after each), and [`Confirms`]
//! drains that whole queue before it settles anything. A confirm already
//! complete when it is pushed was not being watched, so the queue is
//! drained before it is looked at; everything that completed before it is
//! in the queue by then. A publication can even be returned before its
//! `basic_publish` call comes back, so the one being pushed is a candidate
//! owner while that queue is drained.

use std::collections::{HashMap, VecDeque};
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};

use lapin::message::BasicReturnMessage;
use lapin::{Confirmation, PublisherConfirm};

/// What the confirm set needs to know of a publication.
pub(crate) trait Published {
    /// Whether `message` is this publication, returned.
    fn is(&self, message: &BasicReturnMessage) -> bool;
    fn returned(&self) -> bool;
    fn set_returned(&mut self);
}

/// What [`Confirms::next`] hands back.
pub(crate) enum Event<T> {
    /// The broker confirmed a publication: `Ok(true)` for an ack, `Ok(false)`
    /// for a nack, or the channel's error. If the broker returned it,
    /// [`Published::returned`] says so by now.
    Settled(T, lapin::Result<bool>),
    /// A returned message that matches no publication in flight.
    Orphan(Box<BasicReturnMessage>),
}

/// Keys of confirms whose wakers fired, in firing order, and the waker of
/// the task waiting in [`Confirms::next`].
#[derive(Default)]
struct WakeQueue {
    inner: Mutex<(VecDeque<u64>, Option<Waker>)>,
}

impl WakeQueue {
    fn lock(&self) -> MutexGuard<'_, (VecDeque<u64>, Option<Waker>)> {
        // Nothing panics while holding this lock; recover all the same.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The waker of one confirm: queues its key and wakes the waiting task.
struct ConfirmWaker {
    key: u64,
    queue: Arc<WakeQueue>,
}

impl Wake for ConfirmWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let task = {
            let mut inner = self.queue.lock();
            inner.0.push_back(self.key);
            inner.1.take()
        };
        if let Some(task) = task {
            task.wake();
        }
    }
}

struct Entry<T> {
    confirm: PublisherConfirm,
    waker: Waker,
    tag: T,
}

/// Publications whose confirm is awaited or not yet handed back.
pub(crate) struct Confirms<T> {
    pending: HashMap<u64, Entry<T>>,
    completed: VecDeque<(T, lapin::Result<bool>)>,
    /// A publication being pushed whose confirm had already come: while the
    /// confirms before it are observed, its returned message may turn up.
    arriving: Option<T>,
    orphans: VecDeque<Box<BasicReturnMessage>>,
    next_key: u64,
    queue: Arc<WakeQueue>,
}

impl<T: Published> Confirms<T> {
    pub(crate) fn new() -> Confirms<T> {
        Confirms {
            pending: HashMap::new(),
            completed: VecDeque::new(),
            arriving: None,
            orphans: VecDeque::new(),
            next_key: 0,
            queue: Arc::new(WakeQueue::default()),
        }
    }

    /// Whether nothing is left to hand back.
    pub(crate) fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.completed.is_empty() && self.orphans.is_empty()
    }

    /// Tracks the confirm of a publication just sent.
    pub(crate) fn push(&mut self, mut confirm: PublisherConfirm, tag: T) {
        let key = self.next_key;
        self.next_key += 1;
        let waker = Waker::from(Arc::new(ConfirmWaker {
            key,
            queue: Arc::clone(&self.queue),
        }));
        match Pin::new(&mut confirm).poll(&mut Context::from_waker(&waker)) {
            Poll::Pending => {
                self.pending.insert(
                    key,
                    Entry {
                        confirm,
                        waker,
                        tag,
                    },
                );
            }
            Poll::Ready(result) => {
                // Confirms that completed before this one are queued:
                // look at them first, one may carry this one's return.
                self.arriving = Some(tag);
                self.observe();
                if let Some(tag) = self.arriving.take() {
                    self.complete(tag, result);
                }
            }
        }
    }

    /// Waits for the next settled publication or orphaned return.
    /// Pending forever while nothing is in flight.
    pub(crate) async fn next(&mut self) -> Event<T> {
        poll_fn(|cx| self.poll_next(cx)).await
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Event<T>> {
        loop {
            self.observe();
            if let Some(message) = self.orphans.pop_front() {
                return Poll::Ready(Event::Orphan(message));
            }
            if let Some((tag, result)) = self.completed.pop_front() {
                return Poll::Ready(Event::Settled(tag, result));
            }
            let mut inner = self.queue.lock();
            if inner.0.is_empty() {
                inner.1 = Some(cx.waker().clone());
                return Poll::Pending;
            }
        }
    }

    /// Drains the wake queue: every confirm completed so far moves to
    /// `completed`, in completion order, its returned message attributed.
    fn observe(&mut self) {
        loop {
            let Some(key) = self.queue.lock().0.pop_front() else {
                return;
            };
            // A key may be queued twice, or after its entry is done.
            let Some(entry) = self.pending.get_mut(&key) else {
                continue;
            };
            let waker = entry.waker.clone();
            if let Poll::Ready(result) =
                Pin::new(&mut entry.confirm).poll(&mut Context::from_waker(&waker))
                && let Some(entry) = self.pending.remove(&key)
            {
                self.complete(entry.tag, result);
            }
        }
    }

    fn complete(&mut self, mut tag: T, result: lapin::Result<Confirmation>) {
        let result = result.map(|confirmation| {
            let acked = !confirmation.is_nack();
            if let Some(message) = confirmation.take_message() {
                self.attribute(&mut tag, message);
            }
            acked
        });
        self.completed.push_back((tag, result));
    }

    /// Flags the publication a returned message belongs to.
    fn attribute(&mut self, carrier: &mut T, message: BasicReturnMessage) {
        let owner = if !carrier.returned() && carrier.is(&message) {
            Some(carrier)
        } else {
            self.pending
                .values_mut()
                .map(|entry| &mut entry.tag)
                .chain(self.completed.iter_mut().map(|(tag, _)| tag))
                .chain(self.arriving.as_mut())
                .find(|tag| !tag.returned() && tag.is(&message))
        };
        match owner {
            Some(owner) => owner.set_returned(),
            None => self.orphans.push_back(Box::new(message)),
        }
    }
}
