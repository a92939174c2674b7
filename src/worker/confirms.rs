//! Results being published, their publisher confirms, and which results
//! the broker returned.
//!
//! A publication is tracked from the moment it is handed to lapin, not from
//! when lapin has written it: while the broker blocks the connection (a
//! resource alarm), lapin writes nothing, and a `basic_publish` call waits
//! until the alarm clears. The event loop must not wait with it (it would
//! miss the alarm's own notice, and stop answering `/livez`), so each
//! publication is a future polled here like its confirm.
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
//! drains that whole queue before it settles anything. A confirm obtained
//! once its publication is written was not being watched until then, so
//! its key goes to the back of the queue and it is looked at after every
//! confirm already queued; until it settles, its publication is a candidate
//! owner of any returned message, as is every publication still being
//! written.

use std::collections::{BTreeMap, VecDeque};
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

use lapin::message::BasicReturnMessage;
use lapin::{Confirmation, PublisherConfirm};

/// A `basic_publish` under way: done once lapin has written the message,
/// with its confirm to await.
pub(crate) type Sending = Pin<Box<dyn Future<Output = lapin::Result<PublisherConfirm>> + Send>>;

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
    /// for a nack, or the channel's error (the publication could not be
    /// sent, or its confirm was lost). If the broker returned it,
    /// [`Published::returned`] says so by now.
    Settled(T, lapin::Result<bool>),
    /// A returned message that matches no publication in flight.
    Orphan(Box<BasicReturnMessage>),
}

/// Keys of entries whose wakers fired, in firing order, and the waker of
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

/// The waker of one entry: queues its key and wakes the waiting task.
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

/// Where a publication is: being written, or written and awaiting its
/// confirm.
enum Stage<C, S> {
    Sending(S),
    Confirming(C),
}

struct Entry<T, C, S> {
    stage: Stage<C, S>,
    waker: Waker,
    tag: T,
    /// When it was pushed.
    since: Instant,
}

/// Publications being sent, or whose confirm is awaited or not yet handed
/// back. `S` is the sending future and `C` the confirm future: lapin's
/// [`Sending`] and [`PublisherConfirm`], or stand-ins in tests.
pub(crate) struct Confirms<T, C = PublisherConfirm, S = Sending> {
    /// By key, which is the order of pushing: the first is the oldest.
    pending: BTreeMap<u64, Entry<T, C, S>>,
    completed: VecDeque<(T, lapin::Result<bool>)>,
    orphans: VecDeque<Box<BasicReturnMessage>>,
    next_key: u64,
    queue: Arc<WakeQueue>,
}

impl<T, C, S> Confirms<T, C, S>
where
    T: Published,
    C: Future<Output = lapin::Result<Confirmation>> + Unpin,
    S: Future<Output = lapin::Result<C>> + Unpin,
{
    pub(crate) fn new() -> Confirms<T, C, S> {
        Confirms {
            pending: BTreeMap::new(),
            completed: VecDeque::new(),
            orphans: VecDeque::new(),
            next_key: 0,
            queue: Arc::new(WakeQueue::default()),
        }
    }

    /// Whether nothing is left to hand back.
    pub(crate) fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.completed.is_empty() && self.orphans.is_empty()
    }

    /// When the oldest publication still unconfirmed was pushed; `None`
    /// when every one is confirmed.
    pub(crate) fn oldest_unconfirmed(&self) -> Option<Instant> {
        self.pending.first_key_value().map(|(_, entry)| entry.since)
    }

    /// Whether any publication not yet handed back satisfies `test`.
    pub(crate) fn holds(&self, test: impl Fn(&T) -> bool) -> bool {
        self.pending.values().any(|entry| test(&entry.tag))
            || self.completed.iter().any(|(tag, _)| test(tag))
    }

    /// Tracks a publication from its `basic_publish` call on. The call is
    /// polled at once, so publications reach lapin in the order pushed.
    pub(crate) fn push(&mut self, sending: S, tag: T) {
        let key = self.next_key;
        self.next_key += 1;
        let waker = Waker::from(Arc::new(ConfirmWaker {
            key,
            queue: Arc::clone(&self.queue),
        }));
        self.pending.insert(
            key,
            Entry {
                stage: Stage::Sending(sending),
                waker,
                tag,
                since: Instant::now(),
            },
        );
        self.queue.lock().0.push_back(key);
        self.observe();
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
    /// `completed`, in completion order, its returned message attributed;
    /// every publication written now awaits its confirm.
    fn observe(&mut self) {
        loop {
            let Some(key) = self.queue.lock().0.pop_front() else {
                return;
            };
            // A key may be queued twice, or after its entry is done.
            let Some(entry) = self.pending.get_mut(&key) else {
                continue;
            };
            let mut context = Context::from_waker(&entry.waker);
            let result = match &mut entry.stage {
                Stage::Sending(sending) => match Pin::new(sending).poll(&mut context) {
                    Poll::Pending => continue,
                    Poll::Ready(Ok(confirm)) => {
                        // Its confirm may have come already, unwatched:
                        // look at it after every confirm queued so far.
                        entry.stage = Stage::Confirming(confirm);
                        self.queue.lock().0.push_back(key);
                        continue;
                    }
                    Poll::Ready(Err(e)) => Err(e),
                },
                Stage::Confirming(confirm) => match Pin::new(confirm).poll(&mut context) {
                    Poll::Pending => continue,
                    Poll::Ready(result) => result,
                },
            };
            if let Some(entry) = self.pending.remove(&key) {
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

    /// A future completed by hand, waking its waker as lapin does: a
    /// confirm ([`Confirm`]) or a publication being written ([`Write`]).
    struct Fake<O>(Arc<Mutex<(Option<O>, Option<Waker>)>>);

    impl<O> Clone for Fake<O> {
        fn clone(&self) -> Self {
            Fake(Arc::clone(&self.0))
        }
    }

    impl<O> Fake<O> {
        fn new() -> Fake<O> {
            Fake(Arc::new(Mutex::new((None, None))))
        }

        fn complete(&self, output: O) {
            let waker = {
                let mut inner = self.0.lock().unwrap();
                inner.0 = Some(output);
                inner.1.take()
            };
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }

    impl<O> Future for Fake<O> {
        type Output = O;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<O> {
            let mut inner = self.0.lock().unwrap();
            match inner.0.take() {
                Some(output) => Poll::Ready(output),
                None => {
                    inner.1 = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        }
    }

    type Confirm = Fake<lapin::Result<Confirmation>>;
    type Write = Fake<lapin::Result<Confirm>>;
    type Set = Confirms<Sent, Confirm, Write>;

    /// A fresh confirm, not yet completed.
    fn confirm() -> Confirm {
        Fake::new()
    }

    /// A publication lapin has already written, awaiting `confirm`.
    fn written(confirm: &Confirm) -> Write {
        let write = Fake::new();
        write.complete(Ok(confirm.clone()));
        write
    }

    impl Confirm {
        fn ack(&self, returned: Option<BasicReturnMessage>) {
            self.complete(Ok(Confirmation::Ack(returned)));
        }

        fn nack(&self) {
            self.complete(Ok(Confirmation::Nack(None)));
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
    fn next_now(confirms: &mut Set) -> Option<Event<Sent>> {
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
        let mut confirms = Set::new();
        let confirms_of: Vec<Confirm> = (0..3).map(|_| confirm()).collect();
        for (confirm, body) in confirms_of.iter().zip(["a", "b", "c"]) {
            confirms.push(written(confirm), sent("q", body));
        }
        assert!(next_now(&mut confirms).is_none());
        confirms_of[2].ack(None);
        confirms_of[0].nack();
        assert_eq!(settled(next_now(&mut confirms)), (sent("q", "c"), true));
        assert_eq!(settled(next_now(&mut confirms)), (sent("q", "a"), false));
        assert!(next_now(&mut confirms).is_none());
        assert!(!confirms.is_empty());
        confirms_of[1].ack(None);
        assert_eq!(settled(next_now(&mut confirms)), (sent("q", "b"), true));
        assert!(confirms.is_empty());
    }

    #[test]
    fn the_oldest_unconfirmed_is_the_first_pushed_still_awaiting_its_confirm() {
        let mut confirms = Set::new();
        assert_eq!(confirms.oldest_unconfirmed(), None);
        let (first, second) = (confirm(), confirm());
        confirms.push(written(&first), sent("q", "a"));
        let first_at = confirms.oldest_unconfirmed();
        std::thread::sleep(std::time::Duration::from_millis(2));
        confirms.push(written(&second), sent("q", "b"));
        assert_eq!(confirms.oldest_unconfirmed(), first_at);
        // Settled, even if not yet handed back, it no longer counts.
        first.ack(None);
        let settled_first = next_now(&mut confirms);
        let second_at = confirms.oldest_unconfirmed();
        assert!(second_at > first_at);
        assert_eq!(settled(settled_first), (sent("q", "a"), true));
        second.ack(None);
        assert_eq!(settled(next_now(&mut confirms)), (sent("q", "b"), true));
        assert_eq!(confirms.oldest_unconfirmed(), None);
    }

    #[test]
    fn a_return_carried_by_another_confirm_goes_to_its_publication() {
        let mut confirms = Set::new();
        let (first, second) = (confirm(), confirm());
        confirms.push(written(&first), sent("gone", "x"));
        confirms.push(written(&second), sent("here", "y"));
        // The return of the first publication arrives with the second's
        // confirm, which completes first.
        second.ack(returned("gone", "x"));
        first.ack(None);
        let (carrier, acked) = settled(next_now(&mut confirms));
        assert!(acked);
        assert_eq!((carrier.body, carrier.returned), ("y", false));
        let (owner, acked) = settled(next_now(&mut confirms));
        assert!(acked);
        assert_eq!((owner.body, owner.returned), ("x", true));
    }

    #[test]
    fn a_confirm_ready_at_push_sees_the_returns_completed_before_it() {
        let mut confirms = Set::new();
        let earlier = confirm();
        confirms.push(written(&earlier), sent("here", "a"));
        // The earlier confirm completes carrying the return of a
        // publication whose own confirm is ready by the time it is pushed.
        earlier.ack(returned("gone", "b"));
        let ready = confirm();
        ready.ack(None);
        confirms.push(written(&ready), sent("gone", "b"));
        let (first, _) = settled(next_now(&mut confirms));
        assert_eq!((first.body, first.returned), ("a", false));
        let (second, _) = settled(next_now(&mut confirms));
        assert_eq!((second.body, second.returned), ("b", true));
        assert!(confirms.is_empty());
    }

    #[test]
    fn a_return_that_matches_nothing_is_an_orphan() {
        let mut confirms = Set::new();
        let only = confirm();
        confirms.push(written(&only), sent("here", "a"));
        only.ack(returned("elsewhere", "zzz"));
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
        let mut confirms = Set::new();
        let both: Vec<Confirm> = (0..2).map(|_| confirm()).collect();
        // Two identical answers to the same missing queue, each returned.
        for confirm in &both {
            confirms.push(written(confirm), sent("gone", "same"));
        }
        both[0].ack(returned("gone", "same"));
        both[1].ack(returned("gone", "same"));
        let a = settled(next_now(&mut confirms)).0;
        let b = settled(next_now(&mut confirms)).0;
        assert!(a.returned && b.returned);
        assert!(next_now(&mut confirms).is_none());
    }

    /// While the broker blocks the connection, lapin writes nothing: a
    /// publication not yet written holds up no other, and is settled once
    /// written and confirmed.
    #[test]
    fn a_publication_not_yet_written_holds_up_nothing() {
        let mut confirms = Set::new();
        let (blocked, blocked_confirm) = (Write::new(), confirm());
        confirms.push(blocked.clone(), sent("q", "late"));
        let early = confirm();
        confirms.push(written(&early), sent("q", "early"));
        early.ack(None);
        assert_eq!(settled(next_now(&mut confirms)), (sent("q", "early"), true));
        assert!(next_now(&mut confirms).is_none());
        assert!(
            !confirms.is_empty(),
            "the unwritten publication is still tracked"
        );
        blocked.complete(Ok(blocked_confirm.clone()));
        assert!(
            next_now(&mut confirms).is_none(),
            "written, not yet confirmed"
        );
        blocked_confirm.ack(None);
        assert_eq!(settled(next_now(&mut confirms)), (sent("q", "late"), true));
        assert!(confirms.is_empty());
    }

    /// A publication's return can come while its `basic_publish` call has
    /// not come back: it is still that publication's.
    #[test]
    fn a_return_can_belong_to_a_publication_still_being_written() {
        let mut confirms = Set::new();
        let writing = Write::new();
        confirms.push(writing.clone(), sent("gone", "x"));
        let other = confirm();
        confirms.push(written(&other), sent("here", "y"));
        other.ack(returned("gone", "x"));
        let (carrier, _) = settled(next_now(&mut confirms));
        assert_eq!((carrier.body, carrier.returned), ("y", false));
        let own = confirm();
        own.ack(None);
        writing.complete(Ok(own));
        let (owner, acked) = settled(next_now(&mut confirms));
        assert!(acked);
        assert_eq!((owner.body, owner.returned), ("x", true));
    }

    /// A publication lapin could not send settles with the channel's error.
    #[test]
    fn a_failed_write_settles_with_its_error() {
        let mut confirms = Set::new();
        let failing = Write::new();
        confirms.push(failing.clone(), sent("q", "a"));
        failing.complete(Err(lapin::Error::from(
            lapin::ErrorKind::InvalidChannelState(lapin::ChannelState::Closed, "basic.publish"),
        )));
        match next_now(&mut confirms) {
            Some(Event::Settled(sent, Err(_))) => assert_eq!(sent.body, "a"),
            _ => panic!("expected the write's error"),
        }
        assert!(confirms.is_empty());
    }
}
