//! Protocol errors of the frame layer and the one place that maps each to its close code.

use crate::CloseCode;

/// A peer broke RFC 6455 or one of the configured limits; the connection must be closed.
///
/// [`ProtocolError::close_code`] gives the code to send in the close frame. Every refusal of the
/// decoder is one of these.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// An RSV bit is set that no negotiated extension defines (RFC 6455 §5.2).
    #[error("reserved bits {0:#05b} set without an extension that defines them")]
    ReservedBits(u8),
    /// A reserved opcode (`0x3`-`0x7`, `0xB`-`0xF`) (RFC 6455 §5.2).
    #[error("reserved opcode {0:#x}")]
    ReservedOpcode(u8),
    /// A client sent an unmasked frame to a server (RFC 6455 §5.1).
    #[error("unmasked frame from a client")]
    UnmaskedClientFrame,
    /// A server sent a masked frame to a client (RFC 6455 §5.1).
    #[error("masked frame from a server")]
    MaskedServerFrame,
    /// The most significant bit of a 64-bit payload length is set (RFC 6455 §5.2).
    #[error("64-bit payload length with the most significant bit set")]
    InvalidPayloadLength,
    /// A control frame with FIN clear (RFC 6455 §5.5).
    #[error("fragmented control frame")]
    FragmentedControlFrame,
    /// A control frame with a payload over 125 bytes (RFC 6455 §5.5).
    #[error("control frame payload of {0} bytes (at most 125)")]
    ControlFrameTooLong(u64),
    /// A continuation frame with no fragmented message in progress (RFC 6455 §5.4).
    #[error("continuation frame without a message to continue")]
    UnexpectedContinuation,
    /// A new text or binary frame while a fragmented message is unfinished (RFC 6455 §5.4).
    #[error("new data frame while a fragmented message is unfinished")]
    ExpectedContinuation,
    /// A text message (or part of one) is not valid UTF-8 (RFC 6455 §8.1).
    #[error("text message is not valid UTF-8")]
    InvalidUtf8,
    /// A close frame with a 1-byte payload (RFC 6455 §5.5.1).
    #[error("close frame with a 1-byte payload")]
    InvalidClosePayloadLength,
    /// A close code that may not be sent (RFC 6455 §7.4, IANA registry).
    #[error("close code {0} may not be sent")]
    InvalidCloseCode(u16),
    /// A close reason that is not valid UTF-8 (RFC 6455 §5.5.1).
    #[error("close reason is not valid UTF-8")]
    InvalidCloseReason,
    /// A frame declared a payload over the configured frame size limit.
    #[error("frame payload of {size} bytes exceeds the limit of {limit}")]
    FrameTooLarge {
        /// The declared payload length.
        size: u64,
        /// The configured limit.
        limit: u64,
    },
    /// A message (all its fragments so far) would exceed the configured message size limit.
    #[error("message of at least {size} bytes exceeds the limit of {limit}")]
    MessageTooLarge {
        /// The size the message would reach.
        size: u64,
        /// The configured limit.
        limit: u64,
    },
    /// A fragmented message has more frames than the configured limit.
    #[error("message has more than {limit} fragments")]
    TooManyFragments {
        /// The configured limit.
        limit: u32,
    },
    /// RSV1 (compressed) on a control frame (RFC 7692 §6.1: only data messages are compressed).
    #[error("compressed control frame")]
    CompressedControlFrame,
    /// RSV1 on a continuation frame (RFC 7692 §6.1: it marks the first frame of a message only).
    #[error("RSV1 set on a continuation frame")]
    CompressedContinuation,
    /// A compressed message whose DEFLATE data does not inflate (RFC 7692 §7.2.2).
    #[error("compressed data does not inflate")]
    InvalidCompressedData,
}

impl ProtocolError {
    /// The close code to send for this error: the single mapping of the crate.
    ///
    /// - 1007 (invalid payload data) for UTF-8 errors, in text and in close reasons (RFC 6455
    ///   §7.4.1, §8.1), and for compressed data that does not inflate: RFC 7692 names no code;
    ///   the payload is inconsistent with its message type, as Node `ws` answers it (Python
    ///   `websockets` answers 1002);
    /// - 1009 (message too big) when a frame or message exceeds a size limit, a compressed
    ///   message's inflated size included;
    /// - 1008 (policy violation) when a message has too many fragments: a limit of this
    ///   endpoint's, not of the protocol;
    /// - 1002 (protocol error) for everything else.
    ///
    /// ```
    /// use ocpp_frame::{CloseCode, ProtocolError};
    /// assert_eq!(ProtocolError::InvalidUtf8.close_code(), CloseCode::INVALID_PAYLOAD);
    /// assert_eq!(ProtocolError::ReservedOpcode(3).close_code(), CloseCode::PROTOCOL_ERROR);
    /// ```
    pub const fn close_code(&self) -> CloseCode {
        match self {
            ProtocolError::InvalidUtf8
            | ProtocolError::InvalidCloseReason
            | ProtocolError::InvalidCompressedData => CloseCode::INVALID_PAYLOAD,
            ProtocolError::FrameTooLarge { .. } | ProtocolError::MessageTooLarge { .. } => {
                CloseCode::MESSAGE_TOO_BIG
            }
            ProtocolError::TooManyFragments { .. } => CloseCode::POLICY_VIOLATION,
            ProtocolError::ReservedBits(_)
            | ProtocolError::ReservedOpcode(_)
            | ProtocolError::UnmaskedClientFrame
            | ProtocolError::MaskedServerFrame
            | ProtocolError::InvalidPayloadLength
            | ProtocolError::FragmentedControlFrame
            | ProtocolError::ControlFrameTooLong(_)
            | ProtocolError::UnexpectedContinuation
            | ProtocolError::ExpectedContinuation
            | ProtocolError::InvalidClosePayloadLength
            | ProtocolError::InvalidCloseCode(_)
            | ProtocolError::CompressedControlFrame
            | ProtocolError::CompressedContinuation => CloseCode::PROTOCOL_ERROR,
        }
    }
}

/// A frame the encoder refuses to write, because a peer would have to refuse it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// The client role masks every frame (RFC 6455 §5.3): a key is required.
    #[error("the client role needs a masking key for every frame")]
    MaskKeyRequired,
    /// The server role never masks (RFC 6455 §5.1).
    #[error("the server role must not mask frames")]
    UnexpectedMaskKey,
    /// A control frame payload over 125 bytes (RFC 6455 §5.5).
    #[error("control frame payload of {0} bytes (at most 125)")]
    ControlFrameTooLong(usize),
    /// A control frame with FIN clear (RFC 6455 §5.5).
    #[error("control frames cannot be fragmented")]
    FragmentedControlFrame,
    /// A close code that may not be sent (RFC 6455 §7.4).
    #[error("close code {0} may not be sent")]
    InvalidCloseCode(u16),
    /// The compressor failed (permessage-deflate); nothing was written.
    #[error("compression failed")]
    Compression,
    /// [`Encoder::finish_frame`](crate::Encoder::finish_frame) frames data messages only;
    /// control frames go through [`Encoder::encode_frame`](crate::Encoder::encode_frame).
    #[error("a control frame cannot be written in place")]
    ControlFrameInPlace,
}
