//! Security profiles per station, and the CSMS's certificate authority: SignCertificate, then
//! profile 3 with the signed certificate; CSRs refused.

use super::*;

/// Passwords of the per-station listener: CP001 (profile 3, its password must not be enough),
/// CP002 (profile 2), CP003 (no profile of its own: a password over TLS, or a certificate).
const MIXED_PASSWORDS: &str =
    "CP001:0123456789abcdef\nCP002:fedcba9876543210\nCP003:3333333333333333\n";
const CP003_PASSWORD: &[u8] = b"3333333333333333";

/// One wss:// listener for stations of profiles 2 and 3: client certificates optional at the
/// TLS layer, the CA of the PKI signing CSRs, CP001 at profile 3 and CP002 at profile 2.
fn start_per_station(binary: &str, pki: &Pki) -> ServerProcess {
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
fn wait_for_record(server: &ServerProcess, identity: &str, done: impl Fn(&Value) -> bool) -> Value {
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
