//! The OCPP connection through its public API: two peers in simulated time, and a CSMS driven by
//! hand-written frames for what a well-behaved peer never sends.

mod common;

use std::time::Duration;

use common::raw::RawPeer;
use common::*;
use ocpp_frame::{CloseCode, Message};
use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::version::OcppVersion;
use ocpp_proto::{
    Answer, AnswerError, CallFailure, CloseReason, ConnectionConfig, Delivery, Event, MessageId,
    NoCommonVersion, RefusalReason,
};

fn v16() -> ConnectionConfig {
    ConnectionConfig::default().versions(vec![OcppVersion::V1_6])
}

#[test]
fn boot_and_heartbeat() {
    for chunk in [0, 1, 3, 7, 64] {
        let mut pair = Pair::new(v16(), v16());
        pair.chunk = chunk;
        pair.drive();
        let events = pair.take_csms_events();
        let [Event::UpgradeRequested(upgrade)] = events.as_slice() else {
            panic!("{events:?}")
        };
        assert_eq!(upgrade.identity.as_str(), "CP-001");
        assert_eq!(upgrade.version, Some(OcppVersion::V1_6));
        assert_eq!(upgrade.offered_subprotocols, vec!["ocpp1.6".to_string()]);
        pair.csms.accept(pair.now).unwrap();
        pair.drive();
        assert_eq!(
            pair.take_cp_events(),
            vec![Event::Connected {
                version: OcppVersion::V1_6
            }]
        );
        pair.take_csms_events();

        let id = pair.cp.call(pair.now, boot_request()).unwrap();
        pair.drive();
        let events = pair.take_csms_events();
        let [Event::Call { id: got, request }] = events.as_slice() else {
            panic!("{events:?}")
        };
        assert_eq!(got, &id);
        assert_eq!(request, &boot_request());
        pair.csms
            .answer(pair.now, &id, Answer::Result(boot_accepted()))
            .unwrap();
        pair.drive();
        assert_eq!(
            pair.take_cp_events(),
            vec![Event::CallCompleted {
                id,
                action: "BootNotification",
                outcome: Ok(boot_accepted()),
                caller: (),
            }]
        );

        let id = pair.cp.call(pair.now, heartbeat()).unwrap();
        pair.drive();
        assert!(matches!(&pair.take_csms_events()[..], [Event::Call { .. }]));
        pair.csms
            .answer(pair.now, &id, Answer::Result(heartbeat_response()))
            .unwrap();
        pair.drive();
        assert!(matches!(
            &pair.take_cp_events()[..],
            [Event::CallCompleted { outcome: Ok(_), .. }]
        ));
    }
}

#[test]
fn one_outstanding_call_per_direction() {
    let mut pair = Pair::connected_v16();
    let a = pair.cp.call(pair.now, heartbeat()).unwrap();
    let b = pair.cp.call(pair.now, boot_request()).unwrap();
    let c = pair.cp.call(pair.now, heartbeat()).unwrap();
    assert_eq!(pair.cp.queued_calls(), 2);
    pair.drive();
    // Only the first is on the wire.
    let events = pair.take_csms_events();
    assert!(matches!(&events[..], [Event::Call { id, .. }] if *id == a));
    for (id, response) in [(&a, heartbeat_response()), (&b, boot_accepted())] {
        pair.csms
            .answer(pair.now, id, Answer::Result(response))
            .unwrap();
        pair.drive();
        let events = pair.take_csms_events();
        assert_eq!(events.len(), 1, "{events:?}");
    }
    pair.csms
        .answer(pair.now, &c, Answer::Result(heartbeat_response()))
        .unwrap();
    pair.drive();
    let completed: Vec<_> = pair
        .take_cp_events()
        .into_iter()
        .map(|e| match e {
            Event::CallCompleted { id, .. } => id,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(completed, vec![a, b, c]);
}

#[test]
fn calls_cross() {
    let mut pair = Pair::connected_v16();
    let from_cp = pair.cp.call(pair.now, heartbeat()).unwrap();
    let reset = ocpp_messages::v1_6::Request::from(ocpp_messages::v1_6::ResetRequest {
        r#type: ocpp_messages::v1_6::ResetType::Soft,
    });
    let from_csms = pair.csms.call(pair.now, reset.into()).unwrap();
    pair.drive();
    assert!(matches!(&pair.take_csms_events()[..], [Event::Call { .. }]));
    assert!(matches!(&pair.take_cp_events()[..], [Event::Call { .. }]));
    pair.csms
        .answer(pair.now, &from_cp, Answer::Result(heartbeat_response()))
        .unwrap();
    let reset_ok = ocpp_messages::v1_6::Response::from(ocpp_messages::v1_6::ResetResponse {
        status: ocpp_messages::v1_6::ResetStatus::Accepted,
    });
    pair.cp
        .answer(pair.now, &from_csms, Answer::Result(reset_ok.into()))
        .unwrap();
    pair.drive();
    assert!(
        matches!(&pair.take_csms_events()[..], [Event::CallCompleted { id, .. }] if *id == from_csms)
    );
    assert!(
        matches!(&pair.take_cp_events()[..], [Event::CallCompleted { id, .. }] if *id == from_cp)
    );
}

#[test]
fn call_timeout_then_next_call_goes_out() {
    let mut pair = Pair::connected_v16();
    pair.deliver_to_csms = false; // the CSMS never hears the call
    let first = pair.cp.call(pair.now, heartbeat()).unwrap();
    let second = pair.cp.call(pair.now, heartbeat()).unwrap();
    pair.drive();
    pair.advance(Duration::from_secs(29));
    assert!(pair.take_cp_events().is_empty());
    pair.advance(Duration::from_secs(1));
    let events = pair.take_cp_events();
    assert_eq!(
        events,
        vec![Event::CallCompleted {
            id: first,
            action: "Heartbeat",
            outcome: Err(CallFailure::Timeout),
            caller: (),
        }]
    );
    assert!(pair.cp.has_call_in_flight(), "the second call was sent");
    pair.advance(Duration::from_secs(30));
    assert!(
        matches!(&pair.take_cp_events()[..], [Event::CallCompleted { id, outcome: Err(CallFailure::Timeout), .. }] if *id == second)
    );
}

#[test]
fn keep_alive_pings_and_pong_timeout() {
    let config = v16()
        .ping_interval(Some(Duration::from_secs(10)))
        .pong_timeout(Duration::from_secs(5))
        .idle_timeout(None);
    let mut pair = Pair::connected(config.clone(), v16().ping_interval(None));
    // Pings go out and pongs come back: the connection lives on.
    pair.advance(Duration::from_secs(35));
    assert!(pair.csms.is_open());
    assert!(pair.take_csms_events().is_empty());
    // The charge point goes silent: no pong, so the CSMS closes after the pong timeout.
    pair.deliver_to_csms = false;
    pair.advance(Duration::from_secs(10));
    let events = pair.take_csms_events();
    assert!(
        matches!(&events[..], [Event::Closed(closed)] if closed.reason == CloseReason::PongTimeout),
        "{events:?}"
    );
    assert!(pair.csms.is_closed());
    assert_eq!(
        pair.csms.poll_timeout(),
        None,
        "a closed connection has no timers"
    );
}

/// Counts the pings the CSMS wrote (the charge point answers them; its pongs are not counted).
fn pings_from_csms(pair: &mut Pair, seconds: u64, heartbeat_every: Option<u64>) -> usize {
    let mut pings = 0;
    for second in 1..=seconds {
        if heartbeat_every.is_some_and(|every| second % every == 0) {
            let id = pair.cp.call(pair.now, heartbeat()).unwrap();
            pair.drive();
            pair.csms
                .answer(pair.now, &id, Answer::Result(heartbeat_response()))
                .unwrap();
            pair.take_csms_events();
            pair.take_cp_events();
        }
        // Look at the CSMS's output before the pair delivers it.
        pair.deliver_to_cp = false;
        pair.advance(Duration::from_secs(1));
        pings += count_pings(&pair.csms_to_cp);
        pair.deliver_to_cp = true;
        pair.drive();
    }
    pings
}

fn count_pings(wire: &[u8]) -> usize {
    let mut decoder = ocpp_frame::Decoder::new(ocpp_frame::Role::Client, Default::default());
    let mut input = wire;
    let mut pings = 0;
    while let Ok(decoded) = decoder.decode(input) {
        input = &input[decoded.consumed..];
        match decoded.message {
            Some(Message::Ping(_)) => pings += 1,
            Some(_) => {}
            None => break,
        }
    }
    pings
}

#[test]
fn a_busy_line_is_never_pinged_a_silent_one_is() {
    let config = v16()
        .ping_interval(Some(Duration::from_secs(30)))
        .pong_timeout(Duration::from_secs(10))
        .idle_timeout(None);
    let cp_config = v16().ping_interval(None).idle_timeout(None);
    // A Heartbeat every 10 s: the line is never silent for 30 s, so no ping in 2 minutes.
    let mut busy = Pair::connected(config.clone(), cp_config.clone());
    assert_eq!(pings_from_csms(&mut busy, 120, Some(10)), 0);
    assert!(busy.csms.is_open());
    // Silence: one ping per 30 s of it.
    let mut silent = Pair::connected(config, cp_config);
    assert_eq!(pings_from_csms(&mut silent, 120, None), 4);
    assert!(silent.csms.is_open(), "the pongs came back");
}

#[test]
fn settings_change_for_one_connection() {
    let config = v16()
        .ping_interval(Some(Duration::from_secs(30)))
        .idle_timeout(None);
    let mut pair = Pair::connected(config.clone(), v16().ping_interval(None).idle_timeout(None));
    // Pings off for this charge point alone; a short idle timeout instead.
    let quiet = config
        .clone()
        .ping_interval(None)
        .idle_timeout(Some(Duration::from_secs(50)));
    pair.csms.set_config(pair.now, std::sync::Arc::new(quiet));
    assert_eq!(pings_from_csms(&mut pair, 45, None), 0);
    assert!(pair.csms.is_open());
    pair.advance(Duration::from_secs(10));
    assert!(pair
        .take_csms_events()
        .iter()
        .any(|e| matches!(e, Event::Closed(c) if c.reason == CloseReason::IdleTimeout)));
}

#[test]
fn idle_timeout_closes() {
    let config = v16()
        .ping_interval(None)
        .idle_timeout(Some(Duration::from_secs(100)));
    let mut pair = Pair::connected(config, v16().ping_interval(None).idle_timeout(None));
    pair.advance(Duration::from_secs(99));
    assert!(pair.csms.is_open());
    let id = pair.cp.call(pair.now, heartbeat()).unwrap();
    pair.drive();
    pair.csms
        .answer(pair.now, &id, Answer::Result(heartbeat_response()))
        .unwrap();
    pair.advance(Duration::from_secs(99));
    assert!(pair.csms.is_open(), "data resets the idle timer");
    pair.advance(Duration::from_secs(2));
    assert!(pair
        .take_csms_events()
        .iter()
        .any(|e| matches!(e, Event::Closed(c) if c.reason == CloseReason::IdleTimeout)));
}

#[test]
fn graceful_close_both_ways() {
    let mut pair = Pair::connected_v16();
    pair.csms.close(pair.now, CloseCode::NORMAL, "maintenance");
    pair.drive();
    let csms = pair.take_csms_events();
    let cp = pair.take_cp_events();
    assert!(
        matches!(&csms[..], [Event::Closed(c)] if c.reason == CloseReason::LocalClose { code: CloseCode::NORMAL }),
        "{csms:?}"
    );
    assert!(
        matches!(&cp[..], [Event::Closed(c)] if c.reason == CloseReason::PeerClosed { code: Some(CloseCode::NORMAL), reason: "maintenance".into() }),
        "{cp:?}"
    );

    let mut pair = Pair::connected_v16();
    pair.cp.close(pair.now, CloseCode::GOING_AWAY, "");
    pair.drive();
    assert!(
        matches!(&pair.take_cp_events()[..], [Event::Closed(c)] if matches!(c.reason, CloseReason::LocalClose { .. }))
    );
    assert!(
        matches!(&pair.take_csms_events()[..], [Event::Closed(c)] if matches!(c.reason, CloseReason::PeerClosed { .. }))
    );
}

#[test]
fn close_timeout_ends_in_closed() {
    let mut pair = Pair::connected_v16();
    pair.deliver_to_cp = false;
    pair.csms.close(pair.now, CloseCode::NORMAL, "");
    pair.drive();
    assert!(!pair.csms.is_closed());
    pair.advance(Duration::from_secs(5));
    assert!(pair.csms.is_closed());
}

#[test]
fn eof_reports_unanswered_calls() {
    let mut pair = Pair::connected_v16();
    let ours = pair.csms.call(pair.now, heartbeat_csms()).unwrap();
    let queued = pair.csms.call(pair.now, heartbeat_csms()).unwrap();
    let theirs = pair.cp.call(pair.now, heartbeat()).unwrap();
    pair.drive();
    pair.take_csms_events();
    pair.csms.handle_eof(pair.now);
    pair.drive();
    let events = pair.take_csms_events();
    let [Event::Closed(closed)] = &events[..] else {
        panic!("{events:?}")
    };
    assert_eq!(closed.reason, CloseReason::Eof);
    assert_eq!(closed.unanswered_incoming, vec![theirs]);
    let outgoing: Vec<&str> = closed
        .unanswered_outgoing
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(outgoing, vec![ours.as_str(), queued.as_str()]);
}

/// The CSMS sending a Heartbeat makes no sense in OCPP, but it is a valid 1.6 request to test
/// the queue with; the charge point answers NotImplemented? No: Heartbeat is known, so it is
/// decoded and delivered.
fn heartbeat_csms() -> ocpp_proto::Request {
    heartbeat()
}

#[test]
fn answers_are_never_refused_and_reading_pauses_while_output_is_full() {
    let config = v16().max_outbound_bytes(400).ping_interval(None);
    let mut pair = Pair::connected(config, v16());
    let id = pair.cp.call(pair.now, boot_request()).unwrap();
    pair.drive();
    pair.take_csms_events();
    assert!(pair.csms.wants_read());
    // Fill the CSMS output: the charge point stops reading.
    pair.deliver_to_cp = false;
    let filler = ocpp_messages::v1_6::Request::from(ocpp_messages::v1_6::DataTransferRequest {
        vendor_id: "v".into(),
        message_id: None,
        data: Some("x".repeat(270)),
    });
    pair.csms.call(pair.now, filler.into()).unwrap();
    // Over half the limit: the loop is told to stop reading, and the answer still goes out.
    assert!(!pair.csms.wants_read());
    pair.csms
        .answer(pair.now, &id, Answer::Result(boot_accepted()))
        .unwrap();
    assert!(pair.csms.pending_transmit_len() > 400);
    assert!(!pair.csms.wants_read());
    // The charge point reads again: the output drains and reading resumes; no event says so.
    pair.deliver_to_cp = true;
    pair.drive();
    assert!(pair.csms.wants_read());
    assert!(pair.take_csms_events().is_empty());
    assert!(pair
        .take_cp_events()
        .iter()
        .any(|e| matches!(e, Event::CallCompleted { outcome: Ok(_), .. })));
}

#[test]
fn advancing_the_output_produces_nothing() {
    let mut pair = Pair::connected_v16();
    // A queued CALL waits for the answer to the one in flight, not for the output.
    pair.csms.call(pair.now, heartbeat_csms()).unwrap();
    pair.csms.call(pair.now, heartbeat_csms()).unwrap();
    let pending = pair.csms.pending_transmit_len();
    assert!(pending > 0);
    pair.csms.advance_transmit(pending);
    assert_eq!(pair.csms.pending_transmit_len(), 0);
    assert!(pair.csms.poll_event().is_none());
    assert_eq!(pair.csms.queued_calls(), 1);
}

#[test]
fn a_peer_that_stops_reading_is_dropped() {
    let config = v16()
        .max_outbound_bytes(200)
        .ping_interval(Some(Duration::from_secs(1)))
        .pong_timeout(Duration::from_secs(1000));
    let mut peer = RawPeer::open(config, "ocpp1.6");
    // The peer sends pings and never reads: pongs pile up until twice the limit.
    for _ in 0..300 {
        peer.send_raw(&[0x89, 0x80, 0, 0, 0, 0]);
    }
    let events = peer.events();
    assert!(
        matches!(&events[..], [Event::Closed(c)] if c.reason == CloseReason::SlowPeer),
        "{events:?}"
    );
    assert_eq!(peer.csms.pending_transmit_len(), 0);
}

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

/// The outcomes of the charge point's CALLs in `events`, by id.
fn outcomes(events: Vec<Event>) -> Vec<(MessageId<'static>, Result<(), CallFailure>)> {
    events
        .into_iter()
        .filter_map(|e| match e {
            Event::CallCompleted { id, outcome, .. } => Some((id, outcome.map(|_| ()))),
            _ => None,
        })
        .collect()
}

#[test]
fn a_queued_call_past_its_deadline_ends_unsent_and_is_never_written() {
    let mut pair = Pair::connected_v16();
    let start = pair.now;
    // The first CALL is in flight and the CSMS does not answer it for 10 s; the second waits
    // behind it with a 2 s deadline, the third with a 20 s one, the fourth with none.
    let first = pair.cp.call(pair.now, heartbeat()).unwrap();
    let late = pair
        .cp
        .call_with_deadline(pair.now, heartbeat(), start + Duration::from_secs(2))
        .unwrap();
    let in_time = pair
        .cp
        .call_with_deadline(pair.now, heartbeat(), start + Duration::from_secs(20))
        .unwrap();
    let unbounded = pair.cp.call(pair.now, heartbeat()).unwrap();
    pair.drive();
    assert_eq!(pair.take_csms_events().len(), 1);
    // At its deadline the second ends, unsent (safe to retry), while the first is in flight.
    pair.advance(Duration::from_secs(2));
    let ended = outcomes(pair.take_cp_events());
    assert_eq!(
        ended,
        vec![(late.clone(), Err(CallFailure::DeadlinePassed))]
    );
    assert_eq!(CallFailure::DeadlinePassed.delivery(), Delivery::NotSent);
    assert_eq!(pair.cp.queued_calls(), 2);
    // The first is answered at 10 s: the third and the fourth go out in turn, never the second.
    pair.advance(Duration::from_secs(8));
    pair.csms
        .answer(pair.now, &first, Answer::Result(heartbeat_response()))
        .unwrap();
    pair.drive();
    let calls: Vec<_> = pair
        .take_csms_events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Call { id, .. } => Some(id),
            _ => None,
        })
        .collect();
    assert_eq!(calls, vec![in_time.clone()]);
    for id in [&in_time, &unbounded] {
        pair.csms
            .answer(pair.now, id, Answer::Result(heartbeat_response()))
            .unwrap();
        pair.drive();
    }
    let ended = outcomes(pair.take_cp_events());
    assert_eq!(
        ended,
        vec![(first, Ok(())), (in_time, Ok(())), (unbounded, Ok(()))]
    );
    assert!(!pair
        .take_csms_events()
        .iter()
        .any(|e| matches!(e, Event::Call { id, .. } if *id == late)));
}

#[test]
fn a_deadline_checked_when_the_line_frees_ends_the_call_unsent() {
    // The first CALL is answered exactly when the second's deadline passes: the check right
    // before writing finds it late, even if its timer has not fired yet.
    let mut pair = Pair::connected_v16();
    let start = pair.now;
    let first = pair.cp.call(pair.now, heartbeat()).unwrap();
    let second = pair
        .cp
        .call_with_deadline(pair.now, heartbeat(), start + Duration::from_secs(1))
        .unwrap();
    pair.drive();
    pair.take_csms_events();
    pair.now = start + Duration::from_secs(1);
    pair.csms
        .answer(pair.now, &first, Answer::Result(heartbeat_response()))
        .unwrap();
    pair.drive();
    assert_eq!(
        outcomes(pair.take_cp_events()),
        vec![(first, Ok(())), (second, Err(CallFailure::DeadlinePassed))]
    );
    assert!(pair.take_csms_events().is_empty());
}

#[test]
fn a_call_in_flight_times_out_at_its_deadline_before_the_call_timeout() {
    let mut pair = Pair::connected_v16();
    let start = pair.now;
    let id = pair
        .cp
        .call_with_deadline(pair.now, heartbeat(), start + Duration::from_secs(3))
        .unwrap();
    pair.drive();
    assert_eq!(pair.take_csms_events().len(), 1);
    pair.advance(Duration::from_secs(3));
    // Sent, then no answer by the deadline: it may have run.
    assert_eq!(
        outcomes(pair.take_cp_events()),
        vec![(id, Err(CallFailure::Timeout))]
    );
    assert!(CallFailure::Timeout.may_have_reached_peer());
}

#[test]
fn a_deadline_already_passed_is_refused() {
    let mut pair = Pair::connected_v16();
    let refused = pair
        .cp
        .call_with_deadline(pair.now, heartbeat(), pair.now)
        .unwrap_err();
    assert_eq!(refused.reason, RefusalReason::DeadlinePassed);
    assert_eq!(
        CallFailure::from(refused.reason),
        CallFailure::DeadlinePassed
    );
}
