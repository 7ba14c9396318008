#![no_main]
//! The client side of the opening handshake on arbitrary server bytes.
//!
//! Input layout: byte 0 is a control byte (low nibble: how many chunk sizes follow; bit 7: use
//! a small header cap; bit 6: the request offers an extension), then the chunk sizes (cycled;
//! 0 is an empty input), then the bytes a server sends. The request uses the RFC 6455 sample
//! key (`Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=`) and offers `ocpp2.0.1, ocpp1.6`.
//! Invariants: no panic; the same outcome and trailing bytes however the input is split; the
//! buffer never exceeds the cap; a selected subprotocol is one we offered.
use libfuzzer_sys::fuzz_target;
use ocpp_frame::handshake::{
    ClientHandshake, ClientHandshakeError, ClientRequest, HandshakeConfig, Progress,
    SecWebSocketKey, UpgradeResponse,
};

type Outcome = (
    Option<Result<UpgradeResponse, ClientHandshakeError>>,
    Vec<u8>,
);

fn run(request: &ClientRequest, config: HandshakeConfig, chunks: &[&[u8]]) -> Outcome {
    let mut handshake = ClientHandshake::with_config(request, config);
    let mut trailing = Vec::new();
    let mut outcome = None;
    for chunk in chunks {
        match outcome {
            Some(Ok(_)) => {
                trailing.extend_from_slice(chunk);
                continue;
            }
            Some(Err(_)) => break,
            None => {}
        }
        match handshake.handle_data(chunk) {
            Ok(Progress::NeedMore) => {}
            Ok(Progress::Complete { value, consumed }) => {
                assert!(consumed <= chunk.len());
                trailing.extend_from_slice(&chunk[consumed..]);
                outcome = Some(Ok(value));
            }
            Err(error) => outcome = Some(Err(error)),
        }
        assert!(handshake.buffered_len() <= config.max_header_bytes());
        if outcome.is_some() {
            assert_eq!(handshake.buffered_len(), 0);
        }
    }
    (outcome, trailing)
}

fn chunks<'a>(sizes: &[u8], mut payload: &'a [u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    // Empty inputs are allowed, but a pass over the sizes must make progress.
    if sizes.iter().all(|&size| size == 0) {
        out.extend(sizes.iter().map(|_| &payload[..0]));
        out.push(payload);
        return out;
    }
    for &size in sizes.iter().cycle() {
        if payload.is_empty() {
            break;
        }
        let (chunk, rest) = payload.split_at(usize::from(size).min(payload.len()));
        out.push(chunk);
        payload = rest;
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let n_sizes = usize::from(control & 0x0f);
    if rest.len() < n_sizes {
        return;
    }
    let (sizes, payload) = rest.split_at(n_sizes);
    let config = if control & 0x80 != 0 {
        let cap = 32 + 8 * usize::from(sizes.first().copied().unwrap_or(0));
        HandshakeConfig::default()
            .with_max_header_bytes(cap)
            .with_max_headers(usize::from(control >> 4 & 0x03) + 3)
    } else {
        HandshakeConfig::default()
    };
    let key = SecWebSocketKey::from_bytes(*b"the sample nonce");
    let mut request = ClientRequest::new("csms.example", "/ocpp/CP001", key)
        .and_then(|r| r.with_subprotocol("ocpp2.0.1"))
        .and_then(|r| r.with_subprotocol("ocpp1.6"))
        .expect("valid request");
    if control & 0x40 != 0 {
        request = request
            .with_header("Sec-WebSocket-Extensions", b"permessage-deflate")
            .expect("valid header");
    }

    let whole = run(&request, config, &[payload]);
    let split = run(&request, config, &chunks(sizes, payload));
    assert_eq!(whole, split);

    match &whole.0 {
        Some(Ok(response)) => {
            assert_eq!(response.status(), 101);
            if let Some(subprotocol) = response.subprotocol() {
                assert!(subprotocol == "ocpp2.0.1" || subprotocol == "ocpp1.6");
            }
            assert!(!(response.extensions().next().is_some() && control & 0x40 == 0));
        }
        Some(Err(error)) => {
            let _ = (error.to_string(), error.status());
        }
        None => assert!(whole.1.is_empty()),
    }
});
