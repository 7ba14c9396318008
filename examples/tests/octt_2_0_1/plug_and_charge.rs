//! Plug & Charge (blocks C and M): contract certificates (hash data, revoked, central
//! validation), GetCertificateStatus, 15118 certificate installation and update, OCSP checks not
//! blocking other stations, OCPP 2.1.

use super::*;

/// The Plug & Charge cases' station: booted, an EV connected on EVSE 1 before
/// authorization (the reusable state EVConnectedPreSession), transaction `tx`.
fn ev_connected_pre_session(server: &ServerProcess, identity: &str, tx: &str) -> Ws {
    let mut ws = booted(server, identity);
    status(&mut ws, 1, 1, "Occupied");
    let started = event(
        "Started",
        "CablePluggedIn",
        0,
        tx,
        json!({"chargingState": "EVConnected"}),
        json!({}),
    );
    assert_eq!(ws.result("TransactionEvent", started), json!({}));
    ws
}

/// `iso15118CertificateHashData` for a contract certificate of `pki` (SHA256, hex, the
/// responder URL of its AIA).
fn hash_data(pki: &ocsp_responder::Pki, leaf: &ocsp_responder::Issued) -> Value {
    use ocpp_reference_csms::ocsp::{HashAlgorithm, OcspRequestData};
    let data =
        OcspRequestData::for_certificate(&leaf.der(), &pki.sub_ca.der(), HashAlgorithm::Sha256)
            .expect("hash data");
    let (name, key, serial) = data.hex_fields();
    json!([{"hashAlgorithm": "SHA256", "issuerNameHash": name, "issuerKeyHash": key,
            "serialNumber": serial, "responderURL": data.responder_url}])
}

const EMAID: &str = "DE-ABC-C12345-6";

fn emaid() -> Value {
    json!({"idToken": EMAID, "type": "eMAID"})
}

/// The rest of TC_C_50/52 after an Accepted Authorize: TransactionEvent (Authorized) with
/// the eMAID is Accepted, then the energy transfer starts (EnergyTransferStarted).
fn authorized_then_charging(ws: &mut Ws, tx: &str) {
    let authorized = event(
        "Updated",
        "Authorized",
        1,
        tx,
        json!({"chargingState": "EVConnected"}),
        json!({"idToken": emaid()}),
    );
    let answer = ws.result("TransactionEvent", authorized);
    assert_eq!(answer["idTokenInfo"]["status"], "Accepted", "{answer}");
    let charging = event(
        "Updated",
        "ChargingStateChanged",
        2,
        tx,
        json!({"chargingState": "Charging"}),
        json!({}),
    );
    assert_eq!(ws.result("TransactionEvent", charging), json!({}));
}

/// TC_C_50_CSMS, Authorization using Contract Certificates 15118, Online, Local validation,
/// Accepted (C07.FR.04): Authorize with the eMAID and the contract certificate's hash data;
/// the CSMS asks the responder the hash data names (`openssl ocsp`, which knows the
/// certificate as valid), verifies the signed answer against the MO root and answers
/// Accepted / certificateStatus Accepted; the transaction is then authorized.
pub(crate) fn tc_c_50_contract_certificate_hash_data_accepted(binary: &str) {
    if !ocsp_responder::openssl_available() {
        return;
    }
    let mut pki = ocsp_responder::Pki::new("c50");
    let leaf = pki.issue("contract", EMAID);
    let _responder = pki.responder(None);
    let root = pki.root.pem.display().to_string();
    let server = ServerProcess::start(binary, &["--mo-root", &root]);
    let mut ws = ev_connected_pre_session(&server, "CS-C50", "TX-C50");
    let authorize =
        json!({"idToken": emaid(), "iso15118CertificateHashData": hash_data(&pki, &leaf)});
    let answer = ws.result("Authorize", authorize);
    assert_eq!(answer["idTokenInfo"]["status"], "Accepted", "{answer}");
    assert_eq!(answer["certificateStatus"], "Accepted", "{answer}");
    authorized_then_charging(&mut ws, "TX-C50");
    ws.close();
}

/// TC_C_51_CSMS, Authorization using Contract Certificates 15118, Online, Local validation,
/// Rejected (C07.FR.16): the responder knows the contract certificate as revoked, so the
/// token is Invalid and certificateStatus CertificateRevoked. A contract whose responder
/// cannot be reached is not Accepted either.
pub(crate) fn tc_c_51_contract_certificate_revoked(binary: &str) {
    if !ocsp_responder::openssl_available() {
        return;
    }
    let mut pki = ocsp_responder::Pki::new("c51");
    let leaf = pki.issue("contract", EMAID);
    pki.revoke(&leaf);
    let root = pki.root.pem.display().to_string();
    let server = ServerProcess::start(binary, &["--mo-root", &root]);
    let mut ws = ev_connected_pre_session(&server, "CS-C51", "TX-C51");
    // No responder yet: no status to be had.
    let authorize =
        json!({"idToken": emaid(), "iso15118CertificateHashData": hash_data(&pki, &leaf)});
    let answer = ws.result("Authorize", authorize.clone());
    assert_eq!(answer["idTokenInfo"]["status"], "Invalid", "{answer}");
    assert_eq!(
        answer["certificateStatus"], "NoCertificateAvailable",
        "{answer}"
    );
    let _responder = pki.responder(None);
    let answer = ws.result("Authorize", authorize);
    assert_eq!(answer["idTokenInfo"]["status"], "Invalid", "{answer}");
    assert_eq!(
        answer["certificateStatus"], "CertificateRevoked",
        "{answer}"
    );
    ws.close();
}

/// TC_C_52_CSMS, Authorization using Contract Certificates 15118 - Online - Central
/// validation - Accepted (C07.FR.04, C07.FR.05): the station sends the contract chain (leaf
/// and sub-CA, PEM) and no hash data; the CSMS checks the chain up to the MO root and the
/// validity, takes the responder from the leaf's AIA, computes the CertID and asks it:
/// Accepted. A chain that does not reach the MO root is CertChainError.
pub(crate) fn tc_c_52_contract_certificate_central_validation(binary: &str) {
    if !ocsp_responder::openssl_available() {
        return;
    }
    let mut pki = ocsp_responder::Pki::new("c52");
    let leaf = pki.issue("contract", EMAID);
    let _responder = pki.responder(None);
    let root = pki.root.pem.display().to_string();
    let server = ServerProcess::start(binary, &["--mo-root", &root]);
    let mut ws = ev_connected_pre_session(&server, "CS-C52", "TX-C52");
    let chain = format!("{}{}", leaf.pem_text(), pki.sub_ca.pem_text());
    let answer = ws.result(
        "Authorize",
        json!({"idToken": emaid(), "certificate": chain}),
    );
    assert_eq!(answer["idTokenInfo"]["status"], "Accepted", "{answer}");
    assert_eq!(answer["certificateStatus"], "Accepted", "{answer}");
    authorized_then_charging(&mut ws, "TX-C52");
    let stranger = pki.stranger().pem_text();
    let answer = ws.result(
        "Authorize",
        json!({"idToken": emaid(), "certificate": stranger}),
    );
    assert_eq!(answer["idTokenInfo"]["status"], "Invalid", "{answer}");
    assert_eq!(answer["certificateStatus"], "CertChainError", "{answer}");
    ws.close();
}

/// TC_M_24_CSMS, Get Charging Station Certificate status - Success (M06): the CSMS makes the
/// OCSP request the station describes and relays the DER response (base64) with Accepted;
/// `openssl ocsp` reads it back as good for that serial. A responder that cannot be reached
/// gives Failed with a reason.
pub(crate) fn tc_m_24_get_certificate_status(binary: &str) {
    use base64::Engine as _;
    if !ocsp_responder::openssl_available() {
        return;
    }
    let mut pki = ocsp_responder::Pki::new("m24");
    let v2g = pki.issue("v2g", "CS-M24");
    let _responder = pki.responder(None);
    let root = pki.root.pem.display().to_string();
    let server = ServerProcess::start(binary, &["--v2g-root", &root]);
    let mut ws = booted(&server, "CS-M24");
    let data = hash_data(&pki, &v2g)[0].clone();
    let answer = ws.result(
        "GetCertificateStatus",
        json!({"ocspRequestData": data.clone()}),
    );
    assert_eq!(answer["status"], "Accepted", "{answer}");
    let der = base64::engine::general_purpose::STANDARD
        .decode(answer["ocspResult"].as_str().expect("ocspResult"))
        .expect("base64");
    let path = pki.dir.join("relayed.der");
    std::fs::write(&path, der).expect("write");
    let output = std::process::Command::new("openssl")
        .args(["ocsp", "-resp_text", "-noverify", "-respin"])
        .arg(&path)
        .output()
        .expect("openssl");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("Cert Status: good"), "{text}");
    assert!(
        text.contains(&format!("Serial Number: {}", v2g.serial)),
        "{text}"
    );

    let mut unreachable = data;
    unreachable["responderURL"] =
        json!(format!("http://127.0.0.1:{}/", ocsp_responder::free_port()));
    let answer = ws.result(
        "GetCertificateStatus",
        json!({"ocspRequestData": unreachable}),
    );
    assert_eq!(answer["status"], "Failed", "{answer}");
    assert_eq!(answer["statusInfo"]["reasonCode"], "OCSPFailed", "{answer}");
    assert!(answer.get("ocspResult").is_none(), "{answer}");
    ws.close();
}

/// Get15118EVCertificate with `action`, through a contract-certificate service: Accepted
/// with the service's exiResponse, which got the station's EXI request and schema version.
fn contract_certificate_through_service(binary: &str, identity: &str, action: &str) {
    let service = contract_service::ContractService::start(true);
    let server = ServerProcess::start(binary, &["--contract-certificate-service", &service.url]);
    let mut ws = booted(&server, identity);
    let exi = base64(format!("{action}-REQ-{identity}").as_bytes());
    let schema = "urn:iso:15118:2:2013:MsgDef";
    let request = json!({"iso15118SchemaVersion": schema, "action": action, "exiRequest": exi});
    let answer = ws.result("Get15118EVCertificate", request);
    assert_eq!(answer["status"], "Accepted", "{answer}");
    assert_eq!(
        answer["exiResponse"],
        contract_service::exi_response_for(action, &exi)
    );
    let received = service.received();
    assert_eq!(received.len(), 1, "{received:?}");
    assert_eq!(received[0]["action"], action);
    assert_eq!(received[0]["iso15118SchemaVersion"], schema);
    assert_eq!(received[0]["exiRequest"], exi);
    ws.close();
}

/// TC_M_26_CSMS, Certificate Installation EV - Success (M01): Install forwarded, Accepted
/// with the exiResponse. Without a service, or when it fails, the answer is Failed.
pub(crate) fn tc_m_26_certificate_installation_ev(binary: &str) {
    contract_certificate_through_service(binary, "CS-M26", "Install");
    let request = json!({"iso15118SchemaVersion": "urn:iso:15118:2:2013:MsgDef",
                         "action": "Install", "exiRequest": "AAAA"});
    let failing = contract_service::ContractService::start(false);
    let server = ServerProcess::start(binary, &["--contract-certificate-service", &failing.url]);
    let mut ws = booted(&server, "CS-M26-F");
    let answer = ws.result("Get15118EVCertificate", request.clone());
    assert_eq!(answer["status"], "Failed", "{answer}");
    ws.close();
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CS-M26-N");
    let answer = ws.result("Get15118EVCertificate", request);
    assert_eq!(answer["status"], "Failed", "{answer}");
    assert_eq!(answer["statusInfo"]["reasonCode"], "NoService", "{answer}");
    ws.close();
}

/// TC_M_28_CSMS, Certificate Update EV - Success (M02): Update forwarded, Accepted with the
/// exiResponse.
pub(crate) fn tc_m_28_certificate_update_ev(binary: &str) {
    contract_certificate_through_service(binary, "CS-M28", "Update");
}

/// The OCSP round trip of a C07 Authorize runs off the I/O loop: while its responder keeps
/// silent, another station's Heartbeat is answered at once; the Authorize is answered when
/// the check gives up (its timeout), not Accepted.
pub(crate) fn pnc_ocsp_check_does_not_block_other_stations(binary: &str) {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", silent.local_addr().unwrap());
    let _silent = std::thread::spawn(move || {
        let held: Vec<_> = silent.incoming().take(1).collect();
        std::thread::sleep(Duration::from_secs(8));
        drop(held);
    });
    let server = ServerProcess::start(binary, &[]);
    let mut waiting = booted(&server, "CS-PNC-A");
    let mut other = booted(&server, "CS-PNC-B");
    let data = json!([{"hashAlgorithm": "SHA256", "issuerNameHash": "00", "issuerKeyHash": "00",
                       "serialNumber": "01", "responderURL": url}]);
    let authorize = json!([2, "pnc-1", "Authorize",
                           {"idToken": emaid(), "iso15118CertificateHashData": data}]);
    let sent = Instant::now();
    waiting.send_text(&authorize.to_string());
    std::thread::sleep(Duration::from_millis(300));
    let asked = Instant::now();
    assert_date_time(&other.result("Heartbeat", json!({}))["currentTime"]);
    assert!(
        asked.elapsed() < Duration::from_secs(1),
        "{:?}",
        asked.elapsed()
    );
    let answer = waiting.recv_json();
    assert_eq!(answer[1], "pnc-1", "{answer}");
    assert_eq!(answer[2]["idTokenInfo"]["status"], "Invalid", "{answer}");
    assert_eq!(
        answer[2]["certificateStatus"], "NoCertificateAvailable",
        "{answer}"
    );
    assert!(
        sent.elapsed() >= Duration::from_secs(3),
        "{:?}",
        sent.elapsed()
    );
    waiting.close();
    other.close();
}

/// OCPP 2.1 shares the Plug & Charge handlers: Authorize with hash data (OCSP good), the
/// contract certificate's status relayed by GetCertificateStatus, Get15118EVCertificate
/// through the service.
pub(crate) fn pnc_ocpp_2_1_same_handlers(binary: &str) {
    if !ocsp_responder::openssl_available() {
        return;
    }
    let mut pki = ocsp_responder::Pki::new("v21");
    let leaf = pki.issue("contract", EMAID);
    let _responder = pki.responder(None);
    let service = contract_service::ContractService::start(true);
    let root = pki.root.pem.display().to_string();
    let server = ServerProcess::start(
        binary,
        &[
            "--mo-root",
            &root,
            "--v2g-root",
            &root,
            "--contract-certificate-service",
            &service.url,
        ],
    );
    let mut ws = connect(&server, "CS-PNC-21", "ocpp2.1");
    let boot = ws.result("BootNotification", boot_payload("PowerUp"));
    assert_eq!(boot["status"], "Accepted");
    let data = hash_data(&pki, &leaf);
    let answer = ws.result(
        "Authorize",
        json!({"idToken": emaid(), "iso15118CertificateHashData": data.clone()}),
    );
    assert_eq!(answer["idTokenInfo"]["status"], "Accepted", "{answer}");
    assert_eq!(answer["certificateStatus"], "Accepted", "{answer}");
    let answer = ws.result(
        "GetCertificateStatus",
        json!({"ocspRequestData": data[0].clone()}),
    );
    assert_eq!(answer["status"], "Accepted", "{answer}");
    assert!(
        answer["ocspResult"].as_str().is_some_and(|r| !r.is_empty()),
        "{answer}"
    );
    let request = json!({"iso15118SchemaVersion": "urn:iso:std:iso:15118:-20:CommonMessages",
                         "action": "Install", "exiRequest": "AAAA",
                         "maximumContractCertificateChains": 2});
    let answer = ws.result("Get15118EVCertificate", request);
    assert_eq!(answer["status"], "Accepted", "{answer}");
    assert_eq!(
        answer["exiResponse"],
        contract_service::exi_response_for("Install", "AAAA")
    );
    ws.close();
}
