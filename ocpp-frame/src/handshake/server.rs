//! The server's side of the opening handshake: an incremental reader of the client's request
//! (RFC 6455 §4.2.1).

use crate::handshake::head::{HeadRead, HeadReadError, HeadReader};
use crate::handshake::{HandshakeConfig, HandshakeError, Progress, UpgradeRequest};

/// Reads a client's opening handshake from bytes as they arrive, in any split, and checks it
/// (RFC 6455 §4.2.1).
///
/// Each byte is scanned once and the request is parsed once, when its blank line arrives, so
/// the outcome does not depend on how the bytes were split. Until then it buffers the
/// unfinished head, never more than [`HandshakeConfig::max_header_bytes`]; once finished it
/// holds nothing.
///
/// After [`Progress::Complete`] the bytes `data[consumed..]` of that last input are the
/// client's first WebSocket frames: hand them to the frame decoder. After an error, send
/// [`HandshakeError::write_response`] and close.
///
/// ```
/// use ocpp_frame::handshake::{HandshakeError, Progress, ServerHandshake};
///
/// let request = b"GET /ocpp/CP001 HTTP/1.1\r\nHost: csms\r\nUpgrade: websocket\r\n\
///     Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
///     Sec-WebSocket-Version: 13\r\n\r\n\x81\x80";
/// let mut handshake = ServerHandshake::new();
/// let (head, rest) = request.split_at(30);
/// assert_eq!(handshake.handle_data(head), Ok(Progress::NeedMore));
/// match handshake.handle_data(rest).unwrap() {
///     Progress::Complete { value, consumed } => {
///         assert_eq!(value.path(), "/ocpp/CP001");
///         assert_eq!(&rest[consumed..], b"\x81\x80"); // the client's first frame
///     }
///     Progress::NeedMore => unreachable!(),
/// }
/// assert_eq!(handshake.buffered_len(), 0);
/// assert_eq!(handshake.handle_data(b"more"), Err(HandshakeError::AlreadyFinished));
/// ```
#[derive(Debug)]
pub struct ServerHandshake {
    config: HandshakeConfig,
    reader: HeadReader,
}

impl ServerHandshake {
    /// A handshake with the default limits.
    pub const fn new() -> Self {
        Self::with_config(HandshakeConfig::new())
    }

    /// A handshake with the given limits.
    pub const fn with_config(config: HandshakeConfig) -> Self {
        ServerHandshake {
            config,
            reader: HeadReader::new(),
        }
    }

    /// The limits in force.
    pub const fn config(&self) -> &HandshakeConfig {
        &self.config
    }

    /// Feeds bytes received from the client.
    ///
    /// Returns [`Progress::NeedMore`] while the request head is incomplete (all of `data` was
    /// kept), [`Progress::Complete`] with the checked [`UpgradeRequest`] and the number of bytes
    /// of `data` it used, or the [`HandshakeError`] refusing it. The handshake is finished after
    /// `Complete` or an error; later calls return [`HandshakeError::AlreadyFinished`].
    pub fn handle_data(&mut self, data: &[u8]) -> Result<Progress<UpgradeRequest>, HandshakeError> {
        let limit = self.config.max_header_bytes();
        match self.reader.push(data, limit) {
            Ok(HeadRead::NeedMore) => Ok(Progress::NeedMore),
            Ok(HeadRead::Complete { head, consumed }) => {
                let value = UpgradeRequest::parse(head, &self.config)?;
                Ok(Progress::Complete { value, consumed })
            }
            // RFC 9112 §3: a request line past the cap is a target too long to parse (414).
            Err(HeadReadError::TooLarge {
                in_first_line: true,
            }) => Err(HandshakeError::UriTooLong { limit }),
            Err(HeadReadError::TooLarge { .. }) => Err(HandshakeError::HeaderTooLarge { limit }),
            Err(HeadReadError::Finished) => Err(HandshakeError::AlreadyFinished),
        }
    }

    /// Bytes of an unfinished request held between calls; at most the byte cap, zero once the
    /// handshake is finished.
    pub fn buffered_len(&self) -> usize {
        self.reader.buffered_len()
    }

    /// Whether the request completed or was refused.
    pub fn is_finished(&self) -> bool {
        self.reader.is_finished()
    }
}

impl Default for ServerHandshake {
    fn default() -> Self {
        Self::new()
    }
}
