//! Many connections on one task ([`ServerBuilder::shards`](crate::ServerBuilder::shards)): a
//! shard owns an epoll instance (`mio::Poll`), which tokio watches as one file descriptor,
//! the drivers of its connections in a slab, and one timer heap for all of them. It is
//! mio-server's layout inside a tokio runtime: a connection costs no task, no tokio I/O
//! registration and no timer entry of its own, and a push wakes the shard, not a task per
//! connection.
//!
//! Each connection still gets a [`Waker`] of its own, so its handler futures, its mailbox
//! and its cluster claim wake it as they wake a task; the waker puts the connection's slot
//! number on the shard's wake list. Sockets are registered edge-triggered, for reading and
//! writing at once; the driver reads and writes until the socket would block (its turn
//! stops only when nothing progresses), which is what edge-triggered readiness needs.
//!
//! A CALL or SEND from a handle (`ChargePoint::call`...) that finds its shard's task not
//! running drives the connection on the caller's thread ([`handing`]): the connections and
//! their timers are behind one lock, which the shard's task holds for each of its polls and
//! a handle takes only if it is free. The CALL is written at once instead of waiting for the
//! shard's turn in the run queue; when the lock is taken, the shard is woken as usual.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::io::{self, Write};
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Token};
use ocpp_proto::Connection;
use slab::Slab;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;
use tokio::time::Sleep;
use tokio_rustls::server::TlsStream;
use tokio_rustls::{Accept, TlsAcceptor};

use crate::charge_point::{CallReply, TaskLink};
use crate::driver::{Driver, DriverTimer, Serve, ServerShared};
use crate::handler::PeerCertificate;
use crate::handoff::{self, DriveHere};
use crate::Handler;

/// Rounds of a shard's loop (each drives every connection that was woken) before it yields
/// to the runtime's other tasks.
const ROUNDS_PER_POLL: usize = 4;
/// Readiness events taken from epoll at once.
const EVENTS: usize = 1024;
/// Timer entries [`Inner::settle`] may move or drop before the shard sleeps (each a pop and
/// at most one push): bounded so that going to sleep stays short whatever the heap holds.
const SETTLE_PER_SLEEP: usize = 256;

/// An accepted connection on its way to a shard.
pub(crate) struct Incoming {
    pub(crate) stream: TcpStream,
    pub(crate) conn: Connection<CallReply>,
    pub(crate) link: Arc<TaskLink>,
}

/// A socket of a shard. Reading and writing never wait: "would block" is `Pending`, and the
/// shard's epoll says when to drive the connection again (no waker is kept here).
///
/// It remembers whether the socket may have bytes to read, as tokio's registration does: a
/// read that fills less than its buffer drained the socket (a TCP `recv` takes all that is
/// queued, up to the buffer), and so did one that would block; the socket is readable again
/// only when epoll says so ([`ShardStream::readable`]), since bytes that arrive later raise a
/// new edge. A connection driven for another reason (a handle's CALL, a timer, a handler's
/// answer) then costs no `recv` that would block.
///
/// Except after the peer's end: once epoll has reported it (or an error), the socket stays
/// readable until a `recv` returns the end (0) or the error. The end often comes in the same
/// event as the peer's last bytes, and a short read of those bytes would otherwise leave the
/// end unread with no edge to come: the connection would stay open, and a CALL waiting on it
/// would end `Timeout` after its full timeout instead of `Disconnected` (seen once in 10 to 15
/// runs of `calls::sharded::every_call_error`).
pub(crate) struct ShardStream {
    socket: TcpStream,
    readable: bool,
    /// Epoll reported the peer's end or an error: read until `recv` says so.
    ending: bool,
}

impl ShardStream {
    fn new(socket: TcpStream) -> Self {
        ShardStream {
            socket,
            readable: true,
            ending: false,
        }
    }

    /// Epoll reported the socket readable: bytes, or with `ending` the peer's end or an error.
    fn readable(&mut self, ending: bool) {
        self.readable = true;
        self.ending |= ending;
    }
}

impl AsyncRead for ShardStream {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        // SAFETY: `unfilled_mut` asks that nothing in it be de-initialized; `recv` below only
        // writes to it.
        #[allow(unsafe_code)]
        let unfilled = unsafe { buf.unfilled_mut() };
        let (at, len) = (unfilled.as_mut_ptr().cast::<libc::c_void>(), unfilled.len());
        let this = self.get_mut();
        if !this.readable {
            return Poll::Pending;
        }
        loop {
            // SAFETY: `recv` writes at most `len` bytes from `at`, the start of the memory
            // `buf` lends us to write (initialized or not), and never reads it; the descriptor
            // is this socket's, open while `self` lives. Only the `n` bytes written are
            // declared initialized below. Reached by every `sharded::` test of
            // `tests/server/`, `tls.rs`, `backpressure.rs` and `thousand.rs` (bad frames,
            // closes and resets among them) and `heap_per_connection.rs`.
            #[allow(unsafe_code)]
            let n = unsafe { libc::recv(this.socket.as_raw_fd(), at, len, 0) };
            if n >= 0 {
                let n = n.unsigned_abs();
                // Drained (the end, 0, is read again: it stays; so does a socket whose end
                // epoll reported, until that end is read).
                if n > 0 && n < len && !this.ending {
                    this.readable = false;
                }
                // SAFETY: the kernel wrote `n` bytes (at most `unfilled.len()`) at the start
                // of `unfilled`.
                #[allow(unsafe_code)]
                unsafe {
                    buf.assume_init(n);
                }
                buf.advance(n);
                return Poll::Ready(Ok(()));
            }
            let error = io::Error::last_os_error();
            match error.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => {
                    this.readable = false;
                    return Poll::Pending;
                }
                _ => return Poll::Ready(Err(error)),
            }
        }
    }
}

impl AsyncWrite for ShardStream {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let stream = &mut self.get_mut().socket;
        loop {
            match stream.write(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Poll::Pending,
                result => return Poll::Ready(result),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.socket.shutdown(Shutdown::Write) {
            Err(e) if e.kind() != io::ErrorKind::NotConnected => Poll::Ready(Err(e)),
            _ => Poll::Ready(Ok(())),
        }
    }
}

/// A connection's timer in a shard: the moment the driver asked for, which the shard puts on
/// its heap after the turn ([`Inner::drive`]: a turn that changed it asked for it).
#[derive(Default)]
pub(crate) struct ShardTimer {
    /// The moment the shard will drive the connection again (its heap has it). Set by the
    /// driver only to a moment to come that differs from the one before; cleared by the
    /// shard when the moment has come, or moved later by it to the connection's deadline
    /// before it sleeps ([`Inner::settle`]).
    at: Option<Instant>,
}

impl DriverTimer for ShardTimer {
    fn arm(&mut self, _: &mut Context<'_>, now: Instant, deadline: Instant) -> bool {
        if deadline <= now {
            return true;
        }
        if self.at.is_some_and(|at| at <= deadline && at > now) {
            return false; // fires earlier; the turn it causes arms it again
        }
        self.at = Some(deadline);
        false
    }
}

/// The slots a shard must drive, as the connections' wakers report them.
#[derive(Default)]
struct WakeList {
    inner: Mutex<WakeListInner>,
}

#[derive(Default)]
struct WakeListInner {
    slots: Vec<usize>,
    /// The shard's task, when it found the list empty.
    shard: Option<Waker>,
}

impl WakeList {
    fn lock(&self) -> std::sync::MutexGuard<'_, WakeListInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, slot: usize) {
        let shard = {
            let mut inner = self.lock();
            inner.slots.push(slot);
            inner.shard.take()
        };
        if let Some(shard) = shard {
            shard.wake();
        }
    }

    /// Wakes the shard's task if it waits (a handle drove one of its connections and left a
    /// deadline earlier than the one the task sleeps until).
    fn wake_shard(&self) {
        let shard = self.lock().shard.take();
        if let Some(shard) = shard {
            shard.wake();
        }
    }

    /// Moves the woken slots to `into`; when there are none, `waker` is woken by the next.
    fn take(&self, into: &mut Vec<usize>, waker: &Waker) {
        let mut inner = self.lock();
        if inner.slots.is_empty() {
            if !inner.shard.as_ref().is_some_and(|w| w.will_wake(waker)) {
                inner.shard = Some(waker.clone());
            }
            return;
        }
        into.append(&mut inner.slots);
    }
}

/// One connection's waker: puts its slot on the wake list, once until the shard drives it.
struct SlotWaker<H: Handler> {
    slot: usize,
    /// Set when the slot is on a list of slots to drive; cleared just before it is driven.
    queued: AtomicBool,
    /// Weak: the shard's slots hold their wakers.
    core: Weak<Core<H>>,
}

impl<H: Handler> Wake for SlotWaker<H> {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if handoff::is_handing() {
            let here: Arc<dyn DriveHere> = self.clone();
            if handoff::hand(here) {
                return;
            }
        }
        if !self.queued.swap(true, Ordering::AcqRel) {
            if let Some(core) = self.core.upgrade() {
                core.wake_list.push(self.slot);
            }
        }
    }
}

impl<H: Handler> DriveHere for SlotWaker<H> {
    fn drive_here(self: Arc<Self>) {
        let Some(core) = self.core.upgrade() else {
            return;
        };
        let mut inner = match core.inner.try_lock() {
            Ok(inner) => inner,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            // The shard runs (or another handle drives one of its connections): it is woken
            // as usual and drives this one in its next round.
            Err(std::sync::TryLockError::WouldBlock) => return self.wake_by_ref(),
        };
        let current = inner
            .slots
            .get(self.slot)
            .is_some_and(|entry| Arc::ptr_eq(&entry.wake, &self));
        if !current {
            return; // the connection is over (its slot may serve another)
        }
        {
            let _runtime = core.runtime.enter();
            inner.drive_contained(&core, self.slot, Instant::now());
        }
        // A deadline earlier than the one the shard sleeps until: the shard arms it.
        let earlier = match (inner.timers.peek(), inner.sleeping_until) {
            (Some(&Reverse((at, _))), Some(until)) => at < until,
            (Some(_), None) => true,
            (None, _) => false,
        };
        drop(inner);
        if earlier {
            core.wake_list.wake_shard();
        }
    }
}

/// What a slot holds through a connection's life.
enum State<H: Handler> {
    /// The TLS handshake, bounded by the connection's handshake deadline.
    Handshake(Box<Handshake>),
    Plain(Driver<ShardStream, Serve<H>, ShardTimer>),
    Tls(Driver<Box<TlsStream<ShardStream>>, Serve<H>, ShardTimer>),
    /// Only while moving from one state to the next.
    Moving,
}

struct Handshake {
    accept: Accept<ShardStream>,
    conn: Connection<CallReply>,
    /// The peer's address, for [`Connecting::peer_addr`](crate::Connecting::peer_addr).
    peer: Option<std::net::SocketAddr>,
    link: Arc<TaskLink>,
    deadline: Instant,
}

/// A connection of a shard: its driver inline (a slot is most of what a connection costs the
/// shard, see `tests::a_slot_stays_small`) and its waker's state.
struct Slot<H: Handler> {
    wake: Arc<SlotWaker<H>>,
    state: State<H>,
}

/// What a shard's task and the handles that drive one of its connections ([`handing`])
/// share.
struct Core<H: Handler> {
    shared: Arc<ServerShared<H>>,
    /// The runtime of the shard's task: a handle that drives a connection enters it, so what
    /// the turn spawns (`on_connect`, `on_close`) runs where the shard's own turns put it.
    runtime: tokio::runtime::Handle,
    wake_list: WakeList,
    /// Held by the shard's task for each of its polls, and by a handle while it drives a
    /// connection.
    inner: Mutex<Inner<H>>,
}

impl<H: Handler> Core<H> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<H>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The connections of a shard and their timers.
struct Inner<H: Handler> {
    slots: Slab<Slot<H>>,
    /// When each slot asked to be driven again (stale entries are skipped).
    timers: BinaryHeap<Reverse<(Instant, usize)>>,
    /// The slots to drive this round.
    ready: Vec<usize>,
    /// The moment the shard's task sleeps until, if it sleeps on a timer.
    sleeping_until: Option<Instant>,
}

/// Many connections on one task (see the module's documentation).
pub(crate) struct Shard<H: Handler> {
    core: Arc<Core<H>>,
    tls: Option<TlsAcceptor>,
    poll: AsyncFd<mio::Poll>,
    events: Events,
    sleep: Pin<Box<Sleep>>,
    incoming: mpsc::UnboundedReceiver<Incoming>,
    /// Whether `incoming` ended (the service is gone): the shard ends with its last
    /// connection.
    incoming_closed: bool,
}

impl<H: Handler> Shard<H> {
    /// A shard fed by `incoming`; call inside a tokio runtime (its epoll is registered there).
    pub(crate) fn new(
        shared: Arc<ServerShared<H>>,
        tls: Option<TlsAcceptor>,
        incoming: mpsc::UnboundedReceiver<Incoming>,
    ) -> io::Result<Self> {
        // SAFETY: `register` asks that the descriptor stay open, the same, and what
        // `as_raw_fd` returns while the `AsyncFd` owns it: a `mio::Poll` holds its epoll
        // descriptor from creation to drop and always returns it, and the `AsyncFd` owns the
        // `Poll` (it is never taken out). Reached by every sharded server (the tests above).
        #[allow(unsafe_code)]
        let poll = unsafe { AsyncFd::register(mio::Poll::new()?) }.map_err(io::Error::from)?;
        let inner = Inner {
            slots: Slab::new(),
            timers: BinaryHeap::new(),
            ready: Vec::new(),
            sleeping_until: None,
        };
        Ok(Shard {
            core: Arc::new(Core {
                shared,
                runtime: tokio::runtime::Handle::try_current().map_err(io::Error::other)?,
                wake_list: WakeList::default(),
                inner: Mutex::new(inner),
            }),
            tls,
            poll,
            events: Events::with_capacity(EVENTS),
            sleep: Box::pin(tokio::time::sleep_until(tokio::time::Instant::now())),
            incoming,
            incoming_closed: false,
        })
    }

    /// Takes the connections handed over; each is driven in this round.
    fn accept(&mut self, cx: &mut Context<'_>, inner: &mut Inner<H>, now: Instant) {
        while !self.incoming_closed {
            match self.incoming.poll_recv(cx) {
                Poll::Ready(Some(incoming)) => self.add(inner, incoming, now),
                Poll::Ready(None) => self.incoming_closed = true,
                Poll::Pending => break,
            }
        }
    }

    fn add(&self, inner: &mut Inner<H>, incoming: Incoming, now: Instant) {
        let Incoming {
            mut stream,
            conn,
            link,
        } = incoming;
        let shared = &self.core.shared;
        let entry = inner.slots.vacant_entry();
        let slot = entry.key();
        let interest = Interest::READABLE | Interest::WRITABLE;
        let registered =
            self.poll
                .get_ref()
                .registry()
                .register(&mut stream, Token(slot), interest);
        if let Err(error) = registered {
            tracing::warn!(%error, "a shard could not watch a socket");
            shared.abandon(&link);
            return;
        }
        let peer = stream.peer_addr().ok();
        let stream = ShardStream::new(stream);
        let state = match &self.tls {
            None => {
                let timer = ShardTimer::default();
                let driver = Driver::new(shared.clone(), link, stream, conn, None, peer, timer);
                State::Plain(driver)
            }
            Some(acceptor) => {
                let deadline = now + shared.config.get_handshake_timeout();
                inner.timers.push(Reverse((deadline, slot)));
                State::Handshake(Box::new(Handshake {
                    accept: acceptor.accept(stream),
                    conn,
                    peer,
                    link,
                    deadline,
                }))
            }
        };
        let wake = Arc::new(SlotWaker {
            slot,
            queued: AtomicBool::new(true),
            core: Arc::downgrade(&self.core),
        });
        entry.insert(Slot { wake, state });
        inner.ready.push(slot);
    }

    /// Takes what epoll reports (an epoll that fails is logged: its connections are then
    /// driven only by their wakers and timers).
    ///
    /// `deadline_due`: a connection's deadline has come, and the sockets' input must be known
    /// before it is judged (a Pong, a CALLRESULT that came is not late). tokio's readiness of
    /// the shard's epoll may lag behind it (its reactor takes at most 1,024 events a look, and
    /// a thread descheduled after a look returns old ones), so the epoll is asked directly.
    fn poll_events(&mut self, cx: &mut Context<'_>, inner: &mut Inner<H>, deadline_due: bool) {
        if deadline_due {
            while let Some(EVENTS) = take_events(self.poll.get_mut(), &mut self.events, inner) {}
        }
        loop {
            let mut guard = match self.poll.poll_read_ready_mut(cx) {
                Poll::Ready(Ok(guard)) => guard,
                Poll::Ready(Err(error)) => {
                    tracing::error!(%error, "a shard's epoll failed");
                    return;
                }
                Poll::Pending => return,
            };
            match take_events(guard.get_inner_mut(), &mut self.events, inner) {
                None => return,
                // All taken: tokio reports the epoll readable again when a socket is.
                Some(count) if count < EVENTS => guard.clear_ready(),
                Some(_) => {}
            }
        }
    }
}

/// One look at the shard's epoll, without waiting: marks the slots it reports. The number of
/// events (`EVENTS`: there may be more), or `None` if the epoll failed (logged).
fn take_events<H: Handler>(
    poll: &mut mio::Poll,
    events: &mut Events,
    inner: &mut Inner<H>,
) -> Option<usize> {
    loop {
        match poll.poll(events, Some(Duration::ZERO)) {
            Ok(()) => break,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => {
                tracing::error!(%error, "a shard's epoll failed");
                return None;
            }
        }
    }
    let mut count = 0;
    for event in events.iter() {
        count += 1;
        let slot = event.token().0;
        let ending = event.is_read_closed() || event.is_error();
        if event.is_readable() || ending {
            inner.readable(slot, ending);
        }
        inner.mark(slot);
    }
    Some(count)
}

impl<H: Handler> Inner<H> {
    /// Epoll reported `slot`'s socket readable (`ending`: its peer's end, or an error).
    fn readable(&mut self, slot: usize, ending: bool) {
        let Some(entry) = self.slots.get_mut(slot) else {
            return;
        };
        let stream = match &mut entry.state {
            State::Plain(driver) => driver.stream_mut(),
            State::Tls(driver) => driver.stream_mut().get_mut().0,
            State::Handshake(handshake) => match handshake.accept.get_mut() {
                Some(stream) => stream,
                None => return,
            },
            State::Moving => return,
        };
        stream.readable(ending);
    }

    /// Puts `slot` on this round's list, unless it is on a list already.
    fn mark(&mut self, slot: usize) {
        if let Some(entry) = self.slots.get(slot) {
            if !entry.wake.queued.swap(true, Ordering::AcqRel) {
                self.ready.push(slot);
            }
        }
    }

    /// Takes off the heap's top, before the shard sleeps, the entries it need not wake for
    /// (at most [`SETTLE_PER_SLEEP`]): a stale one (its connection is gone or asked for
    /// another moment since), and one that came before its connection's deadline, which
    /// the driver's timer leaves behind when a deadline moves later (the WebSocket
    /// handshake's, once the connection is up), moved to that deadline
    /// ([`Driver::next_deadline`]). Without this, each drove its connection once for
    /// nothing in the seconds after a storm of connections, and woke the shard when nothing
    /// else did. Nothing is judged here: an entry only ever moves later.
    fn settle(&mut self) {
        for _ in 0..SETTLE_PER_SLEEP {
            let Some(&Reverse((at, slot))) = self.timers.peek() else {
                return;
            };
            let (next, timer) = match self.slots.get_mut(slot).map(|entry| &mut entry.state) {
                Some(State::Plain(driver)) => (driver.next_deadline(), driver.timer_mut()),
                Some(State::Tls(driver)) => (driver.next_deadline(), driver.timer_mut()),
                Some(State::Handshake(_) | State::Moving) => return,
                None => {
                    self.timers.pop(); // the connection is gone
                    continue;
                }
            };
            if timer.at != Some(at) {
                self.timers.pop(); // stale: it asked for another moment since
                continue;
            }
            // A closed connection lingers on a deadline only its turn knows.
            let Some(next) = next else { return };
            if next.is_some_and(|next| next <= at) {
                return; // its deadline: wake for it
            }
            self.timers.pop();
            timer.at = next;
            if let Some(next) = next {
                self.timers.push(Reverse((next, slot)));
            }
        }
    }

    /// Marks the slots whose moment has come.
    fn expire(&mut self, now: Instant) {
        while let Some(&Reverse((at, slot))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            let Some(entry) = self.slots.get_mut(slot) else {
                continue;
            };
            let timer = match &mut entry.state {
                State::Plain(driver) => driver.timer_mut(),
                State::Tls(driver) => driver.timer_mut(),
                State::Handshake(_) | State::Moving => {
                    self.mark(slot);
                    continue;
                }
            };
            if timer.at == Some(at) {
                timer.at = None;
                self.mark(slot);
            }
        }
    }

    /// Drives one connection as far as it goes; frees its slot when it is over.
    fn drive(&mut self, core: &Core<H>, slot: usize, now: Instant) {
        let Some(entry) = self.slots.get_mut(slot) else {
            return;
        };
        entry.wake.queued.store(false, Ordering::Release);
        // Made for the turn (a reference count up and down) rather than kept: 16 bytes less
        // per connection.
        let waker = Waker::from(entry.wake.clone());
        let mut cx = Context::from_waker(&waker);
        let over = loop {
            let (over, asked) = match &mut entry.state {
                State::Plain(driver) => turn(driver, &mut cx, now),
                State::Tls(driver) => turn(driver, &mut cx, now),
                State::Handshake(handshake) => {
                    match Pin::new(&mut handshake.accept).poll(&mut cx) {
                        Poll::Pending if now < handshake.deadline => break false,
                        Poll::Pending => {
                            core.shared.tls_failed(&handshake.link, None);
                            break true;
                        }
                        Poll::Ready(Err(error)) => {
                            core.shared.tls_failed(&handshake.link, Some(&error));
                            break true;
                        }
                        Poll::Ready(Ok(tls)) => {
                            let State::Handshake(handshake) =
                                std::mem::replace(&mut entry.state, State::Moving)
                            else {
                                break true;
                            };
                            let Handshake {
                                conn, link, peer, ..
                            } = *handshake;
                            let certificate = PeerCertificate::of(tls.get_ref().1);
                            entry.state = State::Tls(Driver::new(
                                core.shared.clone(),
                                link,
                                Box::new(tls),
                                conn,
                                certificate,
                                peer,
                                ShardTimer::default(),
                            ));
                            continue;
                        }
                    }
                }
                State::Moving => break true,
            };
            if let Some(at) = asked {
                self.timers.push(Reverse((at, slot)));
            }
            break over;
        };
        if over {
            // The socket closes with the driver, which takes it out of the epoll set.
            self.slots.remove(slot);
        }
    }

    /// [`Inner::drive`], with a panic (a handler's bug) contained to its connection, as tokio
    /// contains a task's: the connection is dropped (its handles see it gone, its socket
    /// closes) and the shard's other connections carry on.
    fn drive_contained(&mut self, core: &Core<H>, slot: usize, now: Instant) {
        let driven = std::panic::catch_unwind(AssertUnwindSafe(|| self.drive(core, slot, now)));
        if driven.is_err() {
            tracing::error!("a connection's handler panicked: the connection is dropped");
            let dropped = std::panic::catch_unwind(AssertUnwindSafe(|| {
                if self.slots.contains(slot) {
                    self.slots.remove(slot);
                }
            }));
            if dropped.is_err() {
                tracing::error!("a connection panicked again while dropped");
            }
        }
    }
}

/// One turn of a shard's connection at `now`: whether it is over, and the moment it asked to
/// be driven again if that changed (the shard puts it on its heap).
fn turn<S, H>(
    driver: &mut Driver<S, Serve<H>, ShardTimer>,
    cx: &mut Context<'_>,
    now: Instant,
) -> (bool, Option<Instant>)
where
    S: AsyncRead + AsyncWrite + Unpin + 'static,
    H: Handler,
{
    let before = driver.timer_mut().at;
    let over = driver.turn(cx, Some(now)).is_ready();
    let at = driver.timer_mut().at;
    (over, at.filter(|_| at != before))
}

impl<H: Handler> Future for Shard<H> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let core = this.core.clone();
        let mut inner = core.lock();
        inner.sleeping_until = None;
        for _ in 0..ROUNDS_PER_POLL {
            // Taken before the epoll is read: the round judges deadlines at `now`, an instant
            // up to which it knows the sockets' input ([`Driver::turn`]).
            let now = Instant::now();
            this.accept(cx, &mut inner, now);
            let deadline_due = inner
                .timers
                .peek()
                .is_some_and(|Reverse((at, _))| *at <= now);
            this.poll_events(cx, &mut inner, deadline_due);
            inner.expire(now);
            core.wake_list.take(&mut inner.ready, cx.waker());
            if inner.ready.is_empty() {
                if this.incoming_closed && inner.slots.is_empty() {
                    return Poll::Ready(());
                }
                inner.settle();
                let Some(&Reverse((at, _))) = inner.timers.peek() else {
                    return Poll::Pending;
                };
                let deadline = tokio::time::Instant::from_std(at);
                if this.sleep.deadline() != deadline {
                    this.sleep.as_mut().reset(deadline);
                }
                if this.sleep.as_mut().poll(cx).is_ready() {
                    continue;
                }
                inner.sleeping_until = Some(at);
                return Poll::Pending;
            }
            let mut ready = std::mem::take(&mut inner.ready);
            for slot in ready.drain(..) {
                inner.drive_contained(&core, slot, now);
            }
            if inner.ready.is_empty() {
                inner.ready = ready; // keeps its capacity
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::tests::Nothing;

    /// Polls `shard` once.
    async fn poll_once(shard: &mut Shard<Nothing>) {
        std::future::poll_fn(|cx| {
            let _ = Pin::new(&mut *shard).poll(cx);
            Poll::Ready(())
        })
        .await;
    }

    /// A connection that came up is not woken at its WebSocket handshake's deadline, the
    /// first its timer asked for: before the shard sleeps, that entry moves to the
    /// connection's real deadline (the keep-alive's), and the shard sleeps until then.
    #[tokio::test]
    async fn an_open_connection_does_not_wake_the_shard_at_its_handshake_deadline() {
        use std::io::Read;
        let config = ocpp_proto::ConnectionConfig::default()
            .handshake_timeout(Duration::from_secs(5))
            .ping_interval(Some(Duration::from_secs(60)));
        let registry = crate::ChargePoints::new(None, None);
        let shared =
            ServerShared::new(Arc::new(Nothing), Arc::new(config), registry, None, None, 4);
        let shared = Arc::new(shared);
        let (sender, receiver) = mpsc::unbounded_channel();
        let mut shard = Shard::new(shared.clone(), None, receiver).unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (socket, _) = listener.accept().unwrap();
        socket.set_nonblocking(true).unwrap();
        let start = Instant::now();
        let (conn, link) = shared.admit(start);
        let stream = TcpStream::from_std(socket);
        assert!(sender.send(Incoming { stream, conn, link }).is_ok());
        // Taken before the request comes: the handshake's deadline is the one asked for.
        poll_once(&mut shard).await;
        let first = shard.core.lock().sleeping_until.map(|at| at - start);
        assert_eq!(first, Some(Duration::from_secs(5)));
        client
            .write_all(
                b"GET /ocpp/CP1 HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n\
                  Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
                  Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ocpp1.6\r\n\r\n",
            )
            .unwrap();
        client.set_nonblocking(true).unwrap();
        let mut response = Vec::new();
        let mut asleep = None;
        for _ in 0..1000 {
            poll_once(&mut shard).await;
            let mut chunk = [0u8; 512];
            if let Ok(n) = client.read(&mut chunk) {
                response.extend_from_slice(&chunk[..n]);
            }
            asleep = shard.core.lock().sleeping_until;
            if response.ends_with(b"\r\n\r\n") && asleep.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert!(response.starts_with(b"HTTP/1.1 101"), "{response:?}");
        let asleep = asleep.expect("the shard sleeps on a timer") - start;
        assert!(
            asleep >= Duration::from_secs(59),
            "it sleeps until {asleep:?}"
        );
        assert_eq!(
            shard.core.lock().timers.len(),
            1,
            "the handshake's entry is gone"
        );
    }

    /// A shard's slab holds each connection's slot inline, so its size is memory per
    /// connection (the slab's pages are touched only as slots are used). Of it, the core's
    /// `Connection` is 168 bytes; the rest is the driver's (see `driver::tests`) and the
    /// waker's pointer. A regression guard; `tests/heap_per_connection.rs` measures the heap.
    #[test]
    fn a_slot_stays_small() {
        // The slab adds a tag to each entry (its free list shares the space).
        let slot = std::mem::size_of::<Slot<Nothing>>() + 8;
        let plain =
            std::mem::size_of::<Driver<ShardStream, crate::driver::Serve<Nothing>, ShardTimer>>();
        let core = std::mem::size_of::<Connection<CallReply>>();
        eprintln!("slot: {slot} bytes; plain driver {plain}, of which Connection {core}");
        assert!(slot <= core + 176, "{slot}");
    }
}
