//! The upgrade: the version chosen, no common version, 401, a slowloris handshake, Basic
//! credentials and the identity.

use super::*;

#[test]
fn version_choice_and_no_common_version() {
    // Client preference (OCPP 2.1 rule): the client's first supported choice wins.
    let mut pair = Pair::new(
        ConnectionConfig::default(),
        ConnectionConfig::default().versions(vec![OcppVersion::V2_0_1, OcppVersion::V1_6]),
    );
    pair.drive();
    let events = pair.take_csms_events();
    let [Event::UpgradeRequested(upgrade)] = &events[..] else {
        panic!()
    };
    assert_eq!(upgrade.version, Some(OcppVersion::V2_0_1));

    // No common version: 101 without a subprotocol, then close 1002.
    let mut pair = Pair::new(
        ConnectionConfig::default().versions(vec![OcppVersion::V2_1]),
        v16(),
    );
    pair.drive();
    let events = pair.take_csms_events();
    let [Event::UpgradeRequested(upgrade)] = &events[..] else {
        panic!()
    };
    assert_eq!(upgrade.version, None);
    pair.csms.accept(pair.now).unwrap();
    pair.drive();
    assert!(pair
        .take_cp_events()
        .iter()
        .any(|e| matches!(e, Event::Closed(c) if c.reason == CloseReason::NoCommonVersion)));
    assert!(pair.csms.is_closed());

    // Or a 400, if configured.
    let mut pair = Pair::new(
        ConnectionConfig::default()
            .versions(vec![OcppVersion::V2_1])
            .no_common_version(NoCommonVersion::Reject400),
        v16(),
    );
    pair.drive();
    assert!(pair.take_csms_events().iter().any(|e| matches!(e, Event::Closed(c) if matches!(c.reason, CloseReason::HandshakeFailed { status: 400, .. }))));
    assert!(pair.take_cp_events().iter().any(|e| matches!(e, Event::Closed(c) if matches!(c.reason, CloseReason::UpgradeRefused { status: Some(400), .. }))));
}

#[test]
fn reject_with_401_reaches_the_charge_point() {
    let mut pair = Pair::new(v16(), v16());
    pair.drive();
    pair.take_csms_events();
    pair.csms.reject(pair.now, 401).unwrap();
    pair.drive();
    assert!(pair.take_cp_events().iter().any(|e| matches!(e, Event::Closed(c) if matches!(c.reason, CloseReason::UpgradeRefused { status: Some(401), .. }))));
}

#[test]
fn slowloris_handshake_is_dropped() {
    let mut peer = ocpp_proto::Connection::accept_incoming(
        std::time::Instant::now(),
        std::sync::Arc::new(ConnectionConfig::default()),
    );
    let start = std::time::Instant::now();
    peer.handle_data(start, b"GET /ocpp/CP1 HTTP/1.1\r\nHost: x\r\n");
    let deadline = peer.poll_timeout().unwrap();
    assert!(deadline <= start + Duration::from_secs(10));
    peer.handle_timeout(deadline);
    assert!(peer.is_closed());
    assert!(
        matches!(peer.poll_event(), Some(Event::Closed(c)) if c.reason == CloseReason::HandshakeTimeout)
    );
}

#[test]
fn basic_credentials_and_identity_reach_the_app() {
    let now = std::time::Instant::now();
    let mut csms = ocpp_proto::Connection::accept_incoming(
        now,
        std::sync::Arc::new(ConnectionConfig::default()),
    );
    // user "RDAM|123", password "0123456789abcdef"
    let request = "GET /ocpp/RDAM%7C123 HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\
        Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
        Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ocpp2.0.1, ocpp1.6\r\n\
        Authorization: Basic UkRBTXwxMjM6MDEyMzQ1Njc4OWFiY2RlZg==\r\n\r\n";
    csms.handle_data(now, request.as_bytes());
    let Some(Event::UpgradeRequested(upgrade)) = csms.poll_event() else {
        panic!()
    };
    assert_eq!(upgrade.identity.as_str(), "RDAM|123");
    let credentials = upgrade.credentials.as_ref().unwrap();
    assert_eq!(credentials.user(), Some("RDAM|123"));
    assert_eq!(credentials.password(), b"0123456789abcdef");
    assert_eq!(upgrade.version, Some(OcppVersion::V2_0_1));
}
