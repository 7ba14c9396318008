//! The OpenSSL TLS backend (`--tls-backend openssl`) end to end, against both servers: an
//! independent client (the `openssl` crate's client side, not our server code) that allows
//! only the suites under test. Certificates are made by the test: an ECDSA server certificate
//! with rcgen ([`Pki`]) and an RSA one (key from OpenSSL, signed by the same CA with rcgen).
//!
//! - TC_A_04_CSMS (security profile 2; OCPP 2.0.1 Part 2 A00.FR.318): a TLS 1.2 client that
//!   allows only `AES128-GCM-SHA256` (`TLS_RSA_WITH_AES_128_GCM_SHA256`), then only
//!   `AES256-GCM-SHA384`, completes its handshake, upgrades to `ocpp2.0.1` with its password
//!   and gets its BootNotification answered; the same client is refused by the default
//!   (rustls) backend, which counts the failure.
//! - With both an RSA and an ECDSA certificate: an ECDHE-ECDSA suite gets the ECDSA one, a
//!   static-RSA suite the RSA one; TLS 1.3 works; CBC suites and TLS 1.1 are refused.
//! - TC_A_07_CSMS (security profile 3, client certificates required): with one the station
//!   boots and the CSMS decided on its CN (`GET /chargepoints/ID` shows it); one naming
//!   another station gets 403; without one the handshake fails (counted) and the server goes
//!   on serving the next station.
//! - Profiles per station (`--client-ca` with `--basic-auth`): client certificates optional at
//!   the TLS layer, as with rustls.
#![cfg(feature = "openssl")]

mod common;

use common::*;
use openssl::pkey::Id;
use openssl::ssl::{SslConnector, SslMethod, SslStream, SslVersion};

const V201: &[OcppVersion] = &[OcppVersion::V2_0_1];
const PASSWORD: &str = "0123456789abcdef";

/// The two static-RSA suites of A00.FR.318, by their OpenSSL names.
const STATIC_RSA: [&str; 2] = ["AES128-GCM-SHA256", "AES256-GCM-SHA384"];

macro_rules! on_both_servers {
    ($($case:ident),* $(,)?) => {
        mod mio_server {
            $(#[test] fn $case() { super::$case(env!("CARGO_BIN_EXE_mio-server")) })*
        }
        mod tokio_server {
            $(#[test] fn $case() { super::$case(env!("CARGO_BIN_EXE_tokio-server")) })*
        }
    };
}

/// Adds `rsa.pem` / `rsa.key` to `pki`: an RSA-2048 server certificate for `localhost` and
/// `127.0.0.1`, signed by the PKI's CA.
fn add_rsa_server_certificate(pki: &Pki) {
    use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair};
    let rsa = openssl::rsa::Rsa::generate(2048).unwrap();
    let pem = openssl::pkey::PKey::from_rsa(rsa)
        .unwrap()
        .private_key_to_pem_pkcs8()
        .unwrap();
    let key = KeyPair::from_pem(std::str::from_utf8(&pem).unwrap()).unwrap();
    let ca_cert = std::fs::read_to_string(pki.dir.join("ca.pem")).unwrap();
    let ca_key =
        KeyPair::from_pem(&std::fs::read_to_string(pki.dir.join("ca.key")).unwrap()).unwrap();
    let issuer = Issuer::from_ca_cert_pem(&ca_cert, ca_key).unwrap();
    let mut params =
        CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "csms.test");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params.signed_by(&key, &issuer).unwrap();
    std::fs::write(pki.dir.join("rsa.pem"), cert.pem()).unwrap();
    std::fs::write(pki.dir.join("rsa.key"), &pem).unwrap();
}

/// `--tls-cert` / `--tls-key` for each of `names` (`server` is the ECDSA one, `rsa` the RSA).
fn certificate_args(pki: &Pki, names: &[&str]) -> Vec<String> {
    names
        .iter()
        .flat_map(|name| {
            [
                "--tls-cert".to_owned(),
                pki.path(&format!("{name}.pem")),
                "--tls-key".to_owned(),
                pki.path(&format!("{name}.key")),
            ]
        })
        .collect()
}

fn start(binary: &str, args: &[String]) -> ServerProcess {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ServerProcess::start(binary, &args)
}

/// What the test client allows.
#[derive(Clone, Copy)]
enum Offer<'a> {
    /// TLS 1.2 with only these suites (OpenSSL cipher-list syntax).
    Tls12(&'a str),
    /// TLS 1.3 only.
    Tls13,
    /// TLS 1.1 at most (anything OpenSSL still has for it).
    Tls11,
}

/// An OpenSSL client trusting the PKI's CA, with `offer`, presenting the certificate
/// `identity` (e.g. `CP001`) if given; it checks the server's name (`localhost`).
fn handshake(
    addr: SocketAddr,
    pki: &Pki,
    offer: Offer<'_>,
    identity: Option<&str>,
) -> Result<SslStream<TcpStream>, String> {
    let mut builder = SslConnector::builder(SslMethod::tls_client()).unwrap();
    builder.set_ca_file(pki.dir.join("ca.pem")).unwrap();
    match offer {
        Offer::Tls12(suites) => {
            builder
                .set_min_proto_version(Some(SslVersion::TLS1_2))
                .unwrap();
            builder
                .set_max_proto_version(Some(SslVersion::TLS1_2))
                .unwrap();
            builder.set_cipher_list(suites).unwrap();
        }
        Offer::Tls13 => {
            builder
                .set_min_proto_version(Some(SslVersion::TLS1_3))
                .unwrap();
        }
        Offer::Tls11 => {
            builder
                .set_min_proto_version(Some(SslVersion::TLS1))
                .unwrap();
            builder
                .set_max_proto_version(Some(SslVersion::TLS1_1))
                .unwrap();
            builder.set_cipher_list("DEFAULT:@SECLEVEL=0").unwrap();
        }
    }
    if let Some(name) = identity {
        builder
            .set_certificate_chain_file(pki.dir.join(format!("{name}.pem")))
            .unwrap();
        builder
            .set_private_key_file(
                pki.dir.join(format!("{name}.key")),
                openssl::ssl::SslFiletype::PEM,
            )
            .unwrap();
    }
    let socket = TcpStream::connect_timeout(&addr, WAIT).unwrap();
    socket.set_read_timeout(Some(WAIT)).unwrap();
    socket.set_write_timeout(Some(WAIT)).unwrap();
    builder
        .build()
        .connect("localhost", socket)
        .map_err(|e| e.to_string())
}

/// Upgrades `stream` to `ocpp2.0.1` as `identity` (with the password, if given) and boots.
fn boot_over(
    stream: SslStream<TcpStream>,
    addr: SocketAddr,
    identity: &str,
    password: Option<&str>,
) -> ChargePoint {
    let mut cp = ChargePoint::connect_over(
        Stream::OpenSsl(Box::new(stream)),
        addr,
        identity,
        V201,
        password.map(str::as_bytes),
    )
    .unwrap_or_else(|refusal| panic!("{identity}: {refusal:?}"));
    let boot = cp.call(
        "BootNotification",
        r#"{"reason":"PowerUp","chargingStation":{"vendorName":"ACME","model":"Secure-1"}}"#,
    );
    assert_eq!(boot["status"], "Accepted", "{boot}");
    cp
}

/// Closes the WebSocket and checks that the TLS session then ended with the server's
/// `close_notify` (not a bare TCP end of stream).
fn close_checking_close_notify(mut cp: ChargePoint) {
    cp.connection
        .close(Instant::now(), ocpp_frame::CloseCode::NORMAL, "bye");
    while !matches!(cp.next_event(), Event::Closed(_)) {}
    let Stream::OpenSsl(stream) = &mut cp.stream else {
        panic!("not an OpenSSL stream");
    };
    let deadline = Instant::now() + WAIT;
    let mut buf = [0u8; 1024];
    loop {
        match stream.ssl_read(&mut buf) {
            Ok(_) => {}
            Err(e) if e.code() == openssl::ssl::ErrorCode::ZERO_RETURN => break,
            Err(e)
                if Instant::now() < deadline
                    && e.io_error().is_some_and(|io| {
                        matches!(
                            io.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        )
                    }) => {}
            Err(e) => panic!("the stream ended without close_notify: {e}"),
        }
    }
}

/// A handshake the server must refuse: the error the client saw (in its handshake, or, with
/// TLS 1.3, where the server decides after the client's Finished, at its first read).
fn refused_handshake(
    addr: SocketAddr,
    pki: &Pki,
    offer: Offer<'_>,
    identity: Option<&str>,
) -> String {
    let mut stream = match handshake(addr, pki, offer, identity) {
        Err(error) => return error,
        Ok(stream) => stream,
    };
    let _ = stream.ssl_write(b"GET /ocpp/CP001 HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let mut buf = [0u8; 1024];
    match stream.ssl_read(&mut buf) {
        Ok(n) => panic!(
            "{identity:?}: answered: {:?}",
            String::from_utf8_lossy(&buf[..n])
        ),
        Err(error) => error.to_string(),
    }
}

/// The value of the counter `name` in `GET /metrics`.
fn metric(server: &ServerProcess, name: &str) -> u64 {
    let (_, metrics) = http(server.admin, "GET", "/metrics", "");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{name}: {metrics}"))
        .parse()
        .unwrap()
}

fn tls_failures(server: &ServerProcess) -> u64 {
    metric(server, "ocpp_tls_failures_total")
}

/// A `--basic-auth` file with CS-RSA's password, in the PKI's directory.
fn passwords(pki: &Pki) -> String {
    let path = pki.path("passwords");
    std::fs::write(&path, format!("CS-RSA:{PASSWORD}\nCS-ECDSA:{PASSWORD}\n")).unwrap();
    path
}

/// TC_A_04_CSMS, TLS - server-side certificate - Valid certificate, security profile 2, with
/// the static-RSA suites A00.FR.318 requires: the OpenSSL backend completes them; rustls
/// refuses them.
fn tc_a_04_static_rsa_suites(binary: &str) {
    let pki = Pki::new("openssl-a04");
    add_rsa_server_certificate(&pki);
    let mut args = certificate_args(&pki, &["rsa"]);
    args.extend(["--basic-auth".to_owned(), passwords(&pki)]);
    let mut openssl_args = args.clone();
    openssl_args.extend(["--tls-backend".to_owned(), "openssl".to_owned()]);
    let server = start(binary, &openssl_args);
    for suite in STATIC_RSA {
        let stream = handshake(server.ocpp, &pki, Offer::Tls12(suite), None)
            .unwrap_or_else(|e| panic!("{suite}: {e}"));
        assert_eq!(stream.ssl().version_str(), "TLSv1.2");
        assert_eq!(stream.ssl().current_cipher().unwrap().name(), suite);
        let cp = boot_over(stream, server.ocpp, "CS-RSA", Some(PASSWORD));
        close_checking_close_notify(cp);
    }
    // Without the password: 401 over the same suites (profile 2 still applies).
    let stream = handshake(server.ocpp, &pki, Offer::Tls12(STATIC_RSA[0]), None).unwrap();
    let refused = ChargePoint::connect_over(
        Stream::OpenSsl(Box::new(stream)),
        server.ocpp,
        "CS-RSA",
        V201,
        None,
    )
    .err()
    .unwrap();
    assert_eq!(refused.status(), Some(401), "{refused:?}");
    assert_eq!(tls_failures(&server), 0);

    // The default backend (rustls) offers no suite without forward secrecy.
    let rustls_server = start(binary, &args);
    for suite in STATIC_RSA {
        let refused = handshake(rustls_server.ocpp, &pki, Offer::Tls12(suite), None);
        assert!(refused.is_err(), "{suite} completed with rustls");
    }
    assert_eq!(tls_failures(&rustls_server), 2);
}

/// TC_A_04_CSMS with an RSA and an ECDSA certificate at once: each suite gets the certificate
/// its key exchange needs; TLS 1.3 works; nothing weaker than the listed suites is offered.
fn tc_a_04_rsa_and_ecdsa_certificates(binary: &str) {
    let pki = Pki::new("openssl-a04-both");
    add_rsa_server_certificate(&pki);
    let mut args = certificate_args(&pki, &["rsa", "server"]);
    args.extend([
        "--basic-auth".to_owned(),
        passwords(&pki),
        "--tls-backend".to_owned(),
        "openssl".to_owned(),
    ]);
    let server = start(binary, &args);
    let key_type = |stream: &SslStream<TcpStream>| {
        let certificate = stream.ssl().peer_certificate().unwrap();
        certificate.public_key().unwrap().id()
    };
    for (offer, cipher, key) in [
        (
            Offer::Tls12("ECDHE-ECDSA-AES128-GCM-SHA256"),
            "ECDHE-ECDSA-AES128-GCM-SHA256",
            Id::EC,
        ),
        (
            Offer::Tls12("ECDHE-ECDSA-AES256-GCM-SHA384"),
            "ECDHE-ECDSA-AES256-GCM-SHA384",
            Id::EC,
        ),
        (
            Offer::Tls12("ECDHE-RSA-AES128-GCM-SHA256"),
            "ECDHE-RSA-AES128-GCM-SHA256",
            Id::RSA,
        ),
        (
            Offer::Tls12("AES256-GCM-SHA384"),
            "AES256-GCM-SHA384",
            Id::RSA,
        ),
        (Offer::Tls13, "TLS_AES_128_GCM_SHA256", Id::EC),
    ] {
        let stream =
            handshake(server.ocpp, &pki, offer, None).unwrap_or_else(|e| panic!("{cipher}: {e}"));
        assert_eq!(stream.ssl().current_cipher().unwrap().name(), cipher);
        assert_eq!(key_type(&stream), key, "{cipher}");
        let cp = boot_over(stream, server.ocpp, "CS-ECDSA", Some(PASSWORD));
        close_checking_close_notify(cp);
    }
    // CBC and SHA-1 suites, TLS 1.1: refused, each counted.
    for offer in [
        Offer::Tls12("ECDHE-RSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA:AES128-SHA256:AES128-SHA"),
        Offer::Tls11,
    ] {
        assert!(handshake(server.ocpp, &pki, offer, None).is_err());
    }
    assert_eq!(tls_failures(&server), 2);
}

/// TC_A_07_CSMS, TLS - Client-side certificate - valid certificate (security profile 3, the
/// certificate required): over a static-RSA suite, with its certificate the station boots and
/// the CSMS decided on its CN; without one the handshake fails and the server serves on.
fn tc_a_07_client_certificate(binary: &str) {
    let pki = Pki::new("openssl-a07");
    add_rsa_server_certificate(&pki);
    let mut args = certificate_args(&pki, &["rsa", "server"]);
    args.extend([
        "--client-ca".to_owned(),
        pki.path("ca.pem"),
        "--tls-backend".to_owned(),
        "openssl".to_owned(),
    ]);
    let server = start(binary, &args);

    for suite in STATIC_RSA {
        let stream = handshake(server.ocpp, &pki, Offer::Tls12(suite), Some("CP001")).unwrap();
        let cp = boot_over(stream, server.ocpp, "CP001", None);
        let state = charge_point_state(&server, "CP001");
        assert_eq!(state["connected"], true, "{state}");
        assert_eq!(state["version"], "2.0.1", "{state}");
        assert_eq!(
            state["client_certificate"]["common_name"], "CP001",
            "{state}"
        );
        close_checking_close_notify(cp);
    }
    // TLS 1.3 too.
    let stream = handshake(server.ocpp, &pki, Offer::Tls13, Some("CP002")).unwrap();
    let cp = boot_over(stream, server.ocpp, "CP002", None);
    let state = charge_point_state(&server, "CP002");
    assert_eq!(
        state["client_certificate"]["common_name"], "CP002",
        "{state}"
    );
    close_checking_close_notify(cp);

    // The CN decides: CP002's certificate connecting as CP001 gets 403.
    let stream = handshake(
        server.ocpp,
        &pki,
        Offer::Tls12(STATIC_RSA[1]),
        Some("CP002"),
    )
    .unwrap();
    let refused = ChargePoint::connect_over(
        Stream::OpenSsl(Box::new(stream)),
        server.ocpp,
        "CP001",
        V201,
        None,
    )
    .err()
    .unwrap();
    assert_eq!(refused.status(), Some(403), "{refused:?}");

    // Without a certificate, or with one from a CA the server does not trust: the handshake
    // fails with the alert OpenSSL chose (TLS 1.2: the client learns it at once; TLS 1.3: at
    // its first read), counted.
    for (offer, identity, alert) in [
        (Offer::Tls12(STATIC_RSA[0]), None, "handshake failure"),
        (
            Offer::Tls12(STATIC_RSA[0]),
            Some("rogue-CP001"),
            "unknown ca",
        ),
        (Offer::Tls13, None, "certificate required"),
        (Offer::Tls13, Some("rogue-CP001"), "unknown ca"),
    ] {
        let error = refused_handshake(server.ocpp, &pki, offer, identity);
        assert!(error.contains(alert), "{identity:?}: {error}");
    }
    assert_eq!(tls_failures(&server), 4);

    // The server carries on: CP001 with its certificate boots again.
    let stream = handshake(
        server.ocpp,
        &pki,
        Offer::Tls12(STATIC_RSA[0]),
        Some("CP001"),
    )
    .unwrap();
    let cp = boot_over(stream, server.ocpp, "CP001", None);
    close_checking_close_notify(cp);
}

/// Profiles per station on one OpenSSL listener (`--client-ca` with `--basic-auth`): client
/// certificates are optional at the TLS layer, as with rustls. A station with its certificate
/// is let in on it (its CN shown); one with a password and no certificate on its password; a
/// certificate from an untrusted CA still fails the handshake.
fn per_station_profiles_with_optional_client_certificates(binary: &str) {
    let pki = Pki::new("openssl-optional");
    add_rsa_server_certificate(&pki);
    let mut args = certificate_args(&pki, &["rsa"]);
    args.extend([
        "--client-ca".to_owned(),
        pki.path("ca.pem"),
        "--basic-auth".to_owned(),
        passwords(&pki),
        "--tls-backend".to_owned(),
        "openssl".to_owned(),
    ]);
    let server = start(binary, &args);
    let suite = Offer::Tls12(STATIC_RSA[0]);

    let stream = handshake(server.ocpp, &pki, suite, Some("CP001")).unwrap();
    let cp = boot_over(stream, server.ocpp, "CP001", None);
    let state = charge_point_state(&server, "CP001");
    assert_eq!(
        state["client_certificate"]["common_name"], "CP001",
        "{state}"
    );
    close_checking_close_notify(cp);

    let stream = handshake(server.ocpp, &pki, suite, None).unwrap();
    let cp = boot_over(stream, server.ocpp, "CS-RSA", Some(PASSWORD));
    let state = charge_point_state(&server, "CS-RSA");
    assert!(state["client_certificate"].is_null(), "{state}");
    close_checking_close_notify(cp);

    let error = refused_handshake(server.ocpp, &pki, suite, Some("rogue-CP001"));
    assert!(error.contains("unknown ca"), "{error}");
    assert_eq!(tls_failures(&server), 1);
}

on_both_servers!(
    tc_a_04_static_rsa_suites,
    tc_a_04_rsa_and_ecdsa_certificates,
    tc_a_07_client_certificate,
    per_station_profiles_with_optional_client_certificates,
);
