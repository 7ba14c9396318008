//! Profile 3: client certificates required and verified, the refusals, bad TLS files.

use super::*;

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
    let alert = |refusal: ConnectRefusal| match refusal {
        ConnectRefusal::Tls(rustls::Error::AlertReceived(alert)) => alert,
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
