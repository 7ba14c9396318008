//! The client's opening handshake as the server sees it (RFC 6455 §4.1, §4.2.1).

use alloc::vec;
use alloc::vec::Vec;

use crate::handshake::basic_auth::{BasicAuthError, BasicCredentials};
use crate::handshake::headers::{is_token, list_elements, trim_ows, Field, Head, Span};
use crate::handshake::{Accept, BuildError, HandshakeConfig, HandshakeError, SecWebSocketKey};

/// What the `Authorization` header held.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Authorization {
    /// No header, or a scheme other than Basic.
    None,
    Basic(BasicCredentials),
    Malformed(BasicAuthError),
}

/// A valid WebSocket opening handshake (RFC 6455 §4.2.1), owned, with everything an application
/// needs to decide: the raw path and query, the offered subprotocols in the client's order,
/// Basic credentials, `Origin`, extension offers and every header.
///
/// It keeps the request's head bytes (at most the configured cap) and positions into them.
/// Answer it with [`UpgradeRequest::accept`] or a
/// [`RejectionResponse`](crate::handshake::RejectionResponse).
///
/// ```
/// use ocpp_frame::handshake::{Progress, ServerHandshake};
///
/// let mut handshake = ServerHandshake::new();
/// let Ok(Progress::Complete { value: request, .. }) = handshake.handle_data(
///     b"GET /ocpp/CP%20001?v=2 HTTP/1.1\r\nHost: csms\r\nUpgrade: websocket\r\n\
///       Connection: keep-alive, Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
///       Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ocpp2.0.1\r\n\
///       Sec-WebSocket-Protocol: ocpp1.6\r\nAuthorization: Basic Q1AwMDE6c2VjcmV0\r\n\r\n",
/// ) else { panic!() };
/// assert_eq!(request.path(), "/ocpp/CP%20001");
/// assert_eq!(request.query(), Some("v=2"));
/// assert_eq!(request.subprotocols().collect::<Vec<_>>(), ["ocpp2.0.1", "ocpp1.6"]);
/// let credentials = request.basic_credentials().unwrap().unwrap();
/// assert_eq!((credentials.user(), credentials.password()), (Some("CP001"), &b"secret"[..]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradeRequest {
    head: Head,
    method: Span,
    target: Span,
    path: Span,
    query: Option<Span>,
    key: SecWebSocketKey,
    subprotocols: Vec<Span>,
    authorization: Authorization,
}

impl UpgradeRequest {
    /// Parses and checks a complete request head (the bytes up to and including its blank line).
    pub(crate) fn parse(raw: Vec<u8>, config: &HandshakeConfig) -> Result<Self, HandshakeError> {
        let (method, target, version, fields) = {
            let mut slots = vec![httparse::EMPTY_HEADER; header_slots(config, raw.len())];
            let mut parsed = httparse::Request::new(&mut slots);
            match parsed.parse(&raw) {
                Ok(httparse::Status::Complete(len)) if len == raw.len() => {}
                Ok(_) => {
                    return Err(HandshakeError::MalformedRequest {
                        reason: "incomplete request head",
                    })
                }
                Err(httparse::Error::TooManyHeaders) => {
                    return Err(HandshakeError::TooManyHeaders {
                        limit: config.max_headers(),
                    })
                }
                Err(e) => {
                    return Err(HandshakeError::MalformedRequest {
                        reason: syntax_reason(e),
                    })
                }
            }
            let malformed = HandshakeError::MalformedRequest {
                reason: "request line",
            };
            let span = |part: &[u8]| Span::within(&raw, part);
            let method = parsed.method.and_then(|m| span(m.as_bytes()));
            let target = parsed.path.and_then(|p| span(p.as_bytes()));
            let (Some(method), Some(target), Some(version)) = (method, target, parsed.version)
            else {
                return Err(malformed);
            };
            let Some(fields) = Field::all_within(&raw, parsed.headers) else {
                return Err(malformed);
            };
            (method, target, version, fields)
        };
        let head = Head { raw, fields };

        // RFC 6455 §4.2.1, in order: method, version, target, Host, Upgrade, Connection,
        // Sec-WebSocket-Version, Sec-WebSocket-Key, then what the application reads.
        if method.bytes(&head.raw) != b"GET" {
            return Err(HandshakeError::MethodNotAllowed);
        }
        if version < 1 {
            return Err(HandshakeError::HttpVersionNotSupported);
        }
        let (path, query) =
            split_target(&head, target).ok_or(HandshakeError::InvalidRequestTarget)?;
        match head.count("Host") {
            0 => return Err(HandshakeError::MissingHost),
            1 => {}
            _ => return Err(HandshakeError::DuplicateHost),
        }
        if !head.has_token("Upgrade", "websocket") {
            return Err(HandshakeError::MissingUpgradeWebSocket);
        }
        if !head.has_token("Connection", "Upgrade") {
            return Err(HandshakeError::MissingConnectionUpgrade);
        }
        let mut versions = head.values("Sec-WebSocket-Version");
        match (versions.next(), versions.next()) {
            (None, _) => return Err(HandshakeError::MissingWebSocketVersion),
            (Some(v), None) if trim_ows(v) == b"13" => {}
            _ => return Err(HandshakeError::UnsupportedWebSocketVersion),
        }
        let mut keys = head.values("Sec-WebSocket-Key");
        let key = match (keys.next(), keys.next()) {
            (None, _) => return Err(HandshakeError::MissingKey),
            (Some(k), None) => SecWebSocketKey::parse(k).ok_or(HandshakeError::InvalidKey)?,
            _ => return Err(HandshakeError::DuplicateKey),
        };
        let mut subprotocols = Vec::new();
        for element in head
            .values("Sec-WebSocket-Protocol")
            .flat_map(list_elements)
        {
            match head.span_of(element) {
                Some(span) if is_token(element) => subprotocols.push(span),
                _ => return Err(HandshakeError::InvalidSubprotocol),
            }
        }
        let mut authorizations = head.values("Authorization");
        let authorization = match (authorizations.next(), authorizations.next()) {
            (None, _) => Authorization::None,
            (Some(value), None) => match BasicCredentials::parse_authorization(value) {
                Ok(Some(credentials)) => Authorization::Basic(credentials),
                Ok(None) => Authorization::None,
                Err(e) => Authorization::Malformed(e),
            },
            _ => Authorization::Malformed(BasicAuthError::Repeated),
        };
        Ok(UpgradeRequest {
            head,
            method,
            target,
            path,
            query,
            key,
            subprotocols,
            authorization,
        })
    }

    /// The method (always `GET` once parsed).
    pub fn method(&self) -> &str {
        self.method.str(&self.head.raw)
    }

    /// The request-target exactly as sent (RFC 7230 §5.3).
    pub fn target(&self) -> &str {
        self.target.str(&self.head.raw)
    }

    /// The path of the target, still percent-encoded (decoding is the application's call: an
    /// OCPP charge point identity may contain encoded bytes). For an absolute-form target
    /// (`ws://host/path`) the path after the authority; `/` when that is empty (RFC 6455 §3).
    pub fn path(&self) -> &str {
        if self.path.is_empty() {
            "/"
        } else {
            self.path.str(&self.head.raw)
        }
    }

    /// The query without its `?`, still percent-encoded; `None` when the target has no `?`.
    pub fn query(&self) -> Option<&str> {
        self.query.map(|q| q.str(&self.head.raw))
    }

    /// The `Host` header's value (RFC 7230 §5.4).
    pub fn host(&self) -> &[u8] {
        self.head.first("Host").unwrap_or(&[])
    }

    /// The client's `Sec-WebSocket-Key` (RFC 6455 §4.1 item 7).
    pub fn key(&self) -> &SecWebSocketKey {
        &self.key
    }

    /// The offered subprotocols in the client's order of preference, across repeated
    /// `Sec-WebSocket-Protocol` headers and comma lists, trimmed (RFC 6455 §4.1 item 10,
    /// §11.3.4). Each is a token.
    pub fn subprotocols(&self) -> impl Iterator<Item = &str> + '_ {
        self.subprotocols.iter().map(|s| s.str(&self.head.raw))
    }

    /// Whether the client offered `subprotocol` (exact, case-sensitive match).
    pub fn offers_subprotocol(&self, subprotocol: &str) -> bool {
        self.subprotocols().any(|offered| offered == subprotocol)
    }

    /// The raw values of every `Sec-WebSocket-Extensions` header in order (RFC 6455 §9.1), for an
    /// extension negotiation such as permessage-deflate (RFC 7692) to parse.
    pub fn extensions(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.head.values("Sec-WebSocket-Extensions")
    }

    /// The `Origin` header (RFC 6455 §4.1 item 8, §10.2), sent by browsers; charge points
    /// usually omit it.
    pub fn origin(&self) -> Option<&[u8]> {
        self.head.first("Origin")
    }

    /// The `Authorization: Basic` credentials (RFC 7617). `Ok(None)` when there is no
    /// `Authorization` header or its scheme is not Basic (read it with
    /// [`UpgradeRequest::header`]); an error when a Basic header is malformed or there are
    /// several `Authorization` headers, so the application can answer 400 or 401.
    pub fn basic_credentials(&self) -> Result<Option<&BasicCredentials>, BasicAuthError> {
        match &self.authorization {
            Authorization::None => Ok(None),
            Authorization::Basic(credentials) => Ok(Some(credentials)),
            Authorization::Malformed(e) => Err(*e),
        }
    }

    /// The first value of the header called `name` (ASCII case-insensitive, RFC 7230 §3.2).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.head.first(name)
    }

    /// The values of every header called `name`, in order.
    pub fn header_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.head.values(name)
    }

    /// Every header as (name, value), in the order received, names as sent.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &[u8])> + '_ {
        self.head.iter()
    }

    /// The request head's raw bytes, up to and including the blank line.
    pub fn as_bytes(&self) -> &[u8] {
        &self.head.raw
    }

    /// Accepts the handshake: appends the `101 Switching Protocols` response (RFC 6455 §4.2.2
    /// step 5) with `Upgrade: websocket`, `Connection: Upgrade`, the `Sec-WebSocket-Accept`
    /// for this key, the chosen subprotocol and the extra headers, in that order.
    ///
    /// Nothing is written on error: a subprotocol the client did not offer, or an extra header
    /// that is invalid or reserved.
    ///
    /// ```
    /// # use ocpp_frame::handshake::{Accept, BuildError, Progress, ServerHandshake};
    /// # let mut handshake = ServerHandshake::new();
    /// # let Ok(Progress::Complete { value: request, .. }) = handshake.handle_data(
    /// #     b"GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
    /// #       Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
    /// #       Sec-WebSocket-Protocol: ocpp1.6\r\n\r\n") else { panic!() };
    /// let mut out = Vec::new();
    /// assert_eq!(
    ///     request.accept(&Accept::new().with_subprotocol("ocpp2.0.1"), &mut out),
    ///     Err(BuildError::SubprotocolNotOffered)
    /// );
    /// request.accept(&Accept::new().with_subprotocol("ocpp1.6"), &mut out).unwrap();
    /// assert_eq!(
    ///     out,
    ///     b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
    ///       Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\
    ///       Sec-WebSocket-Protocol: ocpp1.6\r\n\r\n"
    /// );
    /// ```
    pub fn accept(&self, accept: &Accept<'_>, out: &mut Vec<u8>) -> Result<(), BuildError> {
        if let Some(chosen) = accept.subprotocol() {
            if !self.offers_subprotocol(chosen) {
                return Err(BuildError::SubprotocolNotOffered);
            }
        }
        accept.validate_headers()?;
        accept.write(&self.key.accept(), out);
        Ok(())
    }
}

/// Splits a request-target into path and query spans (RFC 7230 §5.3.1 origin-form,
/// §5.3.2 absolute-form with a ws/wss/http/https scheme, RFC 6455 §3).
fn split_target(head: &Head, target: Span) -> Option<(Span, Option<Span>)> {
    let text = target.bytes(&head.raw);
    if text.contains(&b'#') {
        return None;
    }
    let path_and_query = if text.first() == Some(&b'/') {
        text
    } else {
        let colon = text.iter().position(|&b| b == b':')?;
        let scheme = text.get(..colon)?;
        let known = [&b"ws"[..], b"wss", b"http", b"https"];
        if !known.iter().any(|k| scheme.eq_ignore_ascii_case(k)) {
            return None;
        }
        let rest = text.get(colon..)?.strip_prefix(b"://")?;
        let authority_end = rest
            .iter()
            .position(|&b| b == b'/' || b == b'?')
            .unwrap_or(rest.len());
        if authority_end == 0 {
            return None;
        }
        rest.get(authority_end..)?
    };
    let (path, query) = match path_and_query.iter().position(|&b| b == b'?') {
        Some(at) => (
            path_and_query.get(..at)?,
            Some(path_and_query.get(at + 1..)?),
        ),
        None => (path_and_query, None),
    };
    let query = match query {
        Some([]) => Some(Span::default()),
        Some(q) => Some(head.span_of(q)?),
        None => None,
    };
    Some((head.span_of(path)?, query))
}

/// How many header slots to give `httparse`: the cap, but never more than a head of `len` bytes
/// can hold (a field line takes at least 3 bytes, `a:\n`), so a huge configured cap cannot make
/// us allocate more than the head's size.
pub(crate) fn header_slots(config: &HandshakeConfig, len: usize) -> usize {
    config.max_headers().min(len / 3 + 1)
}

/// A static description of an `httparse` syntax error.
pub(crate) fn syntax_reason(e: httparse::Error) -> &'static str {
    match e {
        httparse::Error::HeaderName => "invalid header name",
        httparse::Error::HeaderValue => "invalid header value",
        httparse::Error::NewLine => "invalid line ending",
        httparse::Error::Status => "invalid status",
        httparse::Error::Token => "invalid token in start line",
        httparse::Error::TooManyHeaders => "too many headers",
        httparse::Error::Version => "invalid HTTP version",
    }
}
