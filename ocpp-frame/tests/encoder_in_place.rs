//! `Encoder::start_frame` / `finish_frame` (a payload written straight into the output) give
//! byte for byte what `encode_frame` gives, for every header length and both roles, and the
//! decoder of the other role reads the message back.

use ocpp_frame::mask::MaskKeys;
use ocpp_frame::{
    Decoder, DecoderConfig, EncodeError, Encoder, FrameHeader, Message, Opcode, Role,
};
use proptest::prelude::*;

fn in_place(role: Role, prefix: &[u8], payload: &[u8], key: Option<[u8; 4]>) -> Vec<u8> {
    let encoder = Encoder::new(role);
    let mut out = prefix.to_vec();
    let frame = encoder.start_frame(&mut out);
    out.extend_from_slice(payload);
    encoder
        .finish_frame(frame, Opcode::Text, key, &mut out)
        .unwrap();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn same_bytes_as_encode_frame(
        // Lengths around the 7-bit, 16-bit and 64-bit header forms.
        len in prop_oneof![0usize..130, 65_530usize..65_545, 70_000usize..70_010],
        prefix in proptest::collection::vec(any::<u8>(), 0..20),
        client in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let payload: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
        let (role, key) = if client {
            (Role::Client, Some(MaskKeys::new(seed).next_key()))
        } else {
            (Role::Server, None)
        };
        let mut expected = prefix.clone();
        Encoder::new(role)
            .encode_frame(FrameHeader::new(Opcode::Text, 0), &payload, key, &mut expected)
            .unwrap();
        let got = in_place(role, &prefix, &payload, key);
        prop_assert_eq!(&got, &expected);

        let peer = if client { Role::Server } else { Role::Client };
        let config = DecoderConfig::default().max_frame_size(1 << 20).max_message_size(1 << 20);
        let mut decoder = Decoder::new(peer, config);
        let decoded = decoder.decode(&got[prefix.len()..]).unwrap();
        match decoded.message {
            Some(Message::Text(text)) => prop_assert_eq!(text.as_str().as_bytes(), &payload[..]),
            other => prop_assert!(false, "decoded {:?}", other.map(|_| ())),
        }
    }
}

#[test]
fn refusals_leave_the_buffer_as_it_was() {
    let mut out = b"before".to_vec();
    let server = Encoder::new(Role::Server);
    let frame = server.start_frame(&mut out);
    out.extend_from_slice(b"{}");
    assert_eq!(
        server.finish_frame(frame, Opcode::Ping, None, &mut out),
        Err(EncodeError::ControlFrameInPlace)
    );
    assert_eq!(out, b"before");
    let frame = server.start_frame(&mut out);
    assert_eq!(
        server.finish_frame(frame, Opcode::Text, Some([1, 2, 3, 4]), &mut out),
        Err(EncodeError::UnexpectedMaskKey)
    );
    let client = Encoder::new(Role::Client);
    let frame = client.start_frame(&mut out);
    assert_eq!(
        client.finish_frame(frame, Opcode::Text, None, &mut out),
        Err(EncodeError::MaskKeyRequired)
    );
    let frame = client.start_frame(&mut out);
    out.extend_from_slice(b"serialisation failed half way");
    frame.abandon(&mut out);
    assert_eq!(out, b"before");
}
