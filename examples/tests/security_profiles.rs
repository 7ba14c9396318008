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

mod common;

use common::*;
use rustls::{AlertDescription, CertificateError};

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

fn start(binary: &str, args: &[String]) -> Server {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Server::start(binary, &args)
}

/// The server of profile 2 (TLS and Basic auth) or 3 (TLS and client certificates).
fn start_profile(binary: &str, pki: &Pki, profile: u8) -> Server {
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
fn metric(server: &Server, name: &str) -> u64 {
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

fn rejected_upgrades(server: &Server) -> u64 {
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

// ---- profile 1 ----

#[test]
fn profile_1_basic_auth_before_the_upgrade() {
    let pki = Pki::new("p1");
    let server = start(MIO, &["--basic-auth".into(), passwords(&pki)]);

    // Missing header, wrong password, another identity's valid credentials: 401 with the
    // Basic challenge, before any upgrade.
    for (what, authorization) in [
        ("missing", None),
        ("bad password", Some(basic("CP001", "0123456789abcdeX"))),
        (
            "identity mismatch",
            Some(basic("CP002", "fedcba9876543210")),
        ),
        ("unknown identity", Some(basic("CP009", "0123456789abcdef"))),
    ] {
        let head = raw_upgrade(server.ocpp, "CP001", authorization.as_deref());
        assert!(head.starts_with("HTTP/1.1 401 "), "{what}: {head}");
        assert!(
            head.contains("\r\nWWW-Authenticate: Basic realm=\"OCPP\"\r\n"),
            "{what}: {head}"
        );
        assert!(!head.contains("Sec-WebSocket-Accept"), "{what}: {head}");
    }
    // The same through the Sans-IO charge point.
    let refused = ChargePoint::connect(server.ocpp, "CP001", V16, Some(b"wrong-password-1")).err();
    assert!(matches!(
        refused,
        Some(CloseReason::UpgradeRefused {
            status: Some(401),
            ..
        })
    ));
    assert_eq!(rejected_upgrades(&server), 5);

    let head = raw_upgrade(
        server.ocpp,
        "CP001",
        Some(&basic("CP001", "0123456789abcdef")),
    );
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    let mut good =
        ChargePoint::connect(server.ocpp, "CP002", V16, Some(b"fedcba9876543210")).unwrap();
    boots(&mut good);
    good.close();
}

// ---- profile 2 ----

fn profile_2(binary: &str) {
    let pki = Pki::new("p2");
    let server = start_profile(binary, &pki, 2);
    let tls = pki.client(None);

    let mut good = ChargePoint::connect_with(
        server.ocpp,
        "CP001",
        V16,
        Some(b"0123456789abcdef"),
        Some(&tls),
    )
    .unwrap();
    boots(&mut good);

    let bad = ChargePoint::connect_with(
        server.ocpp,
        "CP001",
        V16,
        Some(b"0123456789abcdeX"),
        Some(&tls),
    )
    .err()
    .unwrap();
    assert_eq!(bad.status(), Some(401), "{bad:?}");
    let missing = ChargePoint::connect_with(server.ocpp, "CP001", V16, None, Some(&tls))
        .err()
        .unwrap();
    assert_eq!(missing.status(), Some(401), "{missing:?}");

    // A client that does not trust the server's CA stops its own handshake.
    let distrustful = TlsClient::new(&pki.dir.join("rogue-ca.pem"), None);
    let refusal = ChargePoint::connect_with(
        server.ocpp,
        "CP002",
        V16,
        Some(b"fedcba9876543210"),
        Some(&distrustful),
    )
    .err()
    .unwrap();
    assert!(
        matches!(
            refusal,
            Refusal::Tls(rustls::Error::InvalidCertificate(
                CertificateError::UnknownIssuer
            ))
        ),
        "{refusal:?}"
    );

    // The server carried on: the first connection still works, a new one boots.
    assert!(good.call("Heartbeat", "{}")["currentTime"].is_string());
    let mut second = ChargePoint::connect_with(
        server.ocpp,
        "CP002",
        V16,
        Some(b"fedcba9876543210"),
        Some(&tls),
    )
    .unwrap();
    boots(&mut second);
    second.close();
    good.close();
}

#[test]
fn profile_2_tls_and_basic_auth_mio() {
    profile_2(MIO);
}

#[test]
fn profile_2_tls_and_basic_auth_tokio() {
    profile_2(TOKIO);
}

#[test]
fn profile_2_over_tls_1_2_mio() {
    let pki = Pki::new("p2-tls12");
    let server = start_profile(MIO, &pki, 2);
    let mut cp = ChargePoint::connect_with(
        server.ocpp,
        "CP001",
        &[OcppVersion::V2_0_1],
        Some(b"0123456789abcdef"),
        Some(&tls12_client(&pki, None)),
    )
    .unwrap();
    assert_eq!(cp.version, OcppVersion::V2_0_1);
    assert!(cp.call("Heartbeat", "{}")["currentTime"].is_string());
    cp.close();
}

#[test]
fn a_plain_client_on_the_tls_port_is_dropped_and_the_server_carries_on() {
    let pki = Pki::new("p2-plain");
    let server = start_profile(MIO, &pki, 2);
    // An HTTP upgrade where a ClientHello belongs: rustls refuses it and the server drops the
    // connection (after its alert), without an HTTP answer.
    let refused = ChargePoint::connect(server.ocpp, "CP001", V16, Some(b"0123456789abcdef"))
        .err()
        .unwrap();
    assert!(
        !matches!(
            refused,
            CloseReason::UpgradeRefused {
                status: Some(_),
                ..
            }
        ),
        "{refused:?}"
    );
    let mut cp = ChargePoint::connect_with(
        server.ocpp,
        "CP001",
        V16,
        Some(b"0123456789abcdef"),
        Some(&pki.client(None)),
    )
    .unwrap();
    boots(&mut cp);
    cp.close();
}

/// Messages of 60 KB span several TLS records (at most 16 KiB each) both ways. (Partial writes
/// and `WouldBlock` are driven in `tls`'s unit tests: one CALL at a time keeps the server's
/// output below a loopback socket's buffer here.)
fn large_messages_over_tls(binary: &str) {
    let pki = Pki::new("p2-large");
    let server = start_profile(binary, &pki, 2);
    let mut cp = ChargePoint::connect_with(
        server.ocpp,
        "CP001",
        V16,
        Some(b"0123456789abcdef"),
        Some(&pki.client(None)),
    )
    .unwrap();
    let data: String = (0..60_000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let admin = server.admin;
    for round in 0..3 {
        let body = format!(r#"{{"vendorId":"big","messageId":"{round}","data":"{data}"}}"#);
        let command = std::thread::spawn(move || {
            http(
                admin,
                "POST",
                "/chargepoints/CP001/call/DataTransfer",
                &body,
            )
        });
        let (id, request) = cp.expect_call();
        let payload = serde_json::to_value(&request).unwrap();
        assert_eq!(payload["data"].as_str().map(str::len), Some(60_000));
        assert_eq!(payload["messageId"], round.to_string());
        let response = ocpp_messages::v1_6::decode_result(
            "DataTransfer",
            &format!(r#"{{"status":"Accepted","data":"{data}"}}"#),
        )
        .unwrap();
        cp.respond(&id, response.into());
        let (status, body) = command.join().unwrap();
        assert_eq!(status, 200);
        assert_eq!(
            json(&body)["result"]["data"].as_str().map(str::len),
            Some(60_000)
        );
    }
    cp.close();
}

#[test]
fn large_messages_over_tls_mio() {
    large_messages_over_tls(MIO);
}

#[test]
fn large_messages_over_tls_tokio() {
    large_messages_over_tls(TOKIO);
}

// ---- profile 3 ----

fn profile_3_happy_path(binary: &str) {
    let pki = Pki::new("p3");
    let server = start_profile(binary, &pki, 3);
    for (identity, version) in [("CP001", OcppVersion::V1_6), ("CP002", OcppVersion::V2_0_1)] {
        let mut cp = ChargePoint::connect_with(
            server.ocpp,
            identity,
            &[version],
            None,
            Some(&pki.client(Some(identity))),
        )
        .unwrap();
        assert_eq!(cp.version, version);
        assert!(cp.call("Heartbeat", "{}")["currentTime"].is_string());
        assert_eq!(charge_point_state(&server, identity)["identity"], identity);
        cp.close();
    }
}

#[test]
fn profile_3_client_certificates_mio() {
    profile_3_happy_path(MIO);
}

#[test]
fn profile_3_client_certificates_tokio() {
    profile_3_happy_path(TOKIO);
}

fn profile_3_refusals(binary: &str) {
    let pki = Pki::new("p3-refusals");
    let server = start_profile(binary, &pki, 3);
    let alert = |refusal: Refusal| match refusal {
        Refusal::Tls(rustls::Error::AlertReceived(alert)) => alert,
        other => panic!("expected a TLS alert, got {other:?}"),
    };

    // No client certificate: TLS 1.3 `certificate_required` (RFC 8446 §4.4.2.4).
    let none = ChargePoint::connect_with(server.ocpp, "CP001", V16, None, Some(&pki.client(None)))
        .err()
        .unwrap();
    assert_eq!(alert(none), AlertDescription::CertificateRequired);
    // rustls sends the same alert over TLS 1.2 (RFC 5246 §7.4.6 leaves the choice open).
    let none_12 = ChargePoint::connect_with(
        server.ocpp,
        "CP001",
        V16,
        None,
        Some(&tls12_client(&pki, None)),
    )
    .err()
    .unwrap();
    assert_eq!(alert(none_12), AlertDescription::CertificateRequired);

    // A CP001 certificate from a CA the server does not trust: `unknown_ca`.
    let rogue = TlsClient::new(
        &pki.dir.join("ca.pem"),
        Some((
            &pki.dir.join("rogue-CP001.pem"),
            &pki.dir.join("rogue-CP001.key"),
        )),
    );
    let untrusted = ChargePoint::connect_with(server.ocpp, "CP001", V16, None, Some(&rogue))
        .err()
        .unwrap();
    assert_eq!(alert(untrusted), AlertDescription::UnknownCA);

    // A valid certificate, but for CP002, connecting as CP001: 403 (see `Csms::on_upgrade`).
    let other = ChargePoint::connect_with(
        server.ocpp,
        "CP001",
        V16,
        None,
        Some(&pki.client(Some("CP002"))),
    )
    .err()
    .unwrap();
    assert_eq!(other.status(), Some(403), "{other:?}");
    // Over TLS 1.2 too.
    let other = ChargePoint::connect_with(
        server.ocpp,
        "CP001",
        V16,
        None,
        Some(&tls12_client(&pki, Some("CP002"))),
    )
    .err()
    .unwrap();
    assert_eq!(other.status(), Some(403), "{other:?}");
    assert_eq!(rejected_upgrades(&server), 2);
    assert_eq!(metric(&server, "ocpp_tls_failures_total"), 3);

    // The failures cost the server nothing else: CP001 with its own certificate boots.
    let mut cp = ChargePoint::connect_with(
        server.ocpp,
        "CP001",
        V16,
        None,
        Some(&tls12_client(&pki, Some("CP001"))),
    )
    .unwrap();
    boots(&mut cp);
    cp.close();
}

#[test]
fn profile_3_refusals_mio() {
    profile_3_refusals(MIO);
}

#[test]
fn profile_3_refusals_tokio() {
    profile_3_refusals(TOKIO);
}

#[test]
fn server_refuses_bad_tls_files_with_a_clear_message() {
    let pki = Pki::new("bad-files");
    std::fs::write(pki.dir.join("junk.pem"), "not PEM\n").unwrap();
    for (args, expected) in [
        (
            vec!["--tls-cert", "junk.pem", "--tls-key", "server.key"],
            "junk.pem: no PEM certificate found",
        ),
        (
            vec!["--tls-cert", "server.pem", "--tls-key", "junk.pem"],
            "junk.pem: no PEM private key found",
        ),
        (
            vec!["--tls-cert", "server.pem", "--tls-key", "CP001.key"],
            "TLS configuration",
        ),
        (
            vec!["--tls-cert", "server.pem", "--tls-key", "missing.key"],
            "missing.key: cannot read the PEM private key",
        ),
    ] {
        let args: Vec<String> = args
            .iter()
            .map(|a| {
                if a.starts_with("--") {
                    a.to_string()
                } else {
                    pki.path(a)
                }
            })
            .collect();
        let output = Command::new(MIO)
            .env("OCPP_DATABASE_URL", "memory")
            .args(["--listen", "127.0.0.1:0", "--admin", "off"])
            .args(&args)
            .env("RUST_LOG", "off")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!output.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

// ---- the charge-point binary ----

/// A `charge-point` process, killed by its PID when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs the `charge-point` binary with `args` until CP001 is booted on `server` (bounded).
fn charge_point_boots(server: &Server, args: &[String]) {
    let _cp = Process(
        Command::new(env!("CARGO_BIN_EXE_charge-point"))
            .args(args)
            .args(["--version", "2.0.1", "--duration-s", "20"])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, body) = http(server.admin, "GET", "/chargepoints/CP001", "");
        if status == 200 && json(&body)["status"] == "Accepted" {
            assert_eq!(json(&body)["version"], "2.0.1");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "CP001 did not boot: {status} {body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn charge_point_binary_boots_over_wss_with_a_client_certificate() {
    let pki = Pki::new("cp-binary-3");
    let server = start_profile(MIO, &pki, 3);
    let url = format!("wss://localhost:{}/ocpp/CP001", server.ocpp.port());
    let args = ["--url", &url, "--ca", &pki.path("ca.pem")]
        .into_iter()
        .map(str::to_owned)
        .chain(["--cert".into(), pki.path("CP001.pem")])
        .chain(["--key".into(), pki.path("CP001.key")])
        .collect::<Vec<_>>();
    charge_point_boots(&server, &args);
}

#[test]
fn charge_point_binary_boots_over_wss_with_a_password() {
    let pki = Pki::new("cp-binary-2");
    let server = start_profile(TOKIO, &pki, 2);
    let url = format!("wss://127.0.0.1:{}/ocpp/CP001", server.ocpp.port());
    let args = ["--url", &url, "--ca", &pki.path("ca.pem")]
        .into_iter()
        .map(str::to_owned)
        .chain(["--password".into(), "0123456789abcdef".into()])
        .collect::<Vec<_>>();
    charge_point_boots(&server, &args);
}

// ---- security profiles per station, and the CSMS's certificate authority ----

/// Passwords of the per-station listener: CP001 (profile 3, its password must not be enough),
/// CP002 (profile 2), CP003 (no profile of its own: a password over TLS, or a certificate).
const MIXED_PASSWORDS: &str =
    "CP001:0123456789abcdef\nCP002:fedcba9876543210\nCP003:3333333333333333\n";
const CP003_PASSWORD: &[u8] = b"3333333333333333";

/// One wss:// listener for stations of profiles 2 and 3: client certificates optional at the
/// TLS layer, the CA of the PKI signing CSRs, CP001 at profile 3 and CP002 at profile 2.
fn start_per_station(binary: &str, pki: &Pki) -> Server {
    std::fs::write(pki.dir.join("mixed-passwords"), MIXED_PASSWORDS).unwrap();
    std::fs::write(
        pki.dir.join("profiles"),
        "# identity profile\nCP001 3\nCP002 2\n",
    )
    .unwrap();
    let mut args = pki.server_args();
    for (flag, file) in [
        ("--client-ca", "ca.pem"),
        ("--basic-auth", "mixed-passwords"),
        ("--security-profiles", "profiles"),
        ("--ca-cert", "ca.pem"),
        ("--ca-key", "ca.key"),
    ] {
        args.extend([flag.to_owned(), pki.path(file)]);
    }
    start(binary, &args)
}

/// BootNotification in the charge point's version, Accepted.
fn boots_any(cp: &mut ChargePoint) {
    let payload = match cp.version {
        OcppVersion::V1_6 => r#"{"chargePointVendor":"ACME","chargePointModel":"Secure-1"}"#,
        _ => r#"{"reason":"PowerUp","chargingStation":{"vendorName":"ACME","model":"Secure-1"}}"#,
    };
    assert_eq!(cp.call("BootNotification", payload)["status"], "Accepted");
}

/// A CSR (PEM) with subject CN `cn`, and its key (PEM).
fn csr(cn: &str) -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "ACME");
    let request = params.serialize_request(&key).unwrap().pem().unwrap();
    (request, key.serialize_pem())
}

/// The SignCertificate payload for the charge point's version.
fn sign_certificate(cp: &mut ChargePoint, csr: &str) -> Value {
    let mut payload = serde_json::json!({ "csr": csr });
    if cp.version != OcppVersion::V1_6 {
        payload["certificateType"] = "ChargingStationCertificate".into();
    }
    if cp.version == OcppVersion::V2_1 {
        payload["requestId"] = 7.into();
    }
    cp.call("SignCertificate", &payload.to_string())
}

/// The answer `{"status": status}` to a CALL of the server, in the charge point's version.
fn answer_status(cp: &mut ChargePoint, id: &ocpp_proto::MessageId<'_>, action: &str) {
    let body = r#"{"status":"Accepted"}"#;
    let response: Response = match cp.version {
        OcppVersion::V1_6 => ocpp_messages::v1_6::decode_result(action, body)
            .unwrap()
            .into(),
        OcppVersion::V2_0_1 => ocpp_messages::v2_0_1::decode_result(action, body)
            .unwrap()
            .into(),
        OcppVersion::V2_1 => ocpp_messages::v2_1::decode_result(action, body)
            .unwrap()
            .into(),
    };
    cp.respond(id, response);
}

/// Waits (bounded) until the charge point's record satisfies `done`; returns it.
fn wait_for_record(server: &Server, identity: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let record = charge_point_state(server, identity);
        if done(&record) {
            return record;
        }
        assert!(Instant::now() < deadline, "{identity}: {record}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Checks a PEM chain: two certificates, the leaf (CN `identity`, clientAuth, not a CA)
/// signed by the PKI's CA, the CA itself second.
fn verify_chain(pki: &Pki, chain: &str, identity: &str) {
    use rustls::pki_types::pem::PemObject;
    let certificates: Vec<rustls::pki_types::CertificateDer<'static>> =
        rustls::pki_types::CertificateDer::pem_slice_iter(chain.as_bytes())
            .collect::<Result<_, _>>()
            .unwrap();
    assert_eq!(certificates.len(), 2, "{chain}");
    let ca = ocpp_examples::tls::load_certificates(&pki.dir.join("ca.pem")).unwrap();
    assert_eq!(certificates[1], ca[0], "the CA follows the leaf");
    let (_, leaf) = x509_parser::parse_x509_certificate(&certificates[0]).unwrap();
    let (_, ca) = x509_parser::parse_x509_certificate(&ca[0]).unwrap();
    leaf.verify_signature(Some(ca.public_key()))
        .expect("the leaf verifies against the CA");
    let cn = leaf.subject().iter_common_name().next().unwrap();
    assert_eq!(cn.as_str().unwrap(), identity);
    assert!(!leaf.is_ca());
    let usage = leaf.extended_key_usage().unwrap().unwrap().value;
    assert!(usage.client_auth);
    assert!(leaf.validity().is_valid());
}

/// A02/A03 (1.6 security whitepaper §3) end to end: CP003, on profile 2 (password over TLS),
/// sends a CSR for its identity; the CSMS answers Accepted and sends CertificateSigned with a
/// chain that verifies against its CA; the station answers Accepted, which the admin API
/// shows; the station reconnects with that certificate and no password (profile 3) and boots;
/// from then on its password alone is refused (no downgrade).
fn signed_certificate_opens_profile_3(binary: &str, version: OcppVersion) {
    let pki = Pki::new("csr");
    let server = start_per_station(binary, &pki);
    let mut cp = ChargePoint::connect_with(
        server.ocpp,
        "CP003",
        &[version],
        Some(CP003_PASSWORD),
        Some(&pki.client(None)),
    )
    .unwrap();
    boots_any(&mut cp);
    let (request, key) = csr("CP003");
    assert_eq!(sign_certificate(&mut cp, &request)["status"], "Accepted");

    let (id, call) = cp.expect_call();
    assert_eq!(call.action(), "CertificateSigned");
    let payload = serde_json::to_value(&call).unwrap();
    if version != OcppVersion::V1_6 {
        assert_eq!(payload["certificateType"], "ChargingStationCertificate");
    }
    if version == OcppVersion::V2_1 {
        assert_eq!(
            payload["requestId"], 7,
            "2.1: the SignCertificate's requestId"
        );
    }
    let chain = payload["certificateChain"].as_str().unwrap().to_owned();
    verify_chain(&pki, &chain, "CP003");
    answer_status(&mut cp, &id, "CertificateSigned");
    let record = wait_for_record(&server, "CP003", |r| {
        r["certificate"]["answer"] == "Accepted"
    });
    let certificate = &record["certificate"];
    assert_eq!(certificate["status"], "Accepted", "{record}");
    assert_eq!(
        certificate["certificate_type"],
        "ChargingStationCertificate"
    );
    assert!(certificate["serial"].is_string(), "{record}");
    assert!(certificate["answered_at"].is_string(), "{record}");
    assert_eq!(metric(&server, "ocpp_certificates_signed_total"), 1);
    cp.close();

    // The next connection: the new certificate, no password.
    std::fs::write(pki.dir.join("CP003-signed.pem"), &chain).unwrap();
    std::fs::write(pki.dir.join("CP003-signed.key"), &key).unwrap();
    let signed = TlsClient::new(
        &pki.dir.join("ca.pem"),
        Some((
            &pki.dir.join("CP003-signed.pem"),
            &pki.dir.join("CP003-signed.key"),
        )),
    );
    let mut cp =
        ChargePoint::connect_with(server.ocpp, "CP003", &[version], None, Some(&signed)).unwrap();
    boots_any(&mut cp);
    let (status, body) = http(server.admin, "GET", "/chargepoints/CP003/security", "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(json(&body)["profile"], 3, "held to profile 3: {body}");
    cp.close();

    let downgrade = ChargePoint::connect_with(
        server.ocpp,
        "CP003",
        &[version],
        Some(CP003_PASSWORD),
        Some(&pki.client(None)),
    )
    .err()
    .unwrap();
    assert_eq!(downgrade.status(), Some(401), "{downgrade:?}");
}

#[test]
fn sign_certificate_then_profile_3_with_the_signed_certificate_2_0_1_mio() {
    signed_certificate_opens_profile_3(MIO, OcppVersion::V2_0_1);
}

#[test]
fn sign_certificate_then_profile_3_with_the_signed_certificate_2_0_1_tokio() {
    signed_certificate_opens_profile_3(TOKIO, OcppVersion::V2_0_1);
}

#[test]
fn sign_certificate_then_profile_3_with_the_signed_certificate_2_1_mio() {
    signed_certificate_opens_profile_3(MIO, OcppVersion::V2_1);
}

#[test]
fn sign_certificate_then_profile_3_with_the_signed_certificate_1_6_security_mio() {
    signed_certificate_opens_profile_3(MIO, OcppVersion::V1_6);
}

#[test]
fn sign_certificate_then_profile_3_with_the_signed_certificate_1_6_security_tokio() {
    signed_certificate_opens_profile_3(TOKIO, OcppVersion::V1_6);
}

/// A CSR whose CN is another station's, and one that is not a CSR at all: Rejected, no
/// CertificateSigned follows (a CALL from the server would fail `call`), the admin API says
/// why.
fn csr_refusals(binary: &str, version: OcppVersion) {
    let pki = Pki::new("csr-refused");
    let server = start_per_station(binary, &pki);
    let mut cp = ChargePoint::connect_with(
        server.ocpp,
        "CP003",
        &[version],
        Some(CP003_PASSWORD),
        Some(&pki.client(None)),
    )
    .unwrap();
    boots_any(&mut cp);
    let (other, _) = csr("CP002");
    assert_eq!(sign_certificate(&mut cp, &other)["status"], "Rejected");
    let record = charge_point_state(&server, "CP003");
    assert_eq!(record["certificate"]["status"], "Rejected", "{record}");
    let reason = record["certificate"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("CN"), "{record}");
    assert_eq!(
        sign_certificate(
            &mut cp,
            "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"
        )["status"],
        "Rejected"
    );
    // Nothing came after the answers: the next CALL's answer is the next message.
    assert!(cp.call("Heartbeat", "{}")["currentTime"].is_string());
    std::thread::sleep(Duration::from_millis(200));
    assert!(cp.call("Heartbeat", "{}")["currentTime"].is_string());
    let record = charge_point_state(&server, "CP003");
    assert!(record["certificate"]["answer"].is_null(), "{record}");
    assert_eq!(
        metric(&server, "ocpp_certificate_requests_rejected_total"),
        2
    );
    assert_eq!(metric(&server, "ocpp_certificates_signed_total"), 0);
    cp.close();
}

#[test]
fn sign_certificate_with_another_identitys_cn_is_rejected_2_0_1_mio() {
    csr_refusals(MIO, OcppVersion::V2_0_1);
}

#[test]
fn sign_certificate_with_another_identitys_cn_is_rejected_1_6_security_tokio() {
    csr_refusals(TOKIO, OcppVersion::V1_6);
}

/// Without --ca-cert the answer stays Rejected (there is nothing to sign with).
#[test]
fn sign_certificate_without_a_ca_is_rejected() {
    let pki = Pki::new("no-ca");
    let server = start_profile(MIO, &pki, 2);
    let mut cp = ChargePoint::connect_with(
        server.ocpp,
        "CP001",
        &[OcppVersion::V2_0_1],
        Some(b"0123456789abcdef"),
        Some(&pki.client(None)),
    )
    .unwrap();
    boots_any(&mut cp);
    let (request, _) = csr("CP001");
    assert_eq!(sign_certificate(&mut cp, &request)["status"], "Rejected");
    assert!(cp.call("Heartbeat", "{}")["currentTime"].is_string());
    cp.close();
}

/// Per-station profiles on one wss:// listener: CP001 (profile 3) with its password only is
/// refused with 401 and accepted with its certificate; CP002 (profile 2) is accepted with its
/// password and refused with 401 for a wrong one, and with 403 for CP001's certificate; every
/// refusal counts, and the connections already open carry on.
fn per_station_profiles(binary: &str) {
    let pki = Pki::new("per-station");
    let server = start_per_station(binary, &pki);
    let password_only = ChargePoint::connect_with(
        server.ocpp,
        "CP001",
        V16,
        Some(b"0123456789abcdef"),
        Some(&pki.client(None)),
    )
    .err()
    .unwrap();
    assert_eq!(password_only.status(), Some(401), "{password_only:?}");
    let mut cp001 = ChargePoint::connect_with(
        server.ocpp,
        "CP001",
        V16,
        None,
        Some(&pki.client(Some("CP001"))),
    )
    .unwrap();
    boots(&mut cp001);

    let mut cp002 = ChargePoint::connect_with(
        server.ocpp,
        "CP002",
        &[OcppVersion::V2_0_1],
        Some(b"fedcba9876543210"),
        Some(&pki.client(None)),
    )
    .unwrap();
    boots_any(&mut cp002);
    let wrong = ChargePoint::connect_with(
        server.ocpp,
        "CP002",
        V16,
        Some(b"fedcba987654321X"),
        Some(&pki.client(None)),
    )
    .err()
    .unwrap();
    assert_eq!(wrong.status(), Some(401), "{wrong:?}");
    let borrowed = ChargePoint::connect_with(
        server.ocpp,
        "CP002",
        V16,
        Some(b"fedcba9876543210"),
        Some(&pki.client(Some("CP001"))),
    )
    .err()
    .unwrap();
    assert_eq!(borrowed.status(), Some(403), "{borrowed:?}");
    assert_eq!(rejected_upgrades(&server), 3);

    // The admin API shows and changes a station's profile.
    let (status, body) = http(server.admin, "GET", "/chargepoints/CP002/security", "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(json(&body)["profile"], 2, "{body}");
    assert_eq!(json(&body)["password"], true, "{body}");
    let (status, body) = http(
        server.admin,
        "PUT",
        "/chargepoints/CP002/security",
        r#"{"profile":3}"#,
    );
    assert_eq!(status, 200, "{body}");
    let (status, _) = http(
        server.admin,
        "PUT",
        "/chargepoints/CP002/security",
        r#"{"profile":4}"#,
    );
    assert_eq!(status, 400);
    let now_3 = ChargePoint::connect_with(
        server.ocpp,
        "CP002",
        V16,
        Some(b"fedcba9876543210"),
        Some(&pki.client(None)),
    )
    .err()
    .unwrap();
    assert_eq!(now_3.status(), Some(401), "{now_3:?}");

    // The open connections carried on.
    assert!(cp001.call("Heartbeat", "{}")["currentTime"].is_string());
    assert!(cp002.call("Heartbeat", "{}")["currentTime"].is_string());
    cp001.close();
    cp002.close();
}

#[test]
fn per_station_security_profiles_on_one_listener_mio() {
    per_station_profiles(MIO);
}

#[test]
fn per_station_security_profiles_on_one_listener_tokio() {
    per_station_profiles(TOKIO);
}
