//! Frame opcodes (RFC 6455 §5.2, §11.8).

/// The opcode of a WebSocket frame (RFC 6455 §5.2).
///
/// Reserved opcodes (`0x3`-`0x7`, `0xB`-`0xF`) have no variant: a frame that carries one is refused
/// with [`ProtocolError::ReservedOpcode`](crate::ProtocolError::ReservedOpcode) when its header is
/// parsed, since no extension we know of defines them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Opcode {
    /// `0x0`: a continuation of a fragmented data message.
    Continuation,
    /// `0x1`: the first frame of a text message (UTF-8).
    Text,
    /// `0x2`: the first frame of a binary message.
    Binary,
    /// `0x8`: a close frame (RFC 6455 §5.5.1).
    Close,
    /// `0x9`: a ping (RFC 6455 §5.5.2).
    Ping,
    /// `0xA`: a pong (RFC 6455 §5.5.3).
    Pong,
}

impl Opcode {
    /// The opcode for the 4-bit value `bits`, or `None` for a reserved value.
    ///
    /// ```
    /// use ocpp_frame::Opcode;
    /// assert_eq!(Opcode::from_bits(0x1), Some(Opcode::Text));
    /// assert_eq!(Opcode::from_bits(0x3), None);
    /// ```
    pub const fn from_bits(bits: u8) -> Option<Opcode> {
        match bits {
            0x0 => Some(Opcode::Continuation),
            0x1 => Some(Opcode::Text),
            0x2 => Some(Opcode::Binary),
            0x8 => Some(Opcode::Close),
            0x9 => Some(Opcode::Ping),
            0xA => Some(Opcode::Pong),
            _ => None,
        }
    }

    /// The 4-bit value of this opcode on the wire.
    pub const fn bits(self) -> u8 {
        match self {
            Opcode::Continuation => 0x0,
            Opcode::Text => 0x1,
            Opcode::Binary => 0x2,
            Opcode::Close => 0x8,
            Opcode::Ping => 0x9,
            Opcode::Pong => 0xA,
        }
    }

    /// Whether this is a control opcode (close, ping, pong: RFC 6455 §5.5).
    pub const fn is_control(self) -> bool {
        matches!(self, Opcode::Close | Opcode::Ping | Opcode::Pong)
    }
}
