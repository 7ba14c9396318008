//! Profile 2: TLS and Basic auth (TLS 1.2 too), a plain client on the TLS port, large messages
//! over TLS.

use super::*;

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
            ConnectRefusal::Tls(rustls::Error::InvalidCertificate(
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
