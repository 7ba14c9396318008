//! How a server runs: what both servers take, built from the shared command line
//! ([`crate::server_cli::server_config`]).

use std::fs::File;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ocpp_cli::capture::CaptureRecorder;
use ocpp_cluster::ClusterConfig;
use ocpp_proto::accept::AcceptRate;
use ocpp_proto::ConnectionConfig;

use crate::tls::ServerTls;
use ocpp_reference_csms::admin_auth::AdminAuth;

/// How the server runs (mio-server and tokio-server alike).
///
/// ```
/// use ocpp_examples::server_config::ServerConfig;
/// let config = ServerConfig::new("127.0.0.1:9000".parse().unwrap());
/// assert_eq!(config.threads, 1);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Where charge points connect (`ws://ADDR/any/path/IDENTITY`).
    pub listen: SocketAddr,
    /// The admin HTTP interface, if any.
    pub admin: Option<SocketAddr>,
    /// Who may use it (`--admin-token-file`); open by default.
    pub admin_auth: AdminAuth,
    /// The names the admin interface answers to besides its address (`--admin-host`; see
    /// [`AdminGuard`](ocpp_reference_csms::admin_auth::AdminGuard)).
    pub admin_hosts: Vec<String>,
    /// The limits on admin connections: how many, how long each may take.
    pub admin_limits: AdminLimits,
    /// mio-server: how many event loops (threads) share the port. tokio-server sizes its
    /// runtime in its binary and does not read it.
    pub threads: usize,
    /// tokio-server: how many shard tasks serve the charge points' connections
    /// (`ocpp_tokio::ServerBuilder::shards`); 0, a task per connection. mio-server does not
    /// read it.
    pub shards: usize,
    /// Accept charge points' connections at most at this rate (`--accept-rate`; the
    /// others wait in the listen backlog, see [`ocpp_proto::accept`]); mio-server's loops
    /// share it. `None`: as fast as they come.
    pub accept_rate: Option<AcceptRate>,
    /// Send each charge point a DataTransfer this often, if set.
    pub push_interval: Option<Duration>,
    /// The settings of every OCPP connection.
    pub connection: ConnectionConfig,
    /// Serve `wss://` with this TLS backend and configuration (security profiles 2 and 3);
    /// `None` serves plain `ws://`.
    pub tls: Option<ServerTls>,
    /// Join a cluster of nodes on Redis (`--redis`, `--node-id`); `None`: one process alone.
    pub cluster: Option<ClusterConfig>,
    /// Write every message in and out to this capture (`--capture FILE`, the format of
    /// [`ocpp_cli::capture`]); `None`: nothing recorded, nothing paid.
    pub capture: Option<CaptureFile>,
}

/// A server's capture file (`--capture`), shared by every connection.
pub type CaptureFile = Arc<CaptureRecorder<File>>;

impl ServerConfig {
    /// One thread (and one shard) on `listen`, no admin interface (open to all once set), no push, the default connection settings,
    /// no TLS, no cluster.
    pub fn new(listen: SocketAddr) -> Self {
        ServerConfig {
            listen,
            admin: None,
            admin_auth: AdminAuth::open(),
            admin_hosts: Vec::new(),
            admin_limits: AdminLimits::default(),
            threads: 1,
            shards: 1,
            accept_rate: None,
            push_interval: None,
            connection: ConnectionConfig::default(),
            tls: None,
            cluster: None,
            capture: None,
        }
    }
}

/// The limits on the admin interface's connections (both servers): so that no number of
/// idle or slow sockets keeps an operator out, or takes the charge points' file descriptors.
/// One request per connection (every answer says `Connection: close`), so there is no idle
/// keep-alive to bound: the header timeout bounds the wait for the request.
///
/// ```
/// use ocpp_examples::server_config::AdminLimits;
/// let limits = AdminLimits::default();
/// assert_eq!(limits.max_connections, 64);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AdminLimits {
    /// At most this many admin connections open (`--admin-max-connections`); beyond it a new
    /// one takes the place of the oldest that has not sent its request yet, or, when every
    /// one serves a request, is answered 503 and closed
    /// ([`AdminSlots`](ocpp_reference_csms::admin_auth::AdminSlots)).
    pub max_connections: usize,
    /// How long a connection may take to send its request head (`--admin-header-timeout-ms`).
    pub header_timeout: Duration,
    /// How long the body may take once the head is in (`--admin-body-timeout-ms`).
    pub body_timeout: Duration,
}

impl Default for AdminLimits {
    /// 64 connections, 10 s for the head, 10 s for the body.
    fn default() -> Self {
        AdminLimits {
            max_connections: 64,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
        }
    }
}
