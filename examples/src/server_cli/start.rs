//! What a server starts from its [`Args`]: the admin interface's auth, the server config, the
//! capture file, the cluster, the CSMS and its store, TLS, the connection config, logging and
//! the open-files limit.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use ocpp_cli::capture::CaptureRecorder;
use ocpp_cluster::ClusterConfig;
use ocpp_proto::ConnectionConfig;

use crate::server_config::{CaptureFile, ServerConfig};
use crate::tls::{self, ClientCertificates, ServerTls, TlsError};
use ocpp_reference_csms::admin_auth::{AdminAuth, AdminAuthError};
use ocpp_reference_csms::ocsp::{self, OcspClient};
use ocpp_reference_csms::plug_and_charge::{PlugAndCharge, PlugAndChargeError};
use ocpp_reference_csms::store::{SqlStore, Store};
use ocpp_reference_csms::{CertificateAuthority, Credentials, Csms, CsmsConfig, TokenStore};

use super::{Args, Secret, TlsBackend, ADMIN_TOKENS_ENV};

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
    config.admin_limits = args.admin_limits();
    config.threads = args.threads;
    config.shards = args.shards();
    config.accept_rate = args.accept_rate;
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

/// A server process's start: its command line parsed with [`command`](super::command)`(name,
/// intro, threads)` (errors and `--help` exit here, 2 and 0, with the usage or the help), then
/// the logging ([`init_logging`]) and the open-files limit ([`raise_open_files_limit`]).
pub fn start_process(name: &'static str, intro: &'static str, threads: &'static str) -> Args {
    let command = super::command(name, intro, threads);
    let args = super::args_from(command, std::env::args_os()).unwrap_or_else(|e| e.exit());
    init_logging();
    raise_open_files_limit();
    args
}

/// A server process's exit code: success, or failure with the error logged and printed to
/// stderr after `name`.
pub fn exit_code(name: &str, served: Result<(), impl std::fmt::Display>) -> ExitCode {
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Prints the line that says a server runs, which scripts wait for (stdout):
/// `NAME listening on ADDRESS (admin on ADDRESS|off)`.
pub fn announce_listening(name: &str, listen: SocketAddr, admin: Option<SocketAddr>) {
    let admin = admin.map_or_else(|| "off".to_owned(), |addr| addr.to_string());
    println!("{name} listening on {listen} (admin on {admin})");
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
        .tariff(args.tariff())
        .cost_updated_interval(args.cost_updated_interval)
        .site_limit(args.site_limit());
    if let Some(rate) = args.boot_rate {
        config = config.boot_rate(rate);
    }
    if let Some(tariff) = args.tariff() {
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
    let config = match args.ping_interval {
        Some(interval) => config.ping_interval((!interval.is_zero()).then_some(interval)),
        None => config,
    };
    let config = match args.pong_timeout {
        Some(timeout) => config.pong_timeout(timeout),
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
