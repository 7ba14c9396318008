#![no_main]
//! The frame decoder with permessage-deflate on: arbitrary bytes (compressed or not) decoded
//! whole and in chunks must agree, stay within the memory bound and only hand out valid UTF-8
//! text; and the bytes themselves, compressed by our `Compressor` and framed, must come back
//! unchanged (a round trip through both halves with the parameters the input picks).
//!
//! Input layout (missing bytes read as zero):
//!
//! | byte  | meaning                                                                       |
//! |-------|-------------------------------------------------------------------------------|
//! | 0     | bit 0: role (0 server, 1 client); bit 1: peer's no context takeover;          |
//! |       | bits 2-4: window bits 8 + b % 8; bit 5: round trip as text (if valid UTF-8)   |
//! | 1-2   | max message size, u16 LE modulo 8193                                          |
//! | 3     | n = b % 8 chunk sizes follow                                                  |
//! | 4..   | chunk sizes, used in a cycle (0: an empty call, then one byte)                |
//! | rest  | the byte stream                                                               |
use libfuzzer_sys::fuzz_target;
use ocpp_frame::deflate::{Compressor, DeflateConfig, DeflateParams, DECOMPRESSOR_HEAP_ESTIMATE};
use ocpp_frame::{Decoder, DecoderConfig, Encoder, Message, Opcode, ProtocolError, Role};

struct Case<'a> {
    role: Role,
    params: DeflateParams,
    text: bool,
    config: DecoderConfig,
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
        let no_context_takeover = byte(0) & 2 != 0;
        let bits = 8 + (byte(0) >> 2) % 8;
        let params = DeflateParams {
            server_no_context_takeover: no_context_takeover,
            client_no_context_takeover: no_context_takeover,
            server_max_window_bits: bits,
            client_max_window_bits: bits,
        };
        let limit = u64::from(u16::from_le_bytes([byte(1), byte(2)]) % 8193);
        let n = usize::from(byte(3) % 8);
        let start = (4 + n).min(data.len());
        Case {
            role,
            params,
            text: byte(0) & 0x20 != 0,
            config: DecoderConfig::default()
                .max_message_size(limit)
                .max_frame_size(64 * 1024)
                .max_fragments(64),
            // The buffers' bound of the plain decoder, the inflate state, and slack.
            heap_limit: 2 * (limit as usize + 125) + DECOMPRESSOR_HEAP_ESTIMATE + 64,
            chunks: &data[4.min(data.len())..start],
            stream: &data[start..],
        }
    }

    fn decoder(&self) -> Decoder {
        Decoder::new(self.role, self.config.clone()).with_deflate(&self.params)
    }

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

fn decode(case: &Case<'_>, pieces: &[&[u8]]) -> Outcome {
    let mut decoder = case.decoder();
    let mut messages = Vec::new();
    for piece in pieces {
        let mut pos = 0;
        loop {
            match decoder.decode(&piece[pos..]) {
                Ok(decoded) => {
                    pos += decoded.consumed;
                    let heap = decoder.heap_bytes();
                    assert!(heap <= case.heap_limit, "heap {heap} > {}", case.heap_limit);
                    match decoded.message {
                        Some(message) => {
                            if let Message::Text(text) = &message {
                                assert_eq!(
                                    core::str::from_utf8(text.as_bytes()),
                                    Ok(text.as_str())
                                );
                                assert!(text.len() as u64 <= case.config.get_max_message_size());
                            }
                            messages.push(message);
                        }
                        None => break,
                    }
                }
                Err(error) => {
                    assert_eq!(decoder.decode(b"\x81"), Err(error.clone()));
                    assert_eq!(decoder.heap_bytes(), 0);
                    // "At least `size` bytes": how far past the limit the inflater got depends
                    // on how the input was split.
                    let error = match error {
                        ProtocolError::MessageTooLarge { limit, .. } => {
                            ProtocolError::MessageTooLarge { size: 0, limit }
                        }
                        other => other,
                    };
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

fuzz_target!(|data: &[u8]| {
    let case = Case::parse(data);
    let whole = decode(&case, &[case.stream]);
    assert_eq!(decode(&case, &case.pieces()), whole, "chunked decode");

    // Round trip: the stream as one message, compressed by the peer of `role`.
    let sender = match case.role {
        Role::Server => Role::Client,
        Role::Client => Role::Server,
    };
    let config = DeflateConfig::default().min_compress_size(0);
    let mut compressor = Compressor::new(sender, &case.params, &config);
    let text = case.text && core::str::from_utf8(case.stream).is_ok();
    let opcode = if text { Opcode::Text } else { Opcode::Binary };
    let key = (sender == Role::Client).then_some([1, 2, 3, 4]);
    let mut wire = Vec::new();
    for _ in 0..2 {
        Encoder::new(sender)
            .encode_compressed(&mut compressor, opcode, case.stream, key, &mut wire)
            .unwrap();
    }
    let mut decoder = Decoder::new(case.role, DecoderConfig::default()).with_deflate(&case.params);
    let mut input = &wire[..];
    for _ in 0..2 {
        let decoded = decoder.decode(input).unwrap();
        input = &input[decoded.consumed..];
        let payload = match decoded.message {
            Some(Message::Text(t)) if text => t.into_bytes(),
            Some(Message::Binary(b)) if !text => b,
            other => panic!("{other:?}"),
        };
        assert_eq!(&payload[..], case.stream);
    }
    assert!(input.is_empty());
});
