//! The command line, logging and process limits that `mio-server` and `tokio-server` share:
//! the two servers differ only in their I/O loop.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ocpp_cli::capture::CaptureRecorder;
use ocpp_cluster::ClusterConfig;
use ocpp_frame::deflate::DeflateConfig;
use ocpp_proto::{ConnectionConfig, DeflatePolicy, NoCommonVersion};

use clap::{CommandFactory, FromArgMatches, Parser, ValueEnum};

use crate::server_config::{AdminLimits, CaptureFile, ServerConfig};
use crate::tls::{self, ClientCertificates, ServerTls, TlsError};
use ocpp_reference_csms::admin_auth::{AdminAuth, AdminAuthError};
use ocpp_reference_csms::ocsp::{self, OcspClient};
use ocpp_reference_csms::plug_and_charge::{PlugAndCharge, PlugAndChargeError};
use ocpp_reference_csms::store::{SqlStore, Store};
use ocpp_reference_csms::{
    BootPolicy, CertificateAuthority, Credentials, Csms, CsmsConfig, Currency, Price, SiteLimit,
    Tariff, TariffError, TokenStore,
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
    Cli::command()
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
    let cli = Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command))?;
    let env_tokens = std::env::var(ADMIN_TOKENS_ENV).ok().map(Secret);
    Ok(cli.into_args(env_tokens))
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

/// The command line as clap reads it; [`Cli::into_args`] makes the [`Args`] the servers use.
/// Given twice, an option keeps its last value (a script's defaults, then the caller's).
#[derive(Debug, Parser)]
#[command(args_override_self = true)]
struct Cli {
    /// Address for charge points (port 0 picks one).
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// Admin HTTP interface (routes below), or `off`. An address other than loopback needs
    /// --admin-token-file (or OCPP_ADMIN_TOKENS): the server refuses to start without.
    #[arg(long, value_name = "ADDR|off", default_value = DEFAULT_ADMIN, value_parser = admin_addr)]
    admin: AdminAddr,
    /// Admin tokens, one per line (blank lines and `#` comments skipped; each 16 to 4096
    /// visible ASCII characters): every admin request must carry `Authorization: Bearer
    /// TOKEN`, else 401. Tokens may also come in the environment variable
    /// OCPP_ADMIN_TOKENS (one per line; never on a command line, which other users can
    /// read).
    #[arg(long, value_name = "FILE", env = "OCPP_ADMIN_TOKEN_FILE")]
    admin_token_file: Option<PathBuf>,
    /// `GET /metrics` answers without a token (for a scraper that sends none); every other
    /// admin route still needs one.
    #[arg(long)]
    metrics_public: bool,
    /// A name the admin interface answers to besides its address (repeatable): requests
    /// whose `Host` or `Origin` names anything else are refused 403 (DNS rebinding, other
    /// sites' pages). Without it: the --admin IP, and on loopback (or 0.0.0.0/[::])
    /// `localhost`, `127.0.0.1` and `[::1]`; the port, if given, must be the listener's.
    #[arg(long, value_name = "NAME")]
    admin_host: Vec<String>,
    /// At most N admin connections open (default 64): beyond it a new one takes the place of
    /// the oldest that has not sent its request yet, or gets 503 when all serve requests.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=65536))]
    admin_max_connections: Option<u64>,
    /// How long an admin client may take to send its request head, in ms (default 10000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    admin_header_timeout_ms: Option<u64>,
    /// How long an admin client may take to send its body once the head is in, in ms
    /// (default 10000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    admin_body_timeout_ms: Option<u64>,
    /// How long a charge point may take to complete its WebSocket upgrade (TLS included)
    /// after connecting, in ms (default 10000); then the socket is closed.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    handshake_timeout_ms: Option<u64>,
    /// Where the CSMS keeps what must survive a restart (open transactions, tokens, boot
    /// policies, security profiles, passwords): sqlite://FILE (created when missing),
    /// postgres://USER:PASS@HOST/DB (several nodes may share it), or `memory` (nothing
    /// kept).
    #[arg(long, value_name = "URL|memory", env = "OCPP_DATABASE_URL", hide_env_values = true, default_value = DEFAULT_DATABASE)]
    database: String,
    /// Threads (set per server by `command`).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: u16,
    /// tokio-server: serve the charge points' connections on N shard tasks, each with an
    /// epoll of its own (0: a task per connection). Default: one per --threads. mio-server
    /// ignores it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(0..=1024))]
    shards: Option<u16>,
    /// Every N ms send each charge point a DataTransfer
    /// {"vendorId":"bench","messageId":"ts","data":"<seq>:<unix_nanos>"}.
    #[arg(long = "push-interval-ms", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    push_interval_ms: Option<u64>,
    /// Append every OCPP message in and out to FILE, one JSON line each (the capture format
    /// of `ocpp`: `ocpp replay FILE` plays it against a server). mio-server records the texts
    /// as they went over the wire; tokio-server through ocpp-tokio's message hook (serialised
    /// again from the typed messages).
    #[arg(long, value_name = "FILE")]
    capture: Option<PathBuf>,
    /// Require HTTP Basic auth (security profile 1): FILE has lines `identity:password`;
    /// others get 401 before the upgrade.
    #[arg(long, value_name = "FILE")]
    basic_auth: Option<PathBuf>,
    /// Serve wss:// (TLS 1.2 and 1.3) with this certificate chain (PEM, server certificate
    /// first). With --tls-backend openssl it may be given twice, an RSA and an ECDSA
    /// certificate (each with its --tls-key, in the same order): OpenSSL picks the one the
    /// negotiated suite needs; the static-RSA suites need the RSA one.
    #[arg(long, value_name = "FILE", requires = "tls_key", action = clap::ArgAction::Append)]
    tls_cert: Vec<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1); one per --tls-cert, in
    /// the same order.
    #[arg(long, value_name = "FILE", requires = "tls_cert", action = clap::ArgAction::Append)]
    tls_key: Vec<PathBuf>,
    /// The TLS library: `rustls` (forward-secret suites only: ECDHE AES-GCM and ChaCha20 over
    /// TLS 1.2, TLS 1.3) or `openssl` (TLS 1.2 ECDHE-ECDSA/ECDHE-RSA AES-GCM plus the
    /// static-RSA AES128-GCM-SHA256 and AES256-GCM-SHA384 that OCPP 2.0.1 A00.FR.318 asks for,
    /// TLS 1.3; needs the cargo feature `openssl`, on by default).
    #[arg(long, value_name = "LIBRARY", value_enum, default_value_t = TlsBackend::Rustls)]
    tls_backend: TlsBackend,
    /// Verify client certificates against the CAs of FILE (PEM); the certificate's subject
    /// CN must be the URL's identity, else the upgrade gets 403. Alone: every station must
    /// present one, else the TLS handshake fails with an alert (profile 3 for all). With
    /// --basic-auth or --security-profiles: optional, and each station's profile decides.
    #[arg(long, value_name = "FILE", requires_all = ["tls_cert", "tls_key"])]
    client_ca: Option<PathBuf>,
    /// Per-station security profiles: lines `identity profile` (1, 2 or 3); a station not
    /// listed gets profile 1 (2 over TLS: its --basic-auth password) or, with a certificate,
    /// 3. Also PUT /chargepoints/ID/security.
    #[arg(long, value_name = "FILE")]
    security_profiles: Option<PathBuf>,
    /// The CA (PEM certificate) that signs the stations' CSRs: SignCertificate is Accepted
    /// when the CSR parses, its signature verifies, its subject CN is the station's identity
    /// and it asks for no CA certificate; CertificateSigned then carries the chain. The TLS
    /// listener also trusts this CA for client certificates. Without it every
    /// SignCertificate is answered Rejected.
    #[arg(long, value_name = "FILE", requires = "ca_key")]
    ca_cert: Option<PathBuf>,
    /// The private key of --ca-cert (PEM, PKCS#8).
    #[arg(long, value_name = "FILE", requires = "ca_cert")]
    ca_key: Option<PathBuf>,
    /// permessage-deflate (RFC 7692) when a client offers it: `no-context` (no context
    /// takeover either way, so an idle connection holds no compression state), `context`
    /// (context takeover when offered: better ratios, about 430 KB per connection that has
    /// compressed both ways) or `off`.
    #[arg(long, value_name = "MODE", value_enum, default_value_t = Deflate::NoContext)]
    deflate: Deflate,
    /// Plug & Charge: the V2G root certificates (PEM, one or more): GetCertificateStatus
    /// (M06) relays an OCSP response only when its issuer is one of them or chains to one.
    /// Without it, the response's signature is checked against the issuer the request names.
    #[arg(long, value_name = "FILE")]
    v2g_root: Option<PathBuf>,
    /// Plug & Charge: the MO root certificates (PEM, one or more): a contract certificate
    /// chain in Authorize (C07) must reach one, and so must the issuer of its OCSP responses.
    #[arg(long, value_name = "FILE")]
    mo_root: Option<PathBuf>,
    /// Send every OCSP request (Authorize with contract certificates, GetCertificateStatus)
    /// to this responder (http://...), whatever responder URL the station or certificate
    /// names.
    #[arg(long, value_name = "URL")]
    ocsp_responder: Option<String>,
    /// Forward Get15118EVCertificate (M01/M02) to this contract-certificate service
    /// (http://...; the JSON protocol is in examples/README.md). Without it the answer is
    /// Failed.
    #[arg(long, value_name = "URL")]
    contract_certificate_service: Option<String>,
    /// Answer Authorize, Start/StopTransaction and TransactionEvent from a token store:
    /// lines `idToken status [groupIdToken|-] [expiry]` (expiry RFC 3339); unknown tokens get
    /// Invalid (1.6) / Unknown (2.x). Without it every token is Accepted.
    #[arg(long, value_name = "FILE")]
    tokens: Option<PathBuf>,
    /// The master pass group id (OCPP 2.0.1 C16): this token, and tokens of this group, are
    /// Accepted with it as groupIdToken (1.6: parentIdTag).
    #[arg(long, value_name = "ID", value_parser = id_token)]
    master_pass: Option<String>,
    /// The answer to BootNotification: accepted, pending or rejected; while not accepted a
    /// station's other CALLs get SecurityError (per station: PUT /chargepoints/ID/boot).
    #[arg(long, value_name = "POLICY", default_value = "accepted", value_parser = boot_policy)]
    boot_policy: BootPolicy,
    /// A DataTransfer vendorId this CSMS knows (repeatable; default ocpp-ws): its
    /// DataTransfer is Accepted, others get UnknownVendorId.
    #[arg(long = "data-transfer-vendor", value_name = "ID", value_parser = vendor_id)]
    data_transfer_vendors: Vec<String>,
    /// The most getVariableData / setVariableData entries one GetVariables / SetVariables
    /// carries for a station that has not reported DeviceDataCtrlr.ItemsPerMessage (default:
    /// no limit); longer commands are split (OCPP 2.x B05/B06).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    items_per_message: Option<u32>,
    /// The default tariff's price of one kWh (a decimal, at most 4 digits after the point).
    /// With it or --price-per-hour, OCPP 2.x TransactionEvent Ended answers carry totalCost
    /// and CostUpdated follows Updated events with meter values (per station: PUT
    /// /chargepoints/ID/tariff). Without either, no cost is sent.
    #[arg(long, value_name = "DECIMAL", value_parser = price)]
    price_per_kwh: Option<Price>,
    /// The default tariff's price of one hour of a transaction (a decimal).
    #[arg(long, value_name = "DECIMAL", value_parser = price)]
    price_per_hour: Option<Price>,
    /// The currency of the prices, an ISO 4217 code, shown on the admin API (totalCost on the
    /// wire is in the station's configured Currency).
    #[arg(long, value_name = "CODE", default_value = "EUR", value_parser = currency)]
    currency: Currency,
    /// The least time between two CostUpdated of one transaction (the first goes at once);
    /// 0: after every TransactionEvent Updated with meter values.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    cost_updated_interval: u64,
    /// Smart charging (OCPP 2.x K15-K17): the current, in A per phase, that the EVSEs of a
    /// station with an active transaction share equally (each at most what its EV asks);
    /// per station: PUT /chargepoints/ID/site-limit.
    #[arg(long, value_name = "A", value_parser = positive_number)]
    site_limit_amps: Option<f64>,
    /// As --site-limit-amps, in W (the unit of DC EVs).
    #[arg(long, value_name = "W", value_parser = positive_number)]
    site_limit_watts: Option<f64>,
    /// When a client offers no subprotocol we speak: `accept-then-close` (OCPP-J 1.6 §3.2,
    /// 2.0.1 §3.1.2: complete the handshake without Sec-WebSocket-Protocol, then close) or
    /// `reject-400` (refuse the upgrade with 400, which the OCTT cases TC_088_CSMS and
    /// TC_B_58_CSMS expect).
    #[arg(long, value_name = "MODE", value_enum, default_value_t = CommonVersion::AcceptThenClose)]
    no_common_version: CommonVersion,
    /// How long a CALL of ours may wait for its answer once sent, and a command in all
    /// (default 30); a command still queued behind another when its time is up is never
    /// sent.
    #[arg(long = "call-timeout-s", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    call_timeout_s: Option<u64>,
    /// Join a cluster of nodes on this Redis (redis://[USER:PASS@]HOST:PORT/): charge points
    /// are claimed in Redis, a newer connection on another node closes this one (1008), and
    /// an admin command for a charge point held by another node is routed there. With
    /// Sentinel: redis+sentinel://[USER:PASS@]HOST:PORT[,HOST:PORT...]/SERVICE[?db=N] (the
    /// master the sentinels name, followed through failovers).
    #[arg(
        long,
        value_name = "URL",
        env = "OCPP_REDIS_URL",
        hide_env_values = true,
        requires = "node_id"
    )]
    redis: Option<String>,
    /// This node's id, unique in the cluster.
    #[arg(long, value_name = "NAME", requires = "redis", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    node_id: Option<String>,
    /// The claim and node record TTL in seconds (default 90; refreshed every third of it):
    /// how long a killed node's charge points stay claimed by it.
    #[arg(long = "cluster-ttl-s", value_name = "N", requires = "redis", value_parser = clap::value_parser!(u64).range(1..))]
    cluster_ttl_s: Option<u64>,
}

/// `--admin`: an address or `off`.
#[derive(Debug, Clone, Copy)]
struct AdminAddr(Option<SocketAddr>);

fn admin_addr(text: &str) -> Result<AdminAddr, String> {
    match text {
        "off" | "none" => Ok(AdminAddr(None)),
        addr => addr
            .parse()
            .map(|addr| AdminAddr(Some(addr)))
            .map_err(|e| format!("{e} (an address such as 127.0.0.1:9001, or off)")),
    }
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

impl Cli {
    fn into_args(self, admin_tokens: Option<Secret>) -> Args {
        let deflate = match self.deflate {
            Deflate::Off => DeflatePolicy::Off,
            Deflate::NoContext => DeflatePolicy::Accept(DeflateConfig::default()),
            Deflate::Context => DeflatePolicy::Accept(
                DeflateConfig::default()
                    .server_no_context_takeover(false)
                    .client_no_context_takeover(false),
            ),
        };
        Args {
            listen: self.listen,
            admin: self.admin.0,
            admin_token_file: self.admin_token_file,
            admin_tokens,
            metrics_public: self.metrics_public,
            admin_hosts: self.admin_host,
            admin_limits: {
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
            },
            handshake_timeout: self.handshake_timeout_ms.map(Duration::from_millis),
            database: match self.database.as_str() {
                "memory" | "none" | "off" => None,
                url => Some(url.to_owned()),
            },
            threads: usize::from(self.threads),
            shards: usize::from(self.shards.unwrap_or(self.threads)),
            push_interval: self.push_interval_ms.map(Duration::from_millis),
            capture: self.capture,
            basic_auth: self.basic_auth,
            tls_cert: self.tls_cert,
            tls_key: self.tls_key,
            tls_backend: self.tls_backend,
            client_ca: self.client_ca,
            security_profiles: self.security_profiles,
            ca_cert: self.ca_cert,
            ca_key: self.ca_key,
            deflate,
            tokens: self.tokens,
            v2g_root: self.v2g_root,
            mo_root: self.mo_root,
            ocsp_responder: self.ocsp_responder,
            contract_certificate_service: self.contract_certificate_service,
            master_pass: self.master_pass,
            boot_policy: self.boot_policy,
            data_transfer_vendors: self.data_transfer_vendors,
            items_per_message: self.items_per_message.map(|n| n as usize),
            tariff: (self.price_per_kwh.is_some() || self.price_per_hour.is_some()).then(|| {
                Tariff::new(
                    self.price_per_kwh.unwrap_or(Price::ZERO),
                    self.price_per_hour.unwrap_or(Price::ZERO),
                    self.currency,
                )
            }),
            cost_updated_interval: Duration::from_secs(self.cost_updated_interval),
            no_common_version: match self.no_common_version {
                CommonVersion::AcceptThenClose => NoCommonVersion::AcceptThenClose,
                CommonVersion::Reject400 => NoCommonVersion::Reject400,
            },
            redis: self.redis,
            node_id: self.node_id,
            cluster_ttl: self.cluster_ttl_s.map(Duration::from_secs),
            call_timeout: self.call_timeout_s.map(Duration::from_secs),
            site_limit: SiteLimit::new(self.site_limit_amps, self.site_limit_watts)
                .unwrap_or_default(),
        }
    }
}

/// The parsed command line.
#[derive(Debug)]
pub struct Args {
    /// `--listen`.
    pub listen: SocketAddr,
    /// `--admin`; `None` for `off`.
    pub admin: Option<SocketAddr>,
    /// `--admin-token-file` (or `OCPP_ADMIN_TOKEN_FILE`).
    pub admin_token_file: Option<PathBuf>,
    /// [`ADMIN_TOKENS_ENV`]: tokens, one per line.
    pub admin_tokens: Option<Secret>,
    /// `--metrics-public`.
    pub metrics_public: bool,
    /// `--admin-host` (each time given).
    pub admin_hosts: Vec<String>,
    /// `--admin-max-connections`, `--admin-header-timeout-ms`, `--admin-body-timeout-ms`.
    pub admin_limits: AdminLimits,
    /// `--handshake-timeout-ms`.
    pub handshake_timeout: Option<Duration>,
    /// `--database` (or `OCPP_DATABASE_URL`); `None` for `memory`.
    pub database: Option<String>,
    /// `--threads`.
    pub threads: usize,
    /// `--shards` (tokio-server), `--threads` when not given.
    pub shards: usize,
    /// `--push-interval-ms`.
    pub push_interval: Option<Duration>,
    /// `--basic-auth`.
    pub basic_auth: Option<PathBuf>,
    /// `--tls-cert` (each time given).
    pub tls_cert: Vec<PathBuf>,
    /// `--tls-key` (each time given, in the order of `tls_cert`).
    pub tls_key: Vec<PathBuf>,
    /// `--tls-backend`.
    pub tls_backend: TlsBackend,
    /// `--client-ca`.
    pub client_ca: Option<PathBuf>,
    /// `--security-profiles`.
    pub security_profiles: Option<PathBuf>,
    /// `--ca-cert`.
    pub ca_cert: Option<PathBuf>,
    /// `--ca-key`.
    pub ca_key: Option<PathBuf>,
    /// `--deflate`.
    pub deflate: DeflatePolicy,
    /// `--tokens`.
    pub tokens: Option<PathBuf>,
    /// `--v2g-root`.
    pub v2g_root: Option<PathBuf>,
    /// `--mo-root`.
    pub mo_root: Option<PathBuf>,
    /// `--ocsp-responder`.
    pub ocsp_responder: Option<String>,
    /// `--contract-certificate-service`.
    pub contract_certificate_service: Option<String>,
    /// `--master-pass`.
    pub master_pass: Option<String>,
    /// `--boot-policy`.
    pub boot_policy: BootPolicy,
    /// `--data-transfer-vendor` (empty: the default).
    pub data_transfer_vendors: Vec<String>,
    /// `--items-per-message`: the split limit for stations that did not report theirs.
    pub items_per_message: Option<usize>,
    /// `--price-per-kwh`, `--price-per-hour`, `--currency`: the default tariff (`None`
    /// without a price).
    pub tariff: Option<Tariff>,
    /// `--cost-updated-interval`.
    pub cost_updated_interval: Duration,
    /// `--no-common-version`.
    pub no_common_version: NoCommonVersion,
    /// `--redis` (or `OCPP_REDIS_URL`): the cluster's Redis URL; `None`: a single process.
    pub redis: Option<String>,
    /// `--node-id`: this node's id in the cluster.
    pub node_id: Option<String>,
    /// `--cluster-ttl-s`: the claim and node record TTL.
    pub cluster_ttl: Option<Duration>,
    /// `--call-timeout-s`: the connections' call timeout.
    pub call_timeout: Option<Duration>,
    /// `--site-limit-amps`, `--site-limit-watts` (none: no limit).
    pub site_limit: SiteLimit,
    /// `--capture`: the capture file.
    pub capture: Option<PathBuf>,
}

impl Args {
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

/// Why a server does not start with these arguments.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The TLS files could not be read or used.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The admin tokens could not be loaded.
    #[error(transparent)]
    AdminTokens(#[from] AdminAuthError),
    /// The admin interface would answer other hosts without a token.
    #[error(
        "the admin interface on {0} can be reached from other hosts and has no token: give \
         --admin-token-file FILE (or {ADMIN_TOKENS_ENV}), or an address on loopback (e.g. \
         --admin 127.0.0.1:9001)"
    )]
    AdminExposed(SocketAddr),
    /// The capture file could not be opened.
    #[error("--capture {path}: {source}")]
    Capture {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Who may use the admin interface: the tokens of `--admin-token-file` and
/// [`ADMIN_TOKENS_ENV`], `--metrics-public`.
///
/// # Errors
/// A token file that cannot be read, a bad token, an admin address beyond loopback with no
/// token.
pub fn admin_auth(args: &Args) -> Result<AdminAuth, StartError> {
    let mut auth = match &args.admin_token_file {
        Some(path) => AdminAuth::load(path)?,
        None => AdminAuth::open(),
    };
    if let Some(Secret(tokens)) = &args.admin_tokens {
        // Set but holding no token (empty, blanks, comments): refused as an empty token
        // file is, rather than read as "no tokens" and left open without a word.
        let before = auth.len();
        auth.add_lines(ADMIN_TOKENS_ENV, tokens)?;
        if auth.len() == before {
            return Err(AdminAuthError::Empty(ADMIN_TOKENS_ENV.to_owned()).into());
        }
    }
    if let Some(admin) = args.admin {
        if auth.is_open() && !admin.ip().is_loopback() {
            return Err(StartError::AdminExposed(admin));
        }
        if !auth.is_open() {
            tracing::info!(
                tokens = auth.len(),
                "admin interface: bearer tokens required"
            );
        }
    }
    Ok(auth.metrics_public(args.metrics_public))
}

/// The whole server configuration from the command line, as both servers take it.
///
/// # Errors
/// The TLS files could not be read or used; [`admin_auth`]'s errors.
pub fn server_config(args: &Args) -> Result<ServerConfig, StartError> {
    let mut config = ServerConfig::new(args.listen);
    config.admin = args.admin;
    config.admin_auth = admin_auth(args)?;
    config.admin_hosts = args.admin_hosts.clone();
    config.admin_limits = args.admin_limits;
    config.threads = args.threads;
    config.shards = args.shards;
    config.push_interval = args.push_interval;
    config.connection = connection_config(args);
    config.tls = tls_config(args)?;
    config.cluster = cluster_config(args);
    config.capture = capture(args)?;
    Ok(config)
}

/// The capture of `--capture`: the file opened for appending (created if missing).
///
/// # Errors
/// [`StartError::Capture`] when it cannot be opened.
pub fn capture(args: &Args) -> Result<Option<CaptureFile>, StartError> {
    let Some(path) = &args.capture else {
        return Ok(None);
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|source| StartError::Capture {
            path: path.display().to_string(),
            source,
        })?;
    tracing::info!(path = %path.display(), "capturing every message");
    Ok(Some(Arc::new(CaptureRecorder::new(file))))
}

/// The cluster node of `--redis`, `--node-id` and `--cluster-ttl-s` (the admin address is
/// the node record's informative address); `None` without `--redis`.
pub fn cluster_config(args: &Args) -> Option<ClusterConfig> {
    let (Some(redis), Some(node_id)) = (&args.redis, &args.node_id) else {
        return None;
    };
    let mut cluster = ClusterConfig::new(redis.as_str(), node_id.as_str());
    if let Some(admin) = args.admin {
        cluster = cluster.with_address(format!("http://{admin}"));
    }
    if let Some(ttl) = args.cluster_ttl {
        cluster = cluster.with_claim_ttl(ttl).with_node_ttl(ttl);
    }
    tracing::info!(node_id, redis = %ocpp_reference_csms::store::without_password(redis), "cluster node");
    Some(cluster)
}

/// Logs to stderr, filtered by `RUST_LOG` (default `info`).
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

/// The CSMS application for these arguments (credentials loaded from `--basic-auth`, state
/// from `--database`, whose settings it then follows: [`Csms::follow_store`]).
pub fn csms(args: &Args) -> Result<Arc<Csms>, Box<dyn std::error::Error>> {
    let mut credentials = match &args.basic_auth {
        Some(path) => {
            let credentials = Credentials::load(path)?;
            tracing::info!(
                identities = credentials.len(),
                "Basic authentication required"
            );
            Some(credentials)
        }
        None => None,
    };
    if let Some(path) = &args.security_profiles {
        let store = credentials.get_or_insert_with(Credentials::default);
        store.load_profiles(path)?;
        tracing::info!("security profiles per station");
    }
    if args.certificates_required() {
        tracing::info!("client certificates required (security profile 3)");
    }
    let certificate_authority = match (&args.ca_cert, &args.ca_key) {
        (Some(cert), Some(key)) => {
            let ca = CertificateAuthority::load(cert, key)?;
            tracing::info!(ca = %cert.display(), "SignCertificate: CSRs signed by this CA");
            Some(Arc::new(ca))
        }
        _ => None,
    };
    let tokens = match &args.tokens {
        Some(path) => {
            let tokens = TokenStore::load(path)?.with_master_pass(args.master_pass.clone());
            tracing::info!(tokens = tokens.len(), "token store on");
            Some(tokens)
        }
        // A master pass alone: a store with no other token (every other one is refused).
        None => args
            .master_pass
            .clone()
            .map(|master| TokenStore::default().with_master_pass(Some(master))),
    };
    let mut config = CsmsConfig::default()
        .plug_and_charge(plug_and_charge(args)?)
        .credentials(credentials)
        .client_certificates(args.certificates_required())
        .certificate_authority(certificate_authority)
        .tokens(tokens)
        .boot_policy(args.boot_policy)
        .items_per_message(args.items_per_message)
        .tariff(args.tariff)
        .cost_updated_interval(args.cost_updated_interval)
        .site_limit(args.site_limit);
    if let Some(tariff) = args.tariff {
        tracing::info!(%tariff, "default tariff: cost sent to OCPP 2.x stations");
    }
    if !args.data_transfer_vendors.is_empty() {
        config = config.data_transfer_vendors(args.data_transfer_vendors.clone());
    }
    if let Some(url) = &args.database {
        let store = SqlStore::open(url)?;
        tracing::info!(database = store.describe(), "state kept in the database");
        config = config.store(Some(Arc::new(store)));
    } else {
        tracing::info!("--database memory: nothing is kept across a restart");
    }
    let csms = Arc::new(Csms::open(config)?);
    Csms::follow_store(&csms);
    Ok(csms)
}

/// The Plug & Charge settings of `--v2g-root`, `--mo-root`, `--ocsp-responder` and
/// `--contract-certificate-service`.
fn plug_and_charge(args: &Args) -> Result<PlugAndCharge, PlugAndChargeError> {
    let roots = |path: &Option<PathBuf>| match path {
        Some(path) => PlugAndCharge::load_roots(path),
        None => Ok(Vec::new()),
    };
    let v2g_roots = roots(&args.v2g_root)?;
    let mo_roots = roots(&args.mo_root)?;
    if !v2g_roots.is_empty() || !mo_roots.is_empty() || args.ocsp_responder.is_some() {
        tracing::info!(
            v2g_roots = v2g_roots.len(),
            mo_roots = mo_roots.len(),
            ocsp_responder = args.ocsp_responder.as_deref(),
            "Plug & Charge: OCSP checks"
        );
    }
    if let Some(url) = &args.contract_certificate_service {
        tracing::info!(%url, "Get15118EVCertificate forwarded to the contract-certificate service");
    }
    Ok(PlugAndCharge::default()
        .v2g_roots(v2g_roots)
        .mo_roots(mo_roots)
        .ocsp(OcspClient::new(args.ocsp_responder.clone(), ocsp::TIMEOUT))
        .contract_service(args.contract_certificate_service.clone()))
}

/// The TLS configuration of `--tls-backend`, `--tls-cert`, `--tls-key` and `--client-ca`;
/// `None` without `--tls-cert` (plain `ws://`). Client certificates are verified against
/// `--client-ca` and `--ca-cert` (the CA that signs the stations' CSRs); required with
/// `--client-ca` alone, optional with `--basic-auth` or `--security-profiles` (or with
/// `--ca-cert` alone). rustls takes one certificate; OpenSSL one per key type (RSA, ECDSA).
pub fn tls_config(args: &Args) -> Result<Option<ServerTls>, TlsError> {
    if args.tls_cert.is_empty() {
        return Ok(None);
    }
    // clap pairs them: each --tls-cert requires a --tls-key; extra keys are refused here.
    let identities: Vec<(&std::path::Path, &std::path::Path)> = args
        .tls_cert
        .iter()
        .map(PathBuf::as_path)
        .zip(args.tls_key.iter().map(PathBuf::as_path))
        .collect();
    let signing_ca = match &args.ca_cert {
        Some(path) => tls::load_certificates(path)?,
        None => Vec::new(),
    };
    let files: Vec<&std::path::Path> = args.client_ca.iter().map(PathBuf::as_path).collect();
    let asks_certificates = !(files.is_empty() && signing_ca.is_empty());
    let config = match args.tls_backend {
        TlsBackend::Rustls => {
            let (Some((cert, key)), true) = (
                identities.first(),
                identities.len() == 1 && args.tls_key.len() == 1,
            ) else {
                return Err(TlsError::TooManyCertificates {
                    backend: "rustls",
                    at_most: 1,
                });
            };
            let client_certificates = if !asks_certificates {
                ClientCertificates::None
            } else if args.certificates_required() {
                ClientCertificates::Required(tls::roots(&files, &signing_ca)?)
            } else {
                ClientCertificates::Optional(tls::roots(&files, &signing_ca)?)
            };
            ServerTls::Rustls(tls::server_config_with(cert, key, client_certificates)?)
        }
        TlsBackend::OpenSsl => openssl_config(args, &identities, &files, signing_ca)?,
    };
    tracing::info!(
        backend = ?args.tls_backend,
        cert = ?args.tls_cert,
        client_ca = args.client_ca.as_ref().map(|p| p.display().to_string()),
        "TLS on (wss://)"
    );
    Ok(Some(config))
}

/// The OpenSSL side of [`tls_config`].
#[cfg(feature = "openssl")]
fn openssl_config(
    args: &Args,
    identities: &[(&std::path::Path, &std::path::Path)],
    files: &[&std::path::Path],
    mut client_cas: Vec<rustls::pki_types::CertificateDer<'static>>,
) -> Result<ServerTls, TlsError> {
    use crate::tls::openssl::{server_config, ClientCertificatePolicy};
    if identities.len() > 2 || args.tls_key.len() != identities.len() {
        return Err(TlsError::TooManyCertificates {
            backend: "openssl",
            at_most: 2,
        });
    }
    for file in files {
        client_cas.extend(tls::load_certificates(file)?);
    }
    let policy = if client_cas.is_empty() {
        ClientCertificatePolicy::None
    } else if args.certificates_required() {
        ClientCertificatePolicy::Required
    } else {
        ClientCertificatePolicy::Optional
    };
    Ok(ServerTls::OpenSsl(server_config(
        identities,
        &client_cas,
        policy,
    )?))
}

/// Without the cargo feature `openssl` there is no OpenSSL backend.
#[cfg(not(feature = "openssl"))]
fn openssl_config(
    _: &Args,
    _: &[(&std::path::Path, &std::path::Path)],
    _: &[&std::path::Path],
    _: Vec<rustls::pki_types::CertificateDer<'static>>,
) -> Result<ServerTls, TlsError> {
    Err(TlsError::BackendNotBuilt("openssl"))
}

/// The connection settings both servers use: pings detect dead links, and charge points that
/// only send a Heartbeat every 300 s must not be dropped as idle, so the idle timeout is off.
/// Closing waits at most 3 s for the peer. `--no-common-version` decides what a client that
/// offers no subprotocol we speak gets.
pub fn connection_config(args: &Args) -> ConnectionConfig {
    let config = ConnectionConfig::default()
        .idle_timeout(None)
        .close_timeout(Duration::from_secs(3))
        .deflate(args.deflate.clone())
        .no_common_version(args.no_common_version);
    let config = match args.handshake_timeout {
        Some(timeout) => config.handshake_timeout(timeout),
        None => config,
    };
    match args.call_timeout {
        Some(timeout) => config.call_timeout(timeout),
        None => config,
    }
}

/// Raises the soft limit of open files to the hard limit: each connection is a descriptor.
pub fn raise_open_files_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    let before = limit.current;
    if limit.current != limit.maximum {
        limit.current = limit.maximum;
        if let Err(e) = setrlimit(Resource::Nofile, limit) {
            tracing::warn!("cannot raise RLIMIT_NOFILE: {e}");
            return;
        }
    }
    tracing::info!(from = ?before, to = ?limit.maximum, "open files limit");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        let command = command("server", "A test server.", "threads");
        // Nothing written to the working directory: memory unless a test says otherwise.
        let defaults = ["server", "--database", "memory"];
        args_from(command, defaults.into_iter().chain(args.iter().copied()))
    }

    #[test]
    fn capture_opens_its_file_for_appending_and_none_without() {
        let args = parse(&[]).unwrap();
        assert!(args.capture.is_none());
        assert!(capture(&args).unwrap().is_none());
        let path = std::env::temp_dir().join(format!("server-cli-{}.jsonl", std::process::id()));
        std::fs::write(&path, "kept\n").unwrap();
        let args = parse(&["--capture", path.to_str().unwrap()]).unwrap();
        assert_eq!(args.capture.as_deref(), Some(path.as_path()));
        let recorder = capture(&args).unwrap().expect("a recorder");
        recorder.record_text(
            "CP1",
            ocpp_messages::OcppVersion::V1_6,
            ocpp_cli::capture::Direction::In,
            "[2,\"1\",\"Heartbeat\",{}]".into(),
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert!(text.starts_with("kept\n{"), "{text}");
        let missing = parse(&["--capture", "/nonexistent-dir/capture.jsonl"]).unwrap();
        assert!(matches!(capture(&missing), Err(StartError::Capture { .. })));
    }

    #[test]
    fn defaults_and_flags() {
        let args = parse(&[]).unwrap();
        assert_eq!(args.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(args.admin.unwrap().to_string(), DEFAULT_ADMIN);
        let args = parse(&[
            "--listen=127.0.0.1:0",
            "--admin",
            "off",
            "--threads",
            "2",
            "--push-interval-ms",
            "500",
        ])
        .unwrap();
        assert_eq!(args.listen.port(), 0);
        assert!(args.admin.is_none());
        assert_eq!(args.threads, 2);
        assert_eq!(args.shards, 2, "one shard per thread unless told");
        assert_eq!(args.push_interval, Some(Duration::from_millis(500)));
        assert_eq!(parse(&["--shards", "0"]).unwrap().shards, 0);
        assert_eq!(
            parse(&["--threads", "3", "--shards", "8"]).unwrap().shards,
            8
        );
        assert!(parse(&["--shards", "x"]).is_err());
        let help = parse(&["--help"]).unwrap_err();
        assert_eq!(help.kind(), clap::error::ErrorKind::DisplayHelp);
        assert!(parse(&["--threads", "0"]).is_err());
        assert!(parse(&["--bogus"]).is_err());
        assert!(parse(&["--listen"]).is_err());
        let twice = parse(&["--listen", "127.0.0.1:1", "--listen=127.0.0.1:2"]).unwrap();
        assert_eq!(twice.listen.port(), 2, "the last one counts");
        let vendors = parse(&["--data-transfer-vendor=a", "--data-transfer-vendor=b"]).unwrap();
        assert_eq!(
            vendors.data_transfer_vendors,
            ["a", "b"],
            "repeatable, all kept"
        );
        let args = parse(&["--redis", "redis://127.0.0.1:6379/", "--node-id=a"]).unwrap();
        assert_eq!(args.redis.as_deref(), Some("redis://127.0.0.1:6379/"));
        assert_eq!(args.node_id.as_deref(), Some("a"));
        assert!(parse(&["--redis", "redis://127.0.0.1/"]).is_err());
        assert!(parse(&["--node-id", "a"]).is_err());
        let args = parse(&["--redis=redis://r/", "--node-id=b", "--cluster-ttl-s", "3"]).unwrap();
        assert_eq!(args.cluster_ttl, Some(Duration::from_secs(3)));
        let cluster = cluster_config(&args).unwrap();
        assert_eq!(cluster.node_id, "b");
        assert_eq!(cluster.claim_ttl, Duration::from_secs(3));
        assert_eq!(cluster.address, format!("http://{DEFAULT_ADMIN}"));
        assert!(parse(&["--cluster-ttl-s", "3"]).is_err());
        assert!(parse(&["--redis=redis://r/", "--node-id=b", "--cluster-ttl-s=0"]).is_err());
    }

    #[test]
    fn csms_flags() {
        let args = parse(&[]).unwrap();
        assert_eq!(args.boot_policy, BootPolicy::Accepted);
        assert_eq!(
            connection_config(&args).get_no_common_version(),
            NoCommonVersion::AcceptThenClose
        );
        let args = parse(&[
            "--boot-policy",
            "pending",
            "--no-common-version=reject-400",
            "--master-pass",
            "MASTER",
            "--data-transfer-vendor",
            "acme",
            "--data-transfer-vendor",
            "other",
            "--items-per-message=4",
            "--site-limit-amps=32",
        ])
        .unwrap();
        assert_eq!(args.boot_policy, BootPolicy::Pending);
        assert_eq!(
            connection_config(&args).get_no_common_version(),
            NoCommonVersion::Reject400
        );
        assert_eq!(args.data_transfer_vendors, ["acme", "other"]);
        let app = super::csms(&args).unwrap();
        assert_eq!(app.config().get_boot_policy(), BootPolicy::Pending);
        assert_eq!(app.config().get_items_per_message(), Some(4));
        assert_eq!(
            app.config().get_site_limit(),
            SiteLimit::new(Some(32.0), None).unwrap()
        );
        assert_eq!(app.tokens().unwrap().master_pass(), Some("MASTER"));
        assert_eq!(app.config().get_tariff(), None);
        assert_eq!(
            app.config().get_cost_updated_interval(),
            Duration::from_secs(60)
        );
        let args = parse(&[
            "--price-per-kwh",
            "0.25",
            "--currency=USD",
            "--cost-updated-interval",
            "0",
        ])
        .unwrap();
        let tariff = Tariff::parse("0.25", "0", "USD").unwrap();
        assert_eq!(args.tariff, Some(tariff));
        let app = super::csms(&args).unwrap();
        assert_eq!(app.config().get_tariff(), Some(tariff));
        assert_eq!(app.config().get_cost_updated_interval(), Duration::ZERO);
        let args = parse(&["--price-per-hour", "1.5"]).unwrap();
        assert_eq!(args.tariff, Some(Tariff::parse("0", "1.5", "EUR").unwrap()));
        for bad in [
            &["--boot-policy", "maybe"][..],
            &["--no-common-version", "close"],
            &["--master-pass", ""],
            &["--items-per-message", "0"],
            &["--items-per-message", "x"],
            &["--price-per-kwh", "-1"],
            &["--price-per-kwh", "0.12345"],
            &["--price-per-hour", "x"],
            &["--currency", "euro"],
            &["--cost-updated-interval", "-1"],
            &["--site-limit-amps", "0"],
            &["--site-limit-watts", "-5"],
            &["--site-limit-watts", "inf"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let dir = std::env::temp_dir().join(format!("server-cli-tokens-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("tokens.txt");
        std::fs::write(&file, "TAG1 Accepted\nTAG2 Blocked G\n").unwrap();
        let args = parse(&["--tokens", file.to_str().unwrap()]).unwrap();
        assert_eq!(super::csms(&args).unwrap().tokens().unwrap().len(), 2);
        std::fs::write(&file, "TAG1 Sometimes\n").unwrap();
        let error = super::csms(&args).unwrap_err().to_string();
        assert!(error.contains("line 1"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn tls_flags_go_together() {
        let args = parse(&[
            "--tls-cert",
            "c.pem",
            "--tls-key=k.pem",
            "--client-ca",
            "ca.pem",
        ])
        .unwrap();
        assert_eq!(args.tls_cert, [PathBuf::from("c.pem")]);
        assert_eq!(args.tls_key, [PathBuf::from("k.pem")]);
        assert_eq!(args.tls_backend, TlsBackend::Rustls);
        assert_eq!(args.client_ca.unwrap(), PathBuf::from("ca.pem"));
        for bad in [
            &["--tls-cert", "c.pem"][..],
            &["--tls-key", "k.pem"],
            &["--client-ca", "ca.pem"],
            &["--ca-cert", "ca.pem"],
            &["--ca-key", "ca.key"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        // Profiles per station: client certificates become optional.
        let mixed = parse(&[
            "--tls-cert",
            "c",
            "--tls-key",
            "k",
            "--client-ca",
            "ca",
            "--basic-auth",
            "p",
        ])
        .unwrap();
        assert!(!mixed.certificates_required());
        let alone = parse(&["--tls-cert", "c", "--tls-key", "k", "--client-ca", "ca"]);
        assert!(alone.unwrap().certificates_required());
        let args = parse(&["--tls-cert", "c", "--tls-key", "k", "--basic-auth", "p"]);
        assert!(args.is_ok(), "profile 2");
    }

    #[test]
    fn tls_backend_and_certificates_per_backend() {
        let pair = |n: &str| {
            [
                "--tls-cert".to_owned(),
                format!("{n}.pem"),
                "--tls-key".to_owned(),
                format!("{n}.key"),
            ]
        };
        let with = |pairs: &[&str], more: &[&str]| {
            let mut args: Vec<String> = pairs.iter().flat_map(|n| pair(n)).collect();
            args.extend(more.iter().map(|s| (*s).to_owned()));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            parse(&args)
        };
        let both = with(&["rsa", "ecdsa"], &["--tls-backend", "openssl"]).unwrap();
        assert_eq!(both.tls_backend, TlsBackend::OpenSsl);
        assert_eq!(
            both.tls_cert,
            [PathBuf::from("rsa.pem"), PathBuf::from("ecdsa.pem")]
        );
        assert_eq!(
            both.tls_key,
            [PathBuf::from("rsa.key"), PathBuf::from("ecdsa.key")]
        );
        assert!(with(&["rsa"], &["--tls-backend", "gnutls"]).is_err());
        // rustls takes one certificate, OpenSSL one per key type: refused before any file is
        // read.
        let error = tls_config(&with(&["rsa", "ecdsa"], &[]).unwrap()).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("--tls-backend rustls takes at most 1"),
            "{error}"
        );
        let three = with(&["a", "b", "c"], &["--tls-backend", "openssl"]).unwrap();
        let error = tls_config(&three).unwrap_err();
        if cfg!(feature = "openssl") {
            assert!(
                error
                    .to_string()
                    .contains("--tls-backend openssl takes at most 2"),
                "{error}"
            );
        } else {
            assert!(
                matches!(error, TlsError::BackendNotBuilt("openssl")),
                "{error}"
            );
        }
    }

    #[test]
    fn ca_and_profile_files() {
        let dir = std::env::temp_dir().join(format!("server-cli-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        std::fs::write(dir.join("ca.pem"), params.self_signed(&key).unwrap().pem()).unwrap();
        std::fs::write(dir.join("ca.key"), key.serialize_pem()).unwrap();
        std::fs::write(dir.join("profiles"), "CP001 3\n").unwrap();
        let path = |file: &str| dir.join(file).to_str().unwrap().to_owned();
        let args = parse(&[
            "--ca-cert",
            &path("ca.pem"),
            "--ca-key",
            &path("ca.key"),
            "--security-profiles",
            &path("profiles"),
        ])
        .unwrap();
        let app = super::csms(&args).unwrap();
        let cp001 = ocpp_proto::ChargePointIdentity::new("CP001".into(), false).unwrap();
        assert_eq!(
            app.security_profile(&cp001).0,
            Some(ocpp_reference_csms::SecurityProfile::TlsClientCertificate)
        );
        let mut bad = args;
        bad.ca_key = Some(dir.join("missing.key"));
        let error = super::csms(&bad).unwrap_err().to_string();
        assert!(error.contains("missing.key: cannot read"), "{error}");
        std::fs::write(dir.join("profiles"), "CP001 three\n").unwrap();
        let error = super::csms(&bad).unwrap_err().to_string();
        assert!(error.contains("line 1"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn pem_errors_name_the_file() {
        let dir = std::env::temp_dir().join(format!("server-cli-pem-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let args = |cert: &std::path::Path| Args {
            tls_cert: vec![cert.to_owned()],
            tls_key: vec![cert.to_owned()],
            ..parse(&[]).unwrap()
        };
        let error = tls_config(&args(&empty)).unwrap_err().to_string();
        assert!(
            error.contains("empty.pem: no PEM certificate found"),
            "{error}"
        );
        let error = tls_config(&args(&dir.join("missing.pem")))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("missing.pem: cannot read the PEM certificate"),
            "{error}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_admin_interface_beyond_loopback_needs_a_token() {
        let exposed = parse(&["--admin", "0.0.0.0:9001"]).unwrap();
        let error = admin_auth(&exposed).unwrap_err();
        assert!(matches!(error, StartError::AdminExposed(_)), "{error}");
        assert!(error.to_string().contains("--admin-token-file"), "{error}");
        assert!(server_config(&exposed).is_err());
        let exposed_v6 = parse(&["--admin", "[::]:9001"]).unwrap();
        assert!(admin_auth(&exposed_v6).is_err());
        // Loopback, or no admin interface at all: open is fine.
        assert!(admin_auth(&parse(&["--admin", "[::1]:9001"]).unwrap())
            .unwrap()
            .is_open());
        assert!(admin_auth(&parse(&["--admin", "off"]).unwrap())
            .unwrap()
            .is_open());
        // Tokens from the environment variable's text count.
        let with_env = Args {
            admin_tokens: Some(Secret("# ops\nan-operator-token-1\n".into())),
            ..parse(&["--admin", "0.0.0.0:9001"]).unwrap()
        };
        assert_eq!(admin_auth(&with_env).unwrap().len(), 1);
        for empty in ["", "  \n", "# none\n\n"] {
            let empty_env = Args {
                admin_tokens: Some(Secret(empty.into())),
                ..parse(&["--admin", "127.0.0.1:9001"]).unwrap()
            };
            let error = admin_auth(&empty_env).unwrap_err().to_string();
            assert!(error.contains(ADMIN_TOKENS_ENV), "{empty:?}: {error}");
        }
        let bad_env = Args {
            admin_tokens: Some(Secret("short\n".into())),
            ..parse(&[]).unwrap()
        };
        let error = admin_auth(&bad_env).unwrap_err().to_string();
        assert!(
            error.contains(ADMIN_TOKENS_ENV) && error.contains("line 1"),
            "{error}"
        );
        assert!(!format!("{with_env:?}").contains("an-operator-token-1"));
    }

    #[test]
    fn admin_token_file_and_metrics_public() {
        let dir = std::env::temp_dir().join(format!("server-cli-admin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("admin-tokens");
        std::fs::write(&file, "an-operator-token-1\nan-operator-token-2\n").unwrap();
        let path = file.to_str().unwrap();
        let args = parse(&["--admin=0.0.0.0:9001", "--admin-token-file", path]).unwrap();
        let auth = admin_auth(&args).unwrap();
        assert_eq!(auth.len(), 2);
        let metrics =
            ocpp_reference_csms::admin::AdminRequest::parse(b"GET /metrics HTTP/1.1\r\n\r\n")
                .unwrap()
                .unwrap()
                .0;
        assert!(auth.check(&metrics).is_err());
        let args = parse(&["--admin-token-file", path, "--metrics-public"]).unwrap();
        assert!(admin_auth(&args).unwrap().check(&metrics).is_ok());
        let args = parse(&["--admin-token-file", dir.join("none").to_str().unwrap()]).unwrap();
        let error = admin_auth(&args).unwrap_err().to_string();
        assert!(error.contains("cannot read the admin tokens"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_help_names_every_option() {
        let help = command("mio-server", "A CSMS on mio.", "event loops")
            .render_help()
            .to_string();
        for option in [
            "--listen",
            "--admin ",
            "--admin-token-file",
            "OCPP_ADMIN_TOKENS",
            "--metrics-public",
            "--database",
            "OCPP_DATABASE_URL",
            "--threads",
            "event loops",
            "--push-interval-ms",
            "--basic-auth",
            "--tls-cert",
            "--tls-key",
            "--client-ca",
            "--security-profiles",
            "--ca-cert",
            "--ca-key",
            "--deflate",
            "--tokens",
            "--v2g-root",
            "--mo-root",
            "--ocsp-responder",
            "--contract-certificate-service",
            "--master-pass",
            "--boot-policy",
            "--data-transfer-vendor",
            "--items-per-message",
            "--no-common-version",
            "--call-timeout-s",
            "--redis",
            "OCPP_REDIS_URL",
            "--node-id",
            "--cluster-ttl-s",
            "/chargepoints/ID/call/ACTION",
            "mio-server listening on",
        ] {
            assert!(help.contains(option), "{option} missing from\n{help}");
        }
    }

    #[test]
    fn a_redis_password_is_not_logged() {
        assert_eq!(
            ocpp_reference_csms::store::without_password("redis://user:pw@10.0.0.1:6379/"),
            "redis://user:***@10.0.0.1:6379/"
        );
        assert_eq!(
            ocpp_reference_csms::store::without_password("redis+sentinel://:pw@a:1,b:2/svc"),
            "redis+sentinel://:***@a:1,b:2/svc"
        );
        assert_eq!(
            ocpp_reference_csms::store::without_password("redis://r:6379/"),
            "redis://r:6379/"
        );
    }
}
