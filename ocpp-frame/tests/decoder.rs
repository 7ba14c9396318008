//! Behaviour of the frame decoder through the public API: RFC 6455 §5.7 examples, every refusal
//! with its close code, limits, and "any split of the input gives the same messages".

use bytes::{Bytes, BytesMut};
use ocpp_frame::{
    CloseCode, Decoder, DecoderConfig, Encoder, FrameHeader, Message, Opcode, ProtocolError, Role,
};
use proptest::prelude::*;

const KEY: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

/// Decodes all of `input` in one call sequence; returns the messages and the error, if any.
fn decode_all(decoder: &mut Decoder, mut input: &[u8]) -> (Vec<Message>, Option<ProtocolError>) {
    let mut messages = Vec::new();
    loop {
        match decoder.decode(input) {
            Ok(decoded) => {
                input = &input[decoded.consumed..];
                match decoded.message {
                    Some(message) => messages.push(message),
                    None => {
                        assert!(input.is_empty(), "None must mean all input consumed");
                        return (messages, None);
                    }
                }
            }
            Err(error) => return (messages, Some(error)),
        }
    }
}

fn server() -> Decoder {
    Decoder::new(Role::Server, DecoderConfig::default())
}

fn client() -> Decoder {
    Decoder::new(Role::Client, DecoderConfig::default())
}

/// A masked client frame with any header bits.
fn client_frame(fin: bool, rsv: u8, opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.push((u8::from(fin) << 7) | (rsv << 4) | opcode);
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if len <= 0xffff {
        out.push(0x80 | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&KEY);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ KEY[i % 4]));
    out
}

fn refusal(input: &[u8]) -> ProtocolError {
    let (_, error) = decode_all(&mut server(), input);
    let error = error.expect("the input must be refused");
    // The zero-copy path refuses it the same way.
    let mut buf = BytesMut::from(input);
    let mut decoder = server();
    let other = loop {
        match decoder.decode_buf(&mut buf) {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("decode_buf accepted what decode refused"),
            Err(e) => break e,
        }
    };
    assert_eq!(error, other);
    error
}

#[test]
fn rfc6455_5_7_examples() {
    // A single-frame unmasked text message.
    let (m, e) = decode_all(&mut client(), &[0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f]);
    assert_eq!((m, e), (vec![Message::Text("Hello".into())], None));
    // A single-frame masked text message.
    let masked = [
        0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58,
    ];
    let (m, e) = decode_all(&mut server(), &masked);
    assert_eq!((m, e), (vec![Message::Text("Hello".into())], None));
    // A fragmented unmasked text message.
    let fragmented = [0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f];
    let (m, e) = decode_all(&mut client(), &fragmented);
    assert_eq!((m, e), (vec![Message::Text("Hello".into())], None));
    // Unmasked ping, masked pong.
    let (m, _) = decode_all(&mut client(), &[0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f]);
    assert_eq!(m, vec![Message::Ping(Bytes::from_static(b"Hello"))]);
    let pong = [
        0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58,
    ];
    let (m, _) = decode_all(&mut server(), &pong);
    assert_eq!(m, vec![Message::Pong(Bytes::from_static(b"Hello"))]);
    // 256 bytes and 64 KiB binary in a single unmasked frame.
    for (prefix, len) in [
        (vec![0x82, 0x7e, 0x01, 0x00], 256usize),
        (vec![0x82, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0], 65536),
    ] {
        let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let mut wire = prefix;
        wire.extend_from_slice(&payload);
        let (m, e) = decode_all(&mut client(), &wire);
        assert_eq!((m, e), (vec![Message::Binary(payload.into())], None));
    }
}

#[test]
fn refusals_have_exact_close_codes() {
    use ProtocolError as P;
    let cases: Vec<(Vec<u8>, ProtocolError, u16)> = vec![
        (
            client_frame(true, 0b100, 1, b"x"),
            P::ReservedBits(0b100),
            1002,
        ),
        (
            client_frame(true, 0b001, 2, b"x"),
            P::ReservedBits(0b001),
            1002,
        ),
        (client_frame(true, 0, 3, b""), P::ReservedOpcode(3), 1002),
        (
            client_frame(true, 0, 0xB, b""),
            P::ReservedOpcode(0xB),
            1002,
        ),
        (vec![0x81, 0x01, b'x'], P::UnmaskedClientFrame, 1002),
        (
            client_frame(false, 0, 9, b"x"),
            P::FragmentedControlFrame,
            1002,
        ),
        (
            client_frame(true, 0, 9, &[0; 126]),
            P::ControlFrameTooLong(126),
            1002,
        ),
        (
            client_frame(true, 0, 0, b"x"),
            P::UnexpectedContinuation,
            1002,
        ),
        (
            [
                client_frame(false, 0, 1, b"a"),
                client_frame(true, 0, 1, b"b"),
            ]
            .concat(),
            P::ExpectedContinuation,
            1002,
        ),
        (client_frame(true, 0, 1, &[0xff]), P::InvalidUtf8, 1007),
        (
            // A text message that ends inside a character.
            client_frame(true, 0, 1, &[0xe2, 0x82]),
            P::InvalidUtf8,
            1007,
        ),
        (
            client_frame(true, 0, 8, &[0x03]),
            P::InvalidClosePayloadLength,
            1002,
        ),
        (
            client_frame(true, 0, 8, &[0x03, 0xed]),
            P::InvalidCloseCode(1005),
            1002,
        ),
        (
            client_frame(true, 0, 8, &[0x03, 0xe7]),
            P::InvalidCloseCode(999),
            1002,
        ),
        (
            client_frame(true, 0, 8, &[0x03, 0xe8, 0xc0]),
            P::InvalidCloseReason,
            1007,
        ),
        (
            vec![0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4],
            P::InvalidPayloadLength,
            1002,
        ),
    ];
    for (input, expected, code) in cases {
        let error = refusal(&input);
        assert_eq!(error, expected, "input {input:02x?}");
        assert_eq!(error.close_code(), CloseCode::from(code), "{error}");
    }
}

#[test]
fn server_frames_must_not_be_masked() {
    let (_, e) = decode_all(&mut client(), &client_frame(true, 0, 1, b"hi"));
    assert_eq!(e, Some(ProtocolError::MaskedServerFrame));
    assert_eq!(ProtocolError::MaskedServerFrame.close_code().as_u16(), 1002);
}

#[test]
fn invalid_utf8_fails_fast_inside_a_frame() {
    // The header announces 100 bytes; the invalid byte comes third. The decoder must refuse it
    // before the frame is complete.
    let mut payload = b"ab\xffcdef".to_vec();
    payload.resize(100, b'x');
    let wire = client_frame(true, 0, 1, &payload);
    let mut decoder = server();
    assert_eq!(decoder.decode(&wire[..6 + 2]).map(|d| d.consumed), Ok(8));
    assert_eq!(decoder.decode(&wire[8..9]), Err(ProtocolError::InvalidUtf8));
    // And across fragments: the first fragment ends with a lead byte, the next one breaks it.
    let wire = [
        client_frame(false, 0, 1, b"ok\xf4"),
        client_frame(true, 0, 0, b"\x90\x80\x80"),
    ]
    .concat();
    let mut decoder = server();
    assert!(decoder.decode(&wire[..9]).is_ok());
    assert_eq!(
        decoder.decode(&wire[9..9 + 7]),
        Err(ProtocolError::InvalidUtf8)
    );
}

#[test]
fn frame_limit_is_checked_from_the_header() {
    let mut decoder = Decoder::new(Role::Server, DecoderConfig::default().max_frame_size(1000));
    // Only the header of a 1001-byte frame has arrived: refused at once.
    let header = &client_frame(true, 0, 2, &[0; 1001])[..8];
    assert_eq!(
        decoder.decode(header),
        Err(ProtocolError::FrameTooLarge {
            size: 1001,
            limit: 1000
        })
    );
    assert_eq!(decoder.heap_bytes(), 0);
    // Sticky: the decoder keeps refusing.
    assert!(decoder.decode(&[]).is_err());
    // A huge declared length (2^62) with no payload: refused without allocating.
    let mut decoder = server();
    let mut wire = vec![0x82, 0xff];
    wire.extend_from_slice(&(1u64 << 62).to_be_bytes());
    wire.extend_from_slice(&KEY);
    assert_eq!(
        decoder.decode(&wire).map_err(|e| e.close_code()),
        Err(CloseCode::MESSAGE_TOO_BIG)
    );
}

#[test]
fn message_limit_counts_all_fragments() {
    let config = DecoderConfig::default()
        .max_frame_size(100)
        .max_message_size(250);
    let mut decoder = Decoder::new(Role::Server, config);
    let wire = [
        client_frame(false, 0, 2, &[1; 100]),
        client_frame(false, 0, 0, &[2; 100]),
        client_frame(true, 0, 0, &[3; 100]),
    ]
    .concat();
    let (messages, error) = decode_all(&mut decoder, &wire);
    assert!(messages.is_empty());
    assert_eq!(
        error,
        Some(ProtocolError::MessageTooLarge {
            size: 300,
            limit: 250
        })
    );
    assert_eq!(error.map(|e| e.close_code().as_u16()), Some(1009));
}

#[test]
fn fragment_count_is_per_message() {
    let config = DecoderConfig::default().max_fragments(3);
    let three = [
        client_frame(false, 0, 1, b"a"),
        client_frame(false, 0, 0, b"b"),
        client_frame(true, 0, 0, b"c"),
    ]
    .concat();
    // Two messages of three fragments each are fine: the count resets per message.
    let mut decoder = Decoder::new(Role::Server, config.clone());
    let (messages, error) = decode_all(&mut decoder, &[three.clone(), three].concat());
    assert_eq!(error, None);
    assert_eq!(messages, vec![Message::Text("abc".into()); 2]);
    // Four fragments are not.
    let four = [
        client_frame(false, 0, 1, b"a"),
        client_frame(false, 0, 0, b""),
        client_frame(false, 0, 0, b""),
        client_frame(true, 0, 0, b"d"),
    ]
    .concat();
    let mut decoder = Decoder::new(Role::Server, config);
    let (_, error) = decode_all(&mut decoder, &four);
    assert_eq!(error, Some(ProtocolError::TooManyFragments { limit: 3 }));
    assert_eq!(error.map(|e| e.close_code().as_u16()), Some(1008));
}

#[test]
fn control_frames_interleave_with_fragments() {
    let wire = [
        client_frame(false, 0, 1, "fra".as_bytes()),
        client_frame(true, 0, 9, b"ping"),
        client_frame(false, 0, 0, "g€".as_bytes()),
        client_frame(true, 0, 0xA, b""),
        client_frame(true, 0, 0, "nt".as_bytes()),
    ]
    .concat();
    let (messages, error) = decode_all(&mut server(), &wire);
    assert_eq!(error, None);
    assert_eq!(
        messages,
        vec![
            Message::Ping(Bytes::from_static(b"ping")),
            Message::Pong(Bytes::new()),
            Message::Text("frag€nt".into()),
        ]
    );
}

#[test]
fn close_ends_decoding() {
    let wire = [
        client_frame(true, 0, 8, b"\x03\xe8done"),
        // Anything after the close is ignored, even garbage.
        vec![0xff, 0xff, 0xff],
    ]
    .concat();
    let mut decoder = server();
    let (messages, error) = decode_all(&mut decoder, &wire);
    assert_eq!(error, None);
    match &messages[..] {
        [Message::Close(Some(close))] => {
            assert_eq!(close.code, CloseCode::NORMAL);
            assert_eq!(close.reason.as_str(), "done");
        }
        other => panic!("{other:?}"),
    }
    assert!(decoder.is_closed());
    // An empty close carries no code.
    let (messages, _) = decode_all(&mut server(), &client_frame(true, 0, 8, b""));
    assert_eq!(messages, vec![Message::Close(None)]);
}

#[test]
fn idle_decoder_holds_no_heap() {
    let mut decoder = server();
    assert_eq!(decoder.heap_bytes(), 0);
    let wire = [
        client_frame(true, 0, 1, &[b'a'; 5000]),
        client_frame(false, 0, 2, &[1; 3000]),
        client_frame(true, 0, 9, b"p"),
        client_frame(true, 0, 0, &[2; 3000]),
    ]
    .concat();
    // Byte by byte, so every partial state is visited.
    for byte in wire.chunks(1) {
        let decoded = decoder.decode(byte).unwrap();
        assert_eq!(decoded.consumed, 1);
        // While partial, at most twice what arrived of the current message and control frame.
        assert!(decoder.heap_bytes() <= 2 * 6000 + 2 * 125 + 64);
    }
    assert!(decoder.is_idle());
    assert_eq!(decoder.heap_bytes(), 0);
}

#[test]
fn partial_frame_holds_only_what_arrived() {
    let mut decoder = Decoder::new(
        Role::Server,
        DecoderConfig::default().max_frame_size(16 << 20),
    );
    let wire = client_frame(true, 0, 2, &vec![7u8; 1 << 20]);
    let d = decoder.decode(&wire[..14 + 100]).unwrap();
    assert_eq!(d.consumed, 114);
    assert!(decoder.heap_bytes() < 4096, "{}", decoder.heap_bytes());
}

#[test]
fn zero_copy_path_shares_the_buffer() {
    let wire = client_frame(true, 0, 2, &[9u8; 1000]);
    let mut buf = BytesMut::from(&wire[..]);
    let start = buf.as_ptr() as usize;
    let mut decoder = server();
    match decoder.decode_buf(&mut buf).unwrap() {
        Some(Message::Binary(payload)) => {
            assert_eq!(payload.len(), 1000);
            // The payload sits where it was read: right after the 8-byte header.
            assert_eq!(payload.as_ptr() as usize, start + 8);
            assert!(payload.iter().all(|&b| b == 9));
        }
        other => panic!("{other:?}"),
    }
    assert!(buf.is_empty());
    assert_eq!(decoder.heap_bytes(), 0);
}

// ---- property tests: generated streams, arbitrary splits ----

#[derive(Debug, Clone)]
enum Item {
    /// A data message sent as these fragments (text if the bool is set).
    Data(bool, Vec<Vec<u8>>),
    Ping(Vec<u8>),
    Pong(Vec<u8>),
}

fn item() -> impl Strategy<Value = Item> {
    let text_fragments = proptest::collection::vec("\\PC{0,20}", 1..5).prop_map(|parts| {
        // Split the UTF-8 bytes of the whole text at arbitrary points (even inside characters).
        let text: String = parts.concat();
        let bytes = text.into_bytes();
        let n = parts.len();
        let mut fragments = Vec::new();
        let step = bytes.len() / n + 1;
        for chunk in bytes.chunks(step) {
            fragments.push(chunk.to_vec());
        }
        if fragments.is_empty() {
            fragments.push(Vec::new());
        }
        Item::Data(true, fragments)
    });
    let binary = proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 1..4)
        .prop_map(|f| Item::Data(false, f));
    let control = proptest::collection::vec(any::<u8>(), 0..126);
    prop_oneof![
        4 => text_fragments,
        3 => binary,
        1 => control.clone().prop_map(Item::Ping),
        1 => control.prop_map(Item::Pong),
    ]
}

/// Encodes items with the crate's encoder (client role), interleaving the control items that
/// follow a multi-fragment message between its fragments. Returns the wire and the messages the
/// decoder must produce, in order.
fn encode(items: &[Item], keys: &[[u8; 4]]) -> (Vec<u8>, Vec<Message>) {
    let encoder = Encoder::new(Role::Client);
    let mut wire = Vec::new();
    let mut expected = Vec::new();
    let mut key = keys.iter().cycle();
    for item in items {
        match item {
            Item::Data(text, fragments) => {
                let last = fragments.len() - 1;
                for (i, fragment) in fragments.iter().enumerate() {
                    let opcode = match (i, text) {
                        (0, true) => Opcode::Text,
                        (0, false) => Opcode::Binary,
                        _ => Opcode::Continuation,
                    };
                    let header = FrameHeader {
                        fin: i == last,
                        ..FrameHeader::new(opcode, 0)
                    };
                    encoder
                        .encode_frame(header, fragment, key.next().copied(), &mut wire)
                        .unwrap();
                    if i == 0 && last > 0 {
                        // A ping in the middle of the fragmented message.
                        encoder
                            .encode_ping(b"mid", key.next().copied(), &mut wire)
                            .unwrap();
                        expected.push(Message::Ping(Bytes::from_static(b"mid")));
                    }
                }
                let payload = fragments.concat();
                expected.push(if *text {
                    Message::Text(String::from_utf8(payload).unwrap().into())
                } else {
                    Message::Binary(payload.into())
                });
            }
            Item::Ping(p) => {
                encoder
                    .encode_ping(p, key.next().copied(), &mut wire)
                    .unwrap();
                expected.push(Message::Ping(p.clone().into()));
            }
            Item::Pong(p) => {
                encoder
                    .encode_pong(p, key.next().copied(), &mut wire)
                    .unwrap();
                expected.push(Message::Pong(p.clone().into()));
            }
        }
    }
    (wire, expected)
}

fn decode_split(wire: &[u8], cuts: &[usize]) -> (Vec<Message>, Option<ProtocolError>) {
    let mut decoder = server();
    let mut messages = Vec::new();
    let mut start = 0;
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (wire.len() + 1)).collect();
    bounds.sort_unstable();
    bounds.push(wire.len());
    for end in bounds {
        let end = end.max(start);
        let (mut m, e) = decode_all(&mut decoder, &wire[start..end]);
        messages.append(&mut m);
        if e.is_some() {
            return (messages, e);
        }
        start = end;
    }
    (messages, None)
}

fn decode_buf_split(wire: &[u8], cuts: &[usize]) -> (Vec<Message>, Option<ProtocolError>) {
    let mut decoder = server();
    let mut messages = Vec::new();
    let mut buf = BytesMut::new();
    let mut start = 0;
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (wire.len() + 1)).collect();
    bounds.sort_unstable();
    bounds.push(wire.len());
    for end in bounds {
        let end = end.max(start);
        buf.extend_from_slice(&wire[start..end]);
        start = end;
        loop {
            match decoder.decode_buf(&mut buf) {
                Ok(Some(m)) => messages.push(m),
                Ok(None) => break,
                Err(e) => return (messages, Some(e)),
            }
        }
    }
    (messages, None)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_split_gives_the_same_messages(
        items in proptest::collection::vec(item(), 1..8),
        keys in proptest::collection::vec(any::<[u8; 4]>(), 1..4),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let (wire, expected) = encode(&items, &keys);
        prop_assert_eq!(decode_split(&wire, &[]), (expected.clone(), None));
        prop_assert_eq!(decode_split(&wire, &cuts), (expected.clone(), None));
        prop_assert_eq!(decode_buf_split(&wire, &cuts), (expected, None));
    }

    #[test]
    fn one_byte_at_a_time(items in proptest::collection::vec(item(), 1..4),
                          key in any::<[u8; 4]>()) {
        let (wire, expected) = encode(&items, &[key]);
        let cuts: Vec<usize> = (0..wire.len()).collect();
        prop_assert_eq!(decode_split(&wire, &cuts), (expected.clone(), None));
        prop_assert_eq!(decode_buf_split(&wire, &cuts), (expected, None));
    }

    #[test]
    fn arbitrary_bytes_split_anyhow_agree(bytes in proptest::collection::vec(any::<u8>(), 0..400),
                                          cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
        // Whatever the input, splitting it never changes the messages or the error.
        let whole = decode_split(&bytes, &[]);
        prop_assert_eq!(decode_split(&bytes, &cuts), whole.clone());
        prop_assert_eq!(decode_buf_split(&bytes, &cuts), whole);
    }
}
