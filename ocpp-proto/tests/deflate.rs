//! permessage-deflate between a CSMS and a charge point: negotiation both ways, compressed
//! messages on the wire, the default (no context takeover) holding nothing while idle, context
//! takeover on request, and the charge point refusing an answer it did not allow.

mod common;

use std::sync::Arc;
use std::time::Instant;

use common::*;
use ocpp_frame::deflate::DeflateConfig;
use ocpp_messages::v1_6;
use ocpp_messages::version::OcppVersion;
use ocpp_proto::{
    Answer, ChargePointIdentity, CloseReason, ConnectTarget, Connection, ConnectionConfig,
    DeflatePolicy, Event, Request,
};

fn v16() -> ConnectionConfig {
    ConnectionConfig::default().versions(vec![OcppVersion::V1_6])
}

fn offering(config: DeflateConfig) -> ConnectionConfig {
    v16().deflate(DeflatePolicy::Offer(config))
}

/// A DataTransfer of about 3 KB of repetitive JSON-ish text: compresses well.
fn big_request() -> (Request, String) {
    let data = r#"{"connector":1,"status":"Charging","energy":12345.6}"#.repeat(60);
    let request = Request::from(v1_6::Request::from(v1_6::DataTransferRequest {
        vendor_id: "ACME".into(),
        message_id: Some("log".into()),
        data: Some(data.clone()),
    }));
    (request, data)
}

/// The charge point sends a big CALL; returns the bytes it put on the wire and the data the
/// CSMS decoded.
fn send_big_call(pair: &mut Pair) -> (Vec<u8>, String) {
    let (request, _) = big_request();
    pair.cp.call(pair.now, request).unwrap();
    let wire = pair.cp.pending_transmit().to_vec();
    pair.drive();
    let events = pair.take_csms_events();
    let [Event::Call { id, request }] = events.as_slice() else {
        panic!("{events:?}");
    };
    let Request::V1_6(request) = request else {
        panic!("{request:?}");
    };
    let v1_6::Request::DataTransfer(transfer) = request.as_ref() else {
        panic!("{request:?}");
    };
    let received = transfer.data.clone().unwrap_or_default();
    let id = id.clone();
    pair.csms
        .answer(
            pair.now,
            &id,
            Answer::error(
                ocpp_messages::error_code::ErrorCode::NotImplemented,
                "x".repeat(200),
            ),
        )
        .unwrap();
    pair.drive();
    pair.take_cp_events();
    (wire, received)
}

#[test]
fn both_sides_negotiate_and_compress() {
    let mut pair = Pair::connected(v16(), offering(DeflateConfig::default()));
    let csms = *pair.csms.deflate().expect("the CSMS accepted");
    let cp = *pair.cp.deflate().expect("the charge point agreed");
    assert_eq!(csms, cp);
    assert!(csms.server_no_context_takeover && csms.client_no_context_takeover);
    for _ in 0..3 {
        let (wire, received) = send_big_call(&mut pair);
        assert_eq!(wire[0], 0xc1, "FIN, RSV1, text: compressed");
        assert!(
            wire.len() < received.len() / 4,
            "{} bytes on the wire",
            wire.len()
        );
        assert_eq!(received, big_request().1);
    }
    // Small messages go out uncompressed (RSV1 clear).
    pair.cp.call(pair.now, heartbeat()).unwrap();
    assert_eq!(pair.cp.pending_transmit()[0], 0x81);
    pair.drive();
    assert!(matches!(
        pair.take_csms_events().as_slice(),
        [Event::Call { .. }]
    ));
}

#[test]
fn every_split_of_the_stream() {
    for chunk in [1, 2, 7, 100] {
        let mut pair = Pair::connected(v16(), offering(DeflateConfig::default()));
        pair.chunk = chunk;
        let (_, received) = send_big_call(&mut pair);
        assert_eq!(received, big_request().1, "chunk {chunk}");
    }
}

#[test]
fn idle_connection_holds_nothing_without_context_takeover() {
    let mut pair = Pair::connected(v16(), offering(DeflateConfig::default()));
    for _ in 0..5 {
        send_big_call(&mut pair);
    }
    assert!(pair.csms.deflate().is_some());
    println!(
        "idle deflate connection (no context takeover): csms {} heap bytes, cp {}",
        pair.csms.heap_bytes(),
        pair.cp.heap_bytes()
    );
    assert_eq!(pair.csms.heap_bytes(), 0);
    assert_eq!(pair.cp.heap_bytes(), 0);
}

#[test]
fn context_takeover_on_request() {
    let takeover = DeflateConfig::default()
        .server_no_context_takeover(false)
        .client_no_context_takeover(false);
    let csms = v16().deflate(DeflatePolicy::Accept(takeover));
    let mut pair = Pair::connected(csms, offering(takeover));
    let params = *pair.csms.deflate().unwrap();
    assert!(!params.server_no_context_takeover && !params.client_no_context_takeover);
    let (first, _) = send_big_call(&mut pair);
    let (second, received) = send_big_call(&mut pair);
    assert_eq!(received, big_request().1);
    // The second message refers back to the first.
    assert!(
        second.len() < first.len(),
        "{} vs {}",
        second.len(),
        first.len()
    );
    let held = pair.csms.heap_bytes();
    println!("idle deflate connection (context takeover): csms {held} heap bytes");
    assert!(held > 300_000, "{held}");
}

#[test]
fn csms_that_does_not_deflate() {
    let csms = v16().deflate(DeflatePolicy::Off);
    let mut pair = Pair::connected(csms, offering(DeflateConfig::default()));
    assert!(pair.csms.deflate().is_none());
    assert!(pair.cp.deflate().is_none());
    let (wire, received) = send_big_call(&mut pair);
    assert_eq!(wire[0], 0x81);
    assert_eq!(received, big_request().1);
    // A charge point that does not offer (the default) gets no extension either.
    let pair = Pair::connected(v16(), v16());
    assert!(pair.csms.deflate().is_none());
}

#[test]
fn charge_point_refuses_an_answer_it_did_not_allow() {
    let now = Instant::now();
    let config = offering(DeflateConfig::default().offer_client_max_window_bits(false));
    let identity = ChargePointIdentity::new("CP-001".into(), true).unwrap();
    let target = ConnectTarget::new("csms.example", "/ocpp", identity);
    let mut cp = Connection::connect(now, Arc::new(config), &target, [7; 16], 42).unwrap();
    let request = String::from_utf8(cp.pending_transmit().to_vec()).unwrap();
    assert!(
        request.contains(
            "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; \
             client_no_context_takeover\r\n"
        ),
        "{request}"
    );
    let n = cp.pending_transmit().len();
    cp.advance_transmit(n);
    // The accept value of the key [7; 16].
    let key = ocpp_frame::handshake::SecWebSocketKey::from_bytes([7; 16]);
    let accept = key.accept();
    let response = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\nSec-WebSocket-Protocol: ocpp1.6\r\n\
         Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; \
         client_max_window_bits=10\r\n\r\n",
        std::str::from_utf8(accept.as_bytes()).unwrap()
    );
    cp.handle_data(now, response.as_bytes());
    let events: Vec<Event> = std::iter::from_fn(|| cp.poll_event()).collect();
    let [Event::Closed(closed)] = events.as_slice() else {
        panic!("{events:?}");
    };
    let CloseReason::UpgradeRefused {
        status,
        description,
    } = &closed.reason
    else {
        panic!("{:?}", closed.reason);
    };
    assert_eq!(*status, None);
    assert!(
        description.contains("client_max_window_bits"),
        "{description}"
    );
    assert!(cp.is_closed());
}
