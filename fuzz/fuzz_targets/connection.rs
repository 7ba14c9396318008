#![no_main]
//! Drives a CSMS-side connection with arbitrary bytes, timeouts and application actions.
//!
//! The first input byte picks whether the upgrade is done first (to reach the open state),
//! which subprotocol it offers, and whether the connection relays text (the Local Controller's
//! mode: every text message an `Event::Text`, ours written with `send_text`); the rest is a
//! script of operations. Invariants: no panic; after
//! `Closed` no event follows; unsent output stays bounded (twice the outbound limit plus one
//! message); every `Call` event is answered at most once; advancing the output produces no
//! event (the drain contract).

use std::sync::Arc;
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use ocpp_frame::{CloseCode, Encoder, Role};
use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::v1_6;
use ocpp_proto::{Answer, Connection, ConnectionConfig, Event, MessageId, Request};

const UPGRADE: &str = "GET /ocpp/CP1 HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\
    Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
    Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ";

fuzz_target!(|data: &[u8]| {
    let Some((&mode, mut script)) = data.split_first() else {
        return;
    };
    let relay = mode & 0x80 != 0;
    let config = ConnectionConfig::default()
        .max_outbound_bytes(4096)
        .max_held_calls(2)
        .max_queued_calls(2)
        .relay_text(relay);
    let limit = 2 * config.get_max_outbound_bytes() + 70_000;
    let mut now = Instant::now();
    let mut connection = Connection::accept_incoming(now, Arc::new(config));
    let mut pending_calls: Vec<MessageId<'static>> = Vec::new();
    let mut closed = false;
    let encoder = Encoder::new(Role::Client);

    if mode & 1 == 1 {
        let subprotocol = ["ocpp1.6", "ocpp2.0.1", "ocpp2.1", "nope"][usize::from(mode >> 1) % 4];
        connection.handle_data(now, format!("{UPGRADE}{subprotocol}\r\n\r\n").as_bytes());
        let _ = connection.accept(now);
        // Drain what the upgrade produced, as a loop would, before the script starts.
        while let Some(event) = connection.poll_event() {
            closed |= matches!(event, Event::Closed(_));
        }
    }

    while let Some((&op, rest)) = script.split_first() {
        script = rest;
        match op % 8 {
            // Raw bytes, as they come.
            0 | 1 => {
                let n = usize::from(script.first().copied().unwrap_or(0)).min(script.len());
                let (chunk, rest) = script.split_at(n);
                connection.handle_data(now, chunk);
                script = rest;
            }
            // A well-formed masked text frame around arbitrary text (reaches the OCPP layer).
            2 => {
                let n = usize::from(script.first().copied().unwrap_or(0)).min(script.len());
                let (chunk, rest) = script.split_at(n);
                script = rest;
                let text = String::from_utf8_lossy(chunk);
                let mut wire = Vec::new();
                if encoder
                    .encode_text(&text, Some([9, 8, 7, 6]), &mut wire)
                    .is_ok()
                {
                    connection.handle_data(now, &wire);
                }
            }
            3 => {
                now += Duration::from_secs(u64::from(op >> 3) * 4);
                connection.handle_timeout(now);
            }
            4 => {
                // A CALLERROR, or a Heartbeat result whatever the CALL was (the answer rule
                // sends InternalError for any other action or version).
                if let Some(id) = pending_calls.pop() {
                    let answer = if op & 8 == 0 {
                        Answer::error(ErrorCode::NotSupported, "no")
                    } else {
                        let time = "2026-01-01T00:00:00Z".parse();
                        match time {
                            Ok(time) => Answer::result(v1_6::HeartbeatResponse::new(time)),
                            Err(_) => Answer::not_supported("Heartbeat"),
                        }
                    };
                    let _ = connection.answer(now, &id, answer);
                }
            }
            5 if relay => {
                // A text of our own, relayed as it is (an OCPP-J CALL or anything at all).
                let text =
                    ["[2,\"lc-1\",\"Heartbeat\",{}]", "not json", ""][usize::from(op >> 3) % 3];
                let _ = connection.send_text(now, text);
            }
            5 => {
                let request = Request::from(v1_6::Request::from(v1_6::ResetRequest {
                    r#type: v1_6::ResetType::Soft,
                }));
                // Every other one with a deadline 0 to 120 s away: queued ones may expire.
                if op & 8 == 0 {
                    let _ = connection.call(now, request);
                } else {
                    let deadline = now + Duration::from_secs(u64::from(op >> 4) * 8);
                    let _ = connection.call_with_deadline(now, request, deadline);
                }
            }
            6 => {
                let n = usize::from(op >> 3) * 97;
                let len = connection.pending_transmit().len().min(n);
                connection.advance_transmit(len);
                assert!(
                    connection.poll_event().is_none(),
                    "advance_transmit made an event"
                );
            }
            _ => {
                if op & 0x80 != 0 {
                    connection.handle_eof(now);
                } else {
                    connection.close(now, CloseCode::NORMAL, "bye");
                }
            }
        }
        while let Some(event) = connection.poll_event() {
            assert!(!closed, "an event after Closed: {event:?}");
            match event {
                Event::Call { id, .. } => {
                    assert!(!pending_calls.contains(&id));
                    pending_calls.push(id);
                }
                Event::Closed(_) => closed = true,
                _ => {}
            }
        }
        assert!(
            connection.pending_transmit().len() <= limit,
            "unsent output grew to {}",
            connection.pending_transmit().len()
        );
    }
});
