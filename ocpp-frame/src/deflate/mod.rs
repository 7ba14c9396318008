//! permessage-deflate (RFC 7692): negotiation, compression and decompression, Sans-IO.
//!
//! - [`DeflateConfig`] says what this endpoint wants; [`DeflateConfig::accept_offer`] (server)
//!   and [`DeflateConfig::offer`] + [`DeflateConfig::check_response`] (client) negotiate the
//!   [`DeflateParams`] both ends use.
//! - [`Decoder::set_deflate`](crate::Decoder::set_deflate) makes the decoder inflate messages
//!   with RSV1 set, as their payload arrives, checking the message size limit on the inflated
//!   bytes in bounded chunks (a decompression bomb is refused with 1009 without allocating past
//!   the limit) and UTF-8 on the inflated text (1007).
//! - [`Compressor`] with [`Encoder::encode_compressed`](crate::Encoder::encode_compressed)
//!   compresses outgoing data messages (RSV1 set); messages under
//!   [`DeflateConfig::min_compress_size`] go out uncompressed.
//!
//! Backend: `flate2` with the pure-Rust `zlib-rs`, raw DEFLATE. zlib cannot compress raw
//! DEFLATE with an 8-bit window: when 8 is agreed our compressor uses 9, and our decompressor
//! always inflates with at least 9 so that peers doing the same are understood.
//!
//! Memory per connection (measured, see `BENCHMARKS.md` at the repository root): with context takeover the compressor
//! (380,176 bytes at 15 bits) and decompressor (47,704 bytes) live as long as the connection;
//! with no context takeover (the default of [`DeflateConfig`]) they exist only while a message
//! is being compressed or inflated.
//!
//! # Both ends in memory
//! ```
//! use ocpp_frame::deflate::{Compressor, DeflateConfig};
//! use ocpp_frame::{Decoder, DecoderConfig, Encoder, Message, Opcode, Role};
//!
//! // The handshake: the client offers, the server answers, the client checks the answer.
//! let client_config = DeflateConfig::default();
//! let server_config = DeflateConfig::default().min_compress_size(0);
//! let offer = client_config.offer();
//! let accepted = server_config.accept_offer([offer.as_bytes()]).unwrap();
//! let params = client_config
//!     .check_response([accepted.response.as_bytes()])
//!     .unwrap()
//!     .unwrap();
//! assert_eq!(params, accepted.params);
//!
//! // The server compresses, the client inflates.
//! let mut compressor = Compressor::new(Role::Server, &accepted.params, &server_config);
//! let mut wire = Vec::new();
//! let json = r#"[2,"1","Heartbeat",{}]"#.repeat(10);
//! Encoder::new(Role::Server)
//!     .encode_compressed(&mut compressor, Opcode::Text, json.as_bytes(), None, &mut wire)
//!     .unwrap();
//! assert!(wire.len() < json.len());
//! assert_eq!(wire[0], 0xc1); // FIN, RSV1, text
//! let mut decoder = Decoder::new(Role::Client, DecoderConfig::default());
//! decoder.set_deflate(&params);
//! let decoded = decoder.decode(&wire).unwrap();
//! assert_eq!(decoded.message, Some(Message::Text(json.into())));
//! ```

mod compressor;
mod decompressor;
mod negotiation;
mod params;

pub use compressor::{Compressor, COMPRESSOR_HEAP_ESTIMATE};
pub(crate) use decompressor::Decompressor;
pub use decompressor::DECOMPRESSOR_HEAP_ESTIMATE;
pub use negotiation::{Accepted, NegotiationError, EXTENSION_NAME};
pub use params::{DeflateConfig, DeflateParams, MAX_WINDOW_BITS, MIN_WINDOW_BITS};
