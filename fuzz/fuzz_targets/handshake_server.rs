#![no_main]
//! The server side of the opening handshake on arbitrary bytes.
//!
//! Input layout: byte 0 is a control byte (low nibble: how many chunk sizes follow; bit 7: use
//! a small header cap so that 431 paths are reached), then the chunk sizes (cycled; 0 is an
//! empty input), then the bytes a client sends.
//! Invariants: no panic; feeding the bytes in those chunks gives the same request or refusal and
//! the same bytes after the head as feeding them in one piece; the buffer never exceeds the cap;
//! whatever comes out can be answered.
use libfuzzer_sys::fuzz_target;
use ocpp_frame::handshake::{
    Accept, HandshakeConfig, HandshakeError, Progress, ServerHandshake, UpgradeRequest,
};

type Outcome = (Option<Result<UpgradeRequest, HandshakeError>>, Vec<u8>);

fn run(config: HandshakeConfig, chunks: &[&[u8]]) -> Outcome {
    let mut handshake = ServerHandshake::with_config(config);
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
            assert!(handshake.is_finished());
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
            .with_max_headers(usize::from(control >> 4 & 0x07))
    } else {
        HandshakeConfig::default()
    };

    let whole = run(config, &[payload]);
    let split = run(config, &chunks(sizes, payload));
    assert_eq!(whole, split);

    let mut out = Vec::new();
    match whole.0 {
        Some(Ok(request)) => {
            assert_eq!(request.method(), "GET");
            let _ = (
                request.path(),
                request.query(),
                request.host(),
                request.origin(),
            );
            let _ = request.basic_credentials();
            let chosen = request.subprotocols().next();
            let accept = match chosen {
                Some(subprotocol) => Accept::new().with_subprotocol(subprotocol),
                None => Accept::new(),
            };
            request
                .accept(&accept, &mut out)
                .expect("an offered subprotocol is accepted");
            assert!(out.starts_with(b"HTTP/1.1 101 Switching Protocols\r\n"));
            assert!(out.ends_with(b"\r\n\r\n"));
        }
        Some(Err(error)) => {
            error.write_response(&mut out);
            let status_line = format!("HTTP/1.1 {} ", error.status());
            assert!(out.starts_with(status_line.as_bytes()));
        }
        None => assert!(whole.1.is_empty()),
    }
});
