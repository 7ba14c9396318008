//! A CSMS connection driven by hand-written frames: for inputs a well-behaved peer never sends.
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use std::time::Instant;

use ocpp_frame::{Decoder, DecoderConfig, Encoder, Message, Role};
use ocpp_proto::{Connection, ConnectionConfig, Event};

pub struct RawPeer {
    pub now: Instant,
    pub csms: Connection,
    decoder: Decoder,
    encoder: Encoder,
}

impl RawPeer {
    /// A CSMS connection, upgraded with `subprotocol` and accepted.
    pub fn open(config: ConnectionConfig, subprotocol: &str) -> RawPeer {
        let now = Instant::now();
        let mut csms = Connection::accept_incoming(now, Arc::new(config));
        let request = format!(
            "GET /ocpp/CP1 HTTP/1.1\r\nHost: csms\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
             Sec-WebSocket-Protocol: {subprotocol}\r\n\r\n"
        );
        csms.handle_data(now, request.as_bytes());
        assert!(matches!(
            csms.poll_event(),
            Some(Event::UpgradeRequested(_))
        ));
        csms.accept(now).unwrap();
        assert!(matches!(csms.poll_event(), Some(Event::Connected { .. })));
        let head = csms.pending_transmit().to_vec();
        let end = head.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        csms.advance_transmit(end);
        RawPeer {
            now,
            csms,
            decoder: Decoder::new(Role::Client, DecoderConfig::default()),
            encoder: Encoder::new(Role::Client),
        }
    }

    /// Sends one text frame (masked, as a client must).
    pub fn send_text(&mut self, text: &str) {
        let mut wire = Vec::new();
        self.encoder
            .encode_text(text, Some([1, 2, 3, 4]), &mut wire)
            .unwrap();
        self.csms.handle_data(self.now, &wire);
    }

    pub fn send_raw(&mut self, wire: &[u8]) {
        self.csms.handle_data(self.now, wire);
    }

    /// Everything the CSMS wrote since the last call, decoded.
    pub fn received(&mut self) -> Vec<Message> {
        let out = self.csms.pending_transmit().to_vec();
        self.csms.advance_transmit(out.len());
        let mut input = &out[..];
        let mut messages = Vec::new();
        loop {
            let decoded = self.decoder.decode(input).unwrap();
            input = &input[decoded.consumed..];
            match decoded.message {
                Some(m) => messages.push(m),
                None => return messages,
            }
        }
    }

    /// The text messages the CSMS wrote since the last call.
    pub fn received_texts(&mut self) -> Vec<String> {
        self.received()
            .into_iter()
            .filter_map(|m| match m {
                Message::Text(t) => Some(t.as_str().to_owned()),
                _ => None,
            })
            .collect()
    }

    pub fn events(&mut self) -> Vec<Event> {
        std::iter::from_fn(|| self.csms.poll_event()).collect()
    }
}
