//! The controller: its builder, its listener, and what its pairs share.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ocpp_proto::ConnectionConfig;
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::task::JoinSet;

use crate::pair::{relay_pair, relay_tls_pair};
use crate::relay::Hooks;
use crate::upstream::server_name;
#[cfg(doc)]
use crate::Leg;
use crate::{LocalControllerError, RelayedMessage, RelayedStations, StationCallDecision};

pub(crate) type UpstreamPassword = Arc<dyn Fn(&str) -> Option<Vec<u8>> + Send + Sync>;

/// Builds a [`LocalController`]: `LocalController::builder("ws://csms:9000/ocpp")?.bind(addr)`.
///
/// ```no_run
/// # async fn example() -> Result<(), ocpp_local_controller::LocalControllerError> {
/// use ocpp_local_controller::{LocalController, StationCallDecision};
///
/// let controller = LocalController::builder("ws://csms.example:9000/ocpp")?
///     .on_message(|m| println!("{} {:?} {}", m.identity, m.direction, m.text))
///     // Authorize locally every token, the central system never asked.
///     .on_station_call(|m| match m.envelope {
///         Some(e) if e.action == Some("Authorize") => StationCallDecision::result(
///             e.id,
///             &serde_json::json!({"idTokenInfo": {"status": "Accepted"}}),
///         ),
///         _ => StationCallDecision::Forward,
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
        self.hooks.observe = Some(Arc::new(hook));
        self
    }

    /// Called for every CALL of a station (leg [`Leg::StationToController`]) before it is
    /// relayed: [`StationCallDecision::Forward`] relays it, [`StationCallDecision::Answer`]
    /// answers it here.
    pub fn on_station_call(
        mut self,
        hook: impl Fn(&RelayedMessage<'_>) -> StationCallDecision + Send + Sync + 'static,
    ) -> Self {
        self.hooks.station_call = Some(Arc::new(hook));
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
            shared: Arc::new(ControllerShared {
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
/// connection of its own (see the [module](crate)).
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
    shared: Arc<ControllerShared>,
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

pub(crate) struct ControllerShared {
    /// TLS towards the central system, and the name its certificate must carry.
    pub(crate) tls: Option<(
        tokio_rustls::TlsConnector,
        rustls::pki_types::ServerName<'static>,
    )>,
    pub(crate) host: String,
    pub(crate) endpoint: String,
    pub(crate) config: Arc<ConnectionConfig>,
    pub(crate) hooks: Hooks,
    pub(crate) upstream_password: Option<UpstreamPassword>,
    pub(crate) stations: RelayedStations,
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
