//! The server: a builder, the accept loop, TLS, and graceful shutdown.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ocpp_proto::accept::{after_accept_error, AcceptPacer, AcceptRetry};
use ocpp_proto::ConnectionConfig;

/// The accept rate of [`ServerBuilder::accept_rate`] (the policy is `ocpp-proto`'s).
pub use ocpp_proto::accept::AcceptRate;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};
use tokio_rustls::TlsAcceptor;

pub use crate::error::ServerError;

use crate::charge_point::LinkCommand;
use crate::driver::{Driver, ServerShared, TaskTimer};
use crate::handler::PeerCertificate;
use crate::hook::{Hook, MessageEvent, TlsErrorHook};
use crate::presence::Presence;
use crate::registry::Remote;
use crate::{ChargePoints, Handler};

/// Builds a [`Server`] (`Server::builder().config(..).handler(..).bind(addr).await?`), or a
/// [`Service`] for streams accepted elsewhere ([`ServerBuilder::build`]).
///
/// ```no_run
/// # async fn example() -> Result<(), ocpp_tokio::server::ServerError> {
/// use std::time::Duration;
/// use ocpp_tokio::{ConnectionConfig, OcppVersion, Server};
///
/// let config = ConnectionConfig::default()
///     .versions(vec![OcppVersion::V2_0_1, OcppVersion::V1_6])
///     .ping_interval(None);
/// let server = Server::builder()
///     .config(config)
///     .shutdown_timeout(Duration::from_secs(2))
///     .on_message(|event| println!("{}: {:?}", event.identity, event.message))
///     .bind("127.0.0.1:9000")
///     .await?;
/// // Serve for an hour, then shut down gracefully (a signal handler would go here).
/// server.run_until(tokio::time::sleep(Duration::from_secs(3600))).await
/// # }
/// ```
pub struct ServerBuilder<H> {
    handler: H,
    config: ConnectionConfig,
    tls: Option<Arc<rustls::ServerConfig>>,
    hook: Option<Hook>,
    remote: Option<Arc<dyn Remote>>,
    shutdown_timeout: Duration,
    mailbox_capacity: Option<usize>,
    tls_error: Option<TlsErrorHook>,
    presence: Option<Arc<dyn Presence>>,
    shards: usize,
    accept_rate: Option<AcceptRate>,
}

impl<H> fmt::Debug for ServerBuilder<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("config", &self.config)
            .field("tls", &self.tls.is_some())
            .field("hook", &self.hook.is_some())
            .field("remote", &self.remote.is_some())
            .field("presence", &self.presence.is_some())
            .field("shutdown_timeout", &self.shutdown_timeout)
            .field("shards", &self.shards)
            .field("accept_rate", &self.accept_rate)
            .finish()
    }
}

impl<H> ServerBuilder<H> {
    /// The settings of every connection (versions, timeouts, limits).
    pub fn config(mut self, config: ConnectionConfig) -> Self {
        self.config = config;
        self
    }

    /// The application: a [`Router`](crate::Router), or any [`Handler`]. Without one, every
    /// identity is accepted and every CALL answered `NotSupported`.
    pub fn handler<H2: Handler>(self, handler: H2) -> ServerBuilder<H2> {
        ServerBuilder {
            handler,
            config: self.config,
            tls: self.tls,
            hook: self.hook,
            remote: self.remote,
            shutdown_timeout: self.shutdown_timeout,
            mailbox_capacity: self.mailbox_capacity,
            tls_error: self.tls_error,
            presence: self.presence,
            shards: self.shards,
            accept_rate: self.accept_rate,
        }
    }

    /// TLS (security profiles 2 and 3: with a client certificate verifier, profile 3). The
    /// TLS handshake counts against the config's handshake timeout.
    pub fn tls(mut self, config: Arc<rustls::ServerConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    /// A hook called for every OCPP message in and out (logging, metrics); costs nothing when
    /// not set.
    pub fn on_message(mut self, hook: impl Fn(&MessageEvent<'_>) + Send + Sync + 'static) -> Self {
        self.hook = Some(Arc::new(hook));
        self
    }

    /// A hook called when a TLS handshake fails (the peer's certificate refused, not TLS at
    /// all...), e.g. to count the failures; a handshake that times out is not one.
    pub fn on_tls_error(mut self, hook: impl Fn(&io::Error) + Send + Sync + 'static) -> Self {
        self.tls_error = Some(Arc::new(hook));
        self
    }

    /// Where [`ChargePoints::call`] sends CALLs for identities not connected here: a cluster
    /// (`ocpp-cluster`'s, through its feature `tokio`, or one of your own).
    pub fn remote(mut self, remote: impl Remote) -> Self {
        self.remote = Some(Arc::new(remote));
        self
    }

    /// This server's presence in a cluster (`ocpp-cluster`'s, through its feature `tokio`, or
    /// one of your own): told of every connection that opens and closes, and left at shutdown.
    /// Usually with [`ServerBuilder::remote`].
    pub fn presence(mut self, presence: impl Presence) -> Self {
        self.presence = Some(Arc::new(presence));
        self
    }

    /// How long graceful shutdown waits for connections to finish their close handshake
    /// before dropping them (default 5 s).
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// Serves TCP connections ([`Service::serve_tcp`], which the [`Server`]'s listener uses)
    /// on `count` shard tasks instead of a task per connection (0, the default, keeps a task
    /// per connection; on Unix only).
    ///
    /// A shard owns an epoll instance, which tokio watches as one file descriptor, and drives
    /// every connection it was given from one task, with one timer heap: a connection costs
    /// no task, tokio I/O registration or timer of its own (about half the memory per idle
    /// charge point), and a CALL to a charge point wakes its shard, which writes it in the
    /// same turn as the other connections' work. Handlers, the registry, TLS and shutdown
    /// behave as with a task per connection. One shard per worker thread is a good start;
    /// streams given to [`Service::serve_connection`] still get a task each.
    ///
    /// ```no_run
    /// # async fn example() -> Result<(), ocpp_tokio::server::ServerError> {
    /// let server = ocpp_tokio::Server::builder().shards(2).bind("127.0.0.1:9000").await?;
    /// server.run().await
    /// # }
    /// ```
    pub fn shards(mut self, count: usize) -> Self {
        self.shards = count;
        self
    }

    /// Accepts at most `rate` connections a second, its burst at once ([`Server::run`]; a
    /// loop of your own over [`Service`] takes it from [`Service::accept_rate`] into a
    /// [`PacedListener`]). Default: no bound.
    ///
    /// Past the rate the listener is not asked for more connections until the next slot: they
    /// wait in the kernel's listen backlog, which costs them no handshake (TCP is complete, TLS
    /// and the upgrade not begun), and when the backlog is full the kernel drops new SYNs and
    /// the charge points' TCP stacks retry on their own back-off. Nothing is accepted only to
    /// be closed: after an outage the storm of reconnections is taken at the rate, in arrival
    /// order, while the charge points already connected keep the CPU they need (see
    /// [`ocpp_proto::accept`] for the reasoning).
    ///
    /// ```no_run
    /// # async fn example() -> Result<(), ocpp_tokio::server::ServerError> {
    /// use ocpp_tokio::server::AcceptRate;
    ///
    /// // 200 handshakes a second, 50 at once.
    /// let server = ocpp_tokio::Server::builder()
    ///     .accept_rate(AcceptRate::new(200, 50))
    ///     .bind("127.0.0.1:9000")
    ///     .await?;
    /// server.run().await
    /// # }
    /// ```
    pub fn accept_rate(mut self, rate: AcceptRate) -> Self {
        self.accept_rate = Some(rate);
        self
    }

    /// The most commands (calls, SENDs) waiting for one connection's task (default: the
    /// config's `max_queued_calls`); past it, calls fail with
    /// [`CallFailure::QueueFull`](crate::CallFailure::QueueFull).
    pub fn mailbox_capacity(mut self, capacity: usize) -> Self {
        self.mailbox_capacity = Some(capacity);
        self
    }
}

impl<H: Handler> ServerBuilder<H> {
    /// Binds a listening socket and returns the server (not yet accepting: see
    /// [`Server::run`]).
    ///
    /// # Errors
    /// The bind failed.
    pub async fn bind(self, addr: impl ToSocketAddrs) -> Result<Server<H>, ServerError> {
        let listener = TcpListener::bind(addr).await?;
        Ok(self.serve_listener(listener))
    }

    /// Serves an already bound listener.
    pub fn serve_listener(self, listener: TcpListener) -> Server<H> {
        let service = self.build();
        let listener = PacedListener::new(listener, service.accept_rate);
        Server { service, listener }
    }

    /// A service without a listener, for streams accepted elsewhere (a listener of your own,
    /// a test's in-memory pipe): see [`Service::serve_connection`]. Call it inside a tokio
    /// runtime when the server is a cluster node.
    pub fn build(self) -> Service<H> {
        let capacity = self
            .mailbox_capacity
            .unwrap_or_else(|| self.config.get_max_queued_calls().max(1));
        let registry = ChargePoints::new(self.remote, self.presence);
        if let Some(presence) = registry.presence() {
            presence.attach(&registry, &self.config);
        }
        let shared = ServerShared::new(
            Arc::new(self.handler),
            Arc::new(self.config),
            registry,
            self.hook,
            self.tls_error,
            capacity,
        );
        Service {
            shared: Arc::new(shared),
            tls: self.tls.map(TlsAcceptor::from),
            shutdown_timeout: self.shutdown_timeout,
            shards: Shards::new(self.shards),
            accept_rate: self.accept_rate,
        }
    }
}

/// Serves OCPP-J streams handed to it ([`Service::serve_connection`], [`Service::serve_tcp`]):
/// a task per connection or shards of many ([`ServerBuilder::shards`]), the [`ChargePoints`]
/// registry, graceful shutdown. A [`Server`] is one with a
/// listener.
///
/// ```no_run
/// # async fn example() -> std::io::Result<()> {
/// let service = ocpp_tokio::Server::builder().build();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// loop {
///     let (stream, _) = listener.accept().await?;
///     service.serve_connection(stream);
/// }
/// # }
/// ```
pub struct Service<H: Handler> {
    shared: Arc<ServerShared<H>>,
    tls: Option<TlsAcceptor>,
    shutdown_timeout: Duration,
    shards: Shards,
    accept_rate: Option<AcceptRate>,
}

/// The shard tasks of a service ([`ServerBuilder::shards`]), started with the first
/// connection (inside the runtime).
struct Shards {
    count: usize,
    #[cfg(unix)]
    senders: std::sync::OnceLock<Vec<tokio::sync::mpsc::UnboundedSender<crate::shard::Incoming>>>,
    #[cfg(unix)]
    next: std::sync::atomic::AtomicUsize,
}

impl Shards {
    fn new(count: usize) -> Self {
        Shards {
            count,
            #[cfg(unix)]
            senders: std::sync::OnceLock::new(),
            #[cfg(unix)]
            next: std::sync::atomic::AtomicUsize::new(0),
        }
    }
}

impl<H: Handler> fmt::Debug for Service<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Service")
            .field("tls", &self.tls.is_some())
            .field("shards", &self.shards.count)
            .field("connections", &self.shared.tasks())
            .field("charge_points", &self.shared.registry.len())
            .finish()
    }
}

/// An OCPP-J central system's front door: a listener and the [`Service`] that serves what it
/// accepts (a task per connection or shards of many, the [`ChargePoints`] registry).
///
/// ```no_run
/// # async fn example() -> Result<(), ocpp_tokio::server::ServerError> {
/// let server = ocpp_tokio::Server::builder().bind("127.0.0.1:0").await?;
/// println!("listening on {}", server.local_addr()?);
/// let charge_points = server.charge_points();
/// tokio::spawn(server.run());
/// # let _ = charge_points; Ok(()) }
/// ```
pub struct Server<H: Handler> {
    service: Service<H>,
    listener: PacedListener,
}

impl<H: Handler> fmt::Debug for Server<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("local_addr", &self.listener.local_addr())
            .field("accept_rate", &self.listener.rate)
            .field("service", &self.service)
            .finish()
    }
}

impl Server<()> {
    /// A builder with the default config, no TLS, and the default handler (accept all,
    /// answer `NotSupported`).
    pub fn builder() -> ServerBuilder<()> {
        ServerBuilder {
            handler: (),
            config: ConnectionConfig::default(),
            tls: None,
            hook: None,
            remote: None,
            shutdown_timeout: Duration::from_secs(5),
            mailbox_capacity: None,
            tls_error: None,
            presence: None,
            shards: 0,
            accept_rate: None,
        }
    }
}

impl<H: Handler> Server<H> {
    /// The listening address.
    ///
    /// # Errors
    /// The socket's error.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The registry of connected charge points (a clone-cheap handle).
    pub fn charge_points(&self) -> ChargePoints {
        self.service.charge_points()
    }

    /// How many connections are being served (connected or still in the handshake).
    pub fn connections(&self) -> usize {
        self.service.connections()
    }

    /// The service behind the listener (e.g. to serve streams from a second listener too).
    pub fn service(&self) -> &Service<H> {
        &self.service
    }

    /// Accepts charge points; never returns on its own.
    ///
    /// # Errors
    /// None today; the type leaves room for listener errors that end the server.
    pub async fn run(self) -> Result<(), ServerError> {
        self.run_until(std::future::pending()).await
    }

    /// Accepts charge points (at the [accept rate](ServerBuilder::accept_rate), if one was
    /// set) until `shutdown` completes, then shuts down gracefully: stops
    /// accepting, closes every connection with 1001 (going away; 1012, service restart, on a
    /// cluster node), waits for them at most the shutdown timeout, then drops what remains
    /// (and a cluster node leaves the cluster).
    ///
    /// # Errors
    /// As [`Server::run`].
    pub async fn run_until(self, shutdown: impl Future<Output = ()>) -> Result<(), ServerError> {
        let Server {
            service,
            mut listener,
        } = self;
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        let _ = stream.set_nodelay(true);
                        service.serve_tcp(stream);
                    }
                    Err(error) => match after_accept_error(&error) {
                        AcceptRetry::Now => tracing::debug!(%error, "accept failed"),
                        AcceptRetry::After(wait) => {
                            // Out of descriptors: the backlog keeps the connection.
                            tracing::warn!(%error, "accept failed; retrying shortly");
                            tokio::time::sleep(wait).await;
                        }
                    },
                },
            }
        }
        drop(listener);
        service.shutdown().await;
        Ok(())
    }
}

impl<H: Handler> Service<H> {
    /// The registry of connected charge points (a clone-cheap handle).
    pub fn charge_points(&self) -> ChargePoints {
        self.shared.registry.clone()
    }

    /// The accept rate the service was built with ([`ServerBuilder::accept_rate`]), for an
    /// accept loop of the caller's own ([`PacedListener::new`]).
    pub fn accept_rate(&self) -> Option<AcceptRate> {
        self.accept_rate
    }

    /// How many connections are being served (connected or still in the handshake).
    pub fn connections(&self) -> usize {
        self.shared.tasks()
    }

    /// Serves one stream (TLS first if configured) in a task of its own; it counts in
    /// graceful shutdown like an accepted one. Call from within a tokio runtime.
    ///
    /// ```no_run
    /// # async fn example(service: ocpp_tokio::server::Service<()>) -> std::io::Result<()> {
    /// let (stream, _) = tokio::net::TcpListener::bind("127.0.0.1:0").await?.accept().await?;
    /// service.serve_connection(stream);
    /// # Ok(()) }
    /// ```
    pub fn serve_connection<S>(&self, stream: S)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        self.serve_connection_from(stream, None);
    }

    /// [`Service::serve_connection`], the handler told the peer's address.
    fn serve_connection_from<S>(&self, stream: S, peer: Option<std::net::SocketAddr>)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let Some(acceptor) = self.tls.clone() else {
            return self.serve_authenticated_from(stream, None, peer);
        };
        let shared = self.shared.clone();
        let now = Instant::now();
        let (conn, link) = shared.admit(now);
        let deadline = now + shared.config.get_handshake_timeout();
        tokio::spawn(async move {
            match tokio::time::timeout_at(deadline.into(), acceptor.accept(stream)).await {
                Ok(Ok(tls)) => {
                    let certificate = PeerCertificate::of(tls.get_ref().1);
                    let timer = TaskTimer::new(Instant::now());
                    Driver::new(shared, link, tls, conn, certificate, peer, timer).await;
                }
                Ok(Err(error)) => shared.tls_failed(&link, Some(&error)),
                Err(_) => shared.tls_failed(&link, None),
            }
        });
    }

    /// Serves one accepted TCP connection: on a shard when the service has them
    /// ([`ServerBuilder::shards`]), else as [`Service::serve_connection`] does. Call from
    /// within a tokio runtime.
    ///
    /// ```no_run
    /// # async fn example(service: ocpp_tokio::server::Service<()>) -> std::io::Result<()> {
    /// let (stream, _) = tokio::net::TcpListener::bind("127.0.0.1:0").await?.accept().await?;
    /// stream.set_nodelay(true)?;
    /// service.serve_tcp(stream);
    /// # Ok(()) }
    /// ```
    pub fn serve_tcp(&self, stream: tokio::net::TcpStream) {
        #[cfg(unix)]
        if self.shards.count > 0 {
            return self.serve_on_shard(stream);
        }
        let peer = stream.peer_addr().ok();
        self.serve_connection_from(stream, peer);
    }

    /// Hands `stream` to the next shard (round robin), starting the shards first if needed.
    #[cfg(unix)]
    fn serve_on_shard(&self, stream: tokio::net::TcpStream) {
        let senders = self.shards.senders.get_or_init(|| {
            let mut senders = Vec::with_capacity(self.shards.count);
            for _ in 0..self.shards.count {
                let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
                let shard =
                    crate::shard::Shard::new(self.shared.clone(), self.tls.clone(), receiver);
                match shard {
                    Ok(shard) => {
                        // The shard shares out its own time (rounds, then it yields): tokio's
                        // per-task budget, meant for one connection, would stall the others.
                        tokio::spawn(tokio::task::unconstrained(shard));
                        senders.push(sender);
                    }
                    Err(error) => tracing::error!(%error, "could not start a shard"),
                }
            }
            senders
        });
        let stream = match stream.into_std() {
            Ok(stream) => mio::net::TcpStream::from_std(stream),
            Err(error) => return tracing::warn!(%error, "could not take an accepted socket"),
        };
        if senders.is_empty() {
            return tracing::error!("no shard runs: a connection is refused");
        }
        let next = self.shards.next.fetch_add(1, Ordering::Relaxed) % senders.len();
        let (conn, link) = self.shared.admit(Instant::now());
        let incoming = crate::shard::Incoming { stream, conn, link };
        if let Err(returned) = senders[next].send(incoming) {
            self.shared.abandon(&returned.0.link);
        }
    }

    /// Serves one stream that an authenticating layer of the caller's own (a TLS library
    /// other than the service's) has already secured, with the client certificate it
    /// verified: [`Handler::on_upgrade`] sees it as
    /// [`Connecting::certificate`](crate::Connecting::certificate). The service's own TLS,
    /// if configured, is not applied. Otherwise as [`Service::serve_connection`].
    ///
    /// ```no_run
    /// # async fn example(service: ocpp_tokio::server::Service<()>) -> std::io::Result<()> {
    /// let (stream, _) = tokio::net::TcpListener::bind("127.0.0.1:0").await?.accept().await?;
    /// // ... a TLS handshake of your own over `stream`, which verified `der` ...
    /// # let der = ocpp_tokio::rustls::pki_types::CertificateDer::from(vec![]);
    /// let certificate = ocpp_tokio::handler::PeerCertificate::from_der(der);
    /// service.serve_authenticated(stream, Some(certificate));
    /// # Ok(()) }
    /// ```
    pub fn serve_authenticated<S>(&self, stream: S, certificate: Option<PeerCertificate>)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        self.serve_authenticated_from(stream, certificate, None);
    }

    /// [`Service::serve_authenticated`], the handler told the peer's address
    /// ([`Connecting::peer_addr`](crate::Connecting::peer_addr)).
    pub fn serve_authenticated_from<S>(
        &self,
        stream: S,
        certificate: Option<PeerCertificate>,
        peer: Option<std::net::SocketAddr>,
    ) where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let shared = self.shared.clone();
        let now = Instant::now();
        let (conn, link) = shared.admit(now);
        let timer = TaskTimer::new(now);
        let driver = Driver::new(shared, link, stream, conn, certificate, peer, timer);
        tokio::spawn(driver);
    }

    /// Graceful shutdown of what is being served (the listener, if any, is not touched):
    /// every connection closed with 1001 (1012 on a cluster node), bounded by the shutdown
    /// timeout, then dropped; a cluster node then releases its claims and its node record.
    /// Returns how many connections had to be dropped.
    pub async fn shutdown(&self) -> usize {
        self.shared.draining.store(true, Ordering::Release);
        let (code, reason) = self.shared.shutdown_close();
        self.shared.broadcast(|| LinkCommand::Close {
            code,
            reason: reason.into(),
        });
        let deadline = tokio::time::Instant::now() + self.shutdown_timeout;
        let mut left = 0;
        if !self.shared.wait_all_gone(deadline).await {
            left = self.shared.tasks();
            self.shared.broadcast(|| LinkCommand::Abort);
            let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
            self.shared.wait_all_gone(deadline).await;
        }
        if let Some(presence) = self.shared.registry.presence() {
            presence.leave().await;
        }
        left
    }
}

/// A TCP listener that accepts at an [`AcceptRate`] (or as fast as connections come, with
/// none): past the rate, [`accept`](Self::accept) sleeps until the next slot without asking
/// the listener, so the connections wait in the kernel's listen backlog (see
/// [`ServerBuilder::accept_rate`]). [`Server::run`] uses one; an accept loop of your own over
/// a [`Service`] can too.
///
/// ```no_run
/// # async fn example() -> std::io::Result<()> {
/// use ocpp_tokio::server::{AcceptRate, PacedListener};
///
/// let service = ocpp_tokio::Server::builder()
///     .accept_rate(AcceptRate::new(100, 20))
///     .build();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let mut listener = PacedListener::new(listener, service.accept_rate());
/// loop {
///     let (stream, _) = listener.accept().await?;
///     service.serve_tcp(stream);
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct PacedListener {
    listener: TcpListener,
    rate: Option<AcceptRate>,
    pacer: Option<AcceptPacer>,
    /// Connections found waiting when an accept resumed after a pause.
    deferred: u64,
}

impl PacedListener {
    /// Paces `listener` at `rate` (`None`: no bound).
    pub fn new(listener: TcpListener, rate: Option<AcceptRate>) -> Self {
        PacedListener {
            listener,
            rate,
            pacer: rate.map(AcceptPacer::new),
            deferred: 0,
        }
    }

    /// The next connection, once the rate allows one. Cancel-safe, as
    /// [`TcpListener::accept`]: a cancelled call takes no slot and loses no connection.
    ///
    /// # Errors
    /// The listener's (see [`ocpp_proto::accept::after_accept_error`] for what to do next).
    pub async fn accept(&mut self) -> io::Result<(TcpStream, SocketAddr)> {
        let mut paused = false;
        while let Some(at) = self
            .pacer
            .as_ref()
            .and_then(|p| p.next_accept(Instant::now()))
        {
            tokio::time::sleep_until(at.into()).await;
            paused = true;
        }
        let accepted = if paused {
            // Was a connection waiting in the backlog while we slept? One poll tells.
            let listener = &self.listener;
            let ready =
                std::future::poll_fn(|cx| std::task::Poll::Ready(listener.poll_accept(cx))).await;
            match ready {
                std::task::Poll::Ready(accepted) => {
                    if accepted.is_ok() {
                        self.deferred += 1;
                    }
                    accepted
                }
                std::task::Poll::Pending => self.listener.accept().await,
            }
        } else {
            self.listener.accept().await
        };
        if accepted.is_ok() {
            if let Some(pacer) = &mut self.pacer {
                pacer.accepted(Instant::now());
            }
        }
        accepted
    }

    /// How many connections the rate kept waiting: found in the backlog when an accept
    /// resumed after a pause at the rate (tokio-server's `ocpp_accepts_deferred_total`).
    pub fn deferred(&self) -> u64 {
        self.deferred
    }

    /// The rate it accepts at.
    pub fn rate(&self) -> Option<AcceptRate> {
        self.rate
    }

    /// The listening address.
    ///
    /// # Errors
    /// The socket's error.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The listener.
    pub fn into_inner(self) -> TcpListener {
        self.listener
    }
}
