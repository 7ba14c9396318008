//! A CSMS on tokio, built on [`ocpp_tokio`]: the driver serves every connection (one task
//! each, TLS, keep-alive, timeouts, back-pressure, the registry of charge points, 1008 for a
//! replaced connection, graceful shutdown with 1001), and this module only wires the shared
//! [`Csms`] application to it:
//!
//! - `handler`: the [`ocpp_tokio::Handler`] over the [`Csms`] (upgrade decisions with Basic
//!   auth and client certificates, CALLs, SENDs, closes) and the CSMS session of each
//!   connection;
//! - `admin`: the admin HTTP interface on axum over [`ocpp_tokio::ChargePoints`]
//!   (`GET /chargepoints`, `GET /chargepoints/ID`, `POST /chargepoints/ID/call/ACTION`,
//!   `GET /metrics`), routed by the table [`ocpp_reference_csms::admin::ROUTES`] registered as axum routes; on a cluster node a command
//!   for a charge point held elsewhere goes through the registry's cluster;
//! - `push`: `--push-interval-ms`, a DataTransfer to each charge point per interval, from the
//!   task `on_connect` runs in;
//! - here: the listeners, the accept loop (which counts sockets, and takes them at
//!   `--accept-rate` through `ocpp-tokio`'s `PacedListener`), the OpenSSL backend
//!   (`--tls-backend openssl`: the `tokio-openssl` handshake in a task per socket, then the
//!   plaintext stream and the verified client certificate to `ocpp-tokio` through
//!   `Service::serve_authenticated`; rustls runs inside `ocpp-tokio`) and shutdown; the cluster
//!   node (`--redis`) is `ocpp-cluster`'s on `ocpp-tokio`'s seams (its feature `tokio`):
//!   claims, takeovers (1008), routed commands, and the drain on shutdown (1012, claims
//!   released).

mod admin;
mod handler;
mod push;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ocpp_cluster::tokio_node::ServerBuilderExt;
use ocpp_cluster::Cluster;
use ocpp_proto::accept::{after_accept_error, AcceptRetry};
use ocpp_tokio::server::PacedListener;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::server_config::AdminLimits;
use crate::tls::ServerTls;
use handler::App;
use ocpp_reference_csms::admin_auth::{AdminAuth, AdminGuard};
use ocpp_reference_csms::Csms;

/// How long a graceful shutdown may take before the remaining connections are dropped.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);
/// The listen backlog.
const BACKLOG: i32 = 4096;
/// How long to wait before accepting again after running out of file descriptors.
pub use crate::server_config::ServerConfig;

/// Stops a running [`TokioServer`] gracefully (on a cluster node: closes with 1012 and leaves the
/// cluster).
#[derive(Debug, Clone)]
pub struct TokioShutdownHandle(Arc<watch::Sender<bool>>);

impl TokioShutdownHandle {
    /// Asks every connection to close (1001) and the server to exit.
    pub fn shutdown(&self) {
        self.0.send_replace(true);
    }
}

/// The bound server: listeners open, ready to run on a tokio runtime.
///
/// ```no_run
/// use std::sync::Arc;
/// use ocpp_reference_csms::{Csms, CsmsConfig};
/// use ocpp_examples::tokio_server::{ServerConfig, TokioServer};
/// # async fn run() -> std::io::Result<()> {
/// let csms = Arc::new(Csms::new(CsmsConfig::default()));
/// let server = TokioServer::bind(ServerConfig::new("127.0.0.1:9000".parse().unwrap()), csms)?;
/// println!("listening on {}", server.local_addr());
/// server.run().await // until a TokioShutdownHandle is used
/// # }
/// ```
#[derive(Debug)]
pub struct TokioServer {
    /// The OCPP listener, at `--accept-rate` (the connections past it wait in the backlog).
    listener: PacedListener,
    admin: Option<TcpListener>,
    local_addr: SocketAddr,
    admin_addr: Option<SocketAddr>,
    app: Arc<App>,
    ocpp: Arc<ocpp_tokio::server::Service<Arc<App>>>,
    /// The cluster node's handle (`--redis`), for the admin's reads of the presence records.
    cluster: Option<Cluster>,
    /// The OpenSSL backend (`--tls-backend openssl`): its handshake runs here, and the
    /// plaintext stream goes to `ocpp` with the client certificate it verified.
    openssl: Option<OpenSsl>,
    /// How long a TLS handshake of ours may take (the connections' handshake timeout).
    handshake_timeout: Duration,
    shutdown: Arc<watch::Sender<bool>>,
    /// The connections' call timeout (the admin's cluster commands take it too).
    call_timeout: Duration,
    /// Who may use the admin interface.
    admin_auth: AdminAuth,
    /// What the admin interface refuses from browsers.
    admin_guard: AdminGuard,
    /// The limits on admin connections.
    admin_limits: AdminLimits,
}

impl TokioServer {
    /// Binds the listeners (port 0 picks a free port) and starts the cluster node, if any.
    /// Call it inside the runtime.
    pub fn bind(config: ServerConfig, csms: Arc<Csms>) -> io::Result<TokioServer> {
        let listener = bind_listener(config.listen)?;
        let local_addr = listener.local_addr()?;
        let admin = config.admin.map(bind_listener).transpose()?;
        let admin_addr = admin.as_ref().map(TcpListener::local_addr).transpose()?;
        let app = Arc::new(App::new(
            Arc::clone(&csms),
            config.tls.is_some(),
            config.push_interval,
            config.shards,
        ));
        let call_timeout = config.connection.get_call_timeout();
        let handshake_timeout = config.connection.get_handshake_timeout();
        let mut builder = ocpp_tokio::Server::builder()
            .config(config.connection)
            .shards(config.shards)
            .shutdown_timeout(SHUTDOWN_TIMEOUT)
            .handler(Arc::clone(&app));
        if let Some(rate) = config.accept_rate {
            builder = builder.accept_rate(rate);
        }
        if let Some(capture) = &config.capture {
            // ocpp-tokio's hook sees typed messages: each is written again as OCPP-J.
            builder = builder.on_message(capture.hook());
        }
        // rustls runs inside ocpp-tokio; OpenSSL here, before the stream is handed over.
        let openssl = match config.tls {
            None => None,
            Some(ServerTls::Rustls(tls)) => {
                builder = builder.tls(tls).on_tls_error(move |error| {
                    tracing::info!("TLS failed: {error}");
                    csms.metrics().tls_failures.inc();
                });
                None
            }
            #[cfg(feature = "openssl")]
            Some(ServerTls::OpenSsl(tls)) => Some(tls),
        };
        let mut cluster = None;
        if let Some(config) = config.cluster {
            let (node, handle) = builder.cluster_node(config).map_err(io::Error::other)?;
            (builder, cluster) = (node, Some(handle));
        }
        let ocpp = Arc::new(builder.build());
        // Every connection ocpp-tokio serves (on a shard or a task of its own, in the TLS
        // handshake or after) holds a socket; the sockets still in an OpenSSL handshake here
        // are counted in the gauge itself.
        let served = Arc::downgrade(&ocpp);
        app.csms
            .metrics()
            .sockets_open_elsewhere
            .set(move || served.upgrade().map_or(0, |ocpp| ocpp.connections()));
        let (shutdown, _) = watch::channel(false);
        let listener = PacedListener::new(listener, ocpp.accept_rate());
        Ok(TokioServer {
            listener,
            admin,
            local_addr,
            admin_addr,
            app,
            ocpp,
            cluster,
            openssl,
            handshake_timeout,
            shutdown: Arc::new(shutdown),
            call_timeout,
            admin_auth: config.admin_auth,
            admin_guard: AdminGuard::new(admin_addr.unwrap_or(local_addr), &config.admin_hosts),
            admin_limits: config.admin_limits,
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
    pub fn shutdown_handle(&self) -> TokioShutdownHandle {
        TokioShutdownHandle(Arc::clone(&self.shutdown))
    }

    /// Accepts charge points (and admin clients) until shutdown, then closes every connection
    /// with 1001 (1012 on a cluster node) and returns once they are gone or
    /// [`SHUTDOWN_TIMEOUT`] passed (a cluster node then leaves the cluster).
    pub async fn run(self) -> io::Result<()> {
        let TokioServer {
            mut listener,
            admin,
            app,
            ocpp,
            shutdown,
            call_timeout,
            admin_auth,
            admin_guard,
            admin_limits,
            openssl,
            handshake_timeout,
            cluster,
            ..
        } = self;
        #[cfg(not(feature = "openssl"))]
        let _ = handshake_timeout;
        let mut stop = shutdown.subscribe();
        let admin_task = admin.map(|listener| {
            let admin = admin::Admin {
                app: Arc::clone(&app),
                charge_points: ocpp.charge_points(),
                cluster,
                stop: shutdown.subscribe(),
                call_timeout,
                auth: admin_auth,
                guard: admin_guard,
                limits: admin_limits,
            };
            tokio::spawn(admin::serve(listener, admin, shutdown.subscribe()))
        });
        let mut deferred = 0;
        while !*stop.borrow_and_update() {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((socket, _)) => {
                        let _ = socket.set_nodelay(true);
                        let metrics = app.csms.metrics();
                        metrics.sockets_accepted.inc();
                        if listener.deferred() > deferred {
                            deferred = listener.deferred();
                            metrics.accepts_deferred.inc();
                        }
                        match &openssl {
                            None => ocpp.serve_tcp(socket),
                            #[cfg(feature = "openssl")]
                            Some(tls) => {
                                let (tls, ocpp) = (tls.clone(), Arc::clone(&ocpp));
                                let counted = Handshaking::new(Arc::clone(&app.csms));
                                let csms = Arc::clone(&app.csms);
                                let accept =
                                    openssl_accept(tls, socket, ocpp, handshake_timeout, csms);
                                tokio::spawn(async move {
                                    accept.await;
                                    drop(counted);
                                });
                            }
                            #[cfg(not(feature = "openssl"))]
                            Some(never) => match *never {},
                        }
                    }
                    Err(e) => match after_accept_error(&e) {
                        AcceptRetry::Now => tracing::debug!("accept: {e}"),
                        AcceptRetry::After(wait) => {
                            // Out of descriptors: the backlog keeps the connection.
                            tracing::warn!("accept: {e}; retrying shortly");
                            tokio::time::sleep(wait).await;
                        }
                    },
                },
                _ = stop.changed() => {}
            }
        }
        drop(listener);
        tracing::info!(connections = ocpp.connections(), "shutting down");
        let dropped = ocpp.shutdown().await;
        if dropped > 0 {
            tracing::warn!(dropped, "shutdown timed out; connections dropped");
        }
        if let Some(task) = admin_task {
            // The admin commands in progress get their CALL's outcome (the connections are
            // closed now) or 504 within a second; the margin covers a slow client.
            let _ = tokio::time::timeout(Duration::from_secs(2), task).await;
        }
        Ok(())
    }
}

/// The OpenSSL backend's configuration (nothing without the cargo feature `openssl`).
#[cfg(feature = "openssl")]
type OpenSsl = crate::tls::openssl::OpenSslConfig;
/// The OpenSSL backend's configuration (nothing without the cargo feature `openssl`).
#[cfg(not(feature = "openssl"))]
#[derive(Debug)]
enum OpenSsl {}

/// The OpenSSL handshake over `socket` (bounded by `timeout`), then the plaintext stream to
/// `ocpp` with the client certificate OpenSSL verified. A failed handshake is logged and
/// counted as the rustls backend's are; its alert goes out, then our write side is shut and
/// the socket read until the peer's end (at most [`TLS_FAILURE_DRAIN`]), so that unread data
/// does not turn the close into a reset that could overtake the alert.
#[cfg(feature = "openssl")]
async fn openssl_accept(
    tls: OpenSsl,
    socket: tokio::net::TcpStream,
    ocpp: Arc<ocpp_tokio::server::Service<Arc<App>>>,
    timeout: Duration,
    csms: Arc<Csms>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = match crate::tls::openssl::session(&tls, socket) {
        Ok(stream) => stream,
        Err(error) => {
            tracing::warn!("TLS session: {error}");
            return;
        }
    };
    let handshake = crate::tls::openssl::handshake(&mut stream);
    match tokio::time::timeout(timeout, handshake).await {
        Ok(Ok(certificate)) => {
            let certificate = certificate.map(ocpp_tokio::handler::PeerCertificate::from_der);
            let peer = stream.get_ref().peer_addr().ok();
            ocpp.serve_authenticated_from(stream, certificate, peer);
        }
        Ok(Err(error)) => {
            tracing::info!("TLS failed: {error}");
            csms.metrics().tls_failures.inc();
            let socket = stream.get_mut();
            let drain = async {
                socket.shutdown().await?;
                let mut buf = [0u8; 1024];
                while socket.read(&mut buf).await? > 0 {}
                io::Result::Ok(())
            };
            let _ = tokio::time::timeout(TLS_FAILURE_DRAIN, drain).await;
        }
        Err(_) => tracing::debug!("TLS handshake timed out"),
    }
}

/// How long a socket whose TLS handshake failed is read before it is closed.
#[cfg(feature = "openssl")]
const TLS_FAILURE_DRAIN: Duration = Duration::from_secs(1);

/// A socket in the OpenSSL handshake, counted in `ocpp_sockets_open` until it is handed to
/// `ocpp-tokio` (whose connections are counted there too, see [`TokioServer::bind`]) or closed.
#[cfg(feature = "openssl")]
struct Handshaking(Arc<Csms>);

#[cfg(feature = "openssl")]
impl Handshaking {
    fn new(csms: Arc<Csms>) -> Self {
        csms.metrics().sockets_open.inc();
        Handshaking(csms)
    }
}

#[cfg(feature = "openssl")]
impl Drop for Handshaking {
    fn drop(&mut self) {
        self.0.metrics().sockets_open.dec();
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
