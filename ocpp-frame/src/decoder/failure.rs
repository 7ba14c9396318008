//! The error a failed [`Decoder`](super::Decoder) keeps, in 9 bytes instead of the 24 of a
//! [`ProtocolError`].
//!
//! A `ProtocolError` is 24 bytes because two of its variants carry two `u64`s. The second of
//! them is always a limit of the decoder's [`DecoderConfig`], which the decoder keeps anyway and
//! which never changes after [`Decoder::new`](super::Decoder::new) (only the RSV bits do), so a
//! kind and one `u64` are enough to give back exactly the error that was returned first. Boxing
//! the error instead would make a failed decoder hold heap, which it must not.

use super::DecoderConfig;
use crate::ProtocolError;

/// Which [`ProtocolError`] a decoder failed with; its one number is kept beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failure {
    ReservedBits,
    ReservedOpcode,
    UnmaskedClientFrame,
    MaskedServerFrame,
    InvalidPayloadLength,
    FragmentedControlFrame,
    ControlFrameTooLong,
    UnexpectedContinuation,
    ExpectedContinuation,
    InvalidUtf8,
    InvalidClosePayloadLength,
    InvalidCloseCode,
    InvalidCloseReason,
    FrameTooLarge,
    MessageTooLarge,
    TooManyFragments,
    CompressedControlFrame,
    CompressedContinuation,
    InvalidCompressedData,
}

impl Failure {
    /// The kind of `error` and the number it carries besides a limit of the configuration
    /// (0 where it carries none).
    pub(super) fn split(error: &ProtocolError) -> (Failure, u64) {
        match *error {
            ProtocolError::ReservedBits(bits) => (Failure::ReservedBits, u64::from(bits)),
            ProtocolError::ReservedOpcode(bits) => (Failure::ReservedOpcode, u64::from(bits)),
            ProtocolError::UnmaskedClientFrame => (Failure::UnmaskedClientFrame, 0),
            ProtocolError::MaskedServerFrame => (Failure::MaskedServerFrame, 0),
            ProtocolError::InvalidPayloadLength => (Failure::InvalidPayloadLength, 0),
            ProtocolError::FragmentedControlFrame => (Failure::FragmentedControlFrame, 0),
            ProtocolError::ControlFrameTooLong(len) => (Failure::ControlFrameTooLong, len),
            ProtocolError::UnexpectedContinuation => (Failure::UnexpectedContinuation, 0),
            ProtocolError::ExpectedContinuation => (Failure::ExpectedContinuation, 0),
            ProtocolError::InvalidUtf8 => (Failure::InvalidUtf8, 0),
            ProtocolError::InvalidClosePayloadLength => (Failure::InvalidClosePayloadLength, 0),
            ProtocolError::InvalidCloseCode(code) => (Failure::InvalidCloseCode, u64::from(code)),
            ProtocolError::InvalidCloseReason => (Failure::InvalidCloseReason, 0),
            ProtocolError::FrameTooLarge { size, .. } => (Failure::FrameTooLarge, size),
            ProtocolError::MessageTooLarge { size, .. } => (Failure::MessageTooLarge, size),
            ProtocolError::TooManyFragments { .. } => (Failure::TooManyFragments, 0),
            ProtocolError::CompressedControlFrame => (Failure::CompressedControlFrame, 0),
            ProtocolError::CompressedContinuation => (Failure::CompressedContinuation, 0),
            ProtocolError::InvalidCompressedData => (Failure::InvalidCompressedData, 0),
        }
    }

    /// The error [`Failure::split`] took apart, with the limit from `config` (the one the decoder
    /// checked against).
    pub(super) fn join(self, value: u64, config: &DecoderConfig) -> ProtocolError {
        // The numbers of the narrow variants were widened by `split`, so they fit back.
        match self {
            Failure::ReservedBits => {
                ProtocolError::ReservedBits(u8::try_from(value).unwrap_or(u8::MAX))
            }
            Failure::ReservedOpcode => {
                ProtocolError::ReservedOpcode(u8::try_from(value).unwrap_or(u8::MAX))
            }
            Failure::UnmaskedClientFrame => ProtocolError::UnmaskedClientFrame,
            Failure::MaskedServerFrame => ProtocolError::MaskedServerFrame,
            Failure::InvalidPayloadLength => ProtocolError::InvalidPayloadLength,
            Failure::FragmentedControlFrame => ProtocolError::FragmentedControlFrame,
            Failure::ControlFrameTooLong => ProtocolError::ControlFrameTooLong(value),
            Failure::UnexpectedContinuation => ProtocolError::UnexpectedContinuation,
            Failure::ExpectedContinuation => ProtocolError::ExpectedContinuation,
            Failure::InvalidUtf8 => ProtocolError::InvalidUtf8,
            Failure::InvalidClosePayloadLength => ProtocolError::InvalidClosePayloadLength,
            Failure::InvalidCloseCode => {
                ProtocolError::InvalidCloseCode(u16::try_from(value).unwrap_or(u16::MAX))
            }
            Failure::InvalidCloseReason => ProtocolError::InvalidCloseReason,
            Failure::FrameTooLarge => ProtocolError::FrameTooLarge {
                size: value,
                limit: config.max_frame_size,
            },
            Failure::MessageTooLarge => ProtocolError::MessageTooLarge {
                size: value,
                limit: config.max_message_size,
            },
            Failure::TooManyFragments => ProtocolError::TooManyFragments {
                limit: config.max_fragments,
            },
            Failure::CompressedControlFrame => ProtocolError::CompressedControlFrame,
            Failure::CompressedContinuation => ProtocolError::CompressedContinuation,
            Failure::InvalidCompressedData => ProtocolError::InvalidCompressedData,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Decoder, Role};

    /// Each limit error, then any later call: the same error, limit and size included.
    #[test]
    fn a_failed_decoder_repeats_its_error_exactly() {
        let config = DecoderConfig::default()
            .max_frame_size((1 << 40) + 1)
            .max_message_size(5)
            .max_fragments(2);
        let cases: [&[u8]; 4] = [
            // An unmasked text frame of 2^62 bytes (over the frame limit, above 4 GiB).
            &[0x81, 0x7f, 0x40, 0, 0, 0, 0, 0, 0, 0],
            // 6 bytes: over the message limit.
            &[0x82, 0x06],
            // Three fragments of an empty message: one too many.
            &[0x02, 0x00, 0x00, 0x00, 0x80, 0x00],
            // A close frame with a reserved close code.
            &[0x88, 0x02, 0x03, 0xec],
        ];
        for wire in cases {
            let mut decoder = Decoder::new(Role::Client, config.clone());
            let mut input = wire;
            let error = loop {
                match decoder.decode(input) {
                    Ok(decoded) if decoded.message.is_some() || decoded.consumed > 0 => {
                        input = &input[decoded.consumed..];
                    }
                    Ok(decoded) => panic!("{wire:?}: {decoded:?}"),
                    Err(error) => break error,
                }
            };
            assert_eq!(decoder.decode(b"\x81"), Err(error.clone()));
            let mut buf = bytes::BytesMut::from(&b"\x89\x00"[..]);
            assert_eq!(decoder.decode_buf(&mut buf), Err(error));
        }
    }

    #[test]
    fn every_error_the_decoder_makes_comes_back_whole() {
        let config = DecoderConfig::default()
            .max_frame_size(u64::MAX - 1)
            .max_message_size(u64::MAX)
            .max_fragments(u32::MAX);
        let errors = [
            ProtocolError::ReservedBits(0b111),
            ProtocolError::ReservedOpcode(0xf),
            ProtocolError::UnmaskedClientFrame,
            ProtocolError::MaskedServerFrame,
            ProtocolError::InvalidPayloadLength,
            ProtocolError::FragmentedControlFrame,
            ProtocolError::ControlFrameTooLong(u64::MAX >> 1),
            ProtocolError::UnexpectedContinuation,
            ProtocolError::ExpectedContinuation,
            ProtocolError::InvalidUtf8,
            ProtocolError::InvalidClosePayloadLength,
            ProtocolError::InvalidCloseCode(u16::MAX),
            ProtocolError::InvalidCloseReason,
            ProtocolError::FrameTooLarge {
                size: u64::MAX,
                limit: u64::MAX - 1,
            },
            ProtocolError::MessageTooLarge {
                size: u64::MAX,
                limit: u64::MAX,
            },
            ProtocolError::TooManyFragments { limit: u32::MAX },
            ProtocolError::CompressedControlFrame,
            ProtocolError::CompressedContinuation,
            ProtocolError::InvalidCompressedData,
        ];
        for error in errors {
            let (failure, value) = Failure::split(&error);
            assert_eq!(failure.join(value, &config), error);
        }
    }
}
