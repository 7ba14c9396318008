//! OCPP 2.1: an undecodable CALLRESULT, SEND, unknown message types, lenient actions.

use super::*;

fn raw_v21_reset_call(peer: &mut RawPeer) -> ocpp_proto::MessageId<'static> {
    let reset = ocpp_messages::v2_1::Request::from(ocpp_messages::v2_1::ResetRequest {
        r#type: ocpp_messages::v2_1::ResetEnum::Immediate,
        evse_id: None,
        custom_data: None,
    });
    let id = peer.csms.call(peer.now, reset.into()).unwrap();
    let texts = peer.received_texts();
    assert_eq!(
        texts,
        vec![format!(r#"[2,"{id}","Reset",{{"type":"Immediate"}}]"#)]
    );
    id
}

#[test]
fn v21_undecodable_result_gets_callresulterror() {
    let mut peer = RawPeer::open(ConnectionConfig::default(), "ocpp2.1");
    let id = raw_v21_reset_call(&mut peer);
    peer.send_text(&format!(r#"[3,"{id}",{{"status":5}}]"#));
    let texts = peer.received_texts();
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(
        texts[0].starts_with(&format!(r#"[5,"{id}","TypeConstraintViolation""#)),
        "{texts:?}"
    );
    assert!(matches!(
        &peer.events()[..],
        [Event::CallCompleted {
            outcome: Err(CallFailure::InvalidResponse { .. }),
            ..
        }]
    ));
    // On 2.0.1 the same answer is only reported.
    let mut peer = RawPeer::open(ConnectionConfig::default(), "ocpp2.0.1");
    let reset = ocpp_messages::v2_0_1::Request::from(ocpp_messages::v2_0_1::ResetRequest {
        r#type: ocpp_messages::v2_0_1::ResetEnum::Immediate,
        evse_id: None,
        custom_data: None,
    });
    let id = peer.csms.call(peer.now, reset.into()).unwrap();
    peer.received_texts();
    peer.send_text(&format!(r#"[3,"{id}",{{"status":5}}]"#));
    assert!(peer.received_texts().is_empty());
    assert!(matches!(
        &peer.events()[..],
        [Event::CallCompleted {
            outcome: Err(CallFailure::InvalidResponse { .. }),
            ..
        }]
    ));
}

#[test]
fn v21_send_is_delivered_and_never_answered() {
    let mut peer = RawPeer::open(ConnectionConfig::default(), "ocpp2.1");
    // A SEND may arrive while a CALL of the peer is unanswered.
    peer.send_text(r#"[2,"c1","Heartbeat",{}]"#);
    peer.send_text(r#"[6,"s1","NotifyPeriodicEventStream",{"id":1,"pending":0,"basetime":"2026-11-29T12:00:00Z","data":[{"t":1.5,"v":"230"}]}]"#);
    let events = peer.events();
    assert!(
        matches!(&events[0], Event::Call { id, .. } if id == "c1"),
        "{events:?}"
    );
    assert!(
        matches!(&events[1], Event::Send { id, .. } if id == "s1"),
        "{events:?}"
    );
    assert!(peer.received_texts().is_empty());
}

#[test]
fn unknown_message_type_per_version() {
    // 1.6 and 2.1 ignore it; 2.0.1 answers MessageTypeNotSupported.
    for (subprotocol, answered) in [("ocpp1.6", false), ("ocpp2.0.1", true), ("ocpp2.1", false)] {
        let mut peer = RawPeer::open(ConnectionConfig::default(), subprotocol);
        peer.send_text(r#"[7,"x",{}]"#);
        let texts = peer.received_texts();
        if answered {
            assert_eq!(texts.len(), 1);
            assert!(texts[0].contains("MessageTypeNotSupported"), "{texts:?}");
        } else {
            assert!(texts.is_empty(), "{subprotocol}: {texts:?}");
        }
        assert!(peer.csms.is_open());
    }
}

#[test]
fn lenient_actions_keep_unknown_enum_values() {
    let strict = ConnectionConfig::default();
    let lenient = ConnectionConfig::default().decode_options(
        ocpp_messages::DecodeOptions::strict().with_lenient_action("StatusNotification"),
    );
    let call = r#"[2,"1","StatusNotification",{"connectorId":1,"errorCode":"NoError","status":"Sleeping"}]"#;
    let mut peer = RawPeer::open(strict, "ocpp1.6");
    peer.send_text(call);
    assert!(peer.events().is_empty());
    assert!(peer.received_texts()[0].contains("PropertyConstraintViolation"));
    let mut peer = RawPeer::open(lenient, "ocpp1.6");
    peer.send_text(call);
    assert!(matches!(&peer.events()[..], [Event::Call { .. }]));
}
