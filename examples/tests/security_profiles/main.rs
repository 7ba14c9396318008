//! OCPP security profiles end to end, against the built `mio-server` (all cases) and
//! `tokio-server` (profiles 2 and 3): certificates made by the test with rcgen, a rustls client
//! (and the `charge-point` binary) on loopback. Every wait is bounded; processes are stopped by
//! PID.
//!
//! - Profile 1: Basic auth before the upgrade; 401 with `WWW-Authenticate: Basic realm=...`.
//! - Profile 2: the same over TLS; a client that does not trust the server's CA fails its
//!   handshake (`UnknownIssuer`).
//! - Profile 3: client certificates required and verified against `--client-ca`; a missing one
//!   gets the `certificate_required` alert (rustls sends it over TLS 1.2 too, where RFC 5246
//!   would also allow `handshake_failure`), an untrusted one `unknown_ca`; a valid certificate
//!   for another identity gets 403.
//! - Per station on one wss:// listener (`--security-profiles`, client certificates optional):
//!   a profile-3 station is refused (401) with a password only, a profile-2 station needs its
//!   password; and the CSMS's CA (`--ca-cert`): SignCertificate -> CertificateSigned, then
//!   profile 3 with the signed certificate (OCPP 2.0.1 / 2.1 A02/A03, 1.6 security whitepaper
//!   §3). Test names are descriptive: we are not sure enough of the OCTT case ids.

#[path = "../common/mod.rs"]
mod common;

use common::*;
use rustls::{AlertDescription, CertificateError};

mod charge_point_binary;
mod per_station;
mod profile_1;
mod profile_2;
mod profile_3;

const MIO: &str = env!("CARGO_BIN_EXE_mio-server");
const TOKIO: &str = env!("CARGO_BIN_EXE_tokio-server");
const PASSWORDS: &str = "CP001:0123456789abcdef\nCP002:fedcba9876543210\n";
const V16: &[OcppVersion] = &[OcppVersion::V1_6];

/// The credentials file for `--basic-auth`, in the PKI's directory.
fn passwords(pki: &Pki) -> String {
    let path = pki.path("passwords");
    std::fs::write(&path, PASSWORDS).unwrap();
    path
}

fn start(binary: &str, args: &[String]) -> ServerProcess {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ServerProcess::start(binary, &args)
}

/// The server of profile 2 (TLS and Basic auth) or 3 (TLS and client certificates).
fn start_profile(binary: &str, pki: &Pki, profile: u8) -> ServerProcess {
    let mut args = pki.server_args();
    match profile {
        2 => args.extend(["--basic-auth".into(), passwords(pki)]),
        3 => args.extend(["--client-ca".into(), pki.path("ca.pem")]),
        _ => unreachable!(),
    }
    start(binary, &args)
}

/// Sends a raw upgrade request for `/ocpp/<identity>` (plain TCP) and returns the response
/// head.
fn raw_upgrade(addr: SocketAddr, identity: &str, authorization: Option<&str>) -> String {
    let mut stream = TcpStream::connect_timeout(&addr, WAIT).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    let authorization = authorization.map_or(String::new(), |v| format!("Authorization: {v}\r\n"));
    write!(
        stream,
        "GET /ocpp/{identity} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ocpp1.6\r\n{authorization}\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            other => panic!("response cut short ({other:?}): {head:?}"),
        }
    }
    String::from_utf8(head).unwrap()
}

/// `Basic base64(user:password)`.
fn basic(user: &str, password: &str) -> String {
    ocpp_frame::handshake::BasicCredentials::new(user.as_bytes(), password.as_bytes())
        .unwrap()
        .header_value()
}

fn boots(cp: &mut ChargePoint) {
    let boot = cp.call(
        "BootNotification",
        r#"{"chargePointVendor":"ACME","chargePointModel":"Secure-1"}"#,
    );
    assert_eq!(boot["status"], "Accepted");
}

/// The value of the counter `name` in `GET /metrics`.
fn metric(server: &ServerProcess, name: &str) -> u64 {
    let (_, metrics) = http(server.admin, "GET", "/metrics", "");
    let line = metrics
        .lines()
        .find(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(' '))
        })
        .unwrap_or_else(|| panic!("{name}: {metrics}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

fn rejected_upgrades(server: &ServerProcess) -> u64 {
    metric(server, "ocpp_upgrades_rejected_total")
}

/// A TLS 1.2-only client trusting our CA (with the certificate `name`, if given).
fn tls12_client(pki: &Pki, name: Option<&str>) -> TlsClient {
    let mut roots = rustls::RootCertStore::empty();
    for cert in ocpp_examples::tls::load_certificates(&pki.dir.join("ca.pem")).unwrap() {
        roots.add(cert).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS12])
    .unwrap()
    .with_root_certificates(roots);
    let config = match name {
        None => builder.with_no_client_auth(),
        Some(name) => builder
            .with_client_auth_cert(
                ocpp_examples::tls::load_certificates(&pki.dir.join(format!("{name}.pem")))
                    .unwrap(),
                ocpp_examples::tls::load_private_key(&pki.dir.join(format!("{name}.key"))).unwrap(),
            )
            .unwrap(),
    };
    TlsClient {
        config: Arc::new(config),
        server_name: rustls::pki_types::ServerName::try_from("localhost").unwrap(),
    }
}
