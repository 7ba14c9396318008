//! `uring-server`'s I/O: the same event loop (connections, CSMS glue, timers, commands, admin
//! interface, shutdown), with the charge points' sockets driven by io_uring instead of epoll.
//!
//! # One turn
//! Everything the turn asked for (receives armed again, sends, cancels) is queued as
//! submission entries and goes to the kernel in **one** `io_uring_enter`, which also waits for
//! the next completions, at most until the earliest deadline of the [`TimerHeap`](super::timers::TimerHeap)
//! (the wait's own timeout: no timeout entry); only a burst of sends (the push tick's) is
//! submitted every [`SEND_BATCH`] sends, so that the first do not wait for the last to be
//! made. Then the completions are handled:
//!
//! - **accept** (multishot, on the OCPP listener): a new charge point's socket, recorded as
//!   mio-server records it ([`add_ocpp`](EventLoop::add_ocpp)), with a receive armed; with
//!   an accept rate (`--accept-rate`) the listener stays on epoll instead and the loop
//!   accepts one connection per slot as mio-server does (a multishot accept would empty the
//!   backlog at once), each socket then on the ring;
//! - **receive** (multishot, with buffer selection from a provided-buffer ring, `buf_ring`):
//!   the kernel picks a buffer only when data arrives, so an idle connection holds no receive
//!   buffer; the bytes go to the connection's `handle_data` and the buffer back to the ring;
//!   then [`service`](EventLoop::service) hands the events to the CSMS, as on epoll;
//! - **send**: the connection's `pending_transmit()` is copied into a send buffer of its own
//!   (one send in flight per connection), which the kernel owns until its completion; a
//!   short send is sent on, a finished one lets the connection send what came meanwhile;
//! - **poll** (multishot, on the loop's epoll descriptor): the admin sockets, the mailbox's
//!   waker and everything else mio-server keeps on epoll are ready: one `epoll_wait` with no
//!   timeout, and the same dispatch as mio-server.
//!
//! # Back-pressure
//! A connection that does not [want input](ocpp_proto::Connection::wants_read) has its
//! multishot receive cancelled; what the kernel had already received is kept aside and fed
//! when it wants input again, and the receive is armed again.
//!
//! # Closing
//! As on epoll (flush, half-close, read to the peer's end of stream); a socket removed with a
//! receive or a send in flight has them cancelled, and its descriptor is closed only after the
//! turn's submit, so that no queued entry can name a descriptor number already reused.
//!
//! # What is not here
//! TLS and the cluster are mio-server's and tokio-server's:
//! [`MioServer::bind_uring`](super::MioServer::bind_uring) refuses them.
//!
//! # `unsafe`
//! io_uring writes into and reads from our memory after the call that queued the work
//! returns, so the buffers must outlive their entries: the receive buffers and their ring are
//! allocated once per loop and never freed (not even when the loop ends: the kernel may
//! still hold entries then), and a send buffer is kept in [`Uring::sends`] until its
//! completion (leaked if the loop ends first). Each `unsafe` block says why it holds.
#![allow(unsafe_code)]

use std::alloc::{self, Layout};
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types, IoUring};
use mio::Events;
use ocpp_proto::accept::{after_accept_error, AcceptRetry};

use super::capture::Tap;
use super::event_loop::{looked_for_input, Entry, EventLoop};
use super::ocpp_socket::{OcppSocket, SocketStage};
use super::slab::Key;

/// Submission queue entries: one turn queues at most one send and one receive per
/// connection it touched; a full queue is submitted early.
const SQ_ENTRIES: u32 = 4096;
/// Completion queue entries: a turn may see a completion from every connection.
const CQ_ENTRIES: u32 = 64 * 1024;
/// Receive buffers in the ring (a power of two), shared by every connection of the loop.
const BUFFERS: u16 = 1024;
/// The size of one receive buffer: an OCPP message is usually smaller; a larger one comes in
/// several completions, which the connection joins.
const BUFFER_SIZE: usize = 2048;
/// The buffer group of the ring.
const GROUP: u16 = 0;
/// A burst of sends (the push tick's, to every connection) is submitted every this many, not
/// only at the end of the turn: a push is stamped when made, so the last of 10,000 would
/// otherwise wait for all the others to be made (23 ms at p99 in the first measurement).
const SEND_BATCH: usize = 4;
/// Send buffers kept for reuse, and the largest capacity kept.
const SPARE_SENDS: usize = 64;
const SPARE_CAPACITY: usize = 16 * 1024;

/// What a completion is for: the top three bits of its user data; the rest names the
/// connection (29 bits of the slab generation, 32 of the index).
const KIND: u64 = 7 << 61;
const ACCEPT: u64 = 1 << 61;
const EPOLL: u64 = 2 << 61;
const RECV: u64 = 3 << 61;
const SEND: u64 = 4 << 61;
const CANCEL: u64 = 5 << 61;
const GENERATION: u64 = (1 << 29) - 1;

fn tag(kind: u64, key: Key) -> u64 {
    kind | (u64::from(key.generation()) & GENERATION) << 32 | u64::from(key.index())
}

/// Hashes a user data or a key for the maps below with one multiplication (Fibonacci
/// hashing): they are ours, not an attacker's, and SipHash would be most of a lookup.
#[derive(Debug, Default, Clone, Copy)]
struct TagHasher(u64);

impl std::hash::Hasher for TagHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_u32(&mut self, value: u32) {
        self.write_u64(u64::from(value));
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type Map<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<TagHasher>>;

/// One send in flight: its bytes, and how many of them the kernel took.
#[derive(Debug)]
struct Send {
    bytes: Vec<u8>,
    sent: usize,
}

/// The provided-buffer ring: [`BUFFERS`] entries the kernel picks receive buffers from, and
/// the buffers. Never freed (see the module's `unsafe` notes).
#[derive(Debug)]
struct BufRing {
    entries: NonNull<types::BufRingEntry>,
    data: NonNull<u8>,
    /// Our tail: entries up to it are the kernel's; published with [`BufRing::publish`].
    tail: u16,
}

// SAFETY: a `BufRing` owns its two allocations alone, as a `Box` would: nothing in it is tied
// to a thread (the kernel's use of it is tied to the ring, which moves with it). In fact a
// ring is made on its loop's thread and never leaves it; this lets the loop, which holds
// `None` until it runs, move to its thread.
unsafe impl std::marker::Send for BufRing {}

impl BufRing {
    fn new() -> io::Result<BufRing> {
        let ring = Layout::array::<types::BufRingEntry>(usize::from(BUFFERS))
            .and_then(|layout| layout.align_to(4096))
            .map_err(io::Error::other)?;
        let data = Layout::from_size_align(usize::from(BUFFERS) * BUFFER_SIZE, 4096)
            .map_err(io::Error::other)?;
        // SAFETY: both layouts have a non-zero size (BUFFERS and BUFFER_SIZE are constants
        // above zero); a null result is an allocation failure, checked below.
        let (entries, data) = unsafe { (alloc::alloc_zeroed(ring), alloc::alloc_zeroed(data)) };
        let entries = NonNull::new(entries.cast::<types::BufRingEntry>())
            .ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))?;
        let data = NonNull::new(data).ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))?;
        let mut ring = BufRing {
            entries,
            data,
            tail: 0,
        };
        for bid in 0..BUFFERS {
            ring.provide(bid);
        }
        Ok(ring)
    }

    /// Gives buffer `bid` (back) to the kernel, from the next [`BufRing::publish`].
    fn provide(&mut self, bid: u16) {
        let slot = usize::from(self.tail & (BUFFERS - 1));
        // SAFETY: `slot` < BUFFERS, the number of entries allocated in `new`; the entry is
        // one the kernel no longer reads (it consumed it before completing the receive that
        // gave `bid` back to us, or it was never published), and only this thread writes the
        // ring. The address is that of buffer `bid` (< BUFFERS) in `data`.
        unsafe {
            let entry = &mut *self.entries.as_ptr().add(slot);
            entry.set_addr(self.data.as_ptr().add(usize::from(bid) * BUFFER_SIZE) as u64);
            entry.set_len(BUFFER_SIZE as u32);
            entry.set_bid(bid);
        }
        self.tail = self.tail.wrapping_add(1);
    }

    /// Makes the buffers provided so far visible to the kernel.
    fn publish(&self) {
        // SAFETY: the ring's tail is the `resv` field of its first entry, a properly aligned
        // u16 in the allocation made in `new` (which is never freed), which the kernel only
        // reads; `AtomicU16` has the layout of `u16`.
        let tail = unsafe {
            AtomicU16::from_ptr(types::BufRingEntry::tail(self.entries.as_ptr()).cast_mut())
        };
        tail.store(self.tail, Ordering::Release);
    }

    /// The `len` bytes the kernel received into buffer `bid`.
    ///
    /// The slice must be dropped before `bid` is [provided](BufRing::provide) again.
    fn received(&self, bid: u16, len: usize) -> &[u8] {
        let bid = usize::from(bid.min(BUFFERS - 1));
        // SAFETY: buffer `bid` lies in `data` (clamped to < BUFFERS), `len` is at most its
        // size; the kernel wrote it before posting the completion that named `bid`, and it will
        // not write it again until we provide it, which needs `&mut self` (so the returned
        // slice, borrowing `self`, is gone by then).
        unsafe {
            std::slice::from_raw_parts(
                self.data.as_ptr().add(bid * BUFFER_SIZE),
                len.min(BUFFER_SIZE),
            )
        }
    }
}

/// The ring of one loop and what it has in flight.
pub(super) struct Uring {
    ring: IoUring,
    buffers: BufRing,
    /// The sends in flight, by user data; each stays here until its completion.
    sends: Map<u64, Send>,
    /// Send buffers to reuse.
    spare: Vec<Vec<u8>>,
    /// Input received for connections whose reading is paused (back-pressure), fed when they
    /// want input again.
    paused: Map<Key, Vec<u8>>,
    /// Sockets removed this turn: closed after the submit.
    closing: Vec<mio::net::TcpStream>,
    /// Sends queued since the last submit.
    unsubmitted_sends: usize,
    accept_armed: bool,
    accept_cancelled: bool,
    epoll_armed: bool,
    completions: Vec<(u64, i32, u32)>,
}

impl std::fmt::Debug for Uring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Uring")
            .field("sends", &self.sends.len())
            .field("paused", &self.paused.len())
            .field("accept_armed", &self.accept_armed)
            .field("epoll_armed", &self.epoll_armed)
            .finish_non_exhaustive()
    }
}

impl Uring {
    fn new() -> io::Result<Uring> {
        // One thread submits and reaps (this loop's): completions are worked on only when
        // it enters the kernel, not by interrupting it.
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_cqsize(CQ_ENTRIES)
            .build(SQ_ENTRIES)
            .or_else(|_| {
                IoUring::builder()
                    .setup_cqsize(CQ_ENTRIES)
                    .build(SQ_ENTRIES)
            })?;
        let buffers = BufRing::new()?;
        // SAFETY: the ring of BUFFERS entries at `buffers.entries` is page-aligned and never
        // freed, so it stays valid for as long as the io_uring instance may use it.
        unsafe {
            ring.submitter().register_buf_ring_with_flags(
                buffers.entries.as_ptr() as u64,
                BUFFERS,
                GROUP,
                0,
            )?;
        }
        buffers.publish();
        Ok(Uring {
            ring,
            buffers,
            sends: Map::default(),
            spare: Vec::new(),
            paused: Map::default(),
            closing: Vec::new(),
            unsubmitted_sends: 0,
            accept_armed: false,
            accept_cancelled: false,
            epoll_armed: false,
            completions: Vec::with_capacity(1024),
        })
    }

    /// Queues `entry`, submitting first if the queue is full.
    fn push(&mut self, entry: &squeue::Entry) {
        for _ in 0..2 {
            // SAFETY: the entries this module builds name no memory of ours (accept, poll,
            // cancel), or buffers from the provided ring (the multishot receive), which is
            // never freed, or the bytes of a send, held in `self.sends` under the entry's user
            // data until its completion and leaked if the ring is dropped first (`Drop`).
            if unsafe { self.ring.submission().push(entry) }.is_ok() {
                return;
            }
            if let Err(e) = self.ring.submit() {
                tracing::error!("io_uring submit: {e}");
            }
        }
        tracing::error!("io_uring submission queue full: an entry was dropped");
    }

    fn cancel(&mut self, user_data: u64) {
        self.push(
            &opcode::AsyncCancel::new(user_data)
                .build()
                .user_data(CANCEL),
        );
    }

    /// Arms the multishot receive of `s`.
    pub(super) fn arm_recv(&mut self, key: Key, s: &mut OcppSocket) {
        let fd = types::Fd(s.socket.as_raw_fd());
        self.push(
            &opcode::RecvMulti::new(fd, GROUP)
                .build()
                .user_data(tag(RECV, key)),
        );
        s.recv_armed = true;
    }

    /// Whether a send of `key` is in flight.
    pub(super) fn sending(&self, key: Key) -> bool {
        self.sends.contains_key(&tag(SEND, key))
    }

    /// Queues the output of `s` unless a send is in flight (it goes when that one
    /// completes); returns whether a send is in flight now.
    pub(super) fn send(&mut self, key: Key, s: &mut OcppSocket, tap: Option<&mut Tap>) -> bool {
        let user_data = tag(SEND, key);
        if self.sends.contains_key(&user_data) {
            return true;
        }
        let pending = s.connection.pending_transmit();
        if pending.is_empty() {
            return false;
        }
        let mut bytes = self.spare.pop().unwrap_or_default();
        bytes.extend_from_slice(pending);
        if let Some(tap) = tap {
            tap.sent(&bytes);
        }
        s.connection.advance_transmit(bytes.len());
        let fd = s.socket.as_raw_fd();
        self.start_send(user_data, fd, Send { bytes, sent: 0 });
        true
    }

    /// Queues what is left of `send` and keeps it until its completion.
    fn start_send(&mut self, user_data: u64, fd: i32, send: Send) {
        let rest = send.bytes.get(send.sent..).unwrap_or_default();
        let len = u32::try_from(rest.len()).unwrap_or(u32::MAX);
        // The pointer stays valid when `send` moves into the map: a Vec's heap buffer does not
        // move with it, and it is neither grown nor dropped until the completion.
        let entry = opcode::Send::new(types::Fd(fd), rest.as_ptr(), len)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(user_data);
        self.sends.insert(user_data, send);
        self.push(&entry);
        self.unsubmitted_sends += 1;
        if self.unsubmitted_sends >= SEND_BATCH {
            self.unsubmitted_sends = 0;
            if let Err(e) = self.ring.submit() {
                tracing::debug!("io_uring submit: {e}");
            }
        }
    }

    fn recycle(&mut self, mut bytes: Vec<u8>) {
        if self.spare.len() < SPARE_SENDS && bytes.capacity() <= SPARE_CAPACITY {
            bytes.clear();
            self.spare.push(bytes);
        }
    }

    /// The socket of `key` was removed: cancel what it has in flight; its descriptor is closed
    /// after the next submit.
    pub(super) fn forget(&mut self, key: Key, s: OcppSocket) {
        if s.recv_armed {
            self.cancel(tag(RECV, key));
        }
        if self.sending(key) {
            self.cancel(tag(SEND, key));
        }
        self.paused.remove(&key);
        self.closing.push(s.socket);
    }

    /// Submits the turn's entries and waits for a completion, at most `timeout`.
    fn submit_and_wait(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.buffers.publish();
        self.unsubmitted_sends = 0;
        if !self.closing.is_empty() {
            // Sockets to close: every entry naming their descriptors goes in first (so none
            // can name a number reused since), then they are closed, now rather than after
            // the wait.
            if let Err(e) = self.ring.submit() {
                if !transient(&e) {
                    return Err(e);
                }
            }
            self.closing.clear();
        }
        let result = match timeout {
            Some(Duration::ZERO) => self.ring.submit(),
            Some(timeout) => {
                let ts = types::Timespec::from(timeout);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(1, &args)
            }
            None => self.ring.submit_and_wait(1),
        };
        match result {
            Err(e) if !transient(&e) => Err(e),
            _ => Ok(()),
        }
    }
}

/// A wait that timed out or was interrupted, or a completion queue too full to submit now:
/// the loop goes on.
fn transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ETIME | libc::EINTR | libc::EBUSY | libc::EAGAIN)
    )
}

impl Drop for Uring {
    fn drop(&mut self) {
        // The kernel may still hold these sends when the ring goes: their bytes are leaked
        // rather than freed under it (the loop ends once, with the process).
        for (_, send) in self.sends.drain() {
            std::mem::forget(send.bytes);
        }
    }
}

impl EventLoop {
    /// Runs until shutdown on io_uring; see the [module documentation](self).
    pub(super) fn run_uring(mut self) -> io::Result<()> {
        // Made here, on the loop's thread: the ring has a single issuer.
        self.uring = Some(Box::new(Uring::new()?));
        if let (Some(listener), None) = (&mut self.listener, &self.accept_pacer) {
            // The ring accepts on it; epoll must not report it. With an accept rate the loop
            // accepts one connection per slot itself, on epoll's readiness, as mio-server
            // does: a multishot accept would take every connection the backlog holds.
            let _ = self.poll.registry().deregister(listener);
        }
        let mut events = Events::with_capacity(1024);
        let mut completions = Vec::new();
        loop {
            if self.finished() {
                if let Some(uring) = &mut self.uring {
                    let _ = uring.submit_and_wait(Some(Duration::ZERO));
                }
                return Ok(());
            }
            self.arm();
            let timeout = if self.read_again.is_empty() {
                self.settle_timers();
                self.next_wakeup()
                    .map(|at| at.saturating_duration_since(Instant::now()))
            } else {
                Some(Duration::ZERO)
            };
            let Some(uring) = &mut self.uring else {
                return Ok(());
            };
            let looking = Instant::now();
            uring.submit_and_wait(timeout)?;
            std::mem::swap(&mut completions, &mut uring.completions);
            completions.extend(
                uring
                    .ring
                    .completion()
                    .map(|c| (c.user_data(), c.result(), c.flags())),
            );
            let now = Instant::now();
            let looked = looked_for_input(looking, timeout, completions.is_empty(), now);
            for key in std::mem::take(&mut self.read_again) {
                self.resume_recv(key, now);
            }
            let mut epoll = false;
            for (user_data, result, flags) in completions.drain(..) {
                match user_data & KIND {
                    ACCEPT => self.accepted(result, flags, now),
                    EPOLL => {
                        epoll = true;
                        if !cqueue::more(flags) {
                            if let Some(uring) = &mut self.uring {
                                uring.epoll_armed = false;
                            }
                        }
                    }
                    RECV => self.received(user_data, result, flags, now),
                    SEND => self.sent(user_data, result, now),
                    _ => {} // a cancel's own completion
                }
            }
            if let Some(uring) = &mut self.uring {
                std::mem::swap(&mut completions, &mut uring.completions);
            }
            if epoll {
                match self.poll.poll(&mut events, Some(Duration::ZERO)) {
                    Ok(()) => self.dispatch(&events, now),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            self.after_turn(looked);
        }
    }

    /// Arms the multishot accept and the epoll poll if they are not, and cancels the accept
    /// once the listener is closed (shutdown).
    fn arm(&mut self) {
        let Some(uring) = &mut self.uring else {
            return;
        };
        match &self.listener {
            Some(listener)
                if !uring.accept_armed
                    && self.accept_retry.is_none()
                    && self.accept_pacer.is_none() =>
            {
                let fd = types::Fd(listener.as_raw_fd());
                let accept = opcode::AcceptMulti::new(fd).flags(libc::SOCK_CLOEXEC);
                uring.push(&accept.build().user_data(ACCEPT));
                uring.accept_armed = true;
            }
            None if uring.accept_armed && !uring.accept_cancelled => {
                uring.cancel(ACCEPT);
                uring.accept_cancelled = true;
            }
            _ => {}
        }
        if !uring.epoll_armed {
            let fd = types::Fd(self.poll.as_raw_fd());
            let poll = opcode::PollAdd::new(fd, libc::POLLIN as u32).multi(true);
            uring.push(&poll.build().user_data(EPOLL));
            uring.epoll_armed = true;
        }
    }

    /// The live key a completion's user data names, if its connection is still there.
    fn key_of(&self, user_data: u64) -> Option<Key> {
        let key = self.sockets.key_at(user_data as u32)?;
        (u64::from(key.generation()) & GENERATION == (user_data >> 32) & GENERATION).then_some(key)
    }

    fn accepted(&mut self, result: i32, flags: u32, now: Instant) {
        let Some(uring) = &mut self.uring else {
            return;
        };
        if !cqueue::more(flags) {
            uring.accept_armed = false;
        }
        if result < 0 {
            let e = io::Error::from_raw_os_error(-result);
            match after_accept_error(&e) {
                AcceptRetry::Now => tracing::debug!("accept: {e}"),
                AcceptRetry::After(wait) => {
                    // Out of descriptors: the backlog keeps the connection; try later.
                    tracing::warn!(loop_index = self.index, "accept: {e}; retrying shortly");
                    self.accept_retry = Some(now + wait);
                }
            }
            return;
        }
        // SAFETY: a successful accept's result is a new descriptor, open and owned by no one
        // else: the stream takes it over and closes it when dropped.
        let stream = unsafe { std::net::TcpStream::from_raw_fd(result) };
        if self.listener.is_none() {
            return; // shutting down: closed at once
        }
        self.add_ocpp(mio::net::TcpStream::from_std(stream), None, now);
    }

    /// A receive completion of the connection `user_data` names.
    fn received(&mut self, user_data: u64, result: i32, flags: u32, now: Instant) {
        let more = cqueue::more(flags);
        let bid = cqueue::buffer_select(flags);
        let key = self.key_of(user_data);
        let Some(uring) = self.uring.as_deref_mut() else {
            return;
        };
        let socket = match key.and_then(|key| self.sockets.get_mut(key)) {
            Some(Entry::Ocpp(s)) => Some(s),
            _ => None,
        };
        let (Some(key), Some(s)) = (key, socket) else {
            // A connection already removed: its buffer goes back.
            if let Some(bid) = bid {
                uring.buffers.provide(bid);
            }
            return;
        };
        if !more {
            s.recv_armed = false;
        }
        let mut service = false;
        if let (Some(bid), Ok(len @ 1..)) = (bid, usize::try_from(result)) {
            if s.stage.is_open() {
                let data = uring.buffers.received(bid, len);
                let stashed = !uring.paused.is_empty() && uring.paused.contains_key(&key);
                if s.read_paused || stashed {
                    uring.paused.entry(key).or_default().extend_from_slice(data);
                } else if !s.connection.wants_read() {
                    // Back-pressure: the peer does not read what we send; stop reading it.
                    tracing::debug!(identity = ?s.identity, "reading paused");
                    s.read_paused = true;
                    uring.paused.insert(key, data.to_vec());
                    if more {
                        uring.cancel(tag(RECV, key));
                    }
                } else {
                    if let Some(tap) = self.taps.as_mut().and_then(|taps| taps.get_mut(&key)) {
                        tap.received(data);
                    }
                    s.connection.handle_data(now, data);
                    service = true;
                }
            }
            // A closed connection ignores input; draining discards it.
            uring.buffers.provide(bid);
        }
        let ended =
            result == 0 || (result < 0 && ![libc::ENOBUFS, libc::ECANCELED].contains(&-result));
        if ended {
            if result < 0 {
                tracing::debug!(peer = %super::ocpp_socket::peer(&s.socket), "receive: {}", io::Error::from_raw_os_error(-result));
            }
            match s.stage {
                SocketStage::Live | SocketStage::Claiming { .. } => {
                    s.read_paused = false;
                    uring.paused.remove(&key);
                    s.connection.handle_eof(now);
                    service = true;
                }
                // The peer's end of stream: removed once drained (`uring_drain`).
                SocketStage::Flushing { .. } => {}
                SocketStage::Draining { .. } => {
                    self.remove(key);
                    return;
                }
            }
        } else if !more {
            // Ended without an end of stream (no buffer was free, a cancel, a last
            // completion with data): armed again unless reading is paused.
            if matches!(s.stage, SocketStage::Draining { .. }) && s.read_paused {
                s.read_paused = false;
                uring.paused.remove(&key);
            }
            if !s.read_paused {
                uring.arm_recv(key, s);
            }
        }
        if service {
            self.service(key, now);
        }
    }

    /// A send completion: the rest goes on, or the connection may send again.
    fn sent(&mut self, user_data: u64, result: i32, now: Instant) {
        let key = self.key_of(user_data);
        let Some(uring) = self.uring.as_deref_mut() else {
            return;
        };
        let Some(mut send) = uring.sends.remove(&user_data) else {
            return;
        };
        let socket = match key.and_then(|key| self.sockets.get_mut(key)) {
            Some(Entry::Ocpp(s)) => Some(s),
            _ => None,
        };
        let (Some(key), Some(s)) = (key, socket) else {
            uring.recycle(send.bytes);
            return;
        };
        match usize::try_from(result) {
            Ok(sent @ 1..) => {
                send.sent += sent;
                if send.sent < send.bytes.len() {
                    uring.start_send(user_data, s.socket.as_raw_fd(), send);
                    return;
                }
                uring.recycle(send.bytes);
                self.service(key, now);
            }
            _ => {
                uring.recycle(send.bytes);
                let e = if result < 0 {
                    io::Error::from_raw_os_error(-result)
                } else {
                    io::ErrorKind::WriteZero.into()
                };
                tracing::debug!(peer = %super::ocpp_socket::peer(&s.socket), "write: {e}");
                self.socket_failed(key, now);
            }
        }
    }

    /// Reading resumes (the connection wants input again): the input kept aside first, then
    /// the receive armed again.
    fn resume_recv(&mut self, key: Key, now: Instant) {
        let Some(uring) = self.uring.as_deref_mut() else {
            return;
        };
        let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
            return;
        };
        if s.read_paused || !s.stage.is_open() {
            return;
        }
        tracing::debug!(identity = ?s.identity, "reading resumed");
        if let Some(stashed) = uring.paused.remove(&key) {
            if let Some(tap) = self.taps.as_mut().and_then(|taps| taps.get_mut(&key)) {
                tap.received(&stashed);
            }
            s.connection.handle_data(now, &stashed);
        }
        // Still armed: its cancel is on its way, and its last completion arms it again.
        if !s.recv_armed {
            uring.arm_recv(key, s);
        }
        self.service(key, now);
    }

    /// Draining starts (our write side is shut): the receive discards input until the peer's
    /// end of stream; if that was already seen, the socket goes now.
    pub(super) fn uring_drain(&mut self, key: Key) {
        let Some(uring) = self.uring.as_deref_mut() else {
            return;
        };
        let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
            return;
        };
        if s.recv_armed {
            return;
        }
        if s.read_paused {
            s.read_paused = false;
            uring.paused.remove(&key);
            uring.arm_recv(key, s);
        } else {
            self.remove(key);
        }
    }
}
