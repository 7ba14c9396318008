//! The command line, logging and process limits that `mio-server` and `tokio-server` share:
//! the two servers differ only in their I/O loop.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use ocpp_frame::deflate::DeflateConfig;
use ocpp_proto::accept::AcceptRate;
use ocpp_proto::{DeflatePolicy, NoCommonVersion};

use clap::builder::{EnumValueParser, TypedValueParser};
use clap::{CommandFactory, FromArgMatches, Parser, ValueEnum};

use crate::server_config::AdminLimits;
use ocpp_reference_csms::{BootPolicy, BootRate, Currency, Price, SiteLimit, Tariff, TariffError};

mod start;
#[cfg(test)]
mod tests;

pub use start::{
    admin_auth, announce_listening, capture, cluster_config, connection_config, csms, exit_code,
    init_logging, raise_open_files_limit, server_config, start_process, tls_config, StartError,
};

/// Where charge points connect unless `--listen` says otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9000";
/// Where the admin interface listens unless `--admin` says otherwise.
pub const DEFAULT_ADMIN: &str = "127.0.0.1:9001";
/// Where the CSMS keeps its state unless `--database` says otherwise: a SQLite file in the
/// working directory.
pub const DEFAULT_DATABASE: &str = "sqlite://ocpp-csms.sqlite3";

/// What both servers print after the options (`--help`): the URL charge points use, the
/// security profiles, the admin routes, logs, signals.
fn after_help(name: &str) -> String {
    format!(
        "Charge points connect to ws://LISTEN/<any path>/<identity> (wss:// with --tls-cert) with
subprotocol ocpp1.6, ocpp2.0.1 or ocpp2.1.

Security profiles (OCPP 1.6 security whitepaper, OCPP 2.0.1 part 2 A00):
  1: --basic-auth FILE                                  Basic auth over ws://
  2: --basic-auth FILE --tls-cert FILE --tls-key FILE   Basic auth over wss://
  3: --tls-cert FILE --tls-key FILE --client-ca FILE    client certificates over wss://
  TLS: rustls by default (forward-secret suites only); --tls-backend openssl adds the
     static-RSA suites OCPP 2.0.1 A00.FR.318 asks for (TC_A_04, TC_A_07); give it an RSA
     certificate, and an ECDSA one too if you like (--tls-cert/--tls-key twice)
  per station, on one wss:// listener: --tls-cert FILE --tls-key FILE --client-ca FILE
     --basic-auth FILE --security-profiles FILE: client certificates are optional at the
     TLS layer and each station's profile decides at the upgrade (401 for credentials
     missing or wrong, e.g. a profile-3 station with a password only; 403 for a certificate
     naming another identity or a profile-2 station on ws://); a station that connected
     with its certificate is held to profile 3 from then on

Admin interface (--admin; with --admin-token-file every route needs
`Authorization: Bearer TOKEN`, else 401). Whatever the tokens: a Host or Origin that does
not name it (its IP; localhost, 127.0.0.1, [::1] on loopback; --admin-host names) gets 403,
Sec-Fetch-Site cross-site or same-site 403, a body not Content-Type: application/json 415.
Failed Basic auth on the OCPP port: after 5 in a minute from an address (or for an
identity), 429 with Retry-After (10 s, doubling, at most 5 min). Admin routes:
  GET  /chargepoints                       connected charge points (JSON; on a cluster node,
                                           every node's)
  GET  /chargepoints/ID                    one charge point (JSON)
  GET  /chargepoints/ID/notifications[/ACTION]  what it reported
  GET|PUT|DELETE /chargepoints/ID/boot     its boot policy ({{\"status\":\"Pending\"}})
  GET|PUT|DELETE /chargepoints/ID/security its security profile ({{\"profile\":3}})
  PUT|DELETE /chargepoints/ID/password     its Basic password ({{\"password\":\"...\"}}), from
                                           its next connection
  POST /chargepoints/ID/call/ACTION        send a CALL, JSON payload as body
  GET  /tokens                             the token store
  GET|PUT|DELETE /tokens/ID                one token ({{\"status\":\"Blocked\",\"group\":\"G\"}})
  GET  /metrics                            Prometheus text

Logs go to stderr (RUST_LOG filters them, default `info`: one line per connect and disconnect).
Prints `{name} listening on ADDR (admin on ADDR)` on stdout once it accepts connections.
SIGINT/SIGTERM close every connection with 1001 and exit within a few seconds; a cluster
node (--redis) closes with 1012 and leaves the cluster (releases its claims)."
    )
}

/// The command line of `name` (`mio-server` or `tokio-server`): `intro` describes its loop,
/// `threads` what `--threads N` means for it. Parse with [`args_from`].
///
/// ```
/// use ocpp_examples::server_cli::{args_from, command};
/// let command = command("mio-server", "A CSMS on mio.", "event loops");
/// let args = args_from(command, ["mio-server", "--listen", "127.0.0.1:0"]).unwrap();
/// assert_eq!(args.listen.port(), 0);
/// ```
pub fn command(name: &'static str, intro: &'static str, threads: &'static str) -> clap::Command {
    Args::command()
        .name(name)
        .bin_name(name)
        .about(intro)
        .after_help(after_help(name))
        .mut_arg("threads", |arg| arg.help(threads))
}

/// Parses a command line (`args` starts with the program's name) with `command`: `Err` is
/// clap's error, with the usage (or the help, for `--help`), to print with
/// [`clap::Error::exit`] (exit code 2; 0 for `--help`).
///
/// # Errors
/// An unknown option, a value that does not parse, options that need each other.
pub fn args_from<I, T>(command: clap::Command, args: I) -> Result<Args, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut command = command;
    let matches = command.try_get_matches_from_mut(args)?;
    let mut args = Args::from_arg_matches(&matches).map_err(|e| e.format(&mut command))?;
    args.admin_tokens = std::env::var(ADMIN_TOKENS_ENV).ok().map(Secret);
    Ok(args)
}

/// The environment variable that may hold admin tokens, one per line.
pub const ADMIN_TOKENS_ENV: &str = "OCPP_ADMIN_TOKENS";

/// Text never shown: its `Debug` prints `Secret(..)`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// The parsed command line, as clap reads it and the servers use it ([`command`],
/// [`args_from`]): each option one field, typed by its value parser; what several options
/// make together is a method ([`Args::admin_limits`], [`Args::shards`], [`Args::tariff`],
/// [`Args::site_limit`]). Given twice, an option keeps its last value (a script's defaults,
/// then the caller's).
// The fields' docs are the `--help` text, written for a terminal: their brackets are not links.
#[allow(
    rustdoc::broken_intra_doc_links,
    rustdoc::invalid_html_tags,
    rustdoc::bare_urls
)]
#[derive(Debug, Parser)]
#[command(args_override_self = true)]
#[non_exhaustive]
pub struct Args {
    /// Address for charge points (port 0 picks one).
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Admin HTTP interface (routes below), or `off`. An address other than loopback needs
    /// --admin-token-file (or OCPP_ADMIN_TOKENS): the server refuses to start without.
    // `::std::option::Option`: the value parser makes the `None` of `off`, not clap.
    #[arg(long, value_name = "ADDR|off", default_value = DEFAULT_ADMIN, value_parser = admin_addr)]
    pub admin: ::std::option::Option<SocketAddr>,
    /// [`ADMIN_TOKENS_ENV`]: tokens, one per line (never an option: a command line is
    /// visible to other users).
    #[arg(skip)]
    pub admin_tokens: Option<Secret>,
    /// Admin tokens, one per line (blank lines and `#` comments skipped; each 16 to 4096
    /// visible ASCII characters): every admin request must carry `Authorization: Bearer
    /// TOKEN`, else 401. Tokens may also come in the environment variable
    /// OCPP_ADMIN_TOKENS (one per line; never on a command line, which other users can
    /// read).
    #[arg(long, value_name = "FILE", env = "OCPP_ADMIN_TOKEN_FILE")]
    pub admin_token_file: Option<PathBuf>,
    /// `GET /metrics` answers without a token (for a scraper that sends none); every other
    /// admin route still needs one.
    #[arg(long)]
    pub metrics_public: bool,
    /// A name the admin interface answers to besides its address (repeatable): requests
    /// whose `Host` or `Origin` names anything else are refused 403 (DNS rebinding, other
    /// sites' pages). Without it: the --admin IP, and on loopback (or 0.0.0.0/[::])
    /// `localhost`, `127.0.0.1` and `[::1]`; the port, if given, must be the listener's.
    #[arg(long = "admin-host", value_name = "NAME")]
    pub admin_hosts: Vec<String>,
    /// At most N admin connections open (default 64): beyond it a new one takes the place of
    /// the oldest that has not sent its request yet, or gets 503 when all serve requests.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub admin_max_connections: Option<u64>,
    /// How long an admin client may take to send its request head, in ms (default 10000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub admin_header_timeout_ms: Option<u64>,
    /// How long an admin client may take to send its body once the head is in, in ms
    /// (default 10000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub admin_body_timeout_ms: Option<u64>,
    /// How long a charge point may take to complete its WebSocket upgrade (TLS included)
    /// after connecting, in ms (default 10000); then the socket is closed.
    #[arg(long = "handshake-timeout-ms", value_name = "MS", value_parser = millis())]
    pub handshake_timeout: Option<Duration>,
    /// Where the CSMS keeps what must survive a restart (open transactions, tokens, boot
    /// policies, security profiles, passwords): sqlite://FILE (created when missing),
    /// postgres://USER:PASS@HOST/DB (several nodes may share it), or `memory` (nothing
    /// kept).
    // `None` for `memory` (the value parser's, as for --admin).
    #[arg(long, value_name = "URL|memory", env = "OCPP_DATABASE_URL", hide_env_values = true, default_value = DEFAULT_DATABASE, value_parser = database)]
    pub database: ::std::option::Option<String>,
    /// Threads (set per server by `command`).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024).map(usize::from))]
    pub threads: usize,
    /// tokio-server: serve the charge points' connections on N shard tasks, each with an
    /// epoll of its own (0: a task per connection). Default: one per --threads. mio-server
    /// ignores it.
    #[arg(long = "shards", value_name = "N", value_parser = clap::value_parser!(u16).range(0..=1024).map(usize::from))]
    pub shards_given: Option<usize>,
    /// Every N ms send each charge point a DataTransfer
    /// {"vendorId":"bench","messageId":"ts","data":"<seq>:<unix_nanos>"}.
    #[arg(long = "push-interval-ms", value_name = "N", value_parser = millis())]
    pub push_interval: Option<Duration>,
    /// Append every OCPP message in and out to FILE, one JSON line each (the capture format
    /// of `ocpp`: `ocpp replay FILE` plays it against a server). mio-server records the texts
    /// as they went over the wire; tokio-server through ocpp-tokio's message hook (serialised
    /// again from the typed messages).
    #[arg(long, value_name = "FILE")]
    pub capture: Option<PathBuf>,
    /// Require HTTP Basic auth (security profile 1): FILE has lines `identity:password`;
    /// others get 401 before the upgrade.
    #[arg(long, value_name = "FILE")]
    pub basic_auth: Option<PathBuf>,
    /// Serve wss:// (TLS 1.2 and 1.3) with this certificate chain (PEM, server certificate
    /// first). With --tls-backend openssl it may be given twice, an RSA and an ECDSA
    /// certificate (each with its --tls-key, in the same order): OpenSSL picks the one the
    /// negotiated suite needs; the static-RSA suites need the RSA one.
    #[arg(long, value_name = "FILE", requires = "tls_key", action = clap::ArgAction::Append)]
    pub tls_cert: Vec<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1); one per --tls-cert, in
    /// the same order.
    #[arg(long, value_name = "FILE", requires = "tls_cert", action = clap::ArgAction::Append)]
    pub tls_key: Vec<PathBuf>,
    /// The TLS library: `rustls` (forward-secret suites only: ECDHE AES-GCM and ChaCha20 over
    /// TLS 1.2, TLS 1.3) or `openssl` (TLS 1.2 ECDHE-ECDSA/ECDHE-RSA AES-GCM plus the
    /// static-RSA AES128-GCM-SHA256 and AES256-GCM-SHA384 that OCPP 2.0.1 A00.FR.318 asks for,
    /// TLS 1.3; needs the cargo feature `openssl`, on by default).
    #[arg(long, value_name = "LIBRARY", value_enum, default_value_t = TlsBackend::Rustls)]
    pub tls_backend: TlsBackend,
    /// Verify client certificates against the CAs of FILE (PEM); the certificate's subject
    /// CN must be the URL's identity, else the upgrade gets 403. Alone: every station must
    /// present one, else the TLS handshake fails with an alert (profile 3 for all). With
    /// --basic-auth or --security-profiles: optional, and each station's profile decides.
    #[arg(long, value_name = "FILE", requires_all = ["tls_cert", "tls_key"])]
    pub client_ca: Option<PathBuf>,
    /// Per-station security profiles: lines `identity profile` (1, 2 or 3); a station not
    /// listed gets profile 1 (2 over TLS: its --basic-auth password) or, with a certificate,
    /// 3. Also PUT /chargepoints/ID/security.
    #[arg(long, value_name = "FILE")]
    pub security_profiles: Option<PathBuf>,
    /// The CA (PEM certificate) that signs the stations' CSRs: SignCertificate is Accepted
    /// when the CSR parses, its signature verifies, its subject CN is the station's identity
    /// and it asks for no CA certificate; CertificateSigned then carries the chain. The TLS
    /// listener also trusts this CA for client certificates. Without it every
    /// SignCertificate is answered Rejected.
    #[arg(long, value_name = "FILE", requires = "ca_key")]
    pub ca_cert: Option<PathBuf>,
    /// The private key of --ca-cert (PEM, PKCS#8).
    #[arg(long, value_name = "FILE", requires = "ca_cert")]
    pub ca_key: Option<PathBuf>,
    /// permessage-deflate (RFC 7692) when a client offers it: `no-context` (no context
    /// takeover either way, so an idle connection holds no compression state), `context`
    /// (context takeover when offered: better ratios, about 430 KB per connection that has
    /// compressed both ways) or `off`.
    #[arg(long, value_name = "MODE", default_value = "no-context", value_parser = EnumValueParser::<Deflate>::new().map(Deflate::policy))]
    pub deflate: DeflatePolicy,
    /// Plug & Charge: the V2G root certificates (PEM, one or more): GetCertificateStatus
    /// (M06) relays an OCSP response only when its issuer is one of them or chains to one.
    /// Without it, the response's signature is checked against the issuer the request names.
    #[arg(long, value_name = "FILE")]
    pub v2g_root: Option<PathBuf>,
    /// Plug & Charge: the MO root certificates (PEM, one or more): a contract certificate
    /// chain in Authorize (C07) must reach one, and so must the issuer of its OCSP responses.
    #[arg(long, value_name = "FILE")]
    pub mo_root: Option<PathBuf>,
    /// Send every OCSP request (Authorize with contract certificates, GetCertificateStatus)
    /// to this responder (http://...), whatever responder URL the station or certificate
    /// names.
    #[arg(long, value_name = "URL")]
    pub ocsp_responder: Option<String>,
    /// Forward Get15118EVCertificate (M01/M02) to this contract-certificate service
    /// (http://...; the JSON protocol is in examples/README.md). Without it the answer is
    /// Failed.
    #[arg(long, value_name = "URL")]
    pub contract_certificate_service: Option<String>,
    /// Answer Authorize, Start/StopTransaction and TransactionEvent from a token store:
    /// lines `idToken status [groupIdToken|-] [expiry]` (expiry RFC 3339); unknown tokens get
    /// Invalid (1.6) / Unknown (2.x). Without it every token is Accepted.
    #[arg(long, value_name = "FILE")]
    pub tokens: Option<PathBuf>,
    /// The master pass group id (OCPP 2.0.1 C16): this token, and tokens of this group, are
    /// Accepted with it as groupIdToken (1.6: parentIdTag).
    #[arg(long, value_name = "ID", value_parser = id_token)]
    pub master_pass: Option<String>,
    /// The answer to BootNotification: accepted, pending or rejected; while not accepted a
    /// station's other CALLs get SecurityError (per station: PUT /chargepoints/ID/boot).
    #[arg(long, value_name = "POLICY", default_value = "accepted", value_parser = boot_policy)]
    pub boot_policy: BootPolicy,
    /// Accept at most N BootNotifications a second, BURST at once (default N): the others are
    /// answered Pending with the interval of a slot kept for them, so that the storm of boots
    /// after an outage is spread in arrival order and nobody is refused. Default: no bound.
    #[arg(long, value_name = "N[/BURST]", value_parser = boot_rate)]
    pub boot_rate: Option<BootRate>,
    /// Accept at most N connections a second, BURST at once (default N; shared by the
    /// --threads loops): past it the others wait in the listen backlog (4096, capped by
    /// net.core.somaxconn) and none is accepted only to be closed, so that the storm of
    /// reconnections after an outage costs TCP/TLS handshakes at that rate while the connected
    /// charge points keep being served; past a full backlog the kernel drops SYNs and clients
    /// retry on their TCP back-off. Default: no bound.
    #[arg(long, value_name = "N[/BURST]", value_parser = accept_rate)]
    pub accept_rate: Option<AcceptRate>,
    /// A DataTransfer vendorId this CSMS knows (repeatable; default ocpp-ws): its
    /// DataTransfer is Accepted, others get UnknownVendorId.
    #[arg(long = "data-transfer-vendor", value_name = "ID", value_parser = vendor_id)]
    pub data_transfer_vendors: Vec<String>,
    /// The most getVariableData / setVariableData entries one GetVariables / SetVariables
    /// carries for a station that has not reported DeviceDataCtrlr.ItemsPerMessage (default:
    /// no limit); longer commands are split (OCPP 2.x B05/B06).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..).map(|n| n as usize))]
    pub items_per_message: Option<usize>,
    /// The default tariff's price of one kWh (a decimal, at most 4 digits after the point).
    /// With it or --price-per-hour, OCPP 2.x TransactionEvent Ended answers carry totalCost
    /// and CostUpdated follows Updated events with meter values (per station: PUT
    /// /chargepoints/ID/tariff). Without either, no cost is sent.
    #[arg(long, value_name = "DECIMAL", value_parser = price)]
    pub price_per_kwh: Option<Price>,
    /// The default tariff's price of one hour of a transaction (a decimal).
    #[arg(long, value_name = "DECIMAL", value_parser = price)]
    pub price_per_hour: Option<Price>,
    /// The currency of the prices, an ISO 4217 code, shown on the admin API (totalCost on the
    /// wire is in the station's configured Currency).
    #[arg(long, value_name = "CODE", default_value = "EUR", value_parser = currency)]
    pub currency: Currency,
    /// The least time between two CostUpdated of one transaction (the first goes at once);
    /// 0: after every TransactionEvent Updated with meter values.
    #[arg(long, value_name = "SECONDS", default_value = "60", value_parser = clap::value_parser!(u64).map(Duration::from_secs))]
    pub cost_updated_interval: Duration,
    /// Smart charging (OCPP 2.x K15-K17): the current, in A per phase, that the EVSEs of a
    /// station with an active transaction share equally (each at most what its EV asks);
    /// per station: PUT /chargepoints/ID/site-limit.
    #[arg(long, value_name = "A", value_parser = positive_number)]
    pub site_limit_amps: Option<f64>,
    /// As --site-limit-amps, in W (the unit of DC EVs).
    #[arg(long, value_name = "W", value_parser = positive_number)]
    pub site_limit_watts: Option<f64>,
    /// When a client offers no subprotocol we speak: `accept-then-close` (OCPP-J 1.6 §3.2,
    /// 2.0.1 §3.1.2: complete the handshake without Sec-WebSocket-Protocol, then close) or
    /// `reject-400` (refuse the upgrade with 400, which the OCTT cases TC_088_CSMS and
    /// TC_B_58_CSMS expect).
    #[arg(long, value_name = "MODE", default_value = "accept-then-close", value_parser = EnumValueParser::<CommonVersion>::new().map(CommonVersion::policy))]
    pub no_common_version: NoCommonVersion,
    /// How long a CALL of ours may wait for its answer once sent, and a command in all
    /// (default 30); a command still queued behind another when its time is up is never
    /// sent.
    #[arg(long = "call-timeout-s", value_name = "N", value_parser = seconds())]
    pub call_timeout: Option<Duration>,
    /// Keep-alive (OCPP `WebSocketPingInterval`): ping a charge point once it has been silent
    /// for N s (default 60; 0: never), and close its connection when the pong does not come
    /// within --pong-timeout-s.
    #[arg(long = "ping-interval-s", value_name = "N", value_parser = clap::value_parser!(u64).map(Duration::from_secs))]
    pub ping_interval: Option<Duration>,
    /// How long a pong may take before the connection is taken for dead, in s (default 30).
    #[arg(long = "pong-timeout-s", value_name = "N", value_parser = seconds())]
    pub pong_timeout: Option<Duration>,
    /// Join a cluster of nodes on this Redis (redis://[USER:PASS@]HOST:PORT/): charge points
    /// are claimed in Redis, a newer connection on another node closes this one (1008), and
    /// an admin command for a charge point held by another node is routed there. With
    /// Sentinel: redis+sentinel://[USER:PASS@]HOST:PORT[,HOST:PORT...]/SERVICE[?db=N] (the
    /// master the sentinels name, followed through failovers). On a Redis Cluster:
    /// redis-cluster://[USER:PASS@]HOST:PORT[,HOST:PORT...] (the seed nodes; database 0).
    #[arg(
        long,
        value_name = "URL",
        env = "OCPP_REDIS_URL",
        hide_env_values = true,
        requires = "node_id"
    )]
    pub redis: Option<String>,
    /// This node's id, unique in the cluster.
    #[arg(long, value_name = "NAME", requires = "redis", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub node_id: Option<String>,
    /// The claim and node record TTL in seconds (default 90; refreshed every third of it):
    /// how long a killed node's charge points stay claimed by it.
    #[arg(long = "cluster-ttl-s", value_name = "N", requires = "redis", value_parser = seconds())]
    pub cluster_ttl: Option<Duration>,
}

/// `--admin`: an address, or `None` for `off`.
fn admin_addr(text: &str) -> Result<Option<SocketAddr>, String> {
    match text {
        "off" | "none" => Ok(None),
        addr => addr
            .parse()
            .map(Some)
            .map_err(|e| format!("{e} (an address such as 127.0.0.1:9001, or off)")),
    }
}

/// `--database`: a URL, or `None` for `memory`.
fn database(text: &str) -> Result<Option<String>, String> {
    Ok(match text {
        "memory" | "none" | "off" => None,
        url => Some(url.to_owned()),
    })
}

/// A number of milliseconds, at least 1.
fn millis() -> impl TypedValueParser<Value = Duration> {
    clap::value_parser!(u64)
        .range(1..)
        .map(Duration::from_millis)
}

/// A number of seconds, at least 1.
fn seconds() -> impl TypedValueParser<Value = Duration> {
    clap::value_parser!(u64).range(1..).map(Duration::from_secs)
}

fn id_token(text: &str) -> Result<String, String> {
    if text.is_empty() || text.chars().count() > 36 {
        return Err("an idToken has 1 to 36 characters".into());
    }
    Ok(text.to_owned())
}

fn vendor_id(text: &str) -> Result<String, String> {
    if text.is_empty() || text.chars().count() > 255 {
        return Err("a vendorId has 1 to 255 characters".into());
    }
    Ok(text.to_owned())
}

fn price(text: &str) -> Result<Price, String> {
    text.parse().map_err(|e: TariffError| e.to_string())
}

fn currency(text: &str) -> Result<Currency, String> {
    text.parse().map_err(|e: TariffError| e.to_string())
}

fn positive_number(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if value.is_finite() && value > 0.0 => Ok(value),
        _ => Err("a number above 0".into()),
    }
}

/// `N` or `N/BURST` (`--boot-rate`, `--accept-rate`): whole numbers above 0, the burst N
/// when not given.
fn rate_and_burst(text: &str, what: &str) -> Result<(u32, u32), String> {
    let (rate, burst) = text.split_once('/').unwrap_or((text, text));
    let positive = |part: &str| part.parse::<u32>().ok().filter(|n| *n > 0);
    match (positive(rate), positive(burst)) {
        (Some(rate), Some(burst)) => Ok((rate, burst)),
        _ => Err(format!(
            "N or N/BURST, whole numbers above 0 ({what} a second, at once)"
        )),
    }
}

fn boot_rate(text: &str) -> Result<BootRate, String> {
    rate_and_burst(text, "boots").map(|(rate, burst)| BootRate::new(rate, burst))
}

fn accept_rate(text: &str) -> Result<AcceptRate, String> {
    rate_and_burst(text, "connections").map(|(rate, burst)| AcceptRate::new(rate, burst))
}

fn boot_policy(text: &str) -> Result<BootPolicy, String> {
    BootPolicy::parse(text).ok_or_else(|| "accepted, pending or rejected".into())
}

/// `--deflate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Deflate {
    Off,
    NoContext,
    Context,
}

/// `--tls-backend`: which TLS library serves wss://.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[non_exhaustive]
pub enum TlsBackend {
    /// rustls: forward-secret suites only.
    Rustls,
    /// OpenSSL (cargo feature `openssl`): also the static-RSA suites.
    #[value(name = "openssl")]
    OpenSsl,
}

/// `--no-common-version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CommonVersion {
    AcceptThenClose,
    #[value(name = "reject-400")]
    Reject400,
}

impl Deflate {
    fn policy(self) -> DeflatePolicy {
        match self {
            Deflate::Off => DeflatePolicy::Off,
            Deflate::NoContext => DeflatePolicy::Accept(DeflateConfig::default()),
            Deflate::Context => DeflatePolicy::Accept(
                DeflateConfig::default()
                    .server_no_context_takeover(false)
                    .client_no_context_takeover(false),
            ),
        }
    }
}

impl CommonVersion {
    fn policy(self) -> NoCommonVersion {
        match self {
            CommonVersion::AcceptThenClose => NoCommonVersion::AcceptThenClose,
            CommonVersion::Reject400 => NoCommonVersion::Reject400,
        }
    }
}

impl Args {
    /// `--admin-max-connections`, `--admin-header-timeout-ms`, `--admin-body-timeout-ms`
    /// over the defaults.
    pub fn admin_limits(&self) -> AdminLimits {
        let mut limits = AdminLimits::default();
        if let Some(n) = self.admin_max_connections {
            limits.max_connections = usize::try_from(n).unwrap_or(usize::MAX);
        }
        if let Some(ms) = self.admin_header_timeout_ms {
            limits.header_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = self.admin_body_timeout_ms {
            limits.body_timeout = Duration::from_millis(ms);
        }
        limits
    }

    /// `--shards` (tokio-server), `--threads` when not given.
    pub fn shards(&self) -> usize {
        self.shards_given.unwrap_or(self.threads)
    }

    /// `--price-per-kwh`, `--price-per-hour`, `--currency`: the default tariff (`None`
    /// without a price).
    pub fn tariff(&self) -> Option<Tariff> {
        (self.price_per_kwh.is_some() || self.price_per_hour.is_some()).then(|| {
            Tariff::new(
                self.price_per_kwh.unwrap_or(Price::ZERO),
                self.price_per_hour.unwrap_or(Price::ZERO),
                self.currency,
            )
        })
    }

    /// `--site-limit-amps`, `--site-limit-watts` (none: no limit).
    pub fn site_limit(&self) -> SiteLimit {
        SiteLimit::new(self.site_limit_amps, self.site_limit_watts).unwrap_or_default()
    }

    /// Whether each station's profile decides (`--basic-auth` or `--security-profiles`), so
    /// that client certificates are optional at the TLS layer.
    fn per_station(&self) -> bool {
        self.basic_auth.is_some() || self.security_profiles.is_some()
    }

    /// Whether every station must present a client certificate: `--client-ca` alone.
    fn certificates_required(&self) -> bool {
        self.client_ca.is_some() && !self.per_station()
    }
}
