//! The server's answers: `101 Switching Protocols` (RFC 6455 §4.2.2) and refusals.

use alloc::vec::Vec;

use crate::handshake::headers::{is_field_value, is_one_of, is_token, push_decimal, push_field};
use crate::handshake::{BuildError, SecWebSocketAccept};

/// Headers an application cannot add to a 101: the handshake writes them.
const RESERVED_IN_ACCEPT: &[&str] = &[
    "Upgrade",
    "Connection",
    "Sec-WebSocket-Accept",
    "Sec-WebSocket-Protocol",
    "Content-Length",
    "Transfer-Encoding",
];

/// Headers an application cannot add to a refusal: framing and connection management are ours.
const RESERVED_IN_REJECTION: &[&str] = &["Connection", "Content-Length", "Transfer-Encoding"];

/// The application's choices when accepting a handshake (RFC 6455 §4.2.2 step 5): the
/// subprotocol, if any, and extra headers such as a negotiated `Sec-WebSocket-Extensions` or
/// `Set-Cookie`. Borrowed, so accepting allocates nothing but the output.
///
/// Used with [`UpgradeRequest::accept`](crate::handshake::UpgradeRequest::accept).
///
/// ```
/// use ocpp_frame::handshake::Accept;
///
/// let extensions: &[(&str, &[u8])] = &[("Sec-WebSocket-Extensions", b"permessage-deflate")];
/// let accept = Accept::new().with_subprotocol("ocpp2.0.1").with_headers(extensions);
/// assert_eq!(accept.subprotocol(), Some("ocpp2.0.1"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Accept<'a> {
    subprotocol: Option<&'a str>,
    headers: &'a [(&'a str, &'a [u8])],
}

impl<'a> Accept<'a> {
    /// No subprotocol, no extra header.
    pub const fn new() -> Self {
        Accept {
            subprotocol: None,
            headers: &[],
        }
    }

    /// Selects a subprotocol; it must be one the client offered (RFC 6455 §4.2.2 step 5.4).
    pub const fn with_subprotocol(mut self, subprotocol: &'a str) -> Self {
        self.subprotocol = Some(subprotocol);
        self
    }

    /// Extra headers, written in order after the handshake's own.
    pub const fn with_headers(mut self, headers: &'a [(&'a str, &'a [u8])]) -> Self {
        self.headers = headers;
        self
    }

    /// The selected subprotocol.
    pub const fn subprotocol(&self) -> Option<&'a str> {
        self.subprotocol
    }

    /// The extra headers.
    pub const fn headers(&self) -> &'a [(&'a str, &'a [u8])] {
        self.headers
    }

    /// Checks the extra headers; the subprotocol is checked against the request by the caller.
    pub(crate) fn validate_headers(&self) -> Result<(), BuildError> {
        validate_headers(self.headers, RESERVED_IN_ACCEPT)
    }

    /// Appends the 101 response for a key whose accept value is `accept_value`.
    pub(crate) fn write(&self, accept_value: &SecWebSocketAccept, out: &mut Vec<u8>) {
        out.extend_from_slice(b"HTTP/1.1 101 Switching Protocols\r\n");
        push_field(out, "Upgrade", b"websocket");
        push_field(out, "Connection", b"Upgrade");
        push_field(out, "Sec-WebSocket-Accept", accept_value.as_bytes());
        if let Some(subprotocol) = self.subprotocol {
            push_field(out, "Sec-WebSocket-Protocol", subprotocol.as_bytes());
        }
        for (name, value) in self.headers {
            push_field(out, name, value);
        }
        out.extend_from_slice(b"\r\n");
    }
}

/// The HTTP response refusing the handshake: any 3xx, 4xx or 5xx, always with `Connection: close`
/// and a `Content-Length` (RFC 7230 §6.6, §3.3.2), so the client never waits for more.
///
/// Headers a status requires are added for it: `Allow: GET` for 405 (RFC 7231 §6.5.5),
/// `Upgrade: websocket` and `Sec-WebSocket-Version: 13` for 426 (RFC 7230 §6.7, RFC 6455 §4.4;
/// the connection option then reads `Connection: Upgrade, close` as RFC 7230 §6.7 asks), and
/// `WWW-Authenticate: Basic realm="..."` when a realm is given (RFC 7617 §2).
///
/// ```
/// use ocpp_frame::handshake::RejectionResponse;
///
/// let mut out = Vec::new();
/// RejectionResponse::unauthorized("CSMS").unwrap().write(&mut out);
/// assert_eq!(
///     out,
///     b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"CSMS\"\r\n\
///       Connection: close\r\nContent-Length: 0\r\n\r\n"
/// );
///
/// let mut out = Vec::new();
/// RejectionResponse::new(503).unwrap().with_body("try later\n").write(&mut out);
/// assert!(out.starts_with(b"HTTP/1.1 503 Service Unavailable\r\n"));
/// assert!(out.ends_with(b"Content-Length: 10\r\n\r\ntry later\n"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RejectionResponse<'a> {
    status: u16,
    realm: Option<&'a str>,
    headers: &'a [(&'a str, &'a [u8])],
    body: &'a str,
}

impl<'a> RejectionResponse<'a> {
    /// A refusal with `status`, which must be in 300..=599.
    pub fn new(status: u16) -> Result<Self, BuildError> {
        if (300..=599).contains(&status) {
            Ok(Self::for_status(status))
        } else {
            Err(BuildError::InvalidStatus(status))
        }
    }

    /// A refusal with a status known to be valid.
    pub(crate) const fn for_status(status: u16) -> Self {
        RejectionResponse {
            status,
            realm: None,
            headers: &[],
            body: "",
        }
    }

    /// `401 Unauthorized` with the challenge `WWW-Authenticate: Basic realm="<realm>"`
    /// (RFC 7235 §3.1 requires a challenge; RFC 7617 §2). The realm cannot contain `"`, `\` or
    /// control bytes.
    pub fn unauthorized(realm: &'a str) -> Result<Self, BuildError> {
        Self::for_status(401).with_realm(realm)
    }

    /// Adds a `WWW-Authenticate: Basic realm="<realm>"` challenge.
    pub fn with_realm(mut self, realm: &'a str) -> Result<Self, BuildError> {
        let quotable = |b: u8| b == b'\t' || (b >= 0x20 && b != 0x7f && b != b'"' && b != b'\\');
        if !realm.bytes().all(quotable) {
            return Err(BuildError::InvalidRealm);
        }
        self.realm = Some(realm);
        Ok(self)
    }

    /// Extra headers (e.g. `Retry-After` for 503, `Location` for a redirect), written in order.
    pub fn with_headers(mut self, headers: &'a [(&'a str, &'a [u8])]) -> Result<Self, BuildError> {
        validate_headers(headers, RESERVED_IN_REJECTION)?;
        self.headers = headers;
        Ok(self)
    }

    /// A plain-text body (`Content-Type: text/plain; charset=utf-8` unless a `Content-Type`
    /// header was given).
    pub const fn with_body(mut self, body: &'a str) -> Self {
        self.body = body;
        self
    }

    /// The status code.
    pub const fn status(&self) -> u16 {
        self.status
    }

    /// The body.
    pub const fn body(&self) -> &'a str {
        self.body
    }

    fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    /// Appends the response bytes; send them, then close the connection.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"HTTP/1.1 ");
        push_decimal(out, usize::from(self.status));
        out.push(b' ');
        out.extend_from_slice(reason_phrase(self.status).as_bytes());
        out.extend_from_slice(b"\r\n");
        let upgrade_required = self.status == 426;
        if self.status == 405 && !self.has_header("Allow") {
            push_field(out, "Allow", b"GET");
        }
        if upgrade_required {
            if !self.has_header("Upgrade") {
                push_field(out, "Upgrade", b"websocket");
            }
            if !self.has_header("Sec-WebSocket-Version") {
                push_field(out, "Sec-WebSocket-Version", b"13");
            }
        }
        if let Some(realm) = self.realm {
            out.extend_from_slice(b"WWW-Authenticate: Basic realm=\"");
            out.extend_from_slice(realm.as_bytes());
            out.extend_from_slice(b"\"\r\n");
        }
        for (name, value) in self.headers {
            push_field(out, name, value);
        }
        if upgrade_required {
            push_field(out, "Connection", b"Upgrade, close");
        } else {
            push_field(out, "Connection", b"close");
        }
        if !self.body.is_empty() && !self.has_header("Content-Type") {
            push_field(out, "Content-Type", b"text/plain; charset=utf-8");
        }
        out.extend_from_slice(b"Content-Length: ");
        push_decimal(out, self.body.len());
        out.extend_from_slice(b"\r\n\r\n");
        out.extend_from_slice(self.body.as_bytes());
    }
}

/// Checks names are tokens, values cannot break the line, and none is reserved.
pub(crate) fn validate_headers(
    headers: &[(&str, &[u8])],
    reserved: &[&str],
) -> Result<(), BuildError> {
    for (name, value) in headers {
        if !is_token(name.as_bytes()) {
            return Err(BuildError::InvalidHeaderName);
        }
        if is_one_of(name, reserved) {
            return Err(BuildError::ReservedHeader);
        }
        if !is_field_value(value) {
            return Err(BuildError::InvalidHeaderValue);
        }
    }
    Ok(())
}

/// The reason phrase registered for `status` (RFC 7231 §6.1, RFC 6585, RFC 7538), or `""` for an
/// unregistered code (an empty reason is valid, RFC 7230 §3.1.2).
pub const fn reason_phrase(status: u16) -> &'static str {
    match status {
        101 => "Switching Protocols",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Payload Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Entity",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}
