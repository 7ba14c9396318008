#![no_main]
//! Differential fuzzing of the frame decoder against itself: one input decoded whole, in chunks,
//! and through the zero-copy `decode_buf` path must give the same messages and the same error.
//!
//! Input layout (missing bytes read as zero, so every input is usable):
//!
//! | byte      | meaning                                                               |
//! |-----------|-----------------------------------------------------------------------|
//! | 0         | bit 0: role (0 server, 1 client); bit 1: `decode_buf` read buffer     |
//! |           | starts with 8 KiB capacity, as in a server read loop (else empty)     |
//! | 1-2       | max frame size, u16 LE modulo 4097                                    |
//! | 3-4       | max message size, u16 LE modulo 4097                                  |
//! | 5         | max fragments, 1 + b % 16                                             |
//! | 6         | n = b % 8 chunk sizes follow                                          |
//! | 7..7+n    | chunk sizes, used in a cycle (0: an empty call, then one byte)        |
//! | rest      | the byte stream                                                       |
//!
//! Invariants: no panic; the four ways of decoding agree; `heap_bytes()` stays within
//! `2 * (max_message_size + 125) + HEAP_SLACK` (plus the read buffer's capacity on the
//! `decode_buf` path, see below) and is zero whenever the decoder is idle; every text
//! message and close reason is valid UTF-8 (this checks the one `unsafe` block, in `message.rs`).
use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use ocpp_frame::{Decoder, DecoderConfig, Message, ProtocolError, Role};

/// Room for the allocator's minimum capacities (8 bytes per buffer) on top of the 2x bound.
const HEAP_SLACK: usize = 64;

struct Case<'a> {
    role: Role,
    config: DecoderConfig,
    read_capacity: usize,
    heap_limit: usize,
    chunks: &'a [u8],
    stream: &'a [u8],
}

impl<'a> Case<'a> {
    fn parse(data: &'a [u8]) -> Self {
        let byte = |i: usize| data.get(i).copied().unwrap_or(0);
        let role = if byte(0) & 1 == 0 {
            Role::Server
        } else {
            Role::Client
        };
        let frame_limit = u64::from(u16::from_le_bytes([byte(1), byte(2)]) % 4097);
        let message_limit = u64::from(u16::from_le_bytes([byte(3), byte(4)]) % 4097);
        let fragments = 1 + u32::from(byte(5) % 16);
        let n = usize::from(byte(6) % 8);
        let start = (7 + n).min(data.len());
        let chunks = &data[7.min(data.len())..start];
        let config = DecoderConfig::default()
            .max_frame_size(frame_limit)
            .max_message_size(message_limit)
            .max_fragments(fragments);
        Case {
            role,
            config,
            read_capacity: if byte(0) & 2 == 0 { 0 } else { 8192 },
            heap_limit: 2 * (message_limit as usize + 125) + HEAP_SLACK,
            chunks,
            stream: &data[start..],
        }
    }

    fn decoder(&self) -> Decoder {
        Decoder::new(self.role, self.config.clone())
    }

    /// Splits the stream into the chunks the input asks for; `None` stands for an empty call.
    fn pieces(&self) -> Vec<&'a [u8]> {
        let mut pieces = Vec::new();
        let mut rest = self.stream;
        let mut sizes = self.chunks.iter().cycle();
        while !rest.is_empty() {
            let size = match sizes.next() {
                Some(0) => {
                    pieces.push(&rest[..0]);
                    1
                }
                Some(&size) => usize::from(size),
                None => rest.len(),
            };
            let (piece, tail) = rest.split_at(size.min(rest.len()));
            pieces.push(piece);
            rest = tail;
        }
        pieces
    }
}

#[derive(Debug, PartialEq)]
struct Outcome {
    messages: Vec<Message>,
    error: Option<ProtocolError>,
}

fn check_decoder(decoder: &Decoder, heap_limit: usize) {
    let heap = decoder.heap_bytes();
    assert!(heap <= heap_limit, "heap_bytes {heap} > {heap_limit}");
    if decoder.is_idle() {
        assert_eq!(heap, 0, "an idle decoder holds heap");
    }
}

fn check_message(message: &Message) {
    let text = match message {
        Message::Text(text) => text,
        Message::Close(Some(close)) => &close.reason,
        _ => return,
    };
    assert_eq!(core::str::from_utf8(text.as_bytes()), Ok(text.as_str()));
}

/// Feeds `pieces` to `Decoder::decode` as a socket loop would.
fn decode_slices(case: &Case<'_>, pieces: &[&[u8]]) -> Outcome {
    let mut decoder = case.decoder();
    let mut messages = Vec::new();
    for piece in pieces {
        let mut pos = 0;
        loop {
            match decoder.decode(&piece[pos..]) {
                Ok(decoded) => {
                    pos += decoded.consumed;
                    assert!(pos <= piece.len());
                    check_decoder(&decoder, case.heap_limit);
                    match decoded.message {
                        Some(message) => messages.push(message),
                        None => {
                            assert_eq!(pos, piece.len(), "no message but input left");
                            break;
                        }
                    }
                }
                Err(error) => {
                    // An error is final.
                    assert_eq!(decoder.decode(b"\x81"), Err(error.clone()));
                    return Outcome {
                        messages,
                        error: Some(error),
                    };
                }
            }
        }
    }
    Outcome {
        messages,
        error: None,
    }
}

/// Feeds `pieces` to `Decoder::decode_buf` through one read buffer, as a server would.
fn decode_bufs(case: &Case<'_>, pieces: &[&[u8]], heap_limit: usize) -> Outcome {
    let mut decoder = case.decoder();
    let mut messages = Vec::new();
    let mut buf = BytesMut::with_capacity(case.read_capacity);
    for piece in pieces {
        buf.extend_from_slice(piece);
        loop {
            match decoder.decode_buf(&mut buf) {
                Ok(Some(message)) => {
                    check_decoder(&decoder, heap_limit);
                    messages.push(message);
                }
                Ok(None) => {
                    check_decoder(&decoder, heap_limit);
                    assert!(buf.is_empty(), "decode_buf left {} bytes", buf.len());
                    break;
                }
                Err(error) => {
                    return Outcome {
                        messages,
                        error: Some(error),
                    }
                }
            }
        }
    }
    Outcome {
        messages,
        error: None,
    }
}

fuzz_target!(|data: &[u8]| {
    let case = Case::parse(data);
    let whole = decode_slices(&case, &[case.stream]);
    for message in &whole.messages {
        check_message(message);
    }
    let pieces = case.pieces();
    assert_eq!(decode_slices(&case, &pieces), whole, "chunked decode");
    // The zero-copy path is held to the same bound: a fragment is copied, never kept as a
    // slice of the caller's read buffer (`tests/memory.rs` has the regression tests).
    let buf_limit = case.heap_limit;
    assert_eq!(
        decode_bufs(&case, &[case.stream], buf_limit),
        whole,
        "whole decode_buf"
    );
    assert_eq!(
        decode_bufs(&case, &pieces, buf_limit),
        whole,
        "chunked decode_buf"
    );
});
