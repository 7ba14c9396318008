//! A CSMS on tokio: one task per charge point driving an `ocpp-server-core`
//! [`Connection`](ocpp_server_core::Connection), all sharing one [`Csms`] application with the
//! mio server.
//!
//! # One connection, one task
//! Each accepted socket gets a task (`connection`) that owns the socket and the Sans-IO
//! connection. It waits (one `select!`) for the first of:
//! - the socket readable (only while the connection takes input and its output is not backed
//!   up): it reads with `try_read` into the worker thread's 64 KiB scratch buffer and hands the
//!   bytes to `handle_data`, so an idle connection holds no read buffer;
//! - the socket writable (only while output is pending);
//! - `sleep_until(poll_timeout())` (or the flush, drain or shutdown deadline);
//! - a `Command` on its own channel: an admin CALL, a push, "you were replaced";
//! - the server's shutdown signal (a `watch` channel).
//!
//! Then it drains the connection's events into the [`Csms`] hooks, answers with the mutators
//! and writes `pending_transmit()` until the socket would block.
//!
//! # TLS (`wss://`, security profiles 2 and 3)
//! With a TLS configuration the task also holds a [`TlsSession`](crate::tls::TlsSession), the
//! same Sans-IO rustls driver as the mio server's, fed through tokio's readiness API
//! ([`TryIo`](crate::tls::TryIo)): the read path and the shared scratch buffer stay as they are,
//! and a plaintext connection holds one null pointer more. A failed TLS handshake sends rustls's
//! alert and ends the task; closing sends `close_notify` before the TCP half-close.
//!
//! # What crosses tasks
//! - the [`Csms`] (one mutex taken per OCPP message, atomics for metrics);
//! - one [`IdentityTable`] mapping each connected charge point to its task's command sender
//!   (taken on connect and disconnect, by the admin interface and the push ticker): a charge
//!   point that connects again wins, and its old connection is closed with 1008;
//! - `Command`s on a small bounded channel per connection; an admin CALL carries a oneshot
//!   sender for the HTTP answer.
//!
//! # Back-pressure
//! As in the mio server: the task reads only while the connection
//! [wants input](ocpp_server_core::Connection::wants_read) (it stops past half of
//! `max_outbound_bytes` of unsent output and resumes below a quarter); answers are never
//! refused; a push is skipped while the previous CALL is unanswered or the connection's mailbox
//! is full; an admin CALL refused gets 503.
//!
//! # Closing
//! After `Event::Closed` a task flushes what is left (at most [`FLUSH_TIMEOUT`]), shuts down
//! its write side and reads until the peer's end of stream (at most [`DRAIN_TIMEOUT`]), then
//! drops the socket. On shutdown every connection is closed with 1001; the server waits for the
//! tasks at most [`SHUTDOWN_TIMEOUT`] (each task ends itself at that deadline, logging the CALLs
//! left unanswered).

mod admin;
mod connection;

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use ocpp_server_core::{ConnectionConfig, IdentityTable, Request};
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;

use crate::csms::admin::HttpResponse;
use crate::csms::Csms;

/// How long a closed connection may take to write out what it still has.
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);
/// How long we wait for the peer's end of stream after shutting down our write side.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a graceful shutdown may take before the remaining connections are dropped.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);
/// How many commands may wait for one connection's task.
const MAILBOX: usize = 8;
/// The listen backlog.
const BACKLOG: i32 = 4096;
/// How long to wait before accepting again after running out of file descriptors.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// How the server runs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Where charge points connect (`ws://ADDR/any/path/IDENTITY`).
    pub listen: SocketAddr,
    /// The admin HTTP interface, if any.
    pub admin: Option<SocketAddr>,
    /// Send each charge point a DataTransfer this often, if set.
    pub push_interval: Option<Duration>,
    /// The settings of every OCPP connection.
    pub connection: ConnectionConfig,
    /// Serve `wss://` with this TLS configuration (security profiles 2 and 3); `None` serves
    /// plain `ws://`.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl ServerConfig {
    /// `listen`, no admin interface, no push, the default connection settings, no TLS.
    pub fn new(listen: SocketAddr) -> Self {
        ServerConfig {
            listen,
            admin: None,
            push_interval: None,
            connection: ConnectionConfig::default(),
            tls: None,
        }
    }
}

/// A message to one connection's task.
#[derive(Debug)]
enum Command {
    /// Admin interface: send `request`, answer on `reply` when it completes.
    AdminCall {
        request: Request,
        reply: oneshot::Sender<HttpResponse>,
    },
    /// `--push-interval-ms`: send the benchmark DataTransfer if no CALL is in flight.
    Push,
    /// The charge point connected again: close this connection with 1008.
    Replace,
}

/// How the identity table and the admin interface reach a connection's task. Two handles are
/// the same connection when their ids are equal.
#[derive(Debug, Clone)]
struct Handle {
    id: u64,
    commands: mpsc::Sender<Command>,
}

impl PartialEq for Handle {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

/// What the tasks share.
#[derive(Debug)]
struct Shared {
    csms: Arc<Csms>,
    connection_config: Arc<ConnectionConfig>,
    tls: Option<Arc<rustls::ServerConfig>>,
    identities: Mutex<IdentityTable<Handle>>,
    next_id: AtomicU64,
}

impl Shared {
    fn identities(&self) -> MutexGuard<'_, IdentityTable<Handle>> {
        self.identities
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Stops a running [`Server`] gracefully.
#[derive(Debug, Clone)]
pub struct ShutdownHandle(Arc<watch::Sender<bool>>);

impl ShutdownHandle {
    /// Asks every connection to close (1001) and the server to exit.
    pub fn shutdown(&self) {
        self.0.send_replace(true);
    }
}

/// The bound server: listeners open, ready to run on a tokio runtime.
///
/// ```no_run
/// use std::sync::Arc;
/// use ocpp_examples::csms::{Csms, CsmsConfig};
/// use ocpp_examples::tokio_server::{Server, ServerConfig};
/// # async fn run() -> std::io::Result<()> {
/// let csms = Arc::new(Csms::new(CsmsConfig::default()));
/// let server = Server::bind(ServerConfig::new("127.0.0.1:9000".parse().unwrap()), csms)?;
/// println!("listening on {}", server.local_addr());
/// server.run().await // until a ShutdownHandle is used
/// # }
/// ```
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    admin: Option<TcpListener>,
    local_addr: SocketAddr,
    admin_addr: Option<SocketAddr>,
    push_interval: Option<Duration>,
    shared: Arc<Shared>,
    shutdown: Arc<watch::Sender<bool>>,
}

impl Server {
    /// Binds the listeners (port 0 picks a free port). Call it inside the runtime.
    pub fn bind(config: ServerConfig, csms: Arc<Csms>) -> io::Result<Server> {
        let listener = bind_listener(config.listen)?;
        let local_addr = listener.local_addr()?;
        let admin = config.admin.map(bind_listener).transpose()?;
        let admin_addr = admin.as_ref().map(TcpListener::local_addr).transpose()?;
        let (shutdown, _) = watch::channel(false);
        Ok(Server {
            listener,
            admin,
            local_addr,
            admin_addr,
            push_interval: config.push_interval,
            shared: Arc::new(Shared {
                csms,
                connection_config: Arc::new(config.connection),
                tls: config.tls,
                identities: Mutex::new(IdentityTable::new()),
                next_id: AtomicU64::new(1),
            }),
            shutdown: Arc::new(shutdown),
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
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle(Arc::clone(&self.shutdown))
    }

    /// Accepts charge points (and admin clients) until shutdown, then closes every connection
    /// with 1001 and returns once they are gone or [`SHUTDOWN_TIMEOUT`] passed.
    pub async fn run(self) -> io::Result<()> {
        let Server {
            listener,
            admin,
            push_interval,
            shared,
            shutdown,
            ..
        } = self;
        let mut stop = shutdown.subscribe();
        let mut background = JoinSet::new();
        if let Some(admin) = admin {
            background.spawn(admin::serve(
                admin,
                Arc::clone(&shared),
                shutdown.subscribe(),
            ));
        }
        if let Some(interval) = push_interval {
            background.spawn(push_ticker(
                interval,
                Arc::clone(&shared),
                shutdown.subscribe(),
            ));
        }
        let mut connections = JoinSet::new();
        while !*stop.borrow_and_update() {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((socket, peer)) => {
                        let _ = socket.set_nodelay(true);
                        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
                        connections.spawn(connection::run(
                            id,
                            socket,
                            peer,
                            Arc::clone(&shared),
                            shutdown.subscribe(),
                        ));
                    }
                    Err(e) if is_resource_exhaustion(&e) => {
                        // Out of file descriptors: the backlog keeps the connection.
                        tracing::warn!("accept: {e}; retrying shortly");
                        tokio::time::sleep(ACCEPT_RETRY).await;
                    }
                    Err(e) => tracing::debug!("accept: {e}"),
                },
                // Reap finished tasks so the set does not grow with every connection.
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
                _ = stop.changed() => {}
            }
        }
        drop(listener);
        tracing::info!(connections = connections.len(), "shutting down");
        // Every task ends itself by SHUTDOWN_TIMEOUT; the margin covers a busy runtime.
        let all_done = async {
            while connections.join_next().await.is_some() {}
            while background.join_next().await.is_some() {}
        };
        if tokio::time::timeout(SHUTDOWN_TIMEOUT + Duration::from_secs(1), all_done)
            .await
            .is_err()
        {
            tracing::warn!("shutdown timed out; dropping the remaining tasks");
        }
        Ok(())
    }
}

/// `--push-interval-ms`: asks every connected charge point's task to send a DataTransfer.
async fn push_ticker(interval: Duration, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop.changed() => return,
        }
        let targets: Vec<mpsc::Sender<Command>> = shared
            .identities()
            .iter()
            .map(|(_, handle)| handle.commands.clone())
            .collect();
        for target in targets {
            if target.try_send(Command::Push).is_err() {
                shared.csms.metrics().pushes_skipped.inc();
            }
        }
    }
}

/// A non-blocking listener with `SO_REUSEADDR`.
fn bind_listener(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    TcpListener::from_std(socket.into())
}

/// Errors after which accepting again at once would spin: out of descriptors or memory.
fn is_resource_exhaustion(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(23 /* ENFILE */ | 24 /* EMFILE */ | 12 /* ENOMEM */ | 105 /* ENOBUFS */)
    )
}
