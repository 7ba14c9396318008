//! Sans-IO RFC 6455: the WebSocket frame codec and the HTTP/1.1 upgrade handshake.
//!
//! No sockets, no clocks, no threads: give it bytes, take messages and bytes back, from any I/O
//! loop (mio, tokio, io_uring, a microcontroller's). Strict by default, cheap per connection:
//!
//! - [`Decoder`] turns bytes into [`Message`]s for either [`Role`]: reassembly of fragments with
//!   control frames in between, fail-fast UTF-8 ([`Utf8Validator`]), close payload checks
//!   ([`CloseCode`]), masking rules, reserved bits and opcodes, and the limits of
//!   [`DecoderConfig`], checked from the header before anything is buffered. An idle decoder holds
//!   no heap buffer.
//! - [`Encoder`] writes frames into a `Vec<u8>` you own; the client role masks with keys you
//!   supply ([`mask`] does the XOR a word at a time).
//! - [`ProtocolError::close_code`] is the one place that maps each refusal to its close code.
//! - [`handshake`] parses and answers the HTTP/1.1 upgrade, server and client side.
//! - [`deflate`] (feature `deflate`) negotiates permessage-deflate (RFC 7692) and compresses
//!   and inflates messages; [`Decoder::set_deflate`] inflates as the payload arrives, with the
//!   message size limit applied to the inflated bytes (a decompression bomb is refused with
//!   1009 without allocating past the limit); without context takeover an idle connection holds
//!   no compression state.
//!
//! # A server's loop, in short
//!
//! ```
//! use ocpp_frame::{Decoder, DecoderConfig, Encoder, Message, Role};
//!
//! let mut decoder = Decoder::new(Role::Server, DecoderConfig::default());
//! let encoder = Encoder::new(Role::Server);
//! let mut out = Vec::new(); // what to write to the socket
//!
//! // Bytes read from a socket: a masked ping, then a masked text frame "Hello" (RFC 6455 §5.7).
//! let read: &[u8] = &[
//!     0x89, 0x80, 1, 2, 3, 4,
//!     0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58,
//! ];
//! let mut input = read;
//! loop {
//!     match decoder.decode(input) {
//!         Ok(decoded) => {
//!             input = &input[decoded.consumed..];
//!             match decoded.message {
//!                 Some(Message::Text(text)) => encoder.encode_text(&text, None, &mut out).unwrap(),
//!                 Some(Message::Ping(payload)) => {
//!                     encoder.encode_pong(&payload, None, &mut out).unwrap()
//!                 }
//!                 Some(Message::Close(_)) => {
//!                     encoder.encode_close(None, None, &mut out).unwrap();
//!                     break;
//!                 }
//!                 Some(_) => {}
//!                 None => break, // every byte consumed: wait for the socket
//!             }
//!         }
//!         Err(error) => {
//!             // Refused: close with the code RFC 6455 asks for, then drop the connection.
//!             let code = error.close_code();
//!             encoder.encode_close(Some((code, "")), None, &mut out).unwrap();
//!             break;
//!         }
//!     }
//! }
//! assert_eq!(out, [0x8a, 0x00, 0x81, 0x05, b'H', b'e', b'l', b'l', b'o']);
//! ```
//!
//! # permessage-deflate, in short
//!
//! ```
//! # #[cfg(feature = "deflate")] {
//! use ocpp_frame::deflate::{Compressor, DeflateConfig};
//! use ocpp_frame::handshake::{Accept, Progress, ServerHandshake};
//! use ocpp_frame::{Decoder, DecoderConfig, Encoder, Opcode, Role};
//!
//! let config = DeflateConfig::default(); // no context takeover: idle connections hold nothing
//! let mut handshake = ServerHandshake::new();
//! let Ok(Progress::Complete { value: request, .. }) = handshake.handle_data(
//!     b"GET /ocpp/CP001 HTTP/1.1\r\nHost: csms\r\nUpgrade: websocket\r\n\
//!       Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
//!       Sec-WebSocket-Version: 13\r\n\
//!       Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n",
//! ) else { panic!() };
//! let accepted = config.accept_offer(request.extensions()).unwrap();
//! let mut out = Vec::new();
//! let headers = [("Sec-WebSocket-Extensions", accepted.response.as_bytes())];
//! request.accept(&Accept::new().with_headers(&headers), &mut out).unwrap();
//!
//! // Inflate what the client sends, compress what we send.
//! let decoder = Decoder::new(Role::Server, DecoderConfig::default()).with_deflate(&accepted.params);
//! let mut compressor = Compressor::new(Role::Server, &accepted.params, &config);
//! let json = r#"[3,"1",{"status":"Accepted","currentTime":"2026-11-30T01:00:00Z","interval":300}]"#;
//! Encoder::new(Role::Server)
//!     .encode_compressed(&mut compressor, Opcode::Text, json.repeat(4).as_bytes(), None, &mut out)
//!     .unwrap();
//! assert!(!compressor.is_allocated()); // dropped after the message
//! # let _ = decoder;
//! # }
//! ```
//!
//! # Features
//!
//! - `std` (default): `std::error::Error` for the error types. Without it the crate is
//!   `#![no_std]` and needs only `alloc`.
//! - `deflate` (default, needs `std`): the [`deflate`] module, through `flate2` with the
//!   pure-Rust `zlib-rs` backend.
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

extern crate alloc;

mod close;
mod decoder;
#[cfg(feature = "deflate")]
pub mod deflate;
mod encoder;
mod error;
pub mod frame;
pub mod handshake;
pub mod mask;
mod message;
mod opcode;
mod utf8;

pub use close::{truncate_close_reason, CloseCode, CloseFrame, MAX_CLOSE_REASON_LEN};
pub use decoder::{Decoded, Decoder, DecoderConfig};
pub use encoder::{Encoder, FrameInProgress};
pub use error::{EncodeError, ProtocolError};
pub use frame::{FrameHeader, Role};
pub use message::{Message, Utf8Bytes};
pub use opcode::Opcode;
pub use utf8::{InvalidUtf8, Utf8Validator};

/// Frees the message buffers this thread keeps for the next message of its decoders.
///
/// A [`Decoder`] reading a whole message splits the message's bytes off a buffer and keeps the
/// buffer (at most 4 per thread, each of at most 8 KiB), so that the next message of any
/// decoder on the thread reuses it once the message is dropped instead of allocating. Idle
/// decoders hold none. Call this to give that memory back (e.g. before measuring a process's
/// memory, or after a burst); nothing else needs it. Without the `std` feature nothing is kept.
///
/// ```
/// use ocpp_frame::{Decoder, DecoderConfig, Encoder, FrameHeader, Opcode, Role};
///
/// let mut wire = Vec::new();
/// Encoder::new(Role::Client)
///     .encode_frame(FrameHeader::new(Opcode::Text, 0), b"[2,\"1\",\"Heartbeat\",{}]", Some([1, 2, 3, 4]), &mut wire)
///     .unwrap();
/// let mut decoder = Decoder::new(Role::Server, DecoderConfig::default());
/// let message = decoder.decode(&wire).unwrap().message;
/// drop(message); // its buffer waits for this thread's next message
/// ocpp_frame::free_spare_buffers(); // ... or is freed now
/// ```
pub fn free_spare_buffers() {
    decoder::free_spare_buffers();
}
