//! A CSMS on mio: one or more single-threaded event loops, each holding thousands of charge
//! points through `ocpp-proto`, all driving one shared [`Csms`] application.
//!
//! # One loop
//! Each loop (`event_loop`) owns a `mio::Poll`, its own listening socket, a [`slab::Slab`]
//! of connections, a [`timers::TimerHeap`] and one 64 KiB read buffer. It sleeps in `poll`
//! until a socket is ready, a command arrives, or the earliest deadline passes (having first
//! moved the entries at the heap's top that came before their connections' deadlines to
//! those deadlines, [`timers::TimerHeap::settle`], so that they do not wake it), then:
//!
//! 1. reads each readable socket into the shared buffer, while the connection
//!    [wants input](ocpp_proto::Connection::wants_read), and hands the bytes to its
//!    `handle_data` (the connection keeps only a partial frame, so no connection holds a read
//!    buffer of its own);
//! 2. drains the connection's events into the [`Csms`] hooks and answers with its mutators
//!    (an answer that needs a commit or a network round trip is made on a worker thread and
//!    comes back through the loop's mailbox),
//!    then writes `pending_transmit()` until the socket would block, keeping `WRITABLE`
//!    interest only while output is left: one pass of the core's drain contract, in
//!    `ocpp_socket::service`, the one place that handles events;
//! 3. schedules the connection's `poll_timeout()` in the timer heap;
//! 4. fires the timers that passed and the push timer (`--push-interval-ms`).
//!
//! # Files
//! - `event_loop`: the loop itself: `poll`, dispatch by token, commands, timers, the slab;
//! - `ocpp_socket`: a charge point's socket record and its reading, events, writing,
//!   flushing and draining;
//! - `admin_socket`: the admin HTTP sockets (loop 0) and the admin CALLs they send;
//! - `accept`: accepting OCPP and admin sockets, at the accept rate (`--accept-rate`: each of
//!   the N loops takes its share, [`AcceptPacer::one_of`](ocpp_proto::accept::AcceptPacer::one_of); past it the loop stops accepting and
//!   leaves the connections in its listen backlog until the slot the pacer names, a deadline
//!   like the others; `ocpp_accepts_deferred_total` counts the connections found waiting
//!   then);
//! - `push`: the push tick;
//! - `shutdown`: the graceful shutdown and its deadline;
//! - `workers`: the threads that make the CSMS's slow answers ([`Answering::Later`](ocpp_reference_csms::Answering::Later): a commit, a
//!   network round trip), so that no loop waits; the answer comes back as a `LoopCommand`;
//! - [`slab`], [`timers`]: the socket table and the deadline heap;
//! - `uring` (Linux): `uring-server`'s loop, this one with the charge points' sockets on
//!   io_uring ([`MioServer::bind_uring`]): multishot accept and receive (provided-buffer ring),
//!   batched sends, one `io_uring_enter` per turn; the rest (admin sockets, mailbox) stays on
//!   epoll, whose descriptor the ring polls.
//!
//! # Several loops
//! `--threads N` runs N loops on N threads. Every loop binds its own listener to the same
//! address with `SO_REUSEPORT`, so the kernel spreads new connections over them and the loops
//! share nothing on the hot path. Several `mio-server` processes can share the port the same
//! way (past one process's open-file limit); processes share nothing at all, so each one's
//! admin interface sees only its own charge points, unless they are nodes of one cluster
//! (below), whose admin commands reach a charge point on any node. What crosses threads:
//! - the [`Csms`] (one mutex taken per OCPP message, atomics for metrics);
//! - one [`IdentityTable`] mapping each charge point to the loop and slab key of its
//!   connection (taken on connect and disconnect only): a charge point that reconnects on
//!   another loop replaces its old connection there, and the admin interface finds any charge
//!   point through it;
//! - `LoopCommand`s: one channel and one `mio::Waker` per loop. The admin interface (on loop 0)
//!   sends a CALL to the loop that holds the charge point; that loop sends the HTTP answer back
//!   when the CALL completes. Shutdown is a command too.
//!
//! # Cluster (`--redis URL --node-id NAME`)
//! With a [`ClusterConfig`](ocpp_cluster::ClusterConfig) the process is one node of a cluster sharing a Redis
//! (`ocpp-cluster`): one [`ClusterBridge`] per process in `LoopShared`, on its own thread, which
//! the loops only call without blocking. Connected charge points are claimed, a newer claim on
//! another node closes our socket with 1008, and an admin command for a charge point no loop
//! here holds is routed to the node that does; loop 0 reads the bridge's outputs (its waker is
//! the bridge's wake) and forwards commands and takeovers to the loop holding the identity.
//! Shutdown closes with 1012 and drains the node. Details in `cluster`.
//!
//! # TLS (`wss://`, security profiles 2 and 3)
//! With a TLS configuration each connection also holds a [`TlsSession`](crate::tls::TlsSession)
//! (boxed, so a plaintext connection pays one null pointer) on either backend, rustls or
//! OpenSSL (`--tls-backend`), both driven Sans-IO: reads go socket → TLS → plaintext in the
//! loop's buffer → `handle_data`; writes go `pending_transmit()` → TLS → socket, until it
//! would block. A connection whose TLS handshake fails (no client certificate, an untrusted
//! one, no suite in common, a protocol error) gets the alert the TLS library chose, its write side
//! shut, and is drained and dropped like any other; the loop carries on. Closing sends
//! `close_notify` before the TCP half-close. The CSMS sees the verified client certificate's CN
//! in the upgrade decision ([`Transport`](ocpp_reference_csms::Transport)).
//!
//! # Back-pressure
//! The loop reads only while the connection wants input: it stops past half of
//! `max_outbound_bytes` of unsent output, so a peer that sends without reading cannot make us
//! buffer without bound, and resumes once the output drains below a quarter (the socket is
//! then read again at once: edge-triggered readiness would not report the waiting data).
//! Answers are never refused; a push is skipped while the previous CALL is unanswered; an
//! admin CALL refused gets 503.
//!
//! # Closing
//! After `Event::Closed` a connection flushes what it still has (at most
//! the close linger, `ConnectionConfig::linger`, the same in every driver), shuts down its write side and reads until the peer's end of stream (at
//! most [`DRAIN_TIMEOUT`]) so that closing never sends a reset over unread data, then the
//! socket is closed. On shutdown every connection is closed with 1001 (1012 in a cluster) and
//! the loop exits when
//! all are gone or [`SHUTDOWN_TIMEOUT`] passed; CALLs left unanswered are logged.

mod accept;
mod admin_socket;
mod capture;
mod cluster;
mod event_loop;
mod ocpp_socket;
mod push;
mod shutdown;
pub mod slab;
pub mod timers;
#[cfg(target_os = "linux")]
mod uring;
mod workers;

use std::io;
use std::net::SocketAddr;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use cluster::ClusterNode;
use mio::net::TcpListener;
use mio::{Poll, Token, Waker};
use ocpp_cluster::{ClaimTicket, ClusterBridge, Job};
use ocpp_proto::{Answer, ConnectionConfig, IdentityTable, MessageId, Request};
use socket2::{Domain, Protocol, Socket, Type};

use crate::server_config::AdminLimits;
use cluster::JobAnswer;
use event_loop::EventLoop;
use ocpp_reference_csms::admin::HttpResponse;
use ocpp_reference_csms::admin_auth::{AdminAuth, AdminGuard};
use ocpp_reference_csms::credentials::UpgradeGate;
use ocpp_reference_csms::Csms;
use slab::Key;
use workers::Workers;

/// How long we wait for the peer's end of stream after shutting down our write side.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a graceful shutdown may take before the remaining connections are dropped.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);
/// The listen backlog.
const BACKLOG: i32 = 4096;

/// Token of the OCPP listener; connection tokens are slab keys, whose generation (high 32
/// bits) is never 0, so tokens below 2^32 are free for these.
const LISTENER: Token = Token(0);
/// Token of the admin HTTP listener (loop 0 only).
const ADMIN_LISTENER: Token = Token(1);
/// Token of the loop's waker (commands from other threads).
const WAKER: Token = Token(2);

pub use crate::server_config::ServerConfig;

/// Where a charge point's connection lives: which loop, which slab key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Handle {
    loop_index: usize,
    key: Key,
}

/// A message to one loop from another thread (or from itself).
#[derive(Debug)]
enum LoopCommand {
    /// Close every connection and exit.
    Shutdown,
    /// Admin interface: send `request` on connection `target`, then answer the admin
    /// connection `reply_to` on loop 0.
    AdminCall {
        target: Key,
        request: Request,
        reply_to: Key,
        /// Not written after this: the admin caller has its answer by then.
        deadline: std::time::Instant,
    },
    /// Admin interface: send the chunks of `split` one after another on connection
    /// `target`, then answer the admin connection `reply_to` on loop 0.
    AdminCalls {
        target: Key,
        split: Box<ocpp_reference_csms::SplitCall>,
        reply_to: Key,
        /// No chunk is written after this: the admin caller has its answer by then.
        deadline: std::time::Instant,
    },
    /// The answer to the admin connection `to` (loop 0).
    AdminReply { to: Key, response: HttpResponse },
    /// A worker ran the CSMS's [`Later`](ocpp_reference_csms::Later) job for the CALL `id` of
    /// connection `target`: send its answer.
    Answer {
        target: Key,
        id: MessageId<'static>,
        answer: Answer,
    },
    /// Close connection `target`: its charge point connected again.
    Replace { target: Key },
    /// Cluster (from loop 0): run the forwarded command `job` on connection `target`.
    ClusterJob {
        target: Key,
        job: Job,
        answer: JobAnswer,
    },
    /// Cluster (from loop 0): another node claimed the identity of connection `target`, if it
    /// still holds `ticket`.
    Superseded { target: Key, ticket: ClaimTicket },
    /// Cluster (from loop 0): the claim `ticket` of connection `target` is registered (or its
    /// attempt failed): its handshake answer goes out.
    Claimed { target: Key, ticket: ClaimTicket },
}

/// One loop's mailbox.
#[derive(Debug)]
struct Mailbox {
    sender: Sender<LoopCommand>,
    /// Shared with the cluster bridge's wake (loop 0).
    waker: Arc<Waker>,
}

/// What the loops share.
#[derive(Debug)]
struct LoopShared {
    csms: Arc<Csms>,
    /// Who may use the admin interface.
    admin_auth: AdminAuth,
    /// What the admin interface refuses from browsers (its bound address and `--admin-host`).
    admin_guard: AdminGuard,
    /// The limits on admin connections.
    admin_limits: AdminLimits,
    /// The failed-attempt limit on Basic authentication (every loop's upgrades).
    upgrades: UpgradeGate,
    connection_config: Arc<ConnectionConfig>,
    push_interval: Option<Duration>,
    tls: Option<crate::tls::ServerTls>,
    mailboxes: Vec<Mailbox>,
    identities: Mutex<IdentityTable<Handle>>,
    /// The cluster node, if clustered (one per process; outputs read by loop 0).
    cluster: Option<Arc<ClusterNode>>,
    /// Where the CSMS's slow answers are made.
    workers: Workers,
    /// `--capture`: every connection taps its messages into it.
    capture: Option<crate::server_config::CaptureFile>,
    /// `--accept-rate`: each loop accepts its share
    /// ([`AcceptPacer::one_of`](ocpp_proto::accept::AcceptPacer::one_of)).
    accept_rate: Option<ocpp_proto::accept::AcceptRate>,
}

impl LoopShared {
    /// Queues `command` for loop `loop_index` and wakes it.
    fn send(&self, loop_index: usize, command: LoopCommand) {
        let Some(mailbox) = self.mailboxes.get(loop_index) else {
            return;
        };
        // A loop that exited dropped its receiver: nothing to wake.
        if mailbox.sender.send(command).is_ok() {
            if let Err(e) = mailbox.waker.wake() {
                tracing::error!(loop_index, "cannot wake loop: {e}");
            }
        }
    }

    /// Hands `response` to the admin socket `to` (admin sockets live on loop 0), which writes
    /// it if it still waits for one.
    fn admin_reply(&self, to: Key, response: HttpResponse) {
        self.send(0, LoopCommand::AdminReply { to, response });
    }

    fn identities(&self) -> MutexGuard<'_, IdentityTable<Handle>> {
        self.identities
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Stops a running [`MioServer`] gracefully; clone it into a signal handler thread.
#[derive(Debug, Clone)]
pub struct MioShutdownHandle(Arc<LoopShared>);

impl MioShutdownHandle {
    /// Asks every loop to close its connections (1001; 1012 in a cluster, which it then
    /// leaves) and exit.
    pub fn shutdown(&self) {
        for index in 0..self.0.mailboxes.len() {
            self.0.send(index, LoopCommand::Shutdown);
        }
    }
}

/// The bound server: listeners open, loops ready to run.
///
/// ```no_run
/// use std::sync::Arc;
/// use ocpp_reference_csms::{Csms, CsmsConfig};
/// use ocpp_examples::mio_server::{MioServer, ServerConfig};
/// let csms = Arc::new(Csms::new(CsmsConfig::default()));
/// let config = ServerConfig::new("127.0.0.1:9000".parse().unwrap());
/// let server = MioServer::bind(config, csms).unwrap();
/// println!("listening on {}", server.local_addr());
/// server.run().unwrap(); // until a MioShutdownHandle is used
/// ```
#[derive(Debug)]
pub struct MioServer {
    loops: Vec<EventLoop>,
    shared: Arc<LoopShared>,
    local_addr: SocketAddr,
    admin_addr: Option<SocketAddr>,
    /// `uring-server`: the charge points' sockets on io_uring ([`MioServer::bind_uring`]).
    io_uring: bool,
}

impl MioServer {
    /// Like [`MioServer::bind`], for `uring-server`: each loop drives its charge points' sockets
    /// through io_uring (see `uring`), the admin interface and the mailbox stay on epoll.
    ///
    /// # Errors
    /// Besides [`MioServer::bind`]'s: TLS or a cluster is configured (they are mio-server's and
    /// tokio-server's), refused with [`io::ErrorKind::Unsupported`].
    #[cfg(target_os = "linux")]
    pub fn bind_uring(config: ServerConfig, csms: Arc<Csms>) -> io::Result<MioServer> {
        let refused = if config.tls.is_some() {
            Some("TLS")
        } else if config.cluster.is_some() {
            Some("a cluster")
        } else {
            None
        };
        if let Some(what) = refused {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("uring-server serves plain ws:// only; {what} is mio-server's and tokio-server's"),
            ));
        }
        let mut server = MioServer::bind(config, csms)?;
        server.io_uring = true;
        Ok(server)
    }

    /// Binds the listeners (port 0 picks a free port, shared by every loop) and prepares the
    /// loops.
    pub fn bind(config: ServerConfig, csms: Arc<Csms>) -> io::Result<MioServer> {
        let threads = config.threads.max(1);
        let mut polls = Vec::with_capacity(threads);
        let mut mailboxes = Vec::with_capacity(threads);
        let mut receivers = Vec::with_capacity(threads);
        for _ in 0..threads {
            let poll = Poll::new()?;
            let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
            let (sender, receiver) = mpsc::channel();
            polls.push(poll);
            mailboxes.push(Mailbox { sender, waker });
            receivers.push(receiver);
        }
        let mut listeners = Vec::with_capacity(threads);
        let mut addr = config.listen;
        for _ in 0..threads {
            // Always shareable: the loops of this process, and other mio-server processes on
            // the same port (one process holds at most about 19,990 sockets here).
            let listener = bind_listener(addr, true)?;
            addr = listener.local_addr()?; // the port 0 picked, for the next loops
            listeners.push(listener);
        }
        let admin = match config.admin {
            Some(addr) => Some(bind_listener(addr, false)?),
            None => None,
        };
        let admin_addr = admin.as_ref().map(TcpListener::local_addr).transpose()?;
        let cluster = match config.cluster {
            Some(cluster) => {
                let waker = Arc::clone(&mailboxes[0].waker);
                let wake = Box::new(move || {
                    if let Err(e) = waker.wake() {
                        tracing::error!("cannot wake loop 0 for the cluster: {e}");
                    }
                });
                let bridge = ClusterBridge::spawn(cluster, wake).map_err(io::Error::other)?;
                tracing::info!(node_id = bridge.node_id(), "cluster node started");
                Some(Arc::new(ClusterNode::new(bridge)))
            }
            None => None,
        };
        let shared = Arc::new(LoopShared {
            workers: Workers::new(Arc::clone(&csms)),
            csms,
            admin_auth: config.admin_auth,
            admin_guard: AdminGuard::new(admin_addr.unwrap_or(addr), &config.admin_hosts),
            admin_limits: config.admin_limits,
            upgrades: UpgradeGate::default(),
            connection_config: Arc::new(config.connection),
            push_interval: config.push_interval,
            tls: config.tls,
            mailboxes,
            identities: Mutex::new(IdentityTable::new()),
            cluster,
            capture: config.capture,
            accept_rate: config.accept_rate,
        });
        let mut admin = admin;
        let loops = polls
            .into_iter()
            .zip(listeners)
            .zip(receivers)
            .enumerate()
            .map(|(index, ((poll, listener), receiver))| {
                let admin = if index == 0 { admin.take() } else { None };
                EventLoop::new(index, poll, listener, admin, receiver, Arc::clone(&shared))
            })
            .collect::<io::Result<Vec<_>>>()?;
        Ok(MioServer {
            loops,
            shared,
            local_addr: addr,
            admin_addr,
            io_uring: false,
        })
    }

    /// The address charge points connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The admin interface's address, if enabled.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin_addr
    }

    /// A handle that stops the server.
    pub fn shutdown_handle(&self) -> MioShutdownHandle {
        MioShutdownHandle(Arc::clone(&self.shared))
    }

    /// Runs loop 0 on this thread and the others on their own, until shutdown.
    pub fn run(self) -> io::Result<()> {
        let io_uring = self.io_uring;
        let mut loops = self.loops.into_iter();
        let Some(first) = loops.next() else {
            return Ok(());
        };
        let threads = loops
            .map(|event_loop| {
                let index = event_loop.index();
                let name = if io_uring { "uring-loop" } else { "mio-loop" };
                std::thread::Builder::new()
                    .name(format!("{name}-{index}"))
                    .spawn(move || run_loop(event_loop, io_uring))
            })
            .collect::<io::Result<Vec<_>>>()?;
        let mut result = run_loop(first, io_uring);
        for thread in threads {
            match thread.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => result = result.and(Err(e)),
                Err(_) => result = result.and(Err(io::Error::other("an event loop panicked"))),
            }
        }
        result
    }
}

/// The whole server of `mio-server` (and of `uring-server`, with `io_uring`) from its command
/// line: the configuration, the CSMS, the listeners, a thread that turns SIGINT/SIGTERM into a
/// graceful shutdown (a second one exits at once), `NAME listening on ADDR (admin on ADDR)` on
/// stdout, the loops until shutdown, the CSMS flushed.
///
/// # Errors
/// The configuration is refused, a listener or a loop cannot start, a loop fails.
pub fn serve(
    name: &str,
    args: &crate::server_cli::Args,
    io_uring: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    use signal_hook::iterator::Signals;

    // The configuration first: it refuses what must not start before anything is opened.
    let config = crate::server_cli::server_config(args)?;
    let csms = crate::server_cli::csms(args)?;
    #[cfg(target_os = "linux")]
    let server = if io_uring {
        MioServer::bind_uring(config, Arc::clone(&csms))?
    } else {
        MioServer::bind(config, Arc::clone(&csms))?
    };
    #[cfg(not(target_os = "linux"))]
    let server = match io_uring {
        true => return Err("io_uring is Linux only".into()),
        false => MioServer::bind(config, Arc::clone(&csms))?,
    };

    // Signals are read on their own thread, which asks the loops to shut down.
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    let shutdown = server.shutdown_handle();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut signals = signals.forever();
            if let Some(signal) = signals.next() {
                tracing::info!(signal, "signal received, shutting down");
                shutdown.shutdown();
            }
            // A second signal does not wait for the graceful shutdown.
            if let Some(signal) = signals.next() {
                tracing::warn!(signal, "second signal, exiting at once");
                std::process::exit(130);
            }
        })?;

    crate::server_cli::announce_listening(name, server.local_addr(), server.admin_addr());
    tracing::info!(threads = args.threads, push_interval = ?args.push_interval, "running");
    server.run()?;
    // The meter values queued for the database are written before the process ends.
    csms.flush();
    tracing::info!("stopped");
    Ok(())
}

/// Runs one loop on epoll, or on io_uring.
fn run_loop(event_loop: EventLoop, io_uring: bool) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    if io_uring {
        return event_loop.run_uring();
    }
    let _ = io_uring;
    event_loop.run()
}

/// A non-blocking listener; with `reuse_port`, several may bind the same address and the
/// kernel balances connections between them (Linux `SO_REUSEPORT`).
fn bind_listener(addr: SocketAddr, reuse_port: bool) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    if reuse_port {
        socket.set_reuse_port(true)?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    Ok(TcpListener::from_std(socket.into()))
}
