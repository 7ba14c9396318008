//! Back-pressure: answers never refused while reading pauses on a full output, a peer that stops
//! reading dropped.

use super::*;

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
