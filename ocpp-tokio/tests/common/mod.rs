//! What the tests of the server share: a test handler and server, certificates, child
//! processes. Their charge point is `ocpp_test_kit::WireChargePoint`; every wait is bounded.
#![allow(dead_code, unreachable_pub)]

pub mod raw_peer;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ocpp_proto::{ConnectionConfig, OcppVersion};
use ocpp_tokio::rustls;
use ocpp_tokio::{v1_6, v2_0_1, DateTime};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

tokio::task_local! {
    /// The shards of the servers a test starts (`ServerBuilder::shards`): 0, a task per
    /// connection, unless the test runs in [`in_both_layouts!`]'s `sharded` module.
    pub static SHARDS: usize;
}

/// The shard count for a server this test builds (see [`SHARDS`]).
pub fn shards() -> usize {
    SHARDS.try_with(|shards| *shards).unwrap_or(0)
}

/// Runs each named `async fn` as two tests: `task_per_connection::NAME` and
/// `sharded::NAME` (every server it starts through [`TestServer`] or [`shards`] on two
/// shards).
#[macro_export]
macro_rules! in_both_layouts {
    ($($name:ident),* $(,)?) => {
        mod task_per_connection {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name().await
                }
            )*
        }
        mod sharded {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    $crate::common::SHARDS.scope(2, super::$name()).await
                }
            )*
        }
    };
}

/// Every wait of these tests ends within this.
pub const WAIT: Duration = Duration::from_secs(10);

pub fn now_utc() -> DateTime {
    DateTime::from_unix_timestamp(1_780_000_000).unwrap()
}

/// Waits until `condition` holds, polling; panics after [`WAIT`].
pub async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !condition() {
        assert!(Instant::now() < deadline, "not within {WAIT:?}: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A client text frame (masked with a zero key, which leaves the payload as is), for
/// messages the core's client would not write.
pub fn raw_text_frame(text: &str) -> Vec<u8> {
    let payload = text.as_bytes();
    let mut frame = vec![0x81];
    if payload.len() < 126 {
        frame.push(0x80 | payload.len() as u8);
    } else {
        frame.push(0x80 | 126);
        frame.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    }
    frame.extend_from_slice(&[0, 0, 0, 0]);
    frame.extend_from_slice(payload);
    frame
}

/// A handler for the tests: boots and heartbeats for 1.6 and 2.0.1, identities starting with
/// `UNKNOWN` refused with 404, password `secret-password-16` required of identities starting
/// with `AUTH`, over TLS a client certificate whose CN is the identity (else 403); every close
/// recorded. Each connection's state is the identity it was accepted with.
#[derive(Default)]
pub struct TestHandler {
    pub closed: std::sync::Mutex<Vec<(String, ocpp_tokio::ocpp::CloseReason)>>,
    pub connects: AtomicU64,
    /// SENDs received: identity, action, OCPP version.
    pub sends: std::sync::Mutex<Vec<(String, &'static str, OcppVersion)>>,
}

pub const PASSWORD: &[u8] = b"secret-password-16";

impl ocpp_tokio::Handler for TestHandler {
    /// The identity as `on_upgrade` saw it.
    type State = String;

    async fn on_upgrade(
        &self,
        connecting: ocpp_tokio::Connecting,
    ) -> Result<String, ocpp_tokio::Rejection> {
        use ocpp_tokio::Rejection;
        let identity = connecting.identity().as_str();
        if let Some(certificate) = connecting.certificate() {
            if certificate.common_name() != Some(identity) {
                return Err(Rejection::FORBIDDEN);
            }
        }
        if identity.starts_with("UNKNOWN") {
            return Err(Rejection::NOT_FOUND);
        }
        if identity.starts_with("AUTH") {
            let ok = connecting
                .credentials()
                .is_some_and(|c| c.user() == Some(identity) && c.password() == PASSWORD);
            if !ok {
                return Err(Rejection::UNAUTHORIZED);
            }
        }
        Ok(identity.to_owned())
    }

    async fn on_connect(&self, session: ocpp_tokio::Session<String>) {
        assert_eq!(*session, session.identity().as_str());
        self.connects.fetch_add(1, Ordering::Relaxed);
    }

    async fn on_call(
        &self,
        _session: &ocpp_tokio::Session<String>,
        call: ocpp_tokio::IncomingCall,
    ) -> ocpp_tokio::Answer {
        use ocpp_tokio::ocpp::Request;
        use ocpp_tokio::Answer;
        let current_time = now_utc();
        match call.request() {
            Request::V1_6(request) => match &**request {
                v1_6::Request::BootNotification(_) => {
                    Answer::result(v1_6::Response::from(v1_6::BootNotificationResponse {
                        status: v1_6::RegistrationStatus::Accepted,
                        current_time,
                        interval: 300,
                    }))
                }
                v1_6::Request::Heartbeat(_) => {
                    Answer::result(v1_6::Response::from(v1_6::HeartbeatResponse {
                        current_time,
                    }))
                }
                v1_6::Request::ClearCache(_) => panic!("a handler's bug (ClearCache)"),
                v1_6::Request::Authorize(_) => {
                    // A slow answer: the connection keeps serving meanwhile.
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    Answer::error(ocpp_tokio::ErrorCode::SecurityError, "slow and refused")
                }
                _ => Answer::not_supported(call.action()),
            },
            Request::V2_0_1(request) => match &**request {
                v2_0_1::Request::BootNotification(_) => {
                    Answer::result(v2_0_1::Response::from(v2_0_1::BootNotificationResponse {
                        status: v2_0_1::RegistrationStatusEnum::Accepted,
                        current_time,
                        interval: 300,
                        custom_data: None,
                        status_info: None,
                    }))
                }
                v2_0_1::Request::Heartbeat(_) => {
                    Answer::result(v2_0_1::Response::from(v2_0_1::HeartbeatResponse {
                        current_time,
                        custom_data: None,
                    }))
                }
                _ => Answer::not_supported(call.action()),
            },
            _ => Answer::not_supported(call.action()),
        }
    }

    async fn on_send(&self, session: &ocpp_tokio::Session<String>, send: ocpp_tokio::IncomingCall) {
        let mut sends = self.sends.lock().unwrap();
        sends.push((
            session.identity().to_string(),
            send.action(),
            send.version(),
        ));
    }

    async fn on_close(
        &self,
        session: ocpp_tokio::Session<String>,
        closed: ocpp_tokio::ocpp::Closed,
    ) {
        // The state made by on_upgrade comes back with the connection's end.
        assert_eq!(*session, session.identity().as_str());
        let mut all = self.closed.lock().unwrap();
        all.push((session.identity().to_string(), closed.reason));
    }
}

/// A running server with [`TestHandler`]; stopped (gracefully) through `stop`.
pub struct TestServer {
    pub addr: SocketAddr,
    pub charge_points: ocpp_tokio::ChargePoints,
    pub handler: Arc<TestHandler>,
    pub stop: Option<tokio::sync::oneshot::Sender<()>>,
    pub done: tokio::task::JoinHandle<Result<(), ocpp_tokio::server::ServerError>>,
}

impl TestServer {
    pub async fn start(config: ConnectionConfig) -> TestServer {
        Self::start_with(ocpp_tokio::Server::builder().config(config)).await
    }

    pub async fn start_with(builder: ocpp_tokio::ServerBuilder<()>) -> TestServer {
        let handler = Arc::new(TestHandler::default());
        let server = builder
            .shards(shards())
            .handler(handler.clone())
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        let addr = server.local_addr().unwrap();
        let charge_points = server.charge_points();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let done = tokio::spawn(server.run_until(async {
            let _ = stopped.await;
        }));
        TestServer {
            addr,
            charge_points,
            handler,
            stop: Some(stop),
            done,
        }
    }

    /// Graceful shutdown; returns how long it took.
    pub async fn stop(mut self) -> Duration {
        let started = Instant::now();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(WAIT, &mut self.done)
            .await
            .expect("shutdown is bounded")
            .unwrap()
            .unwrap();
        started.elapsed()
    }

    pub fn closes_of(&self, identity: &str) -> Vec<ocpp_tokio::ocpp::CloseReason> {
        let all = self.handler.closed.lock().unwrap();
        all.iter()
            .filter(|(who, _)| who == identity)
            .map(|(_, why)| why.clone())
            .collect()
    }
}

/// The test config: 1.6 and 2.0.1 (and 2.1), short timeouts.
pub fn server_config() -> ConnectionConfig {
    ConnectionConfig::default()
        .versions(vec![
            OcppVersion::V2_1,
            OcppVersion::V2_0_1,
            OcppVersion::V1_6,
        ])
        .handshake_timeout(Duration::from_secs(5))
        .close_timeout(Duration::from_secs(1))
}

// ---------------------------------------------------------------------------------------------
// Certificates (made by rcgen at test time) and the TLS configurations of security profiles 2
// and 3.

/// A certificate chain and its private key.
pub type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// Our CA with a server certificate (for 127.0.0.1 and localhost) and CP001's client
/// certificate, and a rogue CA with a CP001 certificate of its own.
pub struct Pki {
    pub ca: CertificateDer<'static>,
    pub server: Identity,
    pub cp001: Identity,
    pub rogue_ca: CertificateDer<'static>,
    pub rogue_cp001: Identity,
}

fn ca(cn: &str) -> (CertificateDer<'static>, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, cn);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let cert = params.self_signed(&key).unwrap();
    (cert.der().clone(), Issuer::new(params, key))
}

fn leaf(
    issuer: &Issuer<'_, KeyPair>,
    cn: &str,
    names: &[&str],
    usage: ExtendedKeyUsagePurpose,
) -> Identity {
    let key = KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    params.extended_key_usages = vec![usage];
    let cert = params.signed_by(&key, issuer).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    (vec![cert.der().clone()], key)
}

pub fn pki() -> Pki {
    let (our_ca, ours) = ca("OCPP test CA");
    let (rogue_ca, rogue) = ca("Rogue CA");
    let client = ExtendedKeyUsagePurpose::ClientAuth;
    Pki {
        ca: our_ca,
        server: leaf(
            &ours,
            "csms.test",
            &["127.0.0.1", "localhost"],
            ExtendedKeyUsagePurpose::ServerAuth,
        ),
        cp001: leaf(&ours, "CP001", &[], client.clone()),
        rogue_ca,
        rogue_cp001: leaf(&rogue, "CP001", &[], client),
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn roots(ca: &CertificateDer<'static>) -> Arc<rustls::RootCertStore> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    Arc::new(roots)
}

/// The server's side: profile 2 without `mutual`, profile 3 (client certificates of our
/// CA) with.
pub fn server_tls(pki: &Pki, mutual: bool) -> Arc<rustls::ServerConfig> {
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = if mutual {
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(roots(&pki.ca), provider())
                .build()
                .unwrap();
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let (chain, key) = (pki.server.0.clone(), pki.server.1.clone_key());
    Arc::new(builder.with_single_cert(chain, key).unwrap())
}

/// The client's side: trusting `ca`, with `identity` as its certificate (profile 3).
pub fn client_tls(
    ca: &CertificateDer<'static>,
    identity: Option<&Identity>,
) -> Arc<rustls::ClientConfig> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots(ca));
    Arc::new(match identity {
        Some((chain, key)) => builder
            .with_client_auth_cert(chain.clone(), key.clone_key())
            .unwrap(),
        None => builder.with_no_client_auth(),
    })
}

// ---------------------------------------------------------------------------------------------
// Child processes: Python scripts on the PyPI `ocpp` library, the crate's examples.

/// `$PYTHON`, else python3.
pub fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Whether python has `ocpp` and `websockets`; fails instead of skipping when required.
pub fn python_ocpp_present() -> bool {
    let present = Command::new(python())
        .args(["-c", "import ocpp, websockets"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !present {
        let reason = "python3 with `ocpp` and `websockets` is missing \
                      (install: bash scripts/interop-ocpp.sh --deps-only)";
        assert!(
            std::env::var("OCPP_INTEROP_REQUIRED").as_deref() != Ok("1"),
            "OCPP_INTEROP_REQUIRED=1 but {reason}"
        );
        eprintln!("SKIPPED: {reason}");
    }
    present
}

/// target/debug, the directory above this test's binary (target/debug/deps/..).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(|deps| deps.parent()).unwrap().into()
}

/// target/debug/examples/NAME; panics if `cargo test` has not built it.
pub fn example_binary(name: &str) -> PathBuf {
    let binary = target_dir()
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        binary.exists(),
        "{} (built by cargo test)",
        binary.display()
    );
    binary
}

/// target/debug/mio-server (the workspace's `cargo test` builds it), built with cargo if missing.
pub fn mio_server_binary() -> PathBuf {
    built_if_missing(
        "mio-server",
        &["-p", "ocpp-examples", "--bin", "mio-server"],
    )
}

/// target/debug/examples/station_loop, `ocpp-proto`'s station on the Sans-IO core and std
/// sockets (the workspace's `cargo test` builds it), built with cargo if missing.
pub fn station_loop_binary() -> PathBuf {
    let name = "examples/station_loop";
    built_if_missing(name, &["-p", "ocpp-proto", "--example", "station_loop"])
}

/// The program at `path` in the target directory, built by `cargo build ARGS` if missing
/// (once per test binary: never two cargos at once).
fn built_if_missing(path: &str, args: &[&str]) -> PathBuf {
    static BUILT: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _once = BUILT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let binary = target_dir().join(format!("{path}{}", std::env::consts::EXE_SUFFIX));
    if !binary.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .arg("build")
            .args(args)
            .status()
            .expect("cargo runs");
        assert!(status.success(), "cargo build {}", args.join(" "));
    }
    assert!(binary.exists(), "{}", binary.display());
    binary
}

/// A child process, killed (SIGKILL) and reaped when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback port nobody listens on (now).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
