//! The CSMS's held CALLs: answered in order, refused past the hold limit, a thousand pipelined,
//! and the answers refused (twice, another action's, another version's).

use super::*;

#[test]
fn held_calls_are_answered_in_order() {
    let mut peer = RawPeer::open(ConnectionConfig::default(), "ocpp1.6");
    // Three CALLs at once (the peer breaks "one at a time"); the second is unknown.
    peer.send_text(r#"[2,"1","Heartbeat",{}]"#);
    peer.send_text(r#"[2,"2","Frobnicate",{}]"#);
    peer.send_text(r#"[2,"3","Heartbeat",{}]"#);
    let events = peer.events();
    assert!(
        matches!(&events[..], [Event::Call { id, .. }] if id == "1"),
        "{events:?}"
    );
    assert!(
        peer.received_texts().is_empty(),
        "nothing may overtake the answer to 1"
    );
    peer.csms
        .answer(peer.now, &mid("1"), Answer::Result(heartbeat_response()))
        .unwrap();
    // 1 is answered, then 2 by the core, then 3 reaches the app.
    let texts = peer.received_texts();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[0].starts_with(r#"[3,"1","#));
    assert!(texts[1].starts_with(r#"[4,"2","NotImplemented""#));
    assert!(matches!(&peer.events()[..], [Event::Call { id, .. }] if id == "3"));
}

#[test]
fn calls_past_the_hold_limit_are_refused_at_once() {
    let config = ConnectionConfig::default().max_held_calls(1);
    let mut peer = RawPeer::open(config, "ocpp1.6");
    for id in 1..=3 {
        peer.send_text(&format!(r#"[2,"{id}","Heartbeat",{{}}]"#));
    }
    // 1 reaches the app, 2 is held, 3 is past the limit: refused at once, and the loop is
    // told to stop reading until the app catches up.
    assert!(matches!(&peer.events()[..], [Event::Call { id, .. }] if id == "1"));
    let texts = peer.received_texts();
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(texts[0].starts_with(r#"[4,"3","GenericError""#));
    assert!(!peer.csms.wants_read());
    peer.csms
        .answer(peer.now, &mid("1"), Answer::Result(heartbeat_response()))
        .unwrap();
    assert!(matches!(&peer.events()[..], [Event::Call { id, .. }] if id == "2"));
    peer.csms
        .answer(peer.now, &mid("2"), Answer::Result(heartbeat_response()))
        .unwrap();
    assert!(peer.csms.wants_read());
    let texts = peer.received_texts();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[0].starts_with(r#"[3,"1","#));
    assert!(texts[1].starts_with(r#"[3,"2","#));
    assert!(peer.csms.is_open());
}

/// 1,000 CALLs pipelined in one write (an attack seen on a real server): every one gets exactly
/// one answer, the held ones from the application in order, the surplus a CALLERROR, and the
/// connection carries on.
#[test]
fn a_thousand_pipelined_calls_each_get_one_answer() {
    let mut peer = RawPeer::open(ConnectionConfig::default(), "ocpp1.6");
    let mut wire = Vec::new();
    let encoder = ocpp_frame::Encoder::new(ocpp_frame::Role::Client);
    for id in 0..1000 {
        let text = format!(r#"[2,"{id}","Heartbeat",{{}}]"#);
        encoder
            .encode_text(&text, Some([9, 8, 7, 6]), &mut wire)
            .unwrap();
    }
    peer.send_raw(&wire);
    let mut answers = std::collections::BTreeMap::<String, String>::new();
    let mut record = |texts: Vec<String>| {
        for text in texts {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            let id = v[1].as_str().unwrap().to_owned();
            let kind = if v[0] == 3 { "result" } else { "error" };
            assert!(
                answers.insert(id.clone(), kind.into()).is_none(),
                "{id} twice"
            );
        }
    };
    for _ in 0..1000 {
        let events = peer.events();
        let Some(Event::Call { id, .. }) = events.into_iter().next() else {
            break;
        };
        peer.csms
            .answer(peer.now, &id, Answer::Result(heartbeat_response()))
            .unwrap();
        record(peer.received_texts());
    }
    record(peer.received_texts());
    assert_eq!(answers.len(), 1000);
    let results = answers.values().filter(|k| *k == "result").count();
    // The first and the four held (the default hold limit) reach the application.
    assert_eq!(results, 5);
    assert!(peer.csms.is_open());
    assert!(peer.csms.wants_read());
}

#[test]
fn answer_twice_is_refused() {
    let mut peer = RawPeer::open(ConnectionConfig::default(), "ocpp1.6");
    peer.send_text(r#"[2,"1","Heartbeat",{}]"#);
    peer.events();
    peer.csms
        .answer(peer.now, &mid("1"), Answer::Result(heartbeat_response()))
        .unwrap();
    let again = peer
        .csms
        .answer(peer.now, &mid("1"), Answer::Result(heartbeat_response()))
        .unwrap_err();
    assert_eq!(again, AnswerError::UnknownId);
    assert!(!again.was_answered());
    let error = peer
        .csms
        .answer(
            peer.now,
            &mid("1"),
            Answer::error(ErrorCode::NotSupported, ""),
        )
        .unwrap_err();
    assert_eq!(error, AnswerError::UnknownId);
    // One answer on the wire, no more.
    assert_eq!(peer.received_texts().len(), 1);
}

/// The answer rule: a result of another action than the CALL's is the application's bug. The
/// application hears of it, the charge point gets CALLERROR InternalError (never the wrong
/// payload), and the connection goes on: the next CALL is delivered and answered.
#[test]
fn an_answer_of_another_action_becomes_internal_error() {
    let mut peer = RawPeer::open(ConnectionConfig::default(), "ocpp1.6");
    peer.send_text(r#"[2,"1","Heartbeat",{}]"#);
    peer.events();
    let refused = peer
        .csms
        .answer(peer.now, &mid("1"), Answer::Result(boot_accepted()))
        .unwrap_err();
    assert_eq!(
        refused,
        AnswerError::WrongAction {
            call: "Heartbeat",
            answer: "BootNotification"
        }
    );
    assert!(refused.was_answered());
    let texts = peer.received_texts();
    assert_eq!(texts.len(), 1);
    assert!(
        texts[0].starts_with(
            r#"[4,"1","InternalError","a BootNotification result for a Heartbeat CALL"#
        ),
        "{texts:?}"
    );
    peer.send_text(r#"[2,"2","Heartbeat",{}]"#);
    assert!(matches!(&peer.events()[..], [Event::Call { id, .. }] if id.as_str() == "2"));
    peer.csms
        .answer(peer.now, &mid("2"), Answer::Result(heartbeat_response()))
        .unwrap();
    assert!(peer.received_texts()[0].starts_with(r#"[3,"2",{"currentTime""#));
}

/// A result of another version than the connection's gets the same treatment.
#[test]
fn an_answer_of_another_version_becomes_internal_error() {
    let mut peer = RawPeer::open(ConnectionConfig::default(), "ocpp2.0.1");
    peer.send_text(r#"[2,"7","Heartbeat",{}]"#);
    peer.events();
    let refused = peer
        .csms
        .answer(peer.now, &mid("7"), Answer::Result(heartbeat_response()))
        .unwrap_err();
    assert!(
        matches!(refused, AnswerError::WrongVersion { .. }),
        "{refused:?}"
    );
    let texts = peer.received_texts();
    assert!(
        texts[0].starts_with(r#"[4,"7","InternalError","#),
        "{texts:?}"
    );
}
