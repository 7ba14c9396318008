//! The client's opening handshake request (RFC 6455 §4.1).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use crate::handshake::headers::{is_token, push_decimal, push_field};
use crate::handshake::response::validate_headers;
use crate::handshake::{BasicCredentials, BuildError, SecWebSocketKey};

/// Headers the request writes itself.
const RESERVED_IN_REQUEST: &[&str] = &[
    "Host",
    "Upgrade",
    "Connection",
    "Sec-WebSocket-Key",
    "Sec-WebSocket-Version",
    "Sec-WebSocket-Protocol",
    "Content-Length",
    "Transfer-Encoding",
];

/// A client's opening handshake (RFC 6455 §4.1): `GET <target> HTTP/1.1` with `Host`,
/// `Upgrade: websocket`, `Connection: Upgrade`, `Sec-WebSocket-Key`, `Sec-WebSocket-Version: 13`,
/// the offered subprotocols and any extra headers.
///
/// The caller supplies the key's 16 bytes (RFC 6455 asks for a fresh random nonce per
/// connection; this crate has no randomness). Every part is checked when set, so writing cannot
/// fail and no value can inject a header line. `Debug` shows header names only.
///
/// ```
/// use ocpp_frame::handshake::{ClientRequest, SecWebSocketKey};
///
/// let key = SecWebSocketKey::from_bytes(*b"the sample nonce");
/// let request = ClientRequest::new("csms.example", "/ocpp/CP001", key)
///     .unwrap()
///     .with_port(8443)
///     .with_subprotocol("ocpp2.0.1")
///     .unwrap()
///     .with_subprotocol("ocpp1.6")
///     .unwrap()
///     .with_basic_auth(b"CP001", b"secret")
///     .unwrap();
/// let mut out = Vec::new();
/// request.write(&mut out);
/// assert_eq!(
///     out,
///     b"GET /ocpp/CP001 HTTP/1.1\r\nHost: csms.example:8443\r\nUpgrade: websocket\r\n\
///       Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
///       Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ocpp2.0.1, ocpp1.6\r\n\
///       Authorization: Basic Q1AwMDE6c2VjcmV0\r\n\r\n"
/// );
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ClientRequest {
    host: String,
    port: Option<u16>,
    target: String,
    key: SecWebSocketKey,
    subprotocols: Vec<String>,
    headers: Vec<(String, Vec<u8>)>,
}

impl ClientRequest {
    /// A request for `target` (the path and optional query, starting with `/`, already
    /// percent-encoded) on `host` (a name, an IPv4 address or an IPv6 literal, bracketed or
    /// not, without port).
    pub fn new(host: &str, target: &str, key: SecWebSocketKey) -> Result<Self, BuildError> {
        let host = normalize_host(host).ok_or(BuildError::InvalidHost)?;
        let target_ok = target.starts_with('/')
            && target
                .bytes()
                .all(|b| (0x21..=0x7e).contains(&b) && b != b'#');
        if !target_ok {
            return Err(BuildError::InvalidPath);
        }
        Ok(ClientRequest {
            host,
            port: None,
            target: String::from(target),
            key,
            subprotocols: Vec::new(),
            headers: Vec::new(),
        })
    }

    /// Adds `:port` to the `Host` header (RFC 7230 §5.4); omit it for the scheme's default port.
    pub fn with_port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    /// Offers a subprotocol, after those already offered (order is preference, RFC 6455 §4.1
    /// item 10). It must be a token.
    pub fn with_subprotocol(mut self, subprotocol: &str) -> Result<Self, BuildError> {
        if !is_token(subprotocol.as_bytes()) {
            return Err(BuildError::InvalidSubprotocol);
        }
        self.subprotocols.push(String::from(subprotocol));
        Ok(self)
    }

    /// Adds a header (e.g. `Origin`, `Sec-WebSocket-Extensions`, `User-Agent`). The handshake's
    /// own headers are refused with [`BuildError::ReservedHeader`].
    pub fn with_header(mut self, name: &str, value: &[u8]) -> Result<Self, BuildError> {
        validate_headers(&[(name, value)], RESERVED_IN_REQUEST)?;
        self.headers.push((String::from(name), Vec::from(value)));
        Ok(self)
    }

    /// Adds `Authorization: Basic base64(user ":" password)` (RFC 7617 §2), as OCPP security
    /// profiles 1 and 2 require; the password may be binary.
    pub fn with_basic_auth(self, user: &[u8], password: &[u8]) -> Result<Self, BuildError> {
        let credentials = BasicCredentials::new(user, password)?;
        self.with_header("Authorization", credentials.header_value().as_bytes())
    }

    /// The key sent in `Sec-WebSocket-Key`.
    pub fn key(&self) -> &SecWebSocketKey {
        &self.key
    }

    /// The offered subprotocols, in order.
    pub fn subprotocols(&self) -> impl Iterator<Item = &str> + '_ {
        self.subprotocols.iter().map(String::as_str)
    }

    /// Whether an extra `Sec-WebSocket-Extensions` header offers extensions.
    pub fn offers_extensions(&self) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("Sec-WebSocket-Extensions"))
    }

    /// Appends the request bytes to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"GET ");
        out.extend_from_slice(self.target.as_bytes());
        out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        out.extend_from_slice(self.host.as_bytes());
        if let Some(port) = self.port {
            out.push(b':');
            push_decimal(out, usize::from(port));
        }
        out.extend_from_slice(b"\r\n");
        push_field(out, "Upgrade", b"websocket");
        push_field(out, "Connection", b"Upgrade");
        push_field(out, "Sec-WebSocket-Key", &self.key.encode());
        push_field(out, "Sec-WebSocket-Version", b"13");
        if let Some((first, rest)) = self.subprotocols.split_first() {
            out.extend_from_slice(b"Sec-WebSocket-Protocol: ");
            out.extend_from_slice(first.as_bytes());
            for subprotocol in rest {
                out.extend_from_slice(b", ");
                out.extend_from_slice(subprotocol.as_bytes());
            }
            out.extend_from_slice(b"\r\n");
        }
        for (name, value) in &self.headers {
            push_field(out, name, value);
        }
        out.extend_from_slice(b"\r\n");
    }
}

impl fmt::Debug for ClientRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("ClientRequest")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("target", &self.target)
            .field("key", &self.key)
            .field("subprotocols", &self.subprotocols)
            .field("header_names", &names)
            .finish()
    }
}

/// The host as written in `Host`: a reg-name or IPv4 address (RFC 3986 §3.2.2 characters), or an
/// IPv6 literal, bracketed here if it was not.
fn normalize_host(host: &str) -> Option<String> {
    let reg_name_char = |b: u8| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=%".contains(&b);
    let ipv6_char = |b: u8| b.is_ascii_hexdigit() || b":.%".contains(&b);
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        let ok = inner.contains(':') && inner.bytes().all(ipv6_char);
        return ok.then(|| String::from(host));
    }
    // An IPv6 literal has at least two colons; one colon is a `name:port` or `ip:port`, which
    // belongs in `with_port`, not here (it was once bracketed as if it were IPv6).
    if host.contains(':') {
        let ok = host.bytes().filter(|&b| b == b':').count() >= 2 && host.bytes().all(ipv6_char);
        return ok.then(|| {
            let mut bracketed = String::with_capacity(host.len() + 2);
            bracketed.push('[');
            bracketed.push_str(host);
            bracketed.push(']');
            bracketed
        });
    }
    let ok = !host.is_empty() && host.bytes().all(reg_name_char);
    ok.then(|| String::from(host))
}
