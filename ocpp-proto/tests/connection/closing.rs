//! Closing: gracefully both ways, the close timeout, EOF with CALLs unanswered.

use super::*;

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
