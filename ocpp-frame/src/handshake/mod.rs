//! The HTTP/1.1 upgrade handshake that opens a WebSocket connection (RFC 6455 §4), both sides,
//! Sans-IO: bytes in, values and bytes out; no socket, no clock, no randomness.
//!
//! # Server side (a CSMS)
//! Feed the bytes read from a new connection to [`ServerHandshake::handle_data`] until it returns
//! [`Progress::Complete`] with an [`UpgradeRequest`]. Inspect it (path, query, subprotocols in the
//! client's order, Basic credentials, any header), then either write the `101 Switching Protocols`
//! response with [`UpgradeRequest::accept`] or refuse with a [`RejectionResponse`]. A request that
//! breaks a rule of RFC 6455 §4.2.1 / RFC 7230 is refused by the parser itself with a
//! [`HandshakeError`], which knows its status code ([`HandshakeError::status`]) and writes its own
//! response ([`HandshakeError::write_response`]).
//!
//! # Client side (a charge point, a load generator)
//! Build a [`ClientRequest`] (the caller supplies the 16-byte [`SecWebSocketKey`]), write it with
//! [`ClientRequest::write`], and feed the server's bytes to [`ClientHandshake::handle_data`] until
//! it returns an [`UpgradeResponse`] or a [`ClientHandshakeError`] (e.g. the server's 401 or 404,
//! with its status code, so the caller can back off).
//!
//! # Bytes after the handshake
//! Neither parser ever reads past the blank line that ends the HTTP head. When a head completes,
//! [`Progress::Complete::consumed`] says how many bytes *of the last input* belonged to it;
//! `input[consumed..]` are the first bytes of the WebSocket stream (frames the peer pipelined
//! right behind its handshake) and must go to the frame decoder. Nothing is lost and nothing is
//! kept: once complete, a handshake holds no buffer.
//!
//! # Limits
//! [`HandshakeConfig`] caps the bytes of the head (default 16 KiB, everything up to and
//! including the blank line) and the number of header fields (default 64); the parsers buffer at
//! most the unfinished head and never more than the byte cap.
//!
//! ```
//! use ocpp_frame::handshake::{Accept, Progress, ServerHandshake};
//!
//! let mut handshake = ServerHandshake::new();
//! let input = b"GET /ocpp/CP001 HTTP/1.1\r\nHost: csms.example\r\nUpgrade: websocket\r\n\
//!     Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
//!     Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ocpp2.0.1, ocpp1.6\r\n\r\n";
//! match handshake.handle_data(input) {
//!     Ok(Progress::Complete { value: request, consumed }) => {
//!         assert_eq!(request.path(), "/ocpp/CP001");
//!         let first_frames = &input[consumed..];
//!         assert!(first_frames.is_empty());
//!         let mut out = Vec::new();
//!         request.accept(&Accept::new().with_subprotocol("ocpp1.6"), &mut out).unwrap();
//!         assert!(out.starts_with(b"HTTP/1.1 101 Switching Protocols\r\n"));
//!     }
//!     Ok(Progress::NeedMore) => unreachable!("the request is complete"),
//!     Err(refusal) => {
//!         let mut out = Vec::new();
//!         refusal.write_response(&mut out); // send, then close
//!     }
//! }
//! ```

mod accept_key;
mod basic_auth;
mod client;
mod client_request;
mod config;
mod error;
mod head;
mod headers;
mod request;
mod response;
mod server;

pub use accept_key::{SecWebSocketAccept, SecWebSocketKey, WEBSOCKET_GUID};
pub use basic_auth::{BasicAuthError, BasicCredentials};
pub use client::{ClientHandshake, UpgradeResponse};
pub use client_request::ClientRequest;
pub use config::HandshakeConfig;
pub use error::{BuildError, ClientHandshakeError, HandshakeError};
pub use request::UpgradeRequest;
pub use response::{reason_phrase, Accept, RejectionResponse};
pub use server::ServerHandshake;

/// What feeding bytes to a handshake parser produced: not yet a whole HTTP head, or a complete,
/// validated one plus where it ended in the last input.
///
/// Like `httparse::Status`, but `Complete` also hands on the split point so that bytes the peer
/// sent after its handshake (RFC 6455 §4.1 lets a server send frames right after its 101, and
/// clients pipeline too) reach the frame decoder.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a complete handshake carries the peer's first frame bytes in `input[consumed..]`"]
pub enum Progress<T> {
    /// The head is not complete yet; every input byte was buffered. Feed more.
    NeedMore,
    /// The head is complete and valid.
    Complete {
        /// The parsed request or response.
        value: T,
        /// How many bytes of the *last* input belonged to the head. `input[consumed..]` are the
        /// first bytes of the WebSocket stream; they were not looked at and are not kept.
        consumed: usize,
    },
}

impl<T> Progress<T> {
    /// Whether the head is complete.
    pub fn is_complete(&self) -> bool {
        matches!(self, Progress::Complete { .. })
    }
}
