//! Sans-IO RFC 6455 (placeholder docs; being written).
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

extern crate alloc;

mod close;
mod decoder;
mod encoder;
mod error;
pub mod frame;
pub mod handshake;
pub mod mask;
mod message;
mod opcode;
mod utf8;

pub use close::{CloseCode, CloseFrame};
pub use decoder::{Decoded, Decoder, DecoderConfig};
pub use encoder::Encoder;
pub use error::{EncodeError, ProtocolError};
pub use frame::{FrameHeader, Role};
pub use message::{Message, Utf8Bytes};
pub use opcode::Opcode;
pub use utf8::{InvalidUtf8, Utf8Validator};
