//! permessage-deflate through the public API: the examples of RFC 7692 §7.2.3, the rules of §6
//! (RSV1), the limits on inflated size, and round trips of arbitrary messages split anyhow.
#![cfg(feature = "deflate")]

use ocpp_frame::deflate::{Compressor, DeflateConfig, DeflateParams};
use ocpp_frame::{
    CloseCode, Decoder, DecoderConfig, Encoder, FrameHeader, Message, Opcode, ProtocolError, Role,
};
use proptest::prelude::*;

fn client_decoder(params: &DeflateParams) -> Decoder {
    Decoder::new(Role::Client, DecoderConfig::default()).with_deflate(params)
}

/// Decodes `wire` whole; every message, or the first error.
fn decode_all(decoder: &mut Decoder, wire: &[u8]) -> Result<Vec<Message>, ProtocolError> {
    decode_pieces(decoder, &[wire])
}

fn decode_pieces(decoder: &mut Decoder, pieces: &[&[u8]]) -> Result<Vec<Message>, ProtocolError> {
    let mut messages = Vec::new();
    for piece in pieces {
        let mut input = *piece;
        loop {
            let decoded = decoder.decode(input)?;
            input = &input[decoded.consumed..];
            match decoded.message {
                Some(message) => messages.push(message),
                None => break,
            }
        }
    }
    Ok(messages)
}

#[test]
fn rfc7692_7_2_3_examples() {
    let hello = || Message::Text("Hello".into());
    let params = DeflateParams::default();
    // §7.2.3.1: one frame, and the same message in two fragments.
    let mut decoder = client_decoder(&params);
    let wire = [0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00];
    assert_eq!(decode_all(&mut decoder, &wire), Ok(vec![hello()]));
    let mut decoder = client_decoder(&params);
    let wire = [
        0x41, 0x03, 0xf2, 0x48, 0xcd, 0x80, 0x04, 0xc9, 0xc9, 0x07, 0x00,
    ];
    assert_eq!(decode_all(&mut decoder, &wire), Ok(vec![hello()]));
    // §7.2.3.2: the second "Hello" refers back to the first (context takeover).
    let mut decoder = client_decoder(&params);
    let wire = [
        0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0xc1, 0x05, 0xf2, 0x00, 0x11, 0x00,
        0x00,
    ];
    assert_eq!(decode_all(&mut decoder, &wire), Ok(vec![hello(), hello()]));
    // §7.2.3.3: a stored (uncompressed) DEFLATE block.
    let mut decoder = client_decoder(&params);
    let wire = [
        0xc1, 0x0b, 0x00, 0x05, 0x00, 0xfa, 0xff, 0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x00,
    ];
    assert_eq!(decode_all(&mut decoder, &wire), Ok(vec![hello()]));
    // §7.2.3.4: a block with BFINAL set, then a further message starts a new stream.
    let mut decoder = client_decoder(&params);
    let wire = [
        0xc1, 0x08, 0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x00, 0xc1, 0x07, 0xf2, 0x48, 0xcd,
        0xc9, 0xc9, 0x07, 0x00,
    ];
    assert_eq!(decode_all(&mut decoder, &wire), Ok(vec![hello(), hello()]));
    // §7.2.3.6: an empty message as a single 0x00 byte, or as an empty payload; the stream
    // goes on after either.
    let mut decoder = client_decoder(&params);
    let wire = [
        0xc1, 0x01, 0x00, 0xc2, 0x00, 0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00,
    ];
    assert_eq!(
        decode_all(&mut decoder, &wire),
        Ok(vec![
            Message::Text("".into()),
            Message::Binary(Default::default()),
            hello()
        ])
    );
}

#[test]
fn compressor_reproduces_rfc_examples() {
    let config = DeflateConfig::default().min_compress_size(0);
    let mut compressor = Compressor::new(Role::Server, &DeflateParams::default(), &config);
    let encoder = Encoder::new(Role::Server);
    let mut out = Vec::new();
    for _ in 0..2 {
        encoder
            .encode_compressed(&mut compressor, Opcode::Text, b"Hello", None, &mut out)
            .unwrap();
    }
    assert_eq!(
        out,
        [
            0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0xc1, 0x05, 0xf2, 0x00, 0x11,
            0x00, 0x00
        ]
    );
    // Empty: one 0x00 byte (§7.2.3.6), also right after another message, where zlib's sync
    // flush gives nothing at all.
    for _ in 0..2 {
        out.clear();
        encoder
            .encode_compressed(&mut compressor, Opcode::Binary, b"", None, &mut out)
            .unwrap();
        assert_eq!(out, [0xc2, 0x01, 0x00]);
    }
    // Under the threshold, and control frames: uncompressed, RSV1 clear.
    let mut small = Compressor::new(
        Role::Server,
        &DeflateParams::default(),
        &DeflateConfig::default(),
    );
    out.clear();
    encoder
        .encode_compressed(&mut small, Opcode::Text, b"Hi", None, &mut out)
        .unwrap();
    encoder
        .encode_compressed(&mut small, Opcode::Ping, b"p", None, &mut out)
        .unwrap();
    assert_eq!(out, [0x81, 0x02, b'H', b'i', 0x89, 0x01, b'p']);
    assert!(!small.is_allocated());
    // Roles: the client masks, the server does not.
    let mut client = Compressor::new(Role::Client, &DeflateParams::default(), &config);
    assert!(Encoder::new(Role::Client)
        .encode_compressed(&mut client, Opcode::Text, b"Hello", None, &mut out)
        .is_err());
}

#[test]
fn rsv1_rules() {
    let params = DeflateParams::default();
    let mut decoder = client_decoder(&params);
    // RSV1 on a continuation frame.
    let wire = [
        0x41, 0x03, 0xf2, 0x48, 0xcd, 0xc0, 0x04, 0xc9, 0xc9, 0x07, 0x00,
    ];
    let error = decode_all(&mut decoder, &wire).unwrap_err();
    assert_eq!(error, ProtocolError::CompressedContinuation);
    assert_eq!(error.close_code(), CloseCode::PROTOCOL_ERROR);
    // RSV1 on control frames.
    for opcode in [0xc8u8, 0xc9, 0xca] {
        let mut decoder = client_decoder(&params);
        let error = decode_all(&mut decoder, &[opcode, 0x00]).unwrap_err();
        assert_eq!(error, ProtocolError::CompressedControlFrame);
        assert_eq!(error.close_code(), CloseCode::PROTOCOL_ERROR);
    }
    // Without permessage-deflate, RSV1 is a reserved bit; RSV2/RSV3 stay reserved with it.
    let mut plain = Decoder::new(Role::Client, DecoderConfig::default());
    assert_eq!(
        decode_all(&mut plain, &[0xc1, 0x01, 0x00]),
        Err(ProtocolError::ReservedBits(0b100))
    );
    let mut decoder = client_decoder(&params);
    assert_eq!(
        decode_all(&mut decoder, &[0xe1, 0x01, 0x00]),
        Err(ProtocolError::ReservedBits(0b110))
    );
    // Uncompressed messages still pass, control frames between fragments of a compressed one.
    let mut decoder = client_decoder(&params);
    let wire = [
        0x81, 0x02, b'h', b'i', 0x41, 0x03, 0xf2, 0x48, 0xcd, 0x89, 0x00, 0x80, 0x04, 0xc9, 0xc9,
        0x07, 0x00,
    ];
    assert_eq!(
        decode_all(&mut decoder, &wire),
        Ok(vec![
            Message::Text("hi".into()),
            Message::Ping(Default::default()),
            Message::Text("Hello".into())
        ])
    );
}

#[test]
fn bad_data_and_bad_text_after_inflating() {
    let params = DeflateParams::default();
    // 0xff starts a block of the reserved type 3.
    let mut decoder = client_decoder(&params);
    let error = decode_all(&mut decoder, &[0xc1, 0x02, 0xff, 0xff]).unwrap_err();
    assert_eq!(error, ProtocolError::InvalidCompressedData);
    assert_eq!(error.close_code(), CloseCode::INVALID_PAYLOAD);
    // Valid DEFLATE of invalid UTF-8 in a text message.
    let config = DeflateConfig::default().min_compress_size(0);
    let mut compressor = Compressor::new(Role::Server, &params, &config);
    let mut wire = Vec::new();
    Encoder::new(Role::Server)
        .encode_compressed(
            &mut compressor,
            Opcode::Text,
            b"ok \xff\xfe",
            None,
            &mut wire,
        )
        .unwrap();
    let mut decoder = client_decoder(&params);
    let error = decode_all(&mut decoder, &wire).unwrap_err();
    assert_eq!(error, ProtocolError::InvalidUtf8);
    assert_eq!(error.close_code(), CloseCode::INVALID_PAYLOAD);
}

/// 10 MB of zeros compress to about 10 KB; a 64 KiB limit refuses them with 1009.
#[test]
fn decompression_bomb_is_refused() {
    let params = DeflateParams::default();
    let config = DeflateConfig::default().min_compress_size(0);
    let mut compressor = Compressor::new(Role::Client, &params, &config);
    let mut wire = Vec::new();
    let bomb = vec![0u8; 10_000_000];
    Encoder::new(Role::Client)
        .encode_compressed(
            &mut compressor,
            Opcode::Binary,
            &bomb,
            Some([1, 2, 3, 4]),
            &mut wire,
        )
        .unwrap();
    assert!(wire.len() < 20_000, "{} bytes", wire.len());
    let limit = 64 * 1024;
    let mut decoder = Decoder::new(
        Role::Server,
        DecoderConfig::default().max_message_size(limit),
    )
    .with_deflate(&params);
    let error = decode_all(&mut decoder, &wire).unwrap_err();
    assert!(
        matches!(error, ProtocolError::MessageTooLarge { limit: l, size } if l == limit && size > limit),
        "{error:?}"
    );
    assert_eq!(error.close_code(), CloseCode::MESSAGE_TOO_BIG);
    assert_eq!(decoder.heap_bytes(), 0, "a failed decoder holds nothing");
    // Exactly at the limit is fine.
    let mut compressor = Compressor::new(Role::Client, &params, &config);
    let mut wire = Vec::new();
    Encoder::new(Role::Client)
        .encode_compressed(
            &mut compressor,
            Opcode::Binary,
            &bomb[..limit as usize],
            Some([1, 2, 3, 4]),
            &mut wire,
        )
        .unwrap();
    let mut decoder = Decoder::new(
        Role::Server,
        DecoderConfig::default().max_message_size(limit),
    )
    .with_deflate(&params);
    let messages = decode_all(&mut decoder, &wire).unwrap();
    assert_eq!(
        messages,
        vec![Message::Binary(bomb[..limit as usize].to_vec().into())]
    );
}

#[test]
fn context_memory_follows_the_parameters() {
    let config = DeflateConfig::default().min_compress_size(0);
    for (no_context_takeover, kept) in [(true, false), (false, true)] {
        let params = DeflateParams {
            server_no_context_takeover: no_context_takeover,
            client_no_context_takeover: no_context_takeover,
            ..DeflateParams::default()
        };
        let mut compressor = Compressor::new(Role::Server, &params, &config);
        let mut wire = Vec::new();
        Encoder::new(Role::Server)
            .encode_compressed(
                &mut compressor,
                Opcode::Text,
                b"Hello Hello",
                None,
                &mut wire,
            )
            .unwrap();
        assert_eq!(compressor.is_allocated(), kept);
        let mut decoder = client_decoder(&params);
        decode_all(&mut decoder, &wire).unwrap();
        assert_eq!(decoder.is_inflate_allocated(), kept);
        assert_eq!(decoder.heap_bytes() == 0, !kept);
    }
}

/// Builds the wire bytes of `messages` compressed by `role`, each split into `fragments` frames
/// (the first with RSV1), masked when `role` is the client.
fn compressed_stream(
    role: Role,
    params: &DeflateParams,
    config: &DeflateConfig,
    messages: &[(bool, Vec<u8>, usize)],
) -> Vec<u8> {
    let mut compressor = Compressor::new(role, params, config);
    let mut wire = Vec::new();
    for (i, (text, payload, fragments)) in messages.iter().enumerate() {
        let mut deflated = Vec::new();
        compressor.compress(payload, &mut deflated).unwrap();
        let fragments = (*fragments).clamp(1, deflated.len().max(1));
        let size = deflated.len().div_ceil(fragments).max(1);
        let pieces: Vec<&[u8]> = if deflated.is_empty() {
            vec![&[]]
        } else {
            deflated.chunks(size).collect()
        };
        for (n, piece) in pieces.iter().enumerate() {
            let opcode = match (n, text) {
                (0, true) => Opcode::Text,
                (0, false) => Opcode::Binary,
                _ => Opcode::Continuation,
            };
            let header = FrameHeader {
                fin: n + 1 == pieces.len(),
                rsv: if n == 0 { 0b100 } else { 0 },
                ..FrameHeader::new(opcode, 0)
            };
            let key = (role == Role::Client).then_some([i as u8, n as u8, 7, 9]);
            Encoder::new(role)
                .encode_frame(header, piece, key, &mut wire)
                .unwrap();
        }
    }
    wire
}

fn message_strategy() -> impl Strategy<Value = (bool, Vec<u8>, usize)> {
    let text = prop_oneof![
        "[a-z{}\":,0-9\\[\\] ]{0,300}",
        "\\PC{0,100}",
        Just(r#"[2,"19223201","MeterValues",{"connectorId":1,"meterValue":[]}]"#.repeat(20)),
    ]
    .prop_map(|s: String| (true, s.into_bytes()));
    let binary = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..400),
        (any::<u8>(), 0usize..5000).prop_map(|(b, n)| vec![b; n]),
    ]
    .prop_map(|b| (false, b));
    (prop_oneof![text, binary], 1usize..5).prop_map(|((t, p), f)| (t, p, f))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn round_trips(
        messages in proptest::collection::vec(message_strategy(), 1..6),
        client_sends in any::<bool>(),
        no_context_takeover in any::<bool>(),
        bits in 8u8..=15,
        level in 0u8..=9,
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let params = DeflateParams {
            server_no_context_takeover: no_context_takeover,
            client_no_context_takeover: no_context_takeover,
            server_max_window_bits: bits,
            client_max_window_bits: bits,
        };
        let config = DeflateConfig::default().compression_level(level).min_compress_size(0);
        let sender = if client_sends { Role::Client } else { Role::Server };
        let receiver = if client_sends { Role::Server } else { Role::Client };
        let wire = compressed_stream(sender, &params, &config, &messages);
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(wire.len() + 1)).collect();
        points.sort_unstable();
        let mut pieces = Vec::new();
        let mut last = 0;
        for point in points {
            pieces.push(&wire[last..point]);
            last = point;
        }
        pieces.push(&wire[last..]);
        let mut decoder = Decoder::new(receiver, DecoderConfig::default()).with_deflate(&params);
        let decoded = decode_pieces(&mut decoder, &pieces).unwrap();
        let expected: Vec<Message> = messages
            .iter()
            .map(|(text, payload, _)| {
                if *text {
                    Message::Text(String::from_utf8(payload.clone()).unwrap().into())
                } else {
                    Message::Binary(payload.clone().into())
                }
            })
            .collect();
        prop_assert_eq!(decoded, expected);
        prop_assert!(decoder.is_idle());
        prop_assert_eq!(decoder.is_inflate_allocated(), !no_context_takeover);
    }
}
