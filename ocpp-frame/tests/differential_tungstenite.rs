//! Differential tests against tungstenite 0.29, in both directions and both roles.
//!
//! Proptest generates message sequences (text with non-ASCII characters, binary, ping, pong, an
//! optional close at the end; sizes around the 125/126 and 65535/65536 length-form boundaries, up
//! to 70,000 bytes), fragments some data messages (cuts anywhere, even inside a UTF-8 character)
//! with control frames interleaved between the fragments, and picks how the byte stream is split
//! into reads. Then:
//!
//! - tungstenite writes, our `Decoder` reads (`decode` and `decode_buf`, every split);
//! - our `Encoder` writes, tungstenite reads (through a stream that returns the same splits);
//! - in the server role, both encoders must produce the same bytes (neither masks).
//!
//! tungstenite cannot fragment outgoing messages itself (its `max_frame_size` only limits what it
//! reads), so fragments are written through its `Message::Frame` and `Frame::message` API.

use std::io::{self, Read, Write};

use bytes::BytesMut;
use ocpp_frame::{CloseCode, Decoder, DecoderConfig, Encoder, FrameHeader, Message, Opcode, Role};
use proptest::prelude::*;
use proptest::sample::Index;
use tungstenite::protocol::frame::coding::{Data as TData, OpCode as TOpCode};
use tungstenite::protocol::frame::{CloseFrame as TCloseFrame, Frame as TFrame};
use tungstenite::protocol::{Role as TRole, WebSocket, WebSocketConfig};
use tungstenite::Message as TMessage;

/// A message as both libraries see it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Msg {
    Text(String),
    Binary(Vec<u8>),
    Ping(Vec<u8>),
    Pong(Vec<u8>),
    Close(Option<(u16, String)>),
}

/// One frame on the wire: a whole message, or a fragment of a data message.
#[derive(Debug, Clone)]
enum WireFrame {
    Whole(Msg),
    Fragment {
        /// The first fragment carries the text/binary opcode, the others are continuations.
        first: bool,
        text: bool,
        fin: bool,
        payload: Vec<u8>,
    },
}

/// A generated conversation: the frames to write and the messages the reader must return.
#[derive(Debug, Clone)]
struct Script {
    frames: Vec<WireFrame>,
    expected: Vec<Msg>,
}

// ---------------------------------------------------------------------------------------------
// Generation.

fn data_len() -> impl Strategy<Value = usize> {
    prop_oneof![
        8 => 0usize..200,
        2 => 200usize..5000,
        1 => Just(125usize),
        1 => Just(126usize),
        1 => Just(65535usize),
        1 => Just(65536usize),
        1 => 65530usize..70000,
    ]
}

/// A string of exactly `len` bytes, cycling through the characters of `seed`.
fn text_of_len(seed: &str, len: usize) -> String {
    let mut out = String::with_capacity(len);
    for c in seed.chars().cycle() {
        if out.len() + c.len_utf8() > len {
            break;
        }
        out.push(c);
    }
    while out.len() < len {
        out.push('x');
    }
    out
}

fn bytes_of_len(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn data_msg() -> impl Strategy<Value = Msg> {
    prop_oneof![
        ("[a-z\u{e9}\u{20ac}\u{1f600}\u{4e2d} ]{1,6}", data_len())
            .prop_map(|(seed, len)| Msg::Text(text_of_len(&seed, len))),
        (any::<u8>(), data_len()).prop_map(|(seed, len)| Msg::Binary(bytes_of_len(seed, len))),
    ]
}

fn control_payload() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..8),
        proptest::collection::vec(any::<u8>(), 120..=125),
    ]
}

fn ping_or_pong() -> impl Strategy<Value = Msg> {
    prop_oneof![
        control_payload().prop_map(Msg::Ping),
        control_payload().prop_map(Msg::Pong),
    ]
}

fn close_msg() -> impl Strategy<Value = Msg> {
    let code = prop_oneof![
        Just(1000u16),
        Just(1001),
        Just(1003),
        Just(1008),
        Just(1011),
        Just(3000),
        Just(4999)
    ];
    prop_oneof![
        Just(Msg::Close(None)),
        (code, "[a-z\u{e9}\u{20ac} ]{0,60}").prop_map(|(code, reason)| {
            // At most 123 bytes, cut on a character boundary.
            let mut end = reason.len().min(123);
            while !reason.is_char_boundary(end) {
                end -= 1;
            }
            Msg::Close(Some((code, reason[..end].to_owned())))
        }),
    ]
}

/// A message and how to send it: `pieces` fragments cut at `cuts`, with `between` control frames
/// after the first fragments.
#[derive(Debug, Clone)]
struct Entry {
    msg: Msg,
    pieces: usize,
    cuts: Vec<Index>,
    between: Vec<Msg>,
}

fn entry() -> impl Strategy<Value = Entry> {
    prop_oneof![
        3 => (data_msg(), 1usize..=4, proptest::collection::vec(any::<Index>(), 3),
              proptest::collection::vec(ping_or_pong(), 0..3))
            .prop_map(|(msg, pieces, cuts, between)| Entry { msg, pieces, cuts, between }),
        1 => ping_or_pong().prop_map(|msg| Entry { msg, pieces: 1, cuts: vec![], between: vec![] }),
    ]
}

fn script() -> impl Strategy<Value = Script> {
    (
        proptest::collection::vec(entry(), 1..6),
        proptest::option::of(close_msg()),
    )
        .prop_map(|(entries, close)| {
            let mut frames = Vec::new();
            let mut expected = Vec::new();
            for entry in entries {
                let (text, payload) = match &entry.msg {
                    Msg::Text(s) => (true, s.as_bytes()),
                    Msg::Binary(b) => (false, b.as_slice()),
                    _ => {
                        frames.push(WireFrame::Whole(entry.msg.clone()));
                        expected.push(entry.msg);
                        continue;
                    }
                };
                if entry.pieces == 1 {
                    frames.push(WireFrame::Whole(entry.msg.clone()));
                    expected.push(entry.msg);
                    continue;
                }
                let mut cuts: Vec<usize> = entry.cuts[..entry.pieces - 1]
                    .iter()
                    .map(|i| i.index(payload.len() + 1))
                    .collect();
                cuts.sort_unstable();
                cuts.push(payload.len());
                let mut start = 0;
                for (i, &cut) in cuts.iter().enumerate() {
                    let fin = i == cuts.len() - 1;
                    frames.push(WireFrame::Fragment {
                        first: i == 0,
                        text,
                        fin,
                        payload: payload[start..cut].to_vec(),
                    });
                    start = cut;
                    if let (false, Some(control)) = (fin, entry.between.get(i)) {
                        frames.push(WireFrame::Whole(control.clone()));
                        // Control frames between fragments arrive before the message completes.
                        expected.push(control.clone());
                    }
                }
                expected.push(entry.msg);
            }
            if let Some(close) = close {
                frames.push(WireFrame::Whole(close.clone()));
                expected.push(close);
            }
            Script { frames, expected }
        })
}

/// How the byte stream is split into reads: the sizes are used in a cycle.
fn splits() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(
        prop_oneof![1usize..16, 16usize..2000, 2000usize..80000],
        1..6,
    )
}

// ---------------------------------------------------------------------------------------------
// An in-memory stream for tungstenite: reads come in the given sizes, writes are kept.

#[derive(Debug)]
struct MemStream {
    input: Vec<u8>,
    pos: usize,
    reads: Vec<usize>,
    next_read: usize,
    output: Vec<u8>,
}

impl MemStream {
    fn new(input: Vec<u8>, reads: &[usize]) -> Self {
        MemStream {
            input,
            pos: 0,
            reads: if reads.is_empty() {
                vec![usize::MAX]
            } else {
                reads.to_vec()
            },
            next_read: 0,
            output: Vec::new(),
        }
    }
}

impl Read for MemStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let size = self.reads[self.next_read % self.reads.len()];
        self.next_read += 1;
        let n = size.min(buf.len()).min(self.input.len() - self.pos);
        buf[..n].copy_from_slice(&self.input[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl Write for MemStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.output.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Conversions.

fn from_ours(message: Message) -> Msg {
    match message {
        Message::Text(t) => Msg::Text(t.as_str().to_owned()),
        Message::Binary(b) => Msg::Binary(b.to_vec()),
        Message::Ping(b) => Msg::Ping(b.to_vec()),
        Message::Pong(b) => Msg::Pong(b.to_vec()),
        Message::Close(c) => Msg::Close(c.map(|c| (c.code.as_u16(), c.reason.as_str().to_owned()))),
    }
}

fn from_tungstenite(message: TMessage) -> Msg {
    match message {
        TMessage::Text(t) => Msg::Text(t.as_str().to_owned()),
        TMessage::Binary(b) => Msg::Binary(b.to_vec()),
        TMessage::Ping(b) => Msg::Ping(b.to_vec()),
        TMessage::Pong(b) => Msg::Pong(b.to_vec()),
        TMessage::Close(c) => Msg::Close(c.map(|c| (u16::from(c.code), c.reason.to_string()))),
        TMessage::Frame(f) => panic!("tungstenite returned a raw frame: {f:?}"),
    }
}

fn tungstenite_role(role: Role) -> TRole {
    match role {
        Role::Server => TRole::Server,
        Role::Client => TRole::Client,
    }
}

// ---------------------------------------------------------------------------------------------
// Writers and readers.

/// tungstenite in `role` writes the script (and masks with its own random keys as a client).
fn tungstenite_write(role: Role, frames: &[WireFrame]) -> Vec<u8> {
    let stream = MemStream::new(Vec::new(), &[]);
    let mut ws = WebSocket::from_raw_socket(
        stream,
        tungstenite_role(role),
        Some(WebSocketConfig::default()),
    );
    for frame in frames {
        let message = match frame.clone() {
            WireFrame::Whole(Msg::Text(s)) => TMessage::text(s),
            WireFrame::Whole(Msg::Binary(b)) => TMessage::binary(b),
            WireFrame::Whole(Msg::Ping(b)) => TMessage::Ping(b.into()),
            // `Message::Pong` is queued and a later pong replaces it; a raw frame is written.
            WireFrame::Whole(Msg::Pong(b)) => TMessage::Frame(TFrame::pong(b)),
            WireFrame::Whole(Msg::Close(c)) => {
                TMessage::Close(c.map(|(code, reason)| TCloseFrame {
                    code: code.into(),
                    reason: reason.into(),
                }))
            }
            WireFrame::Fragment {
                first,
                text,
                fin,
                payload,
            } => {
                let opcode = match (first, text) {
                    (false, _) => TData::Continue,
                    (true, true) => TData::Text,
                    (true, false) => TData::Binary,
                };
                TMessage::Frame(TFrame::message(payload, TOpCode::Data(opcode), fin))
            }
        };
        ws.send(message).expect("tungstenite write");
    }
    ws.flush().expect("tungstenite flush");
    ws.into_inner().output
}

/// Frame keys for the client role, cycled.
fn key_for(keys: &[[u8; 4]], i: usize) -> Option<[u8; 4]> {
    (!keys.is_empty()).then(|| keys[i % keys.len()])
}

/// Our encoder in `role` writes the script; the client role takes its keys from `keys`.
fn ours_write(role: Role, frames: &[WireFrame], keys: &[[u8; 4]]) -> Vec<u8> {
    let encoder = Encoder::new(role);
    let mut out = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        let key = match role {
            Role::Server => None,
            Role::Client => key_for(keys, i),
        };
        match frame {
            WireFrame::Whole(Msg::Text(s)) => encoder.encode_text(s, key, &mut out),
            WireFrame::Whole(Msg::Binary(b)) => encoder.encode_binary(b, key, &mut out),
            WireFrame::Whole(Msg::Ping(b)) => encoder.encode_ping(b, key, &mut out),
            WireFrame::Whole(Msg::Pong(b)) => encoder.encode_pong(b, key, &mut out),
            WireFrame::Whole(Msg::Close(c)) => encoder.encode_close(
                c.as_ref()
                    .map(|(code, reason)| (CloseCode::from(*code), reason.as_str())),
                key,
                &mut out,
            ),
            WireFrame::Fragment {
                first,
                text,
                fin,
                payload,
            } => {
                let opcode = match (first, text) {
                    (false, _) => Opcode::Continuation,
                    (true, true) => Opcode::Text,
                    (true, false) => Opcode::Binary,
                };
                let header = FrameHeader {
                    fin: *fin,
                    ..FrameHeader::new(opcode, 0)
                };
                encoder.encode_frame(header, payload, key, &mut out)
            }
        }
        .expect("our encoder");
    }
    out
}

fn pieces<'a>(bytes: &'a [u8], splits: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = bytes;
    let mut sizes = splits.iter().cycle();
    while !rest.is_empty() {
        let size = sizes.next().copied().unwrap_or(usize::MAX).max(1);
        let (piece, tail) = rest.split_at(size.min(rest.len()));
        out.push(piece);
        rest = tail;
    }
    out
}

/// Our decoder in `role` reads `bytes` in the given splits through `decode`.
fn ours_read(role: Role, bytes: &[u8], splits: &[usize]) -> Vec<Msg> {
    let mut decoder = Decoder::new(role, DecoderConfig::default());
    let mut messages = Vec::new();
    for piece in pieces(bytes, splits) {
        let mut pos = 0;
        loop {
            let decoded = decoder.decode(&piece[pos..]).expect("our decoder");
            pos += decoded.consumed;
            match decoded.message {
                Some(message) => messages.push(from_ours(message)),
                None => break,
            }
        }
        assert_eq!(pos, piece.len());
    }
    assert!(decoder.is_idle() || decoder.is_closed());
    assert_eq!(decoder.heap_bytes(), 0);
    messages
}

/// Our decoder in `role` reads `bytes` in the given splits through `decode_buf`, with one read
/// buffer as a server loop keeps it.
fn ours_read_buf(role: Role, bytes: &[u8], splits: &[usize]) -> Vec<Msg> {
    let mut decoder = Decoder::new(role, DecoderConfig::default());
    let mut messages = Vec::new();
    let mut buf = BytesMut::with_capacity(8192);
    for piece in pieces(bytes, splits) {
        buf.extend_from_slice(piece);
        while let Some(message) = decoder.decode_buf(&mut buf).expect("our decoder") {
            messages.push(from_ours(message));
        }
        assert!(buf.is_empty());
    }
    messages
}

/// tungstenite in `role` reads `count` messages from `bytes`, in reads of the given sizes.
fn tungstenite_read(role: Role, bytes: Vec<u8>, splits: &[usize], count: usize) -> Vec<Msg> {
    let stream = MemStream::new(bytes, splits);
    let mut ws = WebSocket::from_raw_socket(
        stream,
        tungstenite_role(role),
        Some(WebSocketConfig::default()),
    );
    (0..count)
        .map(|_| from_tungstenite(ws.read().expect("tungstenite read")))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The properties.

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// (a) tungstenite as a client writes, our server-role decoder reads.
    #[test]
    fn tungstenite_client_to_our_server(script in script(), splits in splits()) {
        let bytes = tungstenite_write(Role::Client, &script.frames);
        prop_assert_eq!(&ours_read(Role::Server, &bytes, &splits), &script.expected);
        prop_assert_eq!(&ours_read_buf(Role::Server, &bytes, &splits), &script.expected);
    }

    /// (b) our server-role encoder writes, tungstenite as a client reads; tungstenite as a server
    /// writes the same bytes.
    #[test]
    fn our_server_to_tungstenite_client(script in script(), splits in splits()) {
        let bytes = ours_write(Role::Server, &script.frames, &[]);
        prop_assert!(bytes == tungstenite_write(Role::Server, &script.frames),
                     "server-role encoders differ");
        let read = tungstenite_read(Role::Client, bytes, &splits, script.expected.len());
        prop_assert_eq!(&read, &script.expected);
    }

    /// (c) our client-role encoder (keys from proptest) writes, tungstenite as a server reads.
    #[test]
    fn our_client_to_tungstenite_server(script in script(), splits in splits(),
                                        keys in proptest::collection::vec(any::<[u8; 4]>(), 1..8)) {
        let bytes = ours_write(Role::Client, &script.frames, &keys);
        let read = tungstenite_read(Role::Server, bytes, &splits, script.expected.len());
        prop_assert_eq!(&read, &script.expected);
    }

    /// (c) tungstenite as a server writes, our client-role decoder reads.
    #[test]
    fn tungstenite_server_to_our_client(script in script(), splits in splits()) {
        let bytes = tungstenite_write(Role::Server, &script.frames);
        prop_assert_eq!(&ours_read(Role::Client, &bytes, &splits), &script.expected);
        prop_assert_eq!(&ours_read_buf(Role::Client, &bytes, &splits), &script.expected);
    }
}

/// Our client encoder with a fixed key gives the bytes the reference masking gives.
#[test]
fn client_masking_matches_rfc_example() {
    // RFC 6455 §5.7: a masked "Hello".
    let frames = [WireFrame::Whole(Msg::Text("Hello".into()))];
    let bytes = ours_write(Role::Client, &frames, &[[0x37, 0xfa, 0x21, 0x3d]]);
    assert_eq!(
        bytes,
        [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]
    );
    let read = tungstenite_read(Role::Server, bytes, &[3], 1);
    assert_eq!(read, [Msg::Text("Hello".into())]);
}
