//! The command line, logging and process limits that `mio-server` and `tokio-server` share:
//! the two servers differ only in their I/O loop.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ocpp_cluster::ClusterConfig;
use ocpp_frame::deflate::DeflateConfig;
use ocpp_server_core::{ConnectionConfig, DeflatePolicy, NoCommonVersion};

use crate::csms::{BootPolicy, CertificateAuthority, Credentials, Csms, CsmsConfig, TokenStore};
use crate::server_config::ServerConfig;
use crate::tls::{self, ClientCertificates, TlsError};

/// Where charge points connect unless `--listen` says otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9000";
/// Where the admin interface listens unless `--admin` says otherwise.
pub const DEFAULT_ADMIN: &str = "127.0.0.1:9001";

/// The usage text of server `name`: `intro` describes its loop, `threads` what `--threads N`
/// means for it.
pub fn usage(name: &str, intro: &str, threads: &str) -> String {
    format!(
        "Usage: {name} [OPTIONS]

{intro} Charge points connect to
ws://LISTEN/<any path>/<identity> (wss:// with --tls-cert) with subprotocol ocpp1.6,
ocpp2.0.1 or ocpp2.1.

Security profiles (OCPP 1.6 security whitepaper, OCPP 2.0.1 part 2 A00):
  1: --basic-auth FILE                                  Basic auth over ws://
  2: --basic-auth FILE --tls-cert FILE --tls-key FILE   Basic auth over wss://
  3: --tls-cert FILE --tls-key FILE --client-ca FILE    client certificates over wss://
  per station, on one wss:// listener: --tls-cert FILE --tls-key FILE --client-ca FILE
     --basic-auth FILE --security-profiles FILE: client certificates are optional at the
     TLS layer and each station's profile decides at the upgrade (401 for credentials
     missing or wrong, e.g. a profile-3 station with a password only; 403 for a certificate
     naming another identity or a profile-2 station on ws://); a station that connected
     with its certificate is held to profile 3 from then on

Options:
  --listen ADDR          address for charge points (default {DEFAULT_LISTEN}; port 0 picks one)
  --admin ADDR|off       admin HTTP interface (default {DEFAULT_ADMIN}; `off` disables it):
                           GET  /chargepoints                       connected charge points (JSON)
                           GET  /chargepoints/ID                    one charge point (JSON)
                           GET  /chargepoints/ID/notifications[/ACTION]  what it reported
                           GET|PUT|DELETE /chargepoints/ID/boot     its boot policy
                                                                    ({{\"status\":\"Pending\"}})
                           GET|PUT|DELETE /chargepoints/ID/security its security profile
                                                                    ({{\"profile\":3}})
                           POST /chargepoints/ID/call/ACTION        send a CALL, JSON payload as body
                           GET  /tokens                             the token store
                           GET|PUT|DELETE /tokens/ID                one token
                                                                    ({{\"status\":\"Blocked\",\"group\":\"G\"}})
                           GET  /metrics                            Prometheus text
  --threads N            {threads} (default 1)
  --push-interval-ms N   every N ms send each charge point a DataTransfer
                         {{\"vendorId\":\"bench\",\"messageId\":\"ts\",\"data\":\"<seq>:<unix_nanos>\"}}
  --basic-auth FILE      require HTTP Basic auth (security profile 1); FILE has lines
                         `identity:password`; others get 401 before the upgrade
  --tls-cert FILE        serve wss:// (TLS 1.2 and 1.3) with this certificate chain (PEM,
                         server certificate first); needs --tls-key
  --tls-key FILE         the private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1)
  --client-ca FILE       verify client certificates against the CAs of FILE (PEM); the
                         certificate's subject CN must be the URL's identity, else the upgrade
                         gets 403 (needs --tls-cert). Alone: every station must present one,
                         else the TLS handshake fails with an alert (profile 3 for all). With
                         --basic-auth or --security-profiles: optional, and each station's
                         profile decides (see above)
  --security-profiles FILE
                         per-station security profiles: lines `identity profile` (1, 2 or
                         3); a station not listed gets profile 1 (2 over TLS: its
                         --basic-auth password) or, with a certificate, 3. Also
                         PUT /chargepoints/ID/security
  --ca-cert FILE         the CA (PEM certificate) that signs the stations' CSRs: SignCertificate
                         (1.6 security, 2.x A02/A03) is Accepted when the CSR parses, its
                         signature verifies, its subject CN is the station's identity and it
                         asks for no CA certificate; CertificateSigned then carries the chain
                         (the new certificate, then FILE). The TLS listener also trusts this CA
                         for client certificates, so a station can use the certificate for
                         profile 3 at its next connection. Needs --ca-key. Without it every
                         SignCertificate is answered Rejected
  --ca-key FILE          the private key of --ca-cert (PEM, PKCS#8)
  --deflate MODE         permessage-deflate (RFC 7692) when a client offers it:
                         `no-context` (default; no context takeover either way, so an idle
                         connection holds no compression state), `context` (context takeover
                         when offered: better ratios, about 430 KB per connection that has
                         compressed both ways) or `off`
  --tokens FILE          answer Authorize, Start/StopTransaction and TransactionEvent from
                         a token store: lines `idToken status [groupIdToken|-] [expiry]`
                         (status Accepted, Blocked, ConcurrentTx, Expired, Invalid, NoCredit,
                         NotAllowedTypeEVSE, NotAtThisLocation, NotAtThisTime or Unknown;
                         expiry RFC 3339); unknown tokens get Invalid (1.6) / Unknown (2.x).
                         Without it every token is Accepted
  --master-pass ID       the master pass group id (OCPP 2.0.1 C16): this token, and tokens
                         of this group, are Accepted with it as groupIdToken (1.6:
                         parentIdTag), so that stations let them stop any transaction;
                         without --tokens, the store holds only the master pass
  --boot-policy POLICY   the answer to BootNotification: accepted (default), pending or
                         rejected; while not accepted a station's other CALLs get
                         SecurityError (per-station: PUT /chargepoints/ID/boot)
  --data-transfer-vendor ID
                         a DataTransfer vendorId this CSMS knows (repeatable; default
                         ocpp-ws): its DataTransfer is Accepted, others get UnknownVendorId
  --items-per-message N  the most getVariableData / setVariableData entries one
                         GetVariables / SetVariables carries for a station that has not
                         reported DeviceDataCtrlr.ItemsPerMessage (default: no limit, one
                         CALL); longer commands are split (OCPP 2.x B05/B06)
  --no-common-version MODE
                         when a client offers no subprotocol we speak: `accept-then-close`
                         (default; OCPP-J 1.6 §3.2, 2.0.1 §3.1.2: complete the handshake
                         without Sec-WebSocket-Protocol, then close) or `reject-400` (refuse
                         the upgrade with 400, which the OCTT cases TC_088_CSMS and
                         TC_B_58_CSMS expect: use it for a compliance run)
  --call-timeout-s N     how long a CALL of ours may wait for its answer once sent, and a
                         command in all (default 30); a command still queued behind another
                         when its time is up is never sent
  --redis URL            join a cluster of nodes on this Redis (redis://HOST:PORT/): charge
                         points are claimed in Redis, a newer connection on another node
                         closes this one (1008), and an admin command for a charge point held
                         by another node is routed there (needs --node-id); with Sentinel,
                         redis+sentinel://[USER:PASS@]HOST:PORT[,HOST:PORT...]/SERVICE[?db=N]:
                         the master the sentinels name, followed through failovers (USER,
                         PASS and db are the data nodes')
  --node-id NAME         this node's id, unique in the cluster (needs --redis)
  --cluster-ttl-s N      the claim and node record TTL in seconds (default 90; refreshed
                         every third of it): how long a killed node's charge points stay
                         claimed by it (needs --redis)
  -h, --help             print this help

Logs go to stderr (RUST_LOG filters them, default `info`: one line per connect and disconnect).
Prints `{name} listening on ADDR (admin on ADDR)` on stdout once it accepts connections.
SIGINT/SIGTERM close every connection with 1001 and exit within a few seconds; a cluster
node (--redis) closes with 1012 and leaves the cluster (releases its claims)."
    )
}

/// The parsed command line.
#[derive(Debug)]
pub struct Args {
    /// `--listen`.
    pub listen: SocketAddr,
    /// `--admin`; `None` for `off`.
    pub admin: Option<SocketAddr>,
    /// `--threads`.
    pub threads: usize,
    /// `--push-interval-ms`.
    pub push_interval: Option<Duration>,
    /// `--basic-auth`.
    pub basic_auth: Option<PathBuf>,
    /// `--tls-cert`.
    pub tls_cert: Option<PathBuf>,
    /// `--tls-key`.
    pub tls_key: Option<PathBuf>,
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
    /// `--master-pass`.
    pub master_pass: Option<String>,
    /// `--boot-policy`.
    pub boot_policy: BootPolicy,
    /// `--data-transfer-vendor` (empty: the default).
    pub data_transfer_vendors: Vec<String>,
    /// `--items-per-message`: the split limit for stations that did not report theirs.
    pub items_per_message: Option<usize>,
    /// `--no-common-version`.
    pub no_common_version: NoCommonVersion,
    /// `--redis`: the cluster's Redis URL; `None`: a single process.
    pub redis: Option<String>,
    /// `--node-id`: this node's id in the cluster.
    pub node_id: Option<String>,
    /// `--cluster-ttl-s`: the claim and node record TTL.
    pub cluster_ttl: Option<Duration>,
    /// `--call-timeout-s`: the connections' call timeout.
    pub call_timeout: Option<Duration>,
}

/// Parses `--flag value` and `--flag=value` by hand: few options, no dependency. `Ok(None)`
/// means `--help`.
pub fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut parsed = Args {
        listen: parse_addr(DEFAULT_LISTEN)?,
        admin: Some(parse_addr(DEFAULT_ADMIN)?),
        threads: 1,
        push_interval: None,
        basic_auth: None,
        tls_cert: None,
        tls_key: None,
        client_ca: None,
        security_profiles: None,
        ca_cert: None,
        ca_key: None,
        deflate: ConnectionConfig::default().get_deflate(),
        tokens: None,
        master_pass: None,
        boot_policy: BootPolicy::Accepted,
        data_transfer_vendors: Vec::new(),
        items_per_message: None,
        no_common_version: NoCommonVersion::AcceptThenClose,
        redis: None,
        node_id: None,
        cluster_ttl: None,
        call_timeout: None,
    };
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg, None),
        };
        if flag == "-h" || flag == "--help" {
            return Ok(None);
        }
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--listen" => parsed.listen = parse_addr(&value()?)?,
            "--admin" => {
                let value = value()?;
                parsed.admin = match value.as_str() {
                    "off" | "none" => None,
                    addr => Some(parse_addr(addr)?),
                };
            }
            "--threads" => {
                parsed.threads = value()?
                    .parse()
                    .ok()
                    .filter(|n| (1..=1024).contains(n))
                    .ok_or("--threads takes a number from 1 to 1024")?;
            }
            "--deflate" => {
                parsed.deflate = match value()?.as_str() {
                    "off" => DeflatePolicy::Off,
                    "no-context" => DeflatePolicy::Accept(DeflateConfig::default()),
                    "context" => DeflatePolicy::Accept(
                        DeflateConfig::default()
                            .server_no_context_takeover(false)
                            .client_no_context_takeover(false),
                    ),
                    other => {
                        return Err(format!(
                            "--deflate takes off, no-context or context, not `{other}`"
                        ))
                    }
                };
            }
            "--push-interval-ms" => {
                let ms: u64 = value()?
                    .parse()
                    .ok()
                    .filter(|ms| *ms > 0)
                    .ok_or("--push-interval-ms takes a positive number")?;
                parsed.push_interval = Some(Duration::from_millis(ms));
            }
            "--basic-auth" => parsed.basic_auth = Some(PathBuf::from(value()?)),
            "--tls-cert" => parsed.tls_cert = Some(PathBuf::from(value()?)),
            "--tls-key" => parsed.tls_key = Some(PathBuf::from(value()?)),
            "--client-ca" => parsed.client_ca = Some(PathBuf::from(value()?)),
            "--security-profiles" => parsed.security_profiles = Some(PathBuf::from(value()?)),
            "--ca-cert" => parsed.ca_cert = Some(PathBuf::from(value()?)),
            "--ca-key" => parsed.ca_key = Some(PathBuf::from(value()?)),
            "--tokens" => parsed.tokens = Some(PathBuf::from(value()?)),
            "--master-pass" => {
                let id = value()?;
                if id.is_empty() || id.chars().count() > 36 {
                    return Err("--master-pass takes an idToken of 1 to 36 characters".into());
                }
                parsed.master_pass = Some(id);
            }
            "--boot-policy" => {
                let policy = value()?;
                parsed.boot_policy = BootPolicy::parse(&policy).ok_or_else(|| {
                    format!("--boot-policy takes accepted, pending or rejected, not `{policy}`")
                })?;
            }
            "--data-transfer-vendor" => {
                let id = value()?;
                if id.is_empty() || id.chars().count() > 255 {
                    return Err("--data-transfer-vendor takes 1 to 255 characters".into());
                }
                parsed.data_transfer_vendors.push(id);
            }
            "--items-per-message" => {
                let n = value()?;
                let n = n.parse::<usize>().ok().filter(|n| *n > 0);
                parsed.items_per_message =
                    Some(n.ok_or("--items-per-message takes a positive integer")?);
            }
            "--no-common-version" => {
                parsed.no_common_version = match value()?.as_str() {
                    "accept-then-close" => NoCommonVersion::AcceptThenClose,
                    "reject-400" => NoCommonVersion::Reject400,
                    other => {
                        return Err(format!(
                            "--no-common-version takes accept-then-close or reject-400, not \
                             `{other}`"
                        ))
                    }
                };
            }
            "--redis" => parsed.redis = Some(value()?),
            "--node-id" => {
                let id = value()?;
                if id.is_empty() {
                    return Err("--node-id takes a non-empty name".into());
                }
                parsed.node_id = Some(id);
            }
            "--cluster-ttl-s" => {
                let seconds: u64 = value()?
                    .parse()
                    .ok()
                    .filter(|s| *s > 0)
                    .ok_or("--cluster-ttl-s takes a positive number of seconds")?;
                parsed.cluster_ttl = Some(Duration::from_secs(seconds));
            }
            "--call-timeout-s" => {
                let seconds: u64 = value()?
                    .parse()
                    .ok()
                    .filter(|s| *s > 0)
                    .ok_or("--call-timeout-s takes a positive number of seconds")?;
                parsed.call_timeout = Some(Duration::from_secs(seconds));
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    match (&parsed.tls_cert, &parsed.tls_key) {
        (Some(_), None) => return Err("--tls-cert needs --tls-key".into()),
        (None, Some(_)) => return Err("--tls-key needs --tls-cert".into()),
        _ => {}
    }
    match (&parsed.redis, &parsed.node_id) {
        (Some(_), None) => return Err("--redis needs --node-id".into()),
        (None, Some(_)) => return Err("--node-id needs --redis".into()),
        _ => {}
    }
    if parsed.cluster_ttl.is_some() && parsed.redis.is_none() {
        return Err("--cluster-ttl-s needs --redis and --node-id".into());
    }
    if parsed.client_ca.is_some() && parsed.tls_cert.is_none() {
        return Err("--client-ca needs --tls-cert and --tls-key".into());
    }
    match (&parsed.ca_cert, &parsed.ca_key) {
        (Some(_), None) => return Err("--ca-cert needs --ca-key".into()),
        (None, Some(_)) => return Err("--ca-key needs --ca-cert".into()),
        _ => {}
    }
    Ok(Some(parsed))
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

fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    text.parse()
        .map_err(|e| format!("invalid address {text:?}: {e}"))
}

/// The whole server configuration from the command line, as both servers take it.
///
/// # Errors
/// The TLS files could not be read or used.
pub fn server_config(args: &Args) -> Result<ServerConfig, TlsError> {
    let mut config = ServerConfig::new(args.listen);
    config.admin = args.admin;
    config.threads = args.threads;
    config.push_interval = args.push_interval;
    config.connection = connection_config(args);
    config.tls = tls_config(args)?;
    config.cluster = cluster_config(args);
    Ok(config)
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
    tracing::info!(node_id, redis, "cluster node");
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

/// The CSMS application for these arguments (credentials loaded from `--basic-auth`).
pub fn csms(args: &Args) -> Result<Csms, Box<dyn std::error::Error>> {
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
        .credentials(credentials)
        .client_certificates(args.certificates_required())
        .certificate_authority(certificate_authority)
        .tokens(tokens)
        .boot_policy(args.boot_policy)
        .items_per_message(args.items_per_message);
    if !args.data_transfer_vendors.is_empty() {
        config = config.data_transfer_vendors(args.data_transfer_vendors.clone());
    }
    Ok(Csms::new(config))
}

/// The TLS configuration of `--tls-cert`, `--tls-key` and `--client-ca`; `None` without
/// `--tls-cert` (plain `ws://`). Client certificates are verified against `--client-ca` and
/// `--ca-cert` (the CA that signs the stations' CSRs); required with `--client-ca` alone,
/// optional with `--basic-auth` or `--security-profiles` (or with `--ca-cert` alone).
pub fn tls_config(args: &Args) -> Result<Option<Arc<rustls::ServerConfig>>, TlsError> {
    let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) else {
        return Ok(None);
    };
    let signing_ca = match &args.ca_cert {
        Some(path) => tls::load_certificates(path)?,
        None => Vec::new(),
    };
    let files: Vec<&std::path::Path> = args.client_ca.iter().map(PathBuf::as_path).collect();
    let client_certificates = if files.is_empty() && signing_ca.is_empty() {
        ClientCertificates::None
    } else if args.certificates_required() {
        ClientCertificates::Required(tls::roots(&files, &signing_ca)?)
    } else {
        ClientCertificates::Optional(tls::roots(&files, &signing_ca)?)
    };
    let config = tls::server_config_with(cert, key, client_certificates)?;
    tracing::info!(
        cert = %cert.display(),
        client_ca = args.client_ca.as_ref().map(|p| p.display().to_string()),
        "TLS on (wss://)"
    );
    Ok(Some(config))
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

    fn parse(args: &[&str]) -> Result<Option<Args>, String> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn defaults_and_flags() {
        let args = parse(&[]).unwrap().unwrap();
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
        .unwrap()
        .unwrap();
        assert_eq!(args.listen.port(), 0);
        assert!(args.admin.is_none());
        assert_eq!(args.threads, 2);
        assert_eq!(args.push_interval, Some(Duration::from_millis(500)));
        assert!(parse(&["--help"]).unwrap().is_none());
        assert!(parse(&["--threads", "0"]).is_err());
        assert!(parse(&["--bogus"]).is_err());
        assert!(parse(&["--listen"]).is_err());
        let args = parse(&["--redis", "redis://127.0.0.1:6379/", "--node-id=a"])
            .unwrap()
            .unwrap();
        assert_eq!(args.redis.as_deref(), Some("redis://127.0.0.1:6379/"));
        assert_eq!(args.node_id.as_deref(), Some("a"));
        assert!(parse(&["--redis", "redis://127.0.0.1/"]).is_err());
        assert!(parse(&["--node-id", "a"]).is_err());
        let args = parse(&["--redis=redis://r/", "--node-id=b", "--cluster-ttl-s", "3"])
            .unwrap()
            .unwrap();
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
        let args = parse(&[]).unwrap().unwrap();
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
        ])
        .unwrap()
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
        assert_eq!(app.tokens().unwrap().master_pass(), Some("MASTER"));
        for bad in [
            &["--boot-policy", "maybe"][..],
            &["--no-common-version", "close"],
            &["--master-pass", ""],
            &["--items-per-message", "0"],
            &["--items-per-message", "x"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let dir = std::env::temp_dir().join(format!("server-cli-tokens-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("tokens.txt");
        std::fs::write(&file, "TAG1 Accepted\nTAG2 Blocked G\n").unwrap();
        let args = parse(&["--tokens", file.to_str().unwrap()])
            .unwrap()
            .unwrap();
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
        .unwrap()
        .unwrap();
        assert_eq!(args.tls_cert.unwrap(), PathBuf::from("c.pem"));
        assert_eq!(args.tls_key.unwrap(), PathBuf::from("k.pem"));
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
        .unwrap()
        .unwrap();
        assert!(!mixed.certificates_required());
        let alone = parse(&["--tls-cert", "c", "--tls-key", "k", "--client-ca", "ca"]);
        assert!(alone.unwrap().unwrap().certificates_required());
        let args = parse(&["--tls-cert", "c", "--tls-key", "k", "--basic-auth", "p"]).unwrap();
        assert!(args.is_some(), "profile 2");
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
        .unwrap()
        .unwrap();
        let app = super::csms(&args).unwrap();
        let cp001 = ocpp_server_core::ChargePointIdentity::new("CP001".into(), false).unwrap();
        assert_eq!(
            app.security_profile(&cp001).0,
            Some(crate::csms::SecurityProfile::TlsClientCertificate)
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
            tls_cert: Some(cert.to_owned()),
            tls_key: Some(cert.to_owned()),
            ..parse(&[]).unwrap().unwrap()
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
}
