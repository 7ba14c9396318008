//! What a peer should not send: unknown actions, schema violations, invalid JSON, unmatched
//! responses, binary frames and protocol errors, each with its version's spelling and code.

use super::*;

#[test]
fn unknown_action_is_not_implemented_per_version() {
    for (subprotocol, expected) in [
        (
            "ocpp1.6",
            r#"[4,"1","NotImplemented","unknown action `Frobnicate`",{}]"#,
        ),
        (
            "ocpp2.0.1",
            r#"[4,"1","NotImplemented","unknown action `Frobnicate`",{}]"#,
        ),
    ] {
        let mut peer = RawPeer::open(ConnectionConfig::default(), subprotocol);
        peer.send_text(r#"[2,"1","Frobnicate",{}]"#);
        assert_eq!(peer.received_texts(), vec![expected.to_string()]);
        assert!(peer.events().is_empty(), "the core answered, not the app");
    }
}

#[test]
fn schema_violations_get_their_codes() {
    let mut peer = RawPeer::open(ConnectionConfig::default(), "ocpp1.6");
    // Missing required field: occurrence (1.6 spelling).
    peer.send_text(r#"[2,"a","BootNotification",{"chargePointVendor":"X"}]"#);
    // Wrong type: type constraint.
    peer.send_text(r#"[2,"b","BootNotification",{"chargePointVendor":"X","chargePointModel":5}]"#);
    // Too long: property constraint.
    let long = "y".repeat(21);
    peer.send_text(&format!(
        r#"[2,"c","BootNotification",{{"chargePointVendor":"{long}","chargePointModel":"M"}}]"#
    ));
    let codes: Vec<String> = peer
        .received_texts()
        .iter()
        .map(|t| {
            let v: serde_json::Value = serde_json::from_str(t).unwrap();
            format!("{}:{}", v[1].as_str().unwrap(), v[2].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        codes,
        vec![
            "a:OccurenceConstraintViolation",
            "b:TypeConstraintViolation",
            "c:PropertyConstraintViolation"
        ]
    );
}

#[test]
fn invalid_json_gets_the_version_spelling_and_id_minus_one() {
    for (subprotocol, code) in [
        ("ocpp1.6", "FormationViolation"),
        ("ocpp2.0.1", "FormatViolation"),
    ] {
        let mut peer = RawPeer::open(ConnectionConfig::default(), subprotocol);
        peer.send_text(r#"[2,"1","Heartbeat",{"#);
        let texts = peer.received_texts();
        assert_eq!(texts.len(), 1, "{texts:?}");
        let v: serde_json::Value = serde_json::from_str(&texts[0]).unwrap();
        assert_eq!(v[0], 4);
        assert_eq!(v[2], code);
        assert!(
            !texts[0].contains("Heartbeat\",{"),
            "the input is never echoed"
        );
        assert!(peer.csms.is_open());
    }
}

#[test]
fn unmatched_response_is_reported_not_fatal() {
    let mut peer = RawPeer::open(ConnectionConfig::default(), "ocpp1.6");
    peer.send_text(r#"[3,"nope",{}]"#);
    peer.send_text(r#"[4,"nope2","GenericError","",{}]"#);
    assert_eq!(
        peer.events(),
        vec![
            Event::UnmatchedResponse { id: mid("nope") },
            Event::UnmatchedResponse { id: mid("nope2") }
        ]
    );
    assert!(peer.received_texts().is_empty());
    assert!(peer.csms.is_open());
}

#[test]
fn not_supported_spelling() {
    let mut peer = RawPeer::open(ConnectionConfig::default(), "ocpp2.0.1");
    peer.send_text(r#"[2,"9","Heartbeat",{}]"#);
    peer.events();
    peer.csms
        .answer(
            peer.now,
            &mid("9"),
            Answer::error(ErrorCode::NotSupported, "not here"),
        )
        .unwrap();
    assert_eq!(
        peer.received_texts(),
        vec![r#"[4,"9","NotSupported","not here",{}]"#.to_string()]
    );
}

#[test]
fn binary_frames_close_with_1003() {
    let mut peer = RawPeer::open(ConnectionConfig::default(), "ocpp1.6");
    peer.send_raw(&[0x82, 0x81, 0, 0, 0, 0, 1]);
    let messages = peer.received();
    assert!(
        matches!(&messages[..], [Message::Close(Some(c))] if c.code == CloseCode::UNSUPPORTED_DATA)
    );
}

#[test]
fn protocol_errors_close_with_their_code() {
    let mut peer = RawPeer::open(ConnectionConfig::default(), "ocpp1.6");
    // Unmasked frame from a client.
    peer.send_raw(&[0x81, 0x01, b'x']);
    let messages = peer.received();
    assert!(
        matches!(&messages[..], [Message::Close(Some(c))] if c.code == CloseCode::PROTOCOL_ERROR)
    );
    // RFC 6455 §7.1.7: the connection is failed at once.
    assert!(
        matches!(&peer.events()[..], [Event::Closed(c)] if matches!(c.reason, CloseReason::ProtocolError(_)))
    );
    assert!(peer.csms.is_closed());
    // Invalid UTF-8 in a text frame: 1007.
    let mut peer = RawPeer::open(ConnectionConfig::default(), "ocpp1.6");
    peer.send_raw(&[0x81, 0x81, 0, 0, 0, 0, 0xff]);
    assert!(
        matches!(&peer.received()[..], [Message::Close(Some(c))] if c.code == CloseCode::INVALID_PAYLOAD)
    );
}
