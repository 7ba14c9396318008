//! One single-threaded event loop: it sleeps in `poll`, dispatches each ready token (a
//! listener, the waker, a socket), runs the commands other threads sent, fires the timers that
//! passed, and owns the slab of sockets. What happens to each kind of socket is in
//! [`ocpp_socket`](super::ocpp_socket) and [`admin_socket`](super::admin_socket).

use std::collections::HashMap;
use std::io;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::TcpListener;
use mio::{Events, Interest, Poll};
use ocpp_cluster::RequestId;
use ocpp_proto::accept::AcceptPacer;
use ocpp_proto::Superseded;

use super::admin_socket::{AdminSocket, AdminStage};
use super::capture::Tap;
use super::cluster::{DrainState, RemoteAdminCall, RemoteRead};
use super::ocpp_socket::{OcppSocket, SocketStage};
use super::slab::{Key, Slab};
use super::timers::{Settle, TimerHeap};
use super::{LoopCommand, LoopShared, ADMIN_LISTENER, LISTENER, WAKER};
use ocpp_reference_csms::admin::HttpResponse;
use ocpp_reference_csms::admin_auth::{AdminRefused, AdminSlots};

/// The one read buffer of the loop, shared by every connection.
const SCRATCH_SIZE: usize = 64 * 1024;
/// Readiness events taken from `poll` per turn; more ready sockets wait for the next turn.
const EVENTS_PER_TURN: usize = 1024;
/// Timer entries [`EventLoop::settle_timers`] may move or drop in a turn (each is a pop and at
/// most one push on the heap): enough for the entries a turn can reach, bounded so that a
/// turn stays short whatever the heap holds.
const SETTLE_PER_TURN: usize = 256;

/// The instant up to which a turn knows the peers' input: a deadline that passed later is
/// not judged in this turn (a Pong or a CALLRESULT that came after it may be in the kernel).
///
/// `poll` gathers its events after it is called (`looking`), at an instant it does not tell:
/// a loop descheduled for seconds (a starved CPU) returns old events, and what came during
/// those seconds is not among them. When it reported nothing, it looked again when its
/// `timeout` ran out (the kernel never ends the wait early), so input up to then is known.
pub(super) fn looked_for_input(
    looking: Instant,
    timeout: Option<Duration>,
    reported_nothing: bool,
    now: Instant,
) -> Instant {
    match timeout {
        Some(timeout) if reported_nothing => (looking + timeout).min(now),
        _ => looking,
    }
}

/// What a slab slot holds.
///
/// A charge point's socket record lives in the slot itself: it has no malloc chunk of its own
/// (8 bytes of header and the rounding to 16) and no pointer slot beside it (the slab's spare
/// capacity after doubling was 24 bytes a slot, resident; a slot never used is never touched,
/// so spare capacity of inline records costs address space, not memory). The admin
/// interface's few sockets are boxed, so that they do not make every slot larger.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // the large variant is nearly every slot: see above
pub(super) enum Entry {
    Ocpp(OcppSocket),
    Admin(Box<AdminSocket>),
}

/// One event loop. See the [module documentation](super).
#[derive(Debug)]
pub(super) struct EventLoop {
    pub(super) index: usize,
    pub(super) poll: Poll,
    pub(super) listener: Option<TcpListener>,
    pub(super) admin_listener: Option<TcpListener>,
    pub(super) commands: Receiver<LoopCommand>,
    pub(super) shared: Arc<LoopShared>,
    pub(super) sockets: Slab<Entry>,
    pub(super) timers: TimerHeap,
    pub(super) scratch: Box<[u8]>,
    pub(super) next_push: Option<Instant>,
    pub(super) accept_retry: Option<Instant>,
    /// `--accept-rate`: this loop's share of the rate ([`AcceptPacer::one_of`]).
    pub(super) accept_pacer: Option<AcceptPacer>,
    /// Past the accept rate: the listener is left alone (its connections wait in the
    /// backlog) until this instant, the pacer's next slot.
    pub(super) accept_paused: Option<Instant>,
    pub(super) shutdown_deadline: Option<Instant>,
    /// Sockets to read again on the next turn without waiting for readiness: they stopped
    /// after [`READS_PER_EVENT`](super::ocpp_socket::READS_PER_EVENT) with data possibly
    /// left, or their reading resumed after back-pressure (edge-triggered readiness will not
    /// report either again).
    pub(super) read_again: Vec<Key>,
    /// This turn left input in the kernel that the loop has not read: `poll` filled its
    /// whole batch of events (more sockets are ready than it reported) or a socket used up
    /// its reads ([`EventLoop::read_again`]). A deadline is then judged only after its own
    /// socket was read ([`EventLoop::expire_timers`]).
    pub(super) input_left: bool,
    /// Loop 0 of a cluster node: admin commands routed through the cluster, by request.
    pub(super) remote_calls: HashMap<RequestId, RemoteAdminCall>,
    /// Loop 0 of a cluster node: admin reads waiting for the cluster's presence records.
    pub(super) remote_reads: HashMap<RequestId, RemoteRead>,
    /// Loop 0 of a cluster node: leaving the cluster during a shutdown.
    pub(super) drain_state: DrainState,
    /// Loop 0: the admin connections open, for their limit.
    pub(super) admin_slots: AdminSlots<Key>,
    /// `--capture`: the tap of each OCPP socket, beside the sockets so that their records do
    /// not grow; `None` without a capture (each read and write then pays one branch).
    pub(super) taps: Option<HashMap<Key, Tap>>,
    /// `uring-server`: the ring that does the charge points' I/O (made on the loop's own
    /// thread when it starts, see [`uring`](super::uring)); `None` on epoll.
    #[cfg(target_os = "linux")]
    pub(super) uring: Option<Box<super::uring::Uring>>,
}

impl EventLoop {
    pub(super) fn new(
        index: usize,
        poll: Poll,
        mut listener: TcpListener,
        mut admin_listener: Option<TcpListener>,
        commands: Receiver<LoopCommand>,
        shared: Arc<LoopShared>,
    ) -> io::Result<Self> {
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)?;
        if let Some(admin) = &mut admin_listener {
            poll.registry()
                .register(admin, ADMIN_LISTENER, Interest::READABLE)?;
        }
        let next_push = shared
            .push_interval
            .map(|interval| Instant::now() + interval);
        let admin_slots = AdminSlots::new(shared.admin_limits.max_connections);
        let taps = shared.capture.as_ref().map(|_| HashMap::new());
        let loops = shared.mailboxes.len();
        let accept_pacer = shared
            .accept_rate
            .map(|rate| AcceptPacer::one_of(rate, loops));
        Ok(EventLoop {
            index,
            poll,
            listener: Some(listener),
            admin_listener,
            commands,
            shared,
            sockets: Slab::default(),
            timers: TimerHeap::new(Instant::now()),
            scratch: vec![0; SCRATCH_SIZE].into_boxed_slice(),
            next_push,
            accept_retry: None,
            accept_pacer,
            accept_paused: None,
            shutdown_deadline: None,
            read_again: Vec::new(),
            input_left: false,
            remote_calls: HashMap::new(),
            remote_reads: HashMap::new(),
            drain_state: DrainState::Idle,
            taps,
            admin_slots,
            #[cfg(target_os = "linux")]
            uring: None,
        })
    }

    pub(super) fn index(&self) -> usize {
        self.index
    }

    /// Runs until shutdown: sleep in `poll` until a socket is ready, a command arrives or the
    /// earliest deadline passes; handle what happened; repeat.
    pub(super) fn run(mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(EVENTS_PER_TURN);
        loop {
            if self.finished() {
                return Ok(());
            }
            // Sockets with unread data left from the last turn: do not sleep.
            let timeout = if self.read_again.is_empty() {
                self.settle_timers();
                self.next_wakeup()
                    .map(|at| at.saturating_duration_since(Instant::now()))
            } else {
                Some(Duration::ZERO)
            };
            let looking = Instant::now();
            match self.poll.poll(&mut events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            let now = Instant::now();
            let looked = looked_for_input(looking, timeout, events.is_empty(), now);
            for key in std::mem::take(&mut self.read_again) {
                self.socket_ready(key, true, false, true, now);
            }
            self.dispatch(&events, now);
            self.input_left =
                events.iter().count() >= EVENTS_PER_TURN || !self.read_again.is_empty();
            self.after_turn(looked);
            self.input_left = false;
        }
    }

    /// Shutting down and nothing left: the loop may exit.
    pub(super) fn finished(&self) -> bool {
        let done =
            self.shutdown_deadline.is_some() && self.sockets.is_empty() && self.cluster_done();
        if done {
            tracing::debug!(loop_index = self.index, "event loop done");
        }
        done
    }

    /// Handles the readiness `events` reported by `poll`.
    pub(super) fn dispatch(&mut self, events: &Events, now: Instant) {
        for event in events.iter() {
            match event.token() {
                LISTENER => self.accept(now),
                ADMIN_LISTENER => self.accept_admin(now),
                WAKER => {
                    self.run_commands(now);
                    if self.index == 0 {
                        self.cluster_outputs(now);
                    }
                }
                token => {
                    let readable = event.is_readable() || event.is_read_closed();
                    let writable = event.is_writable() || event.is_write_closed();
                    // After the peer's FIN or an error, read on to the end of stream.
                    let exhaust = event.is_read_closed() || event.is_error();
                    self.socket_ready(Key::from_token(token), readable, writable, exhaust, now);
                }
            }
        }
    }

    /// The end of a turn: the timers that passed by `looked` (the last instant this turn's
    /// `poll` looked for input, [`looked_for_input`]), the push tick, the accept retry, the
    /// shutdown deadline. A deadline that passed after `looked` waits for the next turn,
    /// whose `poll` does not sleep.
    pub(super) fn after_turn(&mut self, looked: Instant) {
        let now = Instant::now();
        self.expire_timers(looked);
        self.push_tick(now);
        self.cluster_shutdown_tick(now);
        if self.accept_retry.is_some_and(|at| at <= now) {
            self.accept_retry = None;
            self.accept(now);
            self.accept_admin(now);
        }
        if self.accept_paused.is_some_and(|at| at <= now) {
            // The next slot: readiness will not come again for what waits in the backlog.
            self.accept_paused = None;
            self.accept_resumed(now);
        }
        if self.shutdown_deadline.is_some_and(|at| at <= now) {
            self.force_close_all(now);
        }
    }

    /// Takes off the timer heap's top, before the loop sleeps, the entries it need not wake
    /// for (at most [`SETTLE_PER_TURN`] a turn): a stale one (its connection scheduled an
    /// earlier one since, or is gone), and one that comes before its connection's real
    /// deadline, which lazy deletion leaves behind (the WebSocket handshake's, once the
    /// connection is up), moved to that deadline. Without this, such entries woke the loop
    /// for nothing, up to once per connection in the ten seconds after a storm of connections
    /// (1,215 empty wakes after 2,000 charge points connected, BENCHMARKS.md). Nothing is
    /// judged here: an entry only ever moves later, to the connection's own deadline.
    pub(super) fn settle_timers(&mut self) {
        let sockets = &mut self.sockets;
        self.timers.settle(SETTLE_PER_TURN, |timers, at, key| {
            match sockets.get_mut(key) {
                Some(Entry::Ocpp(s)) if s.scheduled == Some(at) => {
                    let real = s.deadline(timers).map(|real| timers.deadline(real));
                    if real.is_some_and(|real| real <= at) {
                        return Settle::Due;
                    }
                    s.scheduled = real;
                    Settle::Move(real)
                }
                Some(Entry::Admin(a)) if a.scheduled == Some(at) => Settle::Due,
                _ => Settle::Stale,
            }
        });
    }

    /// The earliest of: a connection deadline, the push timer, an accept retry, the accept
    /// rate's next slot, the shutdown deadline, the cluster drain check.
    pub(super) fn next_wakeup(&self) -> Option<Instant> {
        [
            self.timers.next_deadline(),
            self.next_push,
            self.accept_retry,
            self.accept_paused,
            self.shutdown_deadline,
            self.drain_check_at(Instant::now()),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn socket_ready(
        &mut self,
        key: Key,
        readable: bool,
        writable: bool,
        exhaust: bool,
        now: Instant,
    ) {
        match self.sockets.get_mut(key) {
            Some(Entry::Ocpp(_)) => {
                if readable {
                    self.read(key, exhaust, now);
                }
                // Writing happens in `service` whether or not this event said writable.
                let _ = writable;
                self.service(key, now);
            }
            Some(Entry::Admin(_)) => self.admin_ready(key, readable, now),
            None => {} // a stale event for a socket already closed
        }
    }

    fn expire_timers(&mut self, now: Instant) {
        while let Some((deadline, key)) = self.timers.pop_expired(now) {
            match self.sockets.get_mut(key) {
                Some(Entry::Ocpp(s)) => {
                    if s.scheduled != Some(deadline) {
                        continue; // stale: a newer, earlier entry superseded it
                    }
                    s.scheduled = None;
                    if self.input_left
                        && matches!(s.stage, SocketStage::Live | SocketStage::Claiming { .. })
                    {
                        // The peer's answer may be in the kernel, behind the events this
                        // turn did not reach (a loop that fell behind: a burst of
                        // connections, a starved CPU): what has arrived is not late. Read it
                        // before the core judges the deadline (a Pong, a CALLRESULT).
                        self.read(key, false, now);
                    }
                    let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
                        continue;
                    };
                    match s.stage {
                        SocketStage::Live => {
                            s.connection.handle_timeout(now);
                            self.service(key, now);
                        }
                        SocketStage::Claiming { deadline } => {
                            if deadline <= self.timers.moment(now) {
                                // Redis did not answer in time: out goes the 101, with the
                                // claim pending (registered by a later refresh round).
                                tracing::warn!(identity = ?s.identity, "claim not registered in time: connected with the claim pending");
                                s.stage = SocketStage::Live;
                            }
                            s.connection.handle_timeout(now);
                            self.service(key, now);
                        }
                        SocketStage::Flushing { deadline } | SocketStage::Draining { deadline }
                            if deadline <= self.timers.moment(now) =>
                        {
                            self.remove(key)
                        }
                        _ => self.service(key, now),
                    }
                }
                Some(Entry::Admin(a)) => {
                    if a.scheduled != Some(deadline) {
                        continue;
                    }
                    a.scheduled = None;
                    if a.deadline > now {
                        self.timers
                            .schedule(key, Some(a.deadline), &mut a.scheduled);
                    } else if a.stage == AdminStage::Waiting {
                        self.admin_respond(key, HttpResponse::timeout(), now);
                    } else {
                        if a.stage == AdminStage::Reading {
                            let metrics = self.shared.csms.metrics();
                            metrics.admin_refused(AdminRefused::Timeout).inc();
                        }
                        self.remove(key);
                    }
                }
                None => {}
            }
        }
    }

    fn run_commands(&mut self, now: Instant) {
        while let Ok(command) = self.commands.try_recv() {
            match command {
                LoopCommand::Shutdown => self.begin_shutdown(now),
                LoopCommand::AdminCall {
                    target,
                    request,
                    reply_to,
                    deadline,
                } => self.admin_call(target, request, reply_to, deadline, now),
                LoopCommand::AdminCalls {
                    target,
                    split,
                    reply_to,
                    deadline,
                } => self.admin_calls(target, split, reply_to, deadline, now),
                LoopCommand::AdminReply { to, response } => {
                    if let Some(Entry::Admin(a)) = self.sockets.get_mut(to) {
                        if a.stage == AdminStage::Waiting {
                            self.admin_respond(to, response, now);
                        }
                    }
                }
                LoopCommand::Answer { target, id, answer } => {
                    self.answer_later(target, &id, answer, now);
                }
                LoopCommand::ClusterJob {
                    target,
                    job,
                    answer,
                } => self.run_job(target, job, answer, now),
                LoopCommand::Superseded { target, ticket } => self.superseded(target, ticket, now),
                LoopCommand::Claimed { target, ticket } => self.claimed(target, ticket, now),
                LoopCommand::Replace { target } => {
                    if let Some(Entry::Ocpp(s)) = self.sockets.get_mut(target) {
                        let why = Superseded::NewerConnection;
                        tracing::info!(identity = ?s.identity, "{}", why.reason());
                        s.connection.close_superseded(now, why);
                        self.service(target, now);
                    }
                }
            }
        }
    }

    pub(super) fn remove(&mut self, key: Key) {
        let Some(entry) = self.sockets.remove(key) else {
            return;
        };
        match entry {
            Entry::Ocpp(mut s) => {
                if let Some(taps) = &mut self.taps {
                    taps.remove(&key);
                }
                #[cfg(target_os = "linux")]
                if let Some(uring) = &mut self.uring {
                    uring.forget(key, s);
                    self.shared.csms.metrics().sockets_open.dec();
                    return;
                }
                let _ = self.poll.registry().deregister(&mut s.socket);
                self.shared.csms.metrics().sockets_open.dec();
            }
            Entry::Admin(mut a) => {
                let _ = self.poll.registry().deregister(&mut a.socket);
                self.admin_slots.close(key);
            }
        }
    }
}
