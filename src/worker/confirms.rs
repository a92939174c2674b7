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

struct Entry<T, C> {
    confirm: C,
    waker: Waker,
    tag: T,
}

/// Publications whose confirm is awaited or not yet handed back. `C` is
/// the confirm future: lapin's [`PublisherConfirm`], or a stand-in in tests.
pub(crate) struct Confirms<T, C = PublisherConfirm> {
    pending: HashMap<u64, Entry<T, C>>,
    completed: VecDeque<(T, lapin::Result<bool>)>,
    /// A publication being pushed whose confirm had already come: while the
    /// confirms before it are observed, its returned message may turn up.
    arriving: Option<T>,
    orphans: VecDeque<Box<BasicReturnMessage>>,
    next_key: u64,
    queue: Arc<WakeQueue>,
}

impl<T, C> Confirms<T, C>
where
    T: Published,
    C: Future<Output = lapin::Result<Confirmation>> + Unpin,
{
    pub(crate) fn new() -> Confirms<T, C> {
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
    pub(crate) fn push(&mut self, mut confirm: C, tag: T) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use lapin::message::Delivery;

    /// The outcome of a [`Fake`] once completed, and the waker to wake then.
    type FakeState = (Option<lapin::Result<Confirmation>>, Option<Waker>);

    /// A confirm completed by hand, waking its waker as lapin does.
    #[derive(Clone, Default)]
    struct Fake(Arc<Mutex<FakeState>>);

    impl Fake {
        fn complete(&self, confirmation: Confirmation) {
            let waker = {
                let mut inner = self.0.lock().unwrap();
                inner.0 = Some(Ok(confirmation));
                inner.1.take()
            };
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }

    impl Future for Fake {
        type Output = lapin::Result<Confirmation>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let mut inner = self.0.lock().unwrap();
            match inner.0.take() {
                Some(result) => Poll::Ready(result),
                None => {
                    inner.1 = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        }
    }

    #[derive(Debug, PartialEq)]
    struct Sent {
        queue: &'static str,
        body: &'static str,
        returned: bool,
    }

    impl Published for Sent {
        fn is(&self, message: &BasicReturnMessage) -> bool {
            message.delivery.routing_key.as_str() == self.queue
                && message.delivery.data == self.body.as_bytes()
        }

        fn returned(&self) -> bool {
            self.returned
        }

        fn set_returned(&mut self) {
            self.returned = true;
        }
    }

    fn sent(queue: &'static str, body: &'static str) -> Sent {
        Sent {
            queue,
            body,
            returned: false,
        }
    }

    fn returned(queue: &str, body: &str) -> Option<BasicReturnMessage> {
        Some(BasicReturnMessage {
            delivery: Delivery::mock(0, "".into(), queue.into(), false, body.as_bytes().to_vec()),
            reply_code: 312,
            reply_text: "NO_ROUTE".into(),
        })
    }

    /// The next event if one is ready now.
    fn next_now(confirms: &mut Confirms<Sent, Fake>) -> Option<Event<Sent>> {
        let mut next = std::pin::pin!(confirms.next());
        match next.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(event) => Some(event),
            Poll::Pending => None,
        }
    }

    fn settled(event: Option<Event<Sent>>) -> (Sent, bool) {
        match event {
            Some(Event::Settled(sent, result)) => (sent, result.unwrap()),
            Some(Event::Orphan(message)) => panic!("orphan {:?}", message.delivery.routing_key),
            None => panic!("nothing settled"),
        }
    }

    #[test]
    fn settles_in_completion_order_with_acks_and_nacks() {
        let mut confirms = Confirms::new();
        let fakes: Vec<Fake> = (0..3).map(|_| Fake::default()).collect();
        for (fake, body) in fakes.iter().zip(["a", "b", "c"]) {
            confirms.push(fake.clone(), sent("q", body));
        }
        assert!(next_now(&mut confirms).is_none());
        fakes[2].complete(Confirmation::Ack(None));
        fakes[0].complete(Confirmation::Nack(None));
        assert_eq!(settled(next_now(&mut confirms)), (sent("q", "c"), true));
        assert_eq!(settled(next_now(&mut confirms)), (sent("q", "a"), false));
        assert!(next_now(&mut confirms).is_none());
        assert!(!confirms.is_empty());
        fakes[1].complete(Confirmation::Ack(None));
        assert_eq!(settled(next_now(&mut confirms)), (sent("q", "b"), true));
        assert!(confirms.is_empty());
    }

    #[test]
    fn a_return_carried_by_another_confirm_goes_to_its_publication() {
        let mut confirms = Confirms::new();
        let (first, second) = (Fake::default(), Fake::default());
        confirms.push(first.clone(), sent("gone", "x"));
        confirms.push(second.clone(), sent("here", "y"));
        // The return of the first publication arrives with the second's
        // confirm, which completes first.
        second.complete(Confirmation::Ack(returned("gone", "x")));
        first.complete(Confirmation::Ack(None));
        let (carrier, acked) = settled(next_now(&mut confirms));
        assert!(acked);
        assert_eq!((carrier.body, carrier.returned), ("y", false));
        let (owner, acked) = settled(next_now(&mut confirms));
        assert!(acked);
        assert_eq!((owner.body, owner.returned), ("x", true));
    }

    #[test]
    fn a_confirm_ready_at_push_sees_the_returns_completed_before_it() {
        let mut confirms = Confirms::new();
        let earlier = Fake::default();
        confirms.push(earlier.clone(), sent("here", "a"));
        // The earlier confirm completes carrying the return of a
        // publication whose own confirm is ready by the time it is pushed.
        earlier.complete(Confirmation::Ack(returned("gone", "b")));
        let ready = Fake::default();
        ready.complete(Confirmation::Ack(None));
        confirms.push(ready, sent("gone", "b"));
        let (first, _) = settled(next_now(&mut confirms));
        assert_eq!((first.body, first.returned), ("a", false));
        let (second, _) = settled(next_now(&mut confirms));
        assert_eq!((second.body, second.returned), ("b", true));
        assert!(confirms.is_empty());
    }

    #[test]
    fn a_return_that_matches_nothing_is_an_orphan() {
        let mut confirms = Confirms::new();
        let fake = Fake::default();
        confirms.push(fake.clone(), sent("here", "a"));
        fake.complete(Confirmation::Ack(returned("elsewhere", "zzz")));
        match next_now(&mut confirms) {
            Some(Event::Orphan(message)) => {
                assert_eq!(message.delivery.routing_key.as_str(), "elsewhere")
            }
            _ => panic!("expected an orphan first"),
        }
        let (sent, acked) = settled(next_now(&mut confirms));
        assert!(acked && !sent.returned);
    }

    #[test]
    fn the_same_return_is_never_given_to_two_publications() {
        let mut confirms = Confirms::new();
        let fakes: Vec<Fake> = (0..2).map(|_| Fake::default()).collect();
        // Two identical answers to the same missing queue, each returned.
        for fake in &fakes {
            confirms.push(fake.clone(), sent("gone", "same"));
        }
        fakes[0].complete(Confirmation::Ack(returned("gone", "same")));
        fakes[1].complete(Confirmation::Ack(returned("gone", "same")));
        let a = settled(next_now(&mut confirms)).0;
        let b = settled(next_now(&mut confirms)).0;
        assert!(a.returned && b.returned);
        assert!(next_now(&mut confirms).is_none());
    }
}
