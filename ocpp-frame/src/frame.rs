//! The frame header (RFC 6455 §5.2): parse and encode, all three payload-length forms.

use alloc::vec::Vec;

use crate::{Opcode, ProtocolError};

/// The longest header: 2 bytes, an 8-byte extended length and a 4-byte masking key.
pub const MAX_HEADER_LEN: usize = 14;

/// The RSV1 bit (used by permessage-deflate, RFC 7692), as it appears in [`FrameHeader::rsv`].
pub const RSV1: u8 = 0b100;
/// The RSV2 bit, as it appears in [`FrameHeader::rsv`].
pub const RSV2: u8 = 0b010;
/// The RSV3 bit, as it appears in [`FrameHeader::rsv`].
pub const RSV3: u8 = 0b001;

/// Which end of the connection this is; it decides who masks (RFC 6455 §5.1, §5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Accepts connections; receives masked frames and sends unmasked ones.
    Server,
    /// Opens connections; sends masked frames and receives unmasked ones.
    Client,
}

/// A frame header (RFC 6455 §5.2).
///
/// ```
/// use ocpp_frame::{FrameHeader, Opcode};
/// // RFC 6455 §5.7: a single-frame unmasked text message "Hello".
/// let wire = [0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f];
/// let (header, len) = FrameHeader::parse(&wire).unwrap().unwrap();
/// assert_eq!(len, 2);
/// assert!(header.fin);
/// assert_eq!(header.opcode, Opcode::Text);
/// assert_eq!(header.payload_len, 5);
/// let mut out = Vec::new();
/// header.write_to(&mut out);
/// assert_eq!(out, &wire[..2]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// FIN: this is the last frame of its message.
    pub fin: bool,
    /// The RSV1-3 bits in the low three bits (RSV1 = `0b100`).
    pub rsv: u8,
    /// The opcode.
    pub opcode: Opcode,
    /// The masking key, present if the MASK bit is set.
    pub mask: Option<[u8; 4]>,
    /// The payload length.
    pub payload_len: u64,
}

impl FrameHeader {
    /// A header with FIN set, no RSV bits and no mask.
    pub const fn new(opcode: Opcode, payload_len: u64) -> Self {
        FrameHeader {
            fin: true,
            rsv: 0,
            opcode,
            mask: None,
            payload_len,
        }
    }

    /// The header length that the first two bytes announce (2 to 14).
    pub const fn len_from_prefix(b0_b1: [u8; 2]) -> usize {
        let b1 = b0_b1[1];
        let mask = if b1 & 0x80 != 0 { 4 } else { 0 };
        let ext = match b1 & 0x7f {
            126 => 2,
            127 => 8,
            _ => 0,
        };
        2 + ext + mask
    }

    /// Parses a header from the start of `input`.
    ///
    /// Returns `Ok(None)` when `input` is too short to hold the whole header, and otherwise the
    /// header and its length in bytes. Refuses reserved opcodes and 64-bit lengths with the most
    /// significant bit set; everything that depends on the role or the negotiated extensions (RSV
    /// bits, masking) is the decoder's to check.
    pub fn parse(input: &[u8]) -> Result<Option<(FrameHeader, usize)>, ProtocolError> {
        let (b0, b1) = match input {
            [b0, b1, ..] => (*b0, *b1),
            _ => return Ok(None),
        };
        let len = Self::len_from_prefix([b0, b1]);
        if input.len() < len {
            return Ok(None);
        }
        let opcode =
            Opcode::from_bits(b0 & 0x0f).ok_or(ProtocolError::ReservedOpcode(b0 & 0x0f))?;
        let mut at = 2;
        let payload_len = match b1 & 0x7f {
            126 => {
                at += 2;
                u64::from(u16::from_be_bytes([input[2], input[3]]))
            }
            127 => {
                let mut be = [0u8; 8];
                be.copy_from_slice(&input[2..10]);
                at += 8;
                let n = u64::from_be_bytes(be);
                if n >> 63 != 0 {
                    return Err(ProtocolError::InvalidPayloadLength);
                }
                n
            }
            n => u64::from(n),
        };
        let mask = if b1 & 0x80 != 0 {
            let mut key = [0u8; 4];
            key.copy_from_slice(&input[at..at + 4]);
            Some(key)
        } else {
            None
        };
        let header = FrameHeader {
            fin: b0 & 0x80 != 0,
            rsv: (b0 >> 4) & 0b111,
            opcode,
            mask,
            payload_len,
        };
        Ok(Some((header, len)))
    }

    /// The length of this header on the wire, using the shortest length form (RFC 6455 §5.2: "the
    /// minimal number of bytes MUST be used").
    pub const fn encoded_len(&self) -> usize {
        let ext = if self.payload_len < 126 {
            0
        } else if self.payload_len <= 0xffff {
            2
        } else {
            8
        };
        2 + ext + if self.mask.is_some() { 4 } else { 0 }
    }

    /// Writes this header into `out` and returns its length.
    pub fn encode(&self, out: &mut [u8; MAX_HEADER_LEN]) -> usize {
        out[0] = (u8::from(self.fin) << 7) | ((self.rsv & 0b111) << 4) | self.opcode.bits();
        let mask_bit = if self.mask.is_some() { 0x80 } else { 0 };
        let mut at = 2;
        if self.payload_len < 126 {
            out[1] = mask_bit | self.payload_len as u8;
        } else if self.payload_len <= 0xffff {
            out[1] = mask_bit | 126;
            out[2..4].copy_from_slice(&(self.payload_len as u16).to_be_bytes());
            at = 4;
        } else {
            out[1] = mask_bit | 127;
            out[2..10].copy_from_slice(&self.payload_len.to_be_bytes());
            at = 10;
        }
        if let Some(key) = self.mask {
            out[at..at + 4].copy_from_slice(&key);
            at += 4;
        }
        at
    }

    /// Appends this header to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let mut buf = [0u8; MAX_HEADER_LEN];
        let len = self.encode(&mut buf);
        out.extend_from_slice(&buf[..len]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn opcode() -> impl Strategy<Value = Opcode> {
        prop_oneof![
            Just(Opcode::Continuation),
            Just(Opcode::Text),
            Just(Opcode::Binary),
            Just(Opcode::Close),
            Just(Opcode::Ping),
            Just(Opcode::Pong),
        ]
    }

    #[test]
    fn rfc6455_5_7_length_forms() {
        // 256 bytes binary in a single unmasked frame: 0x82 0x7E 0x0100.
        let (h, n) = FrameHeader::parse(&[0x82, 0x7e, 0x01, 0x00])
            .unwrap()
            .unwrap();
        assert_eq!((h.opcode, h.payload_len, n), (Opcode::Binary, 256, 4));
        // 64 KiB binary: 0x82 0x7F 0x0000000000010000.
        let (h, n) = FrameHeader::parse(&[0x82, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0])
            .unwrap()
            .unwrap();
        assert_eq!((h.payload_len, n), (65536, 10));
        // Masked "Hello": 0x81 0x85 0x37 0xfa 0x21 0x3d.
        let (h, n) = FrameHeader::parse(&[0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d])
            .unwrap()
            .unwrap();
        assert_eq!(
            (h.mask, h.payload_len, n),
            (Some([0x37, 0xfa, 0x21, 0x3d]), 5, 6)
        );
    }

    #[test]
    fn refusals() {
        assert_eq!(
            FrameHeader::parse(&[0x83, 0x00]),
            Err(ProtocolError::ReservedOpcode(3))
        );
        assert_eq!(
            FrameHeader::parse(&[0x82, 0x7f, 0x80, 0, 0, 0, 0, 0, 0, 0]),
            Err(ProtocolError::InvalidPayloadLength)
        );
        assert_eq!(FrameHeader::parse(&[0x82, 0x7f, 0, 0]), Ok(None));
        assert_eq!(FrameHeader::parse(&[0x82]), Ok(None));
    }

    proptest! {
        #[test]
        fn round_trip(fin in any::<bool>(), rsv in 0u8..8, opcode in opcode(),
                      mask in any::<Option<[u8; 4]>>(), len in prop_oneof![0u64..200, 0u64..70000, 0u64..(1 << 63)]) {
            let header = FrameHeader { fin, rsv, opcode, mask, payload_len: len };
            let mut buf = [0u8; MAX_HEADER_LEN];
            let n = header.encode(&mut buf);
            prop_assert_eq!(n, header.encoded_len());
            prop_assert_eq!(FrameHeader::len_from_prefix([buf[0], buf[1]]), n);
            prop_assert_eq!(FrameHeader::parse(&buf[..n]), Ok(Some((header, n))));
            for short in 0..n {
                prop_assert_eq!(FrameHeader::parse(&buf[..short]), Ok(None));
            }
        }
    }
}
