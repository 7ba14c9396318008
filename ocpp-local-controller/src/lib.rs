//! A Local Controller (OCPP 2.0.1 and 2.1 Part 4 §3.3; also for 1.6): on a site between its
//! charging stations and the central system, it accepts each station's WebSocket as a central
//! system would, opens one WebSocket of its own to the central system under that station's
//! identity, and relays the OCPP-J text messages unchanged both ways, byte for byte (so that
//! signed messages keep their signatures).
//!
//! Hooks observe every message ([`LocalControllerBuilder::on_message`]), answer a station's
//! CALL here instead of forwarding it ([`LocalControllerBuilder::on_station_call`]), and
//! [`RelayedStations::call`] sends a CALL of the controller's own to a station (e.g.
//! SetChargingProfile for a site limit), whose answer comes back to the caller and never to
//! the central system.
//!
//! How a pair lives:
//! - **upstream first**: when a station's upgrade request arrives, the controller connects to
//!   `{upstream}/{identity}` offering the versions the station offered, in its order, with the
//!   station's Basic credentials (or [`LocalControllerBuilder::upstream_password`]'s), and
//!   answers the station only then: 101 with the version the central system chose, or the
//!   central system's refusal (401, 404, ...; 502 when it cannot be reached). So the station
//!   sees the central system's decision as if connected directly, and nothing it sends is ever
//!   left without a place to go.
//! - **closes go through**: a station's close closes its upstream connection with the same
//!   code (1001 when it had none that may be sent, e.g. the stream just ended), and the
//!   central system's close closes the station the same way.
//! - **no reconnect of its own**: when the upstream connection drops, the station is closed
//!   (1001) and reconnects with its own back-off (OCPP 2.0.1 B.B04), which re-creates the pair:
//!   the simplest behaviour that is correct, as the station then boots and resends its queue
//!   exactly as after a direct disconnection.
//! - **TLS** towards the central system with `wss://` and
//!   [`LocalControllerBuilder::upstream_tls`]; towards the stations with
//!   [`LocalControllerBuilder::station_tls`] (the stations then connect with `wss://`, as to a
//!   central system serving security profiles 2 and 3: the same `rustls::ServerConfig` as
//!   [`ServerBuilder::tls`](ocpp_tokio::ServerBuilder::tls)), or in plain `ws://` without it (a
//!   controller often sits on the site's own network).
//! - WebSocket pings, limits and the close handshake are per hop (RFC 6455 control frames are
//!   not relayed), each hop an [`ocpp_proto::Connection`] in relay mode
//!   ([`ConnectionConfig::relay_text`](ocpp_tokio::ConnectionConfig::relay_text)).

#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod relay;

pub use ocpp_messages::envelope::MessageTypeId;
pub use relay::{Direction, Envelope};

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ocpp_proto::{
    CloseCode, CloseReason, ConnectTarget, Connection, ConnectionConfig, Event, OcppVersion,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

use ocpp_tokio::handler::PeerCertificate;
use relay::{Decide, Hooks, Observe, Output, Relay};

/// One message of a station pair, as the hooks see it: the text exactly as relayed and its
/// parsed envelope (`None` when the text is not OCPP-J; it is relayed all the same).
#[derive(Debug, Clone, Copy)]
pub struct RelayedMessage<'a> {
    /// The station's identity.
    pub identity: &'a str,
    /// Which way it goes.
    pub direction: Direction,
    /// The text, byte for byte.
    pub text: &'a str,
    /// Its envelope.
    pub envelope: Option<Envelope<'a>>,
}

/// What to do with a station's CALL ([`LocalControllerBuilder::on_station_call`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Relay it to the central system.
    Forward,
    /// Answer it here with this CALLRESULT or CALLERROR text; the central system never sees
    /// the CALL.
    Answer(String),
}

impl Verdict {
    /// Answers with a CALLRESULT `[3,"<id>",<payload>]`.
    ///
    /// ```
    /// use ocpp_local_controller::Verdict;
    /// let verdict = Verdict::result("42", &serde_json::json!({"status": "Accepted"}));
    /// assert_eq!(verdict, Verdict::Answer(r#"[3,"42",{"status":"Accepted"}]"#.into()));
    /// ```
    pub fn result(id: &str, payload: &serde_json::Value) -> Verdict {
        Verdict::Answer(serde_json::json!([3, id, payload]).to_string())
    }

    /// Answers with a CALLERROR `[4,"<id>","<code>","<description>",{}]`.
    ///
    /// ```
    /// use ocpp_local_controller::Verdict;
    /// let verdict = Verdict::error("42", "NotSupported", "not here");
    /// assert_eq!(verdict, Verdict::Answer(r#"[4,"42","NotSupported","not here",{}]"#.into()));
    /// ```
    pub fn error(id: &str, code: &str, description: &str) -> Verdict {
        Verdict::Answer(serde_json::json!([4, id, code, description, {}]).to_string())
    }
}

/// Why a CALL of the controller's own ([`RelayedStations::call`]) has no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OwnCallError {
    /// No station with this identity is connected through the controller.
    #[error("the station is not connected")]
    NotConnected,
    /// The action is not a name or the payload not a JSON object.
    #[error("the action or the payload is not valid OCPP-J")]
    InvalidCall,
    /// Too many CALLs wait for the station already.
    #[error("too many CALLs wait for the station")]
    QueueFull,
    /// No answer within the call timeout ([`ConnectionConfig::call_timeout`]).
    #[error("the station did not answer in time")]
    Timeout,
    /// The station's connection ended first (the CALL may have reached it).
    #[error("the station disconnected")]
    Disconnected,
}

/// Why the controller could not be built or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocalControllerError {
    /// The central system's URL is not `ws://host[:port][/path]` (or `wss://` with
    /// [`LocalControllerBuilder::upstream_tls`]).
    #[error("the central system URL must be ws://host[:port][/path] or wss://...: {0}")]
    Url(String),
    /// The listener failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

type UpstreamPassword = Arc<dyn Fn(&str) -> Option<Vec<u8>> + Send + Sync>;

/// Builds a [`LocalController`]: `LocalController::builder("ws://csms:9000/ocpp")?.bind(addr)`.
///
/// ```no_run
/// # async fn example() -> Result<(), ocpp_local_controller::LocalControllerError> {
/// use ocpp_local_controller::{LocalController, Verdict};
///
/// let controller = LocalController::builder("ws://csms.example:9000/ocpp")?
///     .on_message(|m| println!("{} {:?} {}", m.identity, m.direction, m.text))
///     // Authorize locally every token, the central system never asked.
///     .on_station_call(|m| match m.envelope {
///         Some(e) if e.action == Some("Authorize") => Verdict::result(
///             e.id,
///             &serde_json::json!({"idTokenInfo": {"status": "Accepted"}}),
///         ),
///         _ => Verdict::Forward,
///     })
///     .bind("0.0.0.0:9100")
///     .await?;
/// controller.run().await
/// # }
/// ```
pub struct LocalControllerBuilder {
    host: String,
    endpoint: String,
    /// `wss://`: the TLS configuration is required before `bind`.
    secure: bool,
    tls: Option<Arc<rustls::ClientConfig>>,
    /// TLS towards the stations.
    station_tls: Option<Arc<rustls::ServerConfig>>,
    config: ConnectionConfig,
    hooks: Hooks,
    upstream_password: Option<UpstreamPassword>,
}

impl std::fmt::Debug for LocalControllerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalControllerBuilder")
            .field("host", &self.host)
            .field("endpoint", &self.endpoint)
            .field("secure", &self.secure)
            .field("station_tls", &self.station_tls.is_some())
            .field("config", &self.config)
            .finish()
    }
}

impl LocalControllerBuilder {
    /// The settings of both hops of every pair (versions accepted from stations, timeouts,
    /// limits); relay mode is turned on whatever this says. The call timeout bounds the
    /// controller's own CALLs.
    pub fn config(mut self, config: ConnectionConfig) -> Self {
        self.config = config;
        self
    }

    /// Called for every message of every pair, both ways, the controller's own included.
    pub fn on_message(
        mut self,
        hook: impl Fn(&RelayedMessage<'_>) + Send + Sync + 'static,
    ) -> Self {
        let hook: Observe = Arc::new(hook);
        self.hooks.observe = Some(hook);
        self
    }

    /// Called for every CALL of a station (direction
    /// [`Direction::StationToController`]) before it is relayed: [`Verdict::Forward`] relays
    /// it, [`Verdict::Answer`] answers it here.
    pub fn on_station_call(
        mut self,
        hook: impl Fn(&RelayedMessage<'_>) -> Verdict + Send + Sync + 'static,
    ) -> Self {
        let hook: Decide = Arc::new(hook);
        self.hooks.station_call = Some(hook);
        self
    }

    /// The Basic password (security profile 1) the controller gives the central system for a
    /// station, by identity; `None` connects without credentials. Without this setting the
    /// station's own credentials are passed on.
    pub fn upstream_password(
        mut self,
        password: impl Fn(&str) -> Option<Vec<u8>> + Send + Sync + 'static,
    ) -> Self {
        self.upstream_password = Some(Arc::new(password));
        self
    }

    /// TLS towards the central system (a `wss://` URL, security profiles 2 and 3: give the
    /// configuration a client certificate for profile 3; it is the controller's, not the
    /// station's). The server name checked is the URL's host.
    ///
    /// ```no_run
    /// # async fn example(tls: std::sync::Arc<ocpp_tokio::rustls::ClientConfig>)
    /// # -> Result<(), ocpp_local_controller::LocalControllerError> {
    /// let controller = ocpp_local_controller::LocalController::builder("wss://csms.example/ocpp")?
    ///     .upstream_tls(tls)
    ///     .bind("0.0.0.0:9100")
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn upstream_tls(mut self, config: Arc<rustls::ClientConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    /// TLS towards the stations: they connect with `wss://` (security profile 2; profile 3
    /// when `config` asks for client certificates, e.g. with rustls's `WebPkiClientVerifier`:
    /// a station's certificate must then carry its identity as subject CN, else 403).
    /// The same configuration as [`ServerBuilder::tls`](ocpp_tokio::ServerBuilder::tls); the TLS
    /// handshake must end within the handshake timeout of [`Self::config`]. A station whose
    /// handshake fails is dropped (it never reaches the central system).
    ///
    /// ```no_run
    /// # async fn example(tls: std::sync::Arc<ocpp_tokio::rustls::ServerConfig>)
    /// # -> Result<(), ocpp_local_controller::LocalControllerError> {
    /// let controller = ocpp_local_controller::LocalController::builder("ws://127.0.0.1:9000/ocpp")?
    ///     .station_tls(tls)
    ///     .bind("0.0.0.0:9443")
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn station_tls(mut self, config: Arc<rustls::ServerConfig>) -> Self {
        self.station_tls = Some(config);
        self
    }

    /// Binds the stations' listening socket.
    ///
    /// # Errors
    /// The bind failed, or a `wss://` URL came without [`Self::upstream_tls`]
    /// ([`LocalControllerError::Url`]).
    pub async fn bind(
        self,
        addr: impl ToSocketAddrs,
    ) -> Result<LocalController, LocalControllerError> {
        if self.secure && self.tls.is_none() {
            let url = format!("wss://{}{}", self.host, self.endpoint);
            return Err(LocalControllerError::Url(format!(
                "{url} needs upstream_tls"
            )));
        }
        let listener = TcpListener::bind(addr).await?;
        Ok(self.serve_listener(listener))
    }

    /// Serves an already bound listener (a `wss://` URL without [`Self::upstream_tls`]
    /// connects without TLS: check with [`Self::bind`]).
    pub fn serve_listener(self, listener: TcpListener) -> LocalController {
        let tls = match (self.secure, self.tls) {
            (true, Some(config)) => {
                let name = server_name(&self.host);
                name.map(|name| (tokio_rustls::TlsConnector::from(config), name))
            }
            _ => None,
        };
        LocalController {
            listener,
            station_tls: self.station_tls.map(tokio_rustls::TlsAcceptor::from),
            shared: Arc::new(Shared {
                tls,
                host: self.host,
                endpoint: self.endpoint,
                config: Arc::new(self.config.relay_text(true)),
                hooks: self.hooks,
                upstream_password: self.upstream_password,
                stations: RelayedStations::default(),
            }),
        }
    }
}

/// A Local Controller: a listener for stations, each relayed to the central system over a
/// connection of its own (see the [module](self)).
///
/// ```no_run
/// # async fn example() -> Result<(), ocpp_local_controller::LocalControllerError> {
/// let controller = ocpp_local_controller::LocalController::builder("ws://127.0.0.1:9000/ocpp")?
///     .bind("127.0.0.1:9100")
///     .await?;
/// let stations = controller.stations();
/// tokio::spawn(controller.run());
/// // A site limit of 16 A for station CP1, EVSE 1: the answer stays here.
/// let answer = stations
///     .call("CP1", "SetChargingProfile", r#"{"evseId":1,"chargingProfile":{}}"#)
///     .await;
/// println!("{answer:?}");
/// # Ok(())
/// # }
/// ```
pub struct LocalController {
    listener: TcpListener,
    /// TLS towards the stations.
    station_tls: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for LocalController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalController")
            .field("listener", &self.listener)
            .field("station_tls", &self.station_tls.is_some())
            .field("host", &self.shared.host)
            .field("endpoint", &self.shared.endpoint)
            .finish()
    }
}

struct Shared {
    /// TLS towards the central system, and the name its certificate must carry.
    tls: Option<(
        tokio_rustls::TlsConnector,
        rustls::pki_types::ServerName<'static>,
    )>,
    host: String,
    endpoint: String,
    config: Arc<ConnectionConfig>,
    hooks: Hooks,
    upstream_password: Option<UpstreamPassword>,
    stations: RelayedStations,
}

impl LocalController {
    /// A builder relaying to the central system at `upstream` (`ws://host[:port][/path]`, or
    /// `wss://` with [`LocalControllerBuilder::upstream_tls`]; without the identity: a station
    /// `CP1` is relayed to `{upstream}/CP1`).
    ///
    /// ```
    /// let builder = ocpp_local_controller::LocalController::builder("ws://127.0.0.1:9000/ocpp");
    /// assert!(builder.is_ok());
    /// assert!(ocpp_local_controller::LocalController::builder("http://x").is_err());
    /// ```
    ///
    /// # Errors
    /// [`LocalControllerError::Url`] for anything else.
    pub fn builder(upstream: &str) -> Result<LocalControllerBuilder, LocalControllerError> {
        let (secure, rest) = match (
            upstream.strip_prefix("ws://"),
            upstream.strip_prefix("wss://"),
        ) {
            (Some(rest), _) => (false, rest),
            (_, Some(rest)) => (true, rest),
            _ => return Err(LocalControllerError::Url(upstream.into())),
        };
        let (host, endpoint) = match rest.find('/') {
            Some(slash) => (&rest[..slash], &rest[slash..]),
            None => (rest, ""),
        };
        let named = !secure || server_name(host).is_some();
        if host.is_empty() || endpoint.contains(['?', '#']) || !named {
            return Err(LocalControllerError::Url(upstream.into()));
        }
        Ok(LocalControllerBuilder {
            secure,
            tls: None,
            station_tls: None,
            host: host.into(),
            endpoint: endpoint.trim_end_matches('/').into(),
            config: ConnectionConfig::default(),
            hooks: Hooks::default(),
            upstream_password: None,
        })
    }

    /// The address stations connect to.
    ///
    /// # Errors
    /// The socket's address could not be read.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The stations connected through this controller, to send them CALLs of its own.
    pub fn stations(&self) -> RelayedStations {
        self.shared.stations.clone()
    }

    /// Accepts stations until the listener fails.
    ///
    /// # Errors
    /// Never returns otherwise; accept errors (e.g. too many open files) are waited out.
    pub async fn run(self) -> Result<(), LocalControllerError> {
        self.run_until(std::future::pending()).await
    }

    /// Accepts stations until `signal` completes; then every pair is dropped (its sockets
    /// closed without a close handshake).
    ///
    /// # Errors
    /// None yet; the `Result` leaves room.
    pub async fn run_until(
        self,
        signal: impl Future<Output = ()>,
    ) -> Result<(), LocalControllerError> {
        let mut pairs = JoinSet::new();
        tokio::pin!(signal);
        loop {
            tokio::select! {
                () = &mut signal => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((socket, _)) => {
                        let _ = socket.set_nodelay(true);
                        match &self.station_tls {
                            None => {
                                pairs.spawn(relay_pair(self.shared.clone(), socket, None));
                            }
                            Some(acceptor) => {
                                pairs.spawn(relay_tls_pair(
                                    self.shared.clone(),
                                    acceptor.clone(),
                                    socket,
                                ));
                            }
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(_) = pairs.join_next(), if !pairs.is_empty() => {}
            }
        }
        pairs.shutdown().await;
        Ok(())
    }
}

/// The stations connected through a [`LocalController`]: cheap to clone.
#[derive(Clone, Default)]
pub struct RelayedStations {
    inner: Arc<Mutex<HashMap<String, Mailbox>>>,
}

impl std::fmt::Debug for RelayedStations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayedStations")
            .field("connected", &self.identities())
            .finish()
    }
}

#[derive(Clone)]
struct Mailbox {
    pair: u64,
    commands: mpsc::Sender<Command>,
}

struct Command {
    action: String,
    payload: String,
    reply: oneshot::Sender<Result<String, OwnCallError>>,
}

impl RelayedStations {
    /// The identities of the stations connected now (their upstream connection open).
    pub fn identities(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.lock().keys().cloned().collect();
        ids.sort();
        ids
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Mailbox>> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sends a CALL of the controller's own (`action`, and `payload` a JSON object) to the
    /// station `identity`, and returns its answer (a CALLRESULT or CALLERROR, as text). The
    /// answer is not relayed to the central system. The CALL waits while one of the central
    /// system's is in flight at the station (and the central system's next one waits for it).
    ///
    /// ```no_run
    /// # async fn example(stations: ocpp_local_controller::RelayedStations) {
    /// let answer = stations.call("CP1", "ClearCache", "{}").await;
    /// # }
    /// ```
    ///
    /// # Errors
    /// See [`OwnCallError`].
    pub async fn call(
        &self,
        identity: &str,
        action: &str,
        payload: &str,
    ) -> Result<String, OwnCallError> {
        let mailbox = self.lock().get(identity).cloned();
        let mailbox = mailbox.ok_or(OwnCallError::NotConnected)?;
        let (reply, answer) = oneshot::channel();
        let command = Command {
            action: action.into(),
            payload: payload.into(),
            reply,
        };
        mailbox
            .commands
            .try_send(command)
            .map_err(|error| match error {
                mpsc::error::TrySendError::Full(_) => OwnCallError::QueueFull,
                mpsc::error::TrySendError::Closed(_) => OwnCallError::NotConnected,
            })?;
        answer.await.unwrap_or(Err(OwnCallError::Disconnected))
    }
}

// ---- the driver of one pair ----

type Reader = Box<dyn AsyncRead + Send + Unpin>;
type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// One hop: its connection and the two halves of its socket.
struct Hop {
    connection: Connection,
    reader: Reader,
    writer: Writer,
}

impl Hop {
    fn new(connection: Connection, stream: impl AsyncRead + AsyncWrite + Send + 'static) -> Hop {
        let (reader, writer) = tokio::io::split(stream);
        Hop {
            connection,
            reader: Box::new(reader),
            writer: Box::new(writer),
        }
    }

    fn done(&self) -> bool {
        self.connection.is_closed() && self.connection.pending_transmit_len() == 0
    }
}

/// The code that closes the other hop when one ends with `reason`.
fn close_code(reason: &CloseReason) -> CloseCode {
    match reason {
        CloseReason::PeerClosed {
            code: Some(code), ..
        }
        | CloseReason::LocalClose { code }
            if code.is_valid_on_wire() =>
        {
            *code
        }
        _ => CloseCode::GOING_AWAY,
    }
}

/// The HTTP status that refuses the station when the upstream connection could not open.
fn refusal_status(reason: &CloseReason) -> u16 {
    match reason {
        CloseReason::UpgradeRefused {
            status: Some(status),
            ..
        } if (400..=599).contains(status) => *status,
        CloseReason::NoCommonVersion => 400,
        _ => 502,
    }
}

static NEXT_PAIR: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A hop's socket split for one turn of the loop: its reader, and its writer with the output.
type Halves<'a> = (Option<&'a mut Reader>, Option<(&'a mut Writer, &'a [u8])>);

fn halves(hop: Option<&mut Hop>) -> Halves<'_> {
    match hop {
        Some(hop) => (
            Some(&mut hop.reader),
            Some((&mut hop.writer, hop.connection.pending_transmit())),
        ),
        None => (None, None),
    }
}

async fn read_hop(reader: Option<&mut Reader>, buf: &mut [u8]) -> io::Result<usize> {
    match reader {
        Some(reader) => reader.read(buf).await,
        None => std::future::pending().await,
    }
}

async fn write_hop(writer: Option<(&mut Writer, &[u8])>) -> io::Result<usize> {
    match writer {
        Some((writer, pending)) => writer.write(pending).await,
        None => std::future::pending().await,
    }
}

/// Whether `hop` may be read now: it wants input and the other hop, where its messages go, is
/// not backed up.
fn may_read(hop: &Hop, other: Option<&Hop>) -> bool {
    let backed_up = other.is_some_and(|o| {
        o.connection.pending_transmit_len() > o.connection.config().get_max_outbound_bytes() / 2
    });
    hop.connection.wants_read() && !backed_up
}

/// Relays one station that connects over TLS: its handshake first, bounded by the handshake
/// timeout; a station whose handshake fails or lasts too long is dropped.
async fn relay_tls_pair(
    shared: Arc<Shared>,
    acceptor: tokio_rustls::TlsAcceptor,
    socket: TcpStream,
) {
    let deadline = Instant::now() + shared.config.get_handshake_timeout();
    match tokio::time::timeout_at(deadline.into(), acceptor.accept(socket)).await {
        Ok(Ok(tls)) => {
            let certificate = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|chain| chain.first())
                .map(|der| PeerCertificate::from_der(der.clone().into_owned()));
            relay_pair(shared, tls, certificate).await;
        }
        Ok(Err(error)) => tracing::debug!(%error, "station TLS handshake failed"),
        Err(_) => tracing::debug!("station TLS handshake timed out"),
    }
}

/// Relays one station until both hops are over. A station that showed a client certificate
/// (security profile 3) must carry its identity as the certificate's subject CN, or it is
/// refused with 403 before anything reaches the central system (OCPP 2.0.1 A00, as the
/// reference central system checks it).
async fn relay_pair(
    shared: Arc<Shared>,
    socket: impl AsyncRead + AsyncWrite + Send + 'static,
    certificate: Option<PeerCertificate>,
) {
    let pair = NEXT_PAIR.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut station = Some(Hop::new(
        Connection::accept_incoming(Instant::now(), shared.config.clone()),
        socket,
    ));
    let mut upstream: Option<Hop> = None;
    let mut relay: Option<Relay> = None;
    let mut identity = String::new();
    let (commands_tx, mut commands) =
        mpsc::channel::<Command>(shared.config.get_max_queued_calls().max(1));
    let mut replies: HashMap<String, oneshot::Sender<Result<String, OwnCallError>>> =
        HashMap::new();
    let mut station_buf = vec![0u8; 16 * 1024];
    let mut upstream_buf = vec![0u8; 16 * 1024];
    let mut registered = false;
    let mut rng = fastrand::Rng::new();

    loop {
        let now = Instant::now();
        // The station's events.
        while let Some(event) = station.as_mut().and_then(|s| s.connection.poll_event()) {
            match event {
                Event::UpgradeRequested(upgrade) => {
                    identity = upgrade.identity.as_str().to_owned();
                    let certified = certificate
                        .as_ref()
                        .map_or(true, |c| c.common_name() == Some(identity.as_str()));
                    if !certified {
                        tracing::info!(identity, "the client certificate's CN is not the identity");
                        if let Some(s) = station.as_mut() {
                            let _ = s.connection.reject(now, 403);
                        }
                        continue;
                    }
                    let versions: Vec<OcppVersion> = upgrade
                        .offered_subprotocols
                        .iter()
                        .filter_map(|p| OcppVersion::from_subprotocol(p))
                        .filter(|v| shared.config.get_versions().contains(v))
                        .fold(Vec::new(), |mut vs, v| {
                            if !vs.contains(&v) {
                                vs.push(v);
                            }
                            vs
                        });
                    let password = match &shared.upstream_password {
                        Some(password) => password(&identity),
                        None => upgrade.credentials.as_ref().map(|c| c.password().to_vec()),
                    };
                    let hop = if versions.is_empty() {
                        None
                    } else {
                        connect_upstream(&shared, &upgrade.identity, versions, password, &mut rng)
                            .await
                    };
                    match hop {
                        Some(hop) => upstream = Some(hop),
                        None => {
                            if let Some(s) = station.as_mut() {
                                let status = if upgrade.version.is_none() { 400 } else { 502 };
                                let _ = s.connection.reject(Instant::now(), status);
                            }
                        }
                    }
                }
                Event::Text(text) => {
                    if let Some(relay) = relay.as_mut() {
                        relay.handle_station_text(now, text);
                    }
                }
                Event::Closed(closed) => {
                    tracing::debug!(identity, reason = ?closed.reason, "station closed");
                    if let Some(up) = upstream.as_mut() {
                        up.connection.close(now, close_code(&closed.reason), "");
                    }
                    if let Some(relay) = relay.as_mut() {
                        relay.close();
                    }
                }
                _ => {}
            }
        }
        // The central system's events.
        while let Some(event) = upstream.as_mut().and_then(|u| u.connection.poll_event()) {
            match event {
                Event::Connected { version } => {
                    let accepted = station
                        .as_mut()
                        .is_some_and(|s| s.connection.accept_version(now, version).is_ok());
                    if accepted {
                        relay = Some(Relay::new(
                            &identity,
                            version,
                            shared.hooks.clone(),
                            shared.config.get_call_timeout(),
                            shared.config.get_max_queued_calls(),
                        ));
                        shared.stations.lock().insert(
                            identity.clone(),
                            Mailbox {
                                pair,
                                commands: commands_tx.clone(),
                            },
                        );
                        registered = true;
                    } else if let Some(up) = upstream.as_mut() {
                        up.connection.close(now, CloseCode::GOING_AWAY, "");
                    }
                }
                Event::Text(text) => {
                    if let Some(relay) = relay.as_mut() {
                        relay.handle_csms_text(now, text);
                    }
                }
                Event::Closed(closed) => {
                    tracing::debug!(identity, reason = ?closed.reason, "upstream closed");
                    if let Some(s) = station.as_mut() {
                        if relay.is_some() {
                            s.connection.close(now, close_code(&closed.reason), "");
                        } else {
                            let _ = s.connection.reject(now, refusal_status(&closed.reason));
                        }
                    }
                    if let Some(relay) = relay.as_mut() {
                        relay.close();
                    }
                }
                _ => {}
            }
        }
        // What the relay hands out.
        if let Some(r) = relay.as_mut() {
            while let Some(output) = r.poll_output() {
                let (hop, text) = match output {
                    Output::ToStation(text) => (station.as_mut(), text),
                    Output::ToCsms(text) => (upstream.as_mut(), text),
                    Output::OwnOutcome { id, outcome } => {
                        if let Some(reply) = replies.remove(&id) {
                            let _ = reply.send(outcome);
                        }
                        continue;
                    }
                };
                if let Some(hop) = hop {
                    if hop.connection.send_text(now, &text).is_err() && hop.connection.is_open() {
                        // Over twice the outbound limit: this hop does not read.
                        hop.connection
                            .close(now, CloseCode::TRY_AGAIN_LATER, "backed up");
                    }
                }
            }
        }
        // Drop the hops that are over.
        if station.as_ref().is_some_and(Hop::done) {
            station = None;
            if let Some(up) = upstream.as_mut() {
                up.connection.close(now, CloseCode::GOING_AWAY, "");
            }
        }
        if upstream.as_ref().is_some_and(Hop::done) {
            upstream = None;
            if let Some(s) = station.as_mut() {
                s.connection.close(now, CloseCode::GOING_AWAY, "");
            }
        }
        if station.is_none() && upstream.is_none() {
            break;
        }
        if (station.is_none() || upstream.is_none()) && registered {
            registered = false;
            let mut stations = shared.stations.lock();
            if stations.get(&identity).is_some_and(|m| m.pair == pair) {
                stations.remove(&identity);
            }
        }

        let deadline = [
            station.as_ref().and_then(|s| s.connection.poll_timeout()),
            upstream.as_ref().and_then(|u| u.connection.poll_timeout()),
            relay.as_ref().and_then(Relay::poll_timeout),
        ]
        .into_iter()
        .flatten()
        .min();
        let read_station = station
            .as_ref()
            .is_some_and(|s| may_read(s, upstream.as_ref()));
        let read_upstream = upstream
            .as_ref()
            .is_some_and(|u| may_read(u, station.as_ref()));
        let write_station = station
            .as_ref()
            .is_some_and(|s| s.connection.pending_transmit_len() > 0);
        let write_upstream = upstream
            .as_ref()
            .is_some_and(|u| u.connection.pending_transmit_len() > 0);
        let accepting_commands = relay.is_some() && registered;
        let sleep = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
                None => std::future::pending().await,
            }
        };
        let (station_reader, station_writer) = halves(station.as_mut());
        let (upstream_reader, upstream_writer) = halves(upstream.as_mut());
        tokio::select! {
            read = read_hop(station_reader, &mut station_buf), if read_station => {
                if let Some(s) = station.as_mut() {
                    match read {
                        Ok(n) if n > 0 => s.connection.handle_data(Instant::now(), &station_buf[..n]),
                        _ => s.connection.handle_eof(Instant::now()),
                    }
                }
            }
            read = read_hop(upstream_reader, &mut upstream_buf), if read_upstream => {
                if let Some(u) = upstream.as_mut() {
                    match read {
                        Ok(n) if n > 0 => u.connection.handle_data(Instant::now(), &upstream_buf[..n]),
                        _ => u.connection.handle_eof(Instant::now()),
                    }
                }
            }
            written = write_hop(station_writer), if write_station => {
                if let Some(s) = station.as_mut() {
                    match written {
                        Ok(n) if n > 0 => s.connection.advance_transmit(n),
                        _ => {
                            let pending = s.connection.pending_transmit_len();
                            s.connection.advance_transmit(pending);
                            s.connection.handle_eof(Instant::now());
                        }
                    }
                }
            }
            written = write_hop(upstream_writer), if write_upstream => {
                if let Some(u) = upstream.as_mut() {
                    match written {
                        Ok(n) if n > 0 => u.connection.advance_transmit(n),
                        _ => {
                            let pending = u.connection.pending_transmit_len();
                            u.connection.advance_transmit(pending);
                            u.connection.handle_eof(Instant::now());
                        }
                    }
                }
            }
            () = sleep => {
                let now = Instant::now();
                if let Some(s) = station.as_mut() {
                    s.connection.handle_timeout(now);
                }
                if let Some(u) = upstream.as_mut() {
                    u.connection.handle_timeout(now);
                }
                if let Some(r) = relay.as_mut() {
                    r.handle_timeout(now);
                }
            }
            Some(command) = commands.recv(), if accepting_commands => {
                if let Some(r) = relay.as_mut() {
                    match r.call(Instant::now(), &command.action, &command.payload) {
                        Ok(id) => {
                            replies.insert(id, command.reply);
                        }
                        Err(error) => {
                            let _ = command.reply.send(Err(error));
                        }
                    }
                }
            }
        }
    }
    // Whatever still waits fails.
    for (_, reply) in replies {
        let _ = reply.send(Err(OwnCallError::Disconnected));
    }
    if registered {
        let mut stations = shared.stations.lock();
        if stations.get(&identity).is_some_and(|m| m.pair == pair) {
            stations.remove(&identity);
        }
    }
}

/// A socket towards the central system: TCP, or TLS over it.
trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<S: AsyncRead + AsyncWrite + Send + Unpin> Stream for S {}

/// The name a `wss://` host's certificate must carry: the host without its port (and an IPv6
/// literal without its brackets).
fn server_name(host: &str) -> Option<rustls::pki_types::ServerName<'static>> {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map(|(name, _)| name)?,
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    rustls::pki_types::ServerName::try_from(name.to_owned()).ok()
}

/// Opens the TCP (and TLS) connection to the central system and writes the upgrade request for
/// `identity` (the handshake then completes in the pair's loop); `None` when the central
/// system cannot be reached within the handshake timeout.
async fn connect_upstream(
    shared: &Shared,
    identity: &ocpp_proto::ChargePointIdentity,
    versions: Vec<OcppVersion>,
    password: Option<Vec<u8>>,
    rng: &mut fastrand::Rng,
) -> Option<Hop> {
    let config = Arc::new((*shared.config).clone().versions(versions));
    let timeout = config.get_handshake_timeout();
    let stream = tokio::time::timeout(timeout, TcpStream::connect(shared.host.as_str()))
        .await
        .ok()?
        .ok()?;
    let _ = stream.set_nodelay(true);
    let stream: Box<dyn Stream> = match &shared.tls {
        Some((connector, name)) => {
            let tls = connector.connect(name.clone(), stream);
            Box::new(tokio::time::timeout(timeout, tls).await.ok()?.ok()?)
        }
        None => Box::new(stream),
    };
    let mut target = ConnectTarget::new(&shared.host, &shared.endpoint, identity.clone());
    if let Some(password) = password {
        target = target.with_password(&password);
    }
    let mut key = [0u8; 16];
    rng.fill(&mut key);
    let connection = Connection::connect(Instant::now(), config, &target, key, rng.u64(..)).ok()?;
    Some(Hop::new(connection, stream))
}
