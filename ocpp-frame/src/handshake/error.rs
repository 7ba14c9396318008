//! Typed refusals of a handshake: the server's (each with its HTTP status and response), the
//! client's, and mistakes in what an application asks us to write.

use alloc::string::String;
use alloc::vec::Vec;

use crate::handshake::RejectionResponse;

/// Why the server refuses a client's opening handshake (RFC 6455 §4.2.1, RFC 7230).
///
/// Each variant names the rule that broke. [`HandshakeError::status`] is the one place that maps
/// a refusal to its HTTP status, and [`HandshakeError::write_response`] writes the exact response
/// to send before closing the connection.
///
/// ```
/// use ocpp_frame::handshake::{HandshakeError, ServerHandshake};
///
/// let mut handshake = ServerHandshake::new();
/// let err = handshake.handle_data(b"POST / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap_err();
/// assert_eq!(err, HandshakeError::MethodNotAllowed);
/// assert_eq!(err.status(), 405);
/// let mut out = Vec::new();
/// err.write_response(&mut out);
/// assert!(out.starts_with(b"HTTP/1.1 405 Method Not Allowed\r\nAllow: GET\r\n"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HandshakeError {
    /// The head exceeded [`HandshakeConfig::max_header_bytes`](crate::handshake::HandshakeConfig)
    /// before its blank line (RFC 6585 §5: 431).
    #[error("request head exceeds {limit} bytes")]
    HeaderTooLarge {
        /// The cap in force.
        limit: usize,
    },
    /// The request line alone exceeded
    /// [`HandshakeConfig::max_header_bytes`](crate::handshake::HandshakeConfig): a request-target
    /// longer than the server will parse (RFC 9112 §3: 414 URI Too Long).
    #[error("request line exceeds {limit} bytes")]
    UriTooLong {
        /// The cap in force.
        limit: usize,
    },
    /// More header fields than [`HandshakeConfig::max_headers`](crate::handshake::HandshakeConfig)
    /// (RFC 6585 §5: 431).
    #[error("request has more than {limit} header fields")]
    TooManyHeaders {
        /// The cap in force.
        limit: usize,
    },
    /// Not an HTTP/1.x request head (RFC 7230 §3): bad request line, header syntax, line ends.
    #[error("malformed request: {reason}")]
    MalformedRequest {
        /// What was wrong, from the parser.
        reason: &'static str,
    },
    /// The method is not `GET` (RFC 6455 §4.1 item 2; methods are case-sensitive,
    /// RFC 7230 §3.1.1): 405 with `Allow: GET` (RFC 7231 §6.5.5).
    #[error("method not allowed, use GET")]
    MethodNotAllowed,
    /// The request is HTTP/1.0; RFC 6455 §4.1 item 2 requires HTTP/1.1 or higher. Answered with
    /// 505 HTTP Version Not Supported (RFC 7231 §6.6.6) so the client learns which rule broke.
    #[error("HTTP/1.1 is required")]
    HttpVersionNotSupported,
    /// The request-target is neither origin-form (`/path?query`) nor an absolute `ws`, `wss`,
    /// `http` or `https` URI (RFC 6455 §3, §4.1 item 3; RFC 7230 §5.3), or has a fragment.
    #[error("invalid request target")]
    InvalidRequestTarget,
    /// No `Host` header (RFC 6455 §4.1 item 4, RFC 7230 §5.4).
    #[error("missing Host header")]
    MissingHost,
    /// More than one `Host` header (RFC 7230 §5.4: 400).
    #[error("more than one Host header")]
    DuplicateHost,
    /// No `Upgrade` header carrying the token `websocket` (RFC 6455 §4.1 item 5, §4.2.1 item 3).
    #[error("missing Upgrade: websocket")]
    MissingUpgradeWebSocket,
    /// No `Connection` header carrying the token `Upgrade` (RFC 6455 §4.1 item 6, §4.2.1 item 4).
    #[error("missing Connection: Upgrade")]
    MissingConnectionUpgrade,
    /// No `Sec-WebSocket-Version` header (RFC 6455 §4.1 item 9): 426 with
    /// `Sec-WebSocket-Version: 13` (RFC 6455 §4.4).
    #[error("missing Sec-WebSocket-Version")]
    MissingWebSocketVersion,
    /// A `Sec-WebSocket-Version` other than a single `13` (RFC 6455 §4.2.1 item 6): 426 with
    /// `Sec-WebSocket-Version: 13` (RFC 6455 §4.4).
    #[error("unsupported Sec-WebSocket-Version, 13 is required")]
    UnsupportedWebSocketVersion,
    /// No `Sec-WebSocket-Key` header (RFC 6455 §4.1 item 7).
    #[error("missing Sec-WebSocket-Key")]
    MissingKey,
    /// More than one `Sec-WebSocket-Key` header (RFC 6455 §11.3.1: it must not appear more than
    /// once).
    #[error("more than one Sec-WebSocket-Key header")]
    DuplicateKey,
    /// A `Sec-WebSocket-Key` that is not the base64 of exactly 16 bytes (RFC 6455 §4.2.1 item 5).
    #[error("Sec-WebSocket-Key is not the base64 of 16 bytes")]
    InvalidKey,
    /// A `Sec-WebSocket-Protocol` element that is not a token (RFC 6455 §4.1 item 10).
    #[error("Sec-WebSocket-Protocol element is not a token")]
    InvalidSubprotocol,
    /// Bytes were fed after the handshake completed or failed: a caller bug. 500.
    #[error("handshake already finished")]
    AlreadyFinished,
}

impl HandshakeError {
    /// The HTTP status answering this refusal: the one place where that mapping lives.
    pub const fn status(&self) -> u16 {
        match self {
            HandshakeError::HeaderTooLarge { .. } | HandshakeError::TooManyHeaders { .. } => 431,
            HandshakeError::UriTooLong { .. } => 414,
            HandshakeError::MethodNotAllowed => 405,
            HandshakeError::HttpVersionNotSupported => 505,
            HandshakeError::MissingWebSocketVersion
            | HandshakeError::UnsupportedWebSocketVersion => 426,
            HandshakeError::AlreadyFinished => 500,
            HandshakeError::MalformedRequest { .. }
            | HandshakeError::InvalidRequestTarget
            | HandshakeError::MissingHost
            | HandshakeError::DuplicateHost
            | HandshakeError::MissingUpgradeWebSocket
            | HandshakeError::MissingConnectionUpgrade
            | HandshakeError::MissingKey
            | HandshakeError::DuplicateKey
            | HandshakeError::InvalidKey
            | HandshakeError::InvalidSubprotocol => 400,
        }
    }

    /// A short plain-text explanation sent as the response body.
    pub const fn detail(&self) -> &'static str {
        match self {
            HandshakeError::HeaderTooLarge { .. } => "request head too large\n",
            HandshakeError::UriTooLong { .. } => "request target too long\n",
            HandshakeError::TooManyHeaders { .. } => "too many header fields\n",
            HandshakeError::MalformedRequest { .. } => "malformed HTTP request\n",
            HandshakeError::MethodNotAllowed => "a WebSocket handshake uses GET\n",
            HandshakeError::HttpVersionNotSupported => "a WebSocket handshake needs HTTP/1.1\n",
            HandshakeError::InvalidRequestTarget => "invalid request target\n",
            HandshakeError::MissingHost => "missing Host header\n",
            HandshakeError::DuplicateHost => "more than one Host header\n",
            HandshakeError::MissingUpgradeWebSocket => "missing Upgrade: websocket\n",
            HandshakeError::MissingConnectionUpgrade => "missing Connection: Upgrade\n",
            HandshakeError::MissingWebSocketVersion => "missing Sec-WebSocket-Version\n",
            HandshakeError::UnsupportedWebSocketVersion => "Sec-WebSocket-Version 13 required\n",
            HandshakeError::MissingKey => "missing Sec-WebSocket-Key\n",
            HandshakeError::DuplicateKey => "more than one Sec-WebSocket-Key\n",
            HandshakeError::InvalidKey => "Sec-WebSocket-Key must be base64 of 16 bytes\n",
            HandshakeError::InvalidSubprotocol => "invalid Sec-WebSocket-Protocol\n",
            HandshakeError::AlreadyFinished => "handshake already finished\n",
        }
    }

    /// The response describing this refusal: its status, the headers that status requires
    /// (`Allow: GET` for 405, `Upgrade` and `Sec-WebSocket-Version: 13` for 426),
    /// `Connection: close`, and [`HandshakeError::detail`] as body.
    pub fn rejection(&self) -> RejectionResponse<'static> {
        RejectionResponse::for_status(self.status()).with_body(self.detail())
    }

    /// Appends the exact response bytes to `out`; send them, then close the connection.
    pub fn write_response(&self, out: &mut Vec<u8>) {
        self.rejection().write(out);
    }
}

/// Why the client fails the connection on the server's handshake response (RFC 6455 §4.1, the
/// checks on the server's response).
///
/// ```
/// use ocpp_frame::handshake::{ClientHandshake, ClientHandshakeError, ClientRequest, SecWebSocketKey};
///
/// let key = SecWebSocketKey::from_bytes(*b"the sample nonce");
/// let request = ClientRequest::new("csms.example", "/ocpp/CP001", key).unwrap();
/// let mut handshake = ClientHandshake::new(&request);
/// let err = handshake.handle_data(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n").unwrap_err();
/// assert_eq!(err.status(), Some(404));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientHandshakeError {
    /// The head exceeded the byte cap before its blank line.
    #[error("response head exceeds {limit} bytes")]
    HeaderTooLarge {
        /// The cap in force.
        limit: usize,
    },
    /// The request line alone exceeded
    /// [`HandshakeConfig::max_header_bytes`](crate::handshake::HandshakeConfig): a request-target
    /// longer than the server will parse (RFC 9112 §3: 414 URI Too Long).
    #[error("request line exceeds {limit} bytes")]
    UriTooLong {
        /// The cap in force.
        limit: usize,
    },
    /// More header fields than the cap.
    #[error("response has more than {limit} header fields")]
    TooManyHeaders {
        /// The cap in force.
        limit: usize,
    },
    /// Not an HTTP/1.x response head (RFC 7230 §3).
    #[error("malformed response: {reason}")]
    MalformedResponse {
        /// What was wrong, from the parser.
        reason: &'static str,
    },
    /// The status is not 101 (RFC 6455 §4.1: "handles the response per HTTP procedures"): the
    /// caller may back off on 503, re-authenticate on 401, give up on 404.
    #[error("server answered {status} {reason}")]
    UnexpectedStatus {
        /// The status code.
        status: u16,
        /// The reason phrase (lossily decoded).
        reason: String,
    },
    /// A 101 in an HTTP/1.0 response (RFC 7230 §6.7: upgrades are HTTP/1.1).
    #[error("101 response is not HTTP/1.1")]
    HttpVersionNotSupported,
    /// `Upgrade` is missing or is not exactly `websocket` (RFC 6455 §4.1, response check 2).
    #[error("response lacks Upgrade: websocket")]
    MissingUpgradeWebSocket,
    /// `Connection` lacks the token `Upgrade` (RFC 6455 §4.1, response check 3).
    #[error("response lacks Connection: Upgrade")]
    MissingConnectionUpgrade,
    /// No `Sec-WebSocket-Accept` (RFC 6455 §4.1, response check 4).
    #[error("response lacks Sec-WebSocket-Accept")]
    MissingAccept,
    /// `Sec-WebSocket-Accept` is repeated or does not match our key (RFC 6455 §4.1, check 4).
    #[error("Sec-WebSocket-Accept does not match the key")]
    AcceptMismatch,
    /// The server named extensions though we offered none (RFC 6455 §4.1, response check 5).
    #[error("server selected an extension that was not offered")]
    ExtensionNotOffered,
    /// The server selected a subprotocol we did not offer, or several (RFC 6455 §4.1, check 6).
    #[error("server selected a subprotocol that was not offered")]
    SubprotocolNotOffered,
    /// Bytes were fed after the handshake completed or failed: a caller bug.
    #[error("handshake already finished")]
    AlreadyFinished,
}

impl ClientHandshakeError {
    /// The server's status code when it refused with a non-101 response.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientHandshakeError::UnexpectedStatus { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// Something an application asked to write that would make an invalid or unsafe HTTP message:
/// a header that could inject lines, a header this crate owns, a subprotocol the client never
/// offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A header name that is not a token (RFC 7230 §3.2.6).
    #[error("header name is not a token")]
    InvalidHeaderName,
    /// A header value with a control byte (CR, LF, NUL...) or surrounding whitespace
    /// (RFC 7230 §3.2).
    #[error("header value contains a control byte or surrounding whitespace")]
    InvalidHeaderValue,
    /// A header the handshake writes itself (`Connection`, `Upgrade`, `Sec-WebSocket-*`,
    /// `Content-Length`...).
    #[error("header is written by the handshake itself")]
    ReservedHeader,
    /// A rejection status outside 300..=599.
    #[error("status {0} cannot reject a handshake")]
    InvalidStatus(u16),
    /// The server chose a subprotocol the client did not offer (RFC 6455 §4.2.2 step 5.4).
    #[error("subprotocol was not offered by the client")]
    SubprotocolNotOffered,
    /// A subprotocol that is not a token (RFC 6455 §4.1 item 10).
    #[error("subprotocol is not a token")]
    InvalidSubprotocol,
    /// A host that is not a registered name, IPv4 address or IPv6 literal (RFC 3986 §3.2.2).
    #[error("invalid host")]
    InvalidHost,
    /// A request target that is not `/` followed by visible ASCII without `#` (RFC 7230 §5.3.1).
    #[error("invalid request path")]
    InvalidPath,
    /// A Basic user-id containing a colon (RFC 7617 §2).
    #[error("Basic user-id contains ':'")]
    InvalidBasicUser,
    /// A WWW-Authenticate realm with a quote, backslash or control byte.
    #[error("invalid realm")]
    InvalidRealm,
}
