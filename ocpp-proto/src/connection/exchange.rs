//! What a connection holds only while a message exchange is under way: the output not written
//! yet, the events not polled yet, our CALL in flight (and those queued behind it) and the
//! peer's CALL awaiting our answer (and those held behind it).
//!
//! All are empty on an idle open connection, which is what a CSMS holds tens of thousands of.
//! Kept in the [`Connection`](super::Connection) they took 144 bytes of its 304; behind one
//! pointer, allocated when the first of them is needed and freed when the last one empties, an
//! idle connection pays 8 bytes for them and no heap. The first event of a pass and the awaited
//! CALL's id live in the box itself: the box takes the place of the event queue's allocation and
//! the id needs no heap copy of its own, so a Heartbeat costs one allocation fewer (5 on the
//! CSMS side, where it was 6: `tests/allocations.rs`). `size_of::<Connection>()` 304 -> 168
//! bytes. Callgrind, CSMS side per round trip: a Heartbeat 5,113 -> 5,084 instructions, the
//! benchmark push 7,037 -> 7,009 (`examples/heartbeat_loop.rs`).

use std::time::Instant;

use ocpp_messages::envelope::MessageId;

use super::queue::LazyQueue;
use super::rpc::Turn;
use super::spare;
use super::OutgoingCall;
use crate::Event;

/// The state of the exchanges under way; `None` while there is none (an idle connection).
/// (Boxed on purpose: the box is the point, a null pointer while idle.)
#[derive(Debug)]
pub(super) struct Exchange<C>(Option<Box<Underway<C>>>);

impl<C> Default for Exchange<C> {
    fn default() -> Self {
        Exchange(None)
    }
}

/// What [`Exchange`] holds while it is allocated. It is freed once every field is empty: when
/// the last event is polled, when the last output byte is written, and after a message that did
/// not serialise ([`Exchange::release_if_idle`], from the one place that writes messages). The other steps that empty a field (an answer given, a
/// CALL completed, the connection ended) always leave output or an event behind.
#[derive(Debug)]
struct Underway<C> {
    /// The output not written yet is `out[out_head..]`; freed once all of it is written.
    out: Vec<u8>,
    out_head: usize,
    /// The oldest event not polled yet: most passes have exactly one, and it costs no
    /// allocation of its own here.
    first_event: Option<Event<C>>,
    /// The events behind `first_event`, in order (allocated only for a pass with several).
    later_events: LazyQueue<Event<C>>,
    /// Our CALL in flight (OCPP-J: one outstanding CALL per direction).
    outgoing: Option<OutgoingCall<C>>,
    /// Our CALLs waiting behind the one in flight (none while none is in flight).
    queued: LazyQueue<OutgoingCall<C>>,
    /// The id and action of the peer's CALL delivered to the application and not answered
    /// yet (its answer must be of the same action: the answer rule).
    incoming: Option<(AwaitedId, &'static str)>,
    /// Peer CALLs that arrived while an earlier one was unanswered, waiting their turn.
    held: LazyQueue<Turn>,
}

/// The id of the peer's CALL that awaits our answer, kept in the exchange state itself: ids
/// are at most 36 characters and in practice ASCII (a UUID is 36), so this takes no allocation
/// of its own (an owned `MessageId` took one per CALL, a second copy of the event's id). An id
/// longer than 36 bytes (non-ASCII characters) is kept as a `MessageId`.
#[derive(Debug)]
enum AwaitedId {
    Inline {
        len: u8,
        bytes: [u8; MessageId::MAX_CHARS],
    },
    Owned(MessageId<'static>),
}

impl AwaitedId {
    #[inline]
    fn new(id: &MessageId<'_>) -> Self {
        let text = id.as_str().as_bytes();
        let mut bytes = [0; MessageId::MAX_CHARS];
        match (bytes.get_mut(..text.len()), u8::try_from(text.len())) {
            (Some(prefix), Ok(len)) => {
                prefix.copy_from_slice(text);
                AwaitedId::Inline { len, bytes }
            }
            _ => AwaitedId::Owned(id.as_borrowed().into_owned()),
        }
    }

    #[inline]
    fn as_bytes(&self) -> &[u8] {
        match self {
            AwaitedId::Inline { len, bytes } => &bytes[..usize::from(*len)],
            AwaitedId::Owned(id) => id.as_str().as_bytes(),
        }
    }

    #[inline]
    fn as_str(&self) -> &str {
        // Whole bytes of a `str`: always UTF-8.
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }

    #[inline]
    fn heap_bytes(&self) -> usize {
        match self {
            AwaitedId::Inline { .. } => 0,
            AwaitedId::Owned(id) => id.heap_bytes(),
        }
    }

    #[inline]
    fn into_message_id(self) -> MessageId<'static> {
        match self {
            // An id that was a `MessageId`: always valid.
            AwaitedId::Inline { .. } => self.as_str().parse().unwrap_or(MessageId::UNREADABLE),
            AwaitedId::Owned(id) => id,
        }
    }
}

impl<C> Underway<C> {
    fn is_idle(&self) -> bool {
        // An empty buffer that is still allocated (a message that did not serialise) goes with
        // the state.
        self.out.is_empty()
            && self.first_event.is_none()
            && self.later_events.is_empty()
            && self.outgoing.is_none()
            && self.queued.is_empty()
            && self.incoming.is_none()
            && self.held.is_empty()
    }
}

impl<C> Exchange<C> {
    /// The state, allocated if there was none.
    fn underway(&mut self) -> &mut Underway<C> {
        self.0.get_or_insert_with(|| {
            Box::new(Underway {
                out: Vec::new(),
                out_head: 0,
                first_event: None,
                later_events: LazyQueue::default(),
                outgoing: None,
                queued: LazyQueue::default(),
                incoming: None,
                held: LazyQueue::default(),
            })
        })
    }

    /// Frees the state once nothing is under way (an idle connection holds no heap). Called by
    /// every step here that may empty the state, and after a message that did not serialise.
    pub(super) fn release_if_idle(&mut self) {
        if self.0.as_ref().is_some_and(|state| state.is_idle()) {
            if let Some(state) = self.0.take() {
                spare::give(state.out);
            }
        }
    }

    /// Heap bytes held: the box, the output buffer and the overflow events, and the awaited
    /// CALL's id.
    pub(super) fn heap_bytes(&self) -> usize {
        self.0.as_ref().map_or(0, |state| {
            std::mem::size_of::<Underway<C>>()
                + state.out.capacity()
                + state.later_events.heap_bytes()
                + state.queued.heap_bytes()
                + state.incoming.as_ref().map_or(0, |(id, _)| id.heap_bytes())
                + state.held.heap_bytes()
        })
    }

    // ---- output ----

    /// The output buffer, to append a frame to.
    pub(super) fn out(&mut self) -> &mut Vec<u8> {
        let out = &mut self.underway().out;
        if out.capacity() == 0 {
            *out = spare::take(0);
        }
        out
    }

    /// The output not written yet.
    pub(super) fn pending(&self) -> &[u8] {
        self.0
            .as_ref()
            .map_or(&[], |state| &state.out[state.out_head..])
    }

    /// Marks `n` pending bytes as written (at most all of them).
    pub(super) fn advance(&mut self, n: usize) {
        let Some(state) = self.0.as_mut() else {
            return;
        };
        state.out_head = (state.out_head + n).min(state.out.len());
        if state.out_head == state.out.len() {
            // An idle connection holds no buffer: it waits for the next message of this
            // thread's connections.
            spare::give(std::mem::take(&mut state.out));
            state.out_head = 0;
            self.release_if_idle();
        } else if state.out_head >= 4096 && state.out_head * 2 >= state.out.len() {
            // Reclaim the written front once it is at least half the buffer.
            state.out.drain(..state.out_head);
            state.out_head = 0;
        }
    }

    /// Drops the output not written yet. The caller leaves an event behind (the connection
    /// ends), so the state is not released here.
    pub(super) fn clear_output(&mut self) {
        if let Some(state) = self.0.as_mut() {
            spare::give(std::mem::take(&mut state.out));
            state.out_head = 0;
        }
    }

    // ---- events ----

    /// Queues an event after those not polled yet.
    pub(super) fn push_event(&mut self, event: Event<C>) {
        let state = self.underway();
        if state.first_event.is_none() && state.later_events.is_empty() {
            state.first_event = Some(event);
        } else {
            // `first_event`, if set, is older than all of these: the order holds.
            state.later_events.push_back(event);
        }
    }

    /// The oldest event not polled yet.
    pub(super) fn pop_event(&mut self) -> Option<Event<C>> {
        let state = self.0.as_mut()?;
        let event = state
            .first_event
            .take()
            .or_else(|| state.later_events.pop_front());
        self.release_if_idle();
        event
    }

    /// How many events were not polled yet.
    pub(super) fn event_count(&self) -> usize {
        self.0.as_ref().map_or(0, |state| {
            usize::from(state.first_event.is_some()) + state.later_events.len()
        })
    }

    // ---- the CALLs under way ----

    /// Our CALL in flight.
    pub(super) fn outgoing(&self) -> Option<&OutgoingCall<C>> {
        self.0.as_ref()?.outgoing.as_ref()
    }

    /// Puts our CALL in flight (none was).
    pub(super) fn set_outgoing(&mut self, call: OutgoingCall<C>) {
        self.underway().outgoing = Some(call);
    }

    /// Ends our CALL in flight. The caller leaves an event behind (its `CallCompleted`, or the
    /// connection's `Closed`), so the state is not released here.
    pub(super) fn take_outgoing(&mut self) -> Option<OutgoingCall<C>> {
        self.0.as_mut()?.outgoing.take()
    }

    /// How many of our CALLs wait behind the one in flight.
    pub(super) fn queued_len(&self) -> usize {
        self.0.as_ref().map_or(0, |state| state.queued.len())
    }

    /// Queues our CALL behind the one in flight.
    pub(super) fn queue_call(&mut self, call: OutgoingCall<C>) {
        self.underway().queued.push_back(call);
    }

    /// The earliest deadline of the queued CALLs.
    pub(super) fn queued_deadline(&self) -> Option<Instant> {
        let state = self.0.as_ref()?;
        state.queued.iter().filter_map(|call| call.deadline).min()
    }

    /// Takes out the queued CALLs whose deadline is at or before `now`, in order. The caller
    /// completes each (an event), so the state is not released here.
    pub(super) fn take_expired(&mut self, now: Instant) -> Vec<OutgoingCall<C>> {
        match self.0.as_mut() {
            Some(state) => state
                .queued
                .take_where(|call| call.deadline.is_some_and(|at| at <= now)),
            None => Vec::new(),
        }
    }

    /// The next queued CALL. The caller sends it (output, or a `CallCompleted` if it does not
    /// serialise), so the state is not released here.
    pub(super) fn next_queued(&mut self) -> Option<OutgoingCall<C>> {
        self.0.as_mut()?.queued.pop_front()
    }

    /// How many CALLs of the peer are held.
    pub(super) fn held_len(&self) -> usize {
        self.0.as_ref().map_or(0, |state| state.held.len())
    }

    /// Holds a CALL of the peer until its turn.
    pub(super) fn hold(&mut self, turn: Turn) {
        self.underway().held.push_back(turn);
    }

    /// The next held CALL. The caller gives it its turn (an event or an answer), so the state is
    /// not released here.
    pub(super) fn next_held(&mut self) -> Option<Turn> {
        self.0.as_mut()?.held.pop_front()
    }

    /// The connection ended: the queued and the held CALLs, for `Closed` (which the caller
    /// leaves behind).
    pub(super) fn take_waiting(&mut self) -> (LazyQueue<OutgoingCall<C>>, LazyQueue<Turn>) {
        match self.0.as_mut() {
            Some(state) => (
                std::mem::take(&mut state.queued),
                std::mem::take(&mut state.held),
            ),
            None => Default::default(),
        }
    }

    /// The id of the peer's CALL that awaits our answer.
    pub(super) fn incoming(&self) -> Option<&str> {
        self.0
            .as_ref()?
            .incoming
            .as_ref()
            .map(|(id, _)| id.as_str())
    }

    /// Whether a CALL of the peer awaits our answer.
    pub(super) fn awaits_answer(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|state| state.incoming.is_some())
    }

    /// The action of the peer's CALL `id`, if that CALL awaits our answer.
    pub(super) fn awaited_action(&self, id: &MessageId<'_>) -> Option<&'static str> {
        let (awaited, action) = self.0.as_ref()?.incoming.as_ref()?;
        (awaited.as_bytes() == id.as_str().as_bytes()).then_some(*action)
    }

    /// The peer's CALL `id` of `action` now awaits our answer (none did).
    pub(super) fn set_incoming(&mut self, id: &MessageId<'_>, action: &'static str) {
        self.underway().incoming = Some((AwaitedId::new(id), action));
    }

    /// The awaited CALL was answered. The caller leaves output (the answer) behind, so the
    /// state is not released here.
    pub(super) fn answered(&mut self) {
        if let Some(state) = self.0.as_mut() {
            state.incoming = None;
        }
    }

    /// The connection ended with the peer's CALL unanswered: its id, for `Closed`. The caller
    /// leaves that event behind, so the state is not released here.
    pub(super) fn take_incoming(&mut self) -> Option<MessageId<'static>> {
        self.0
            .as_mut()?
            .incoming
            .take()
            .map(|(id, _)| id.into_message_id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocpp_messages::version::OcppVersion;

    fn connected() -> Event {
        Event::Connected {
            version: OcppVersion::V1_6,
        }
    }

    #[test]
    fn allocated_only_while_something_is_under_way() {
        let mut exchange = Exchange::<()>::default();
        assert_eq!(exchange.heap_bytes(), 0);
        assert_eq!(exchange.pop_event(), None);
        exchange.push_event(connected());
        assert!(exchange.heap_bytes() > 0);
        exchange.out().extend_from_slice(b"abc");
        assert_eq!(exchange.pop_event(), Some(connected()));
        assert!(exchange.heap_bytes() > 0, "the output is still pending");
        exchange.advance(2);
        assert_eq!(exchange.pending(), b"c");
        exchange.advance(5);
        assert_eq!((exchange.pending(), exchange.heap_bytes()), (&b""[..], 0));
        exchange.set_incoming(&MessageId::from_counter(7), "Heartbeat");
        exchange.out().push(b'x');
        assert_eq!(exchange.incoming(), Some("7"));
        exchange.answered();
        exchange.advance(1);
        assert_eq!(exchange.heap_bytes(), 0);
        // A state emptied without output or event left behind is freed by `release_if_idle`.
        exchange.out().reserve(16);
        exchange.release_if_idle();
        assert_eq!(exchange.heap_bytes(), 0);
    }

    #[test]
    fn awaited_ids_of_every_length() {
        let mut exchange = Exchange::<()>::default();
        let ascii = "x".repeat(MessageId::MAX_CHARS);
        let wide = "\u{e9}".repeat(MessageId::MAX_CHARS);
        for text in ["", "19223201", &ascii, &wide] {
            let id = MessageId::new(text).unwrap();
            exchange.set_incoming(&id, "Heartbeat");
            assert_eq!(exchange.incoming(), Some(text));
            assert!(exchange.awaits_answer() && exchange.awaited_action(&id) == Some("Heartbeat"));
            assert_eq!(
                exchange.awaited_action(&MessageId::new("other").unwrap()),
                None
            );
            let heap = exchange.heap_bytes() - std::mem::size_of::<Underway<()>>();
            assert_eq!(heap, if text.len() > 36 { text.len() } else { 0 });
            assert_eq!(exchange.take_incoming(), Some(id.into_owned()));
            assert_eq!(exchange.incoming(), None);
        }
    }

    #[test]
    fn events_come_out_in_order() {
        let mut exchange = Exchange::<()>::default();
        let call = |n| Event::UnmatchedResponse {
            id: MessageId::from_counter(n),
        };
        exchange.push_event(call(1));
        exchange.push_event(call(2));
        assert_eq!(exchange.pop_event(), Some(call(1)));
        // The first slot is free, but an older event waits behind it.
        exchange.push_event(call(3));
        assert_eq!(exchange.event_count(), 2);
        assert_eq!(exchange.pop_event(), Some(call(2)));
        exchange.push_event(call(4));
        assert_eq!(exchange.pop_event(), Some(call(3)));
        assert_eq!(exchange.pop_event(), Some(call(4)));
        assert_eq!(exchange.pop_event(), None);
        assert_eq!(exchange.heap_bytes(), 0);
    }
}
