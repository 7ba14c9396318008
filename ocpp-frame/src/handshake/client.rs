//! The client's side of the opening handshake: a strict, incremental reader of the server's
//! response (RFC 6455 §4.1, the checks on the server's response).

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use crate::handshake::head::{HeadRead, HeadReadError, HeadReader};
use crate::handshake::headers::{is_token, list_elements, trim_ows, Field, Head, Span};
use crate::handshake::request::{header_slots, syntax_reason};
use crate::handshake::{
    ClientHandshakeError, ClientRequest, HandshakeConfig, Progress, SecWebSocketAccept,
};

/// Reads the server's answer to a [`ClientRequest`] from bytes as they arrive, in any split,
/// and checks it strictly (RFC 6455 §4.1): status 101, `Upgrade: websocket`,
/// `Connection: Upgrade`, the exact `Sec-WebSocket-Accept` for our key, a subprotocol we offered
/// (or none), no extension unless we offered some.
///
/// Same buffering rules as the server: only the unfinished head, at most the cap, nothing once
/// finished. After [`Progress::Complete`], `data[consumed..]` are the server's first frames.
///
/// ```
/// use ocpp_frame::handshake::{ClientHandshake, ClientRequest, Progress, SecWebSocketKey};
///
/// let key = SecWebSocketKey::from_bytes(*b"the sample nonce");
/// let request = ClientRequest::new("csms", "/ocpp/CP001", key)
///     .unwrap()
///     .with_subprotocol("ocpp1.6")
///     .unwrap();
/// let mut out = Vec::new();
/// request.write(&mut out); // send it
/// let mut handshake = ClientHandshake::new(&request);
/// let reply = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
///     Connection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\
///     Sec-WebSocket-Protocol: ocpp1.6\r\n\r\n\x81\x00";
/// match handshake.handle_data(reply).unwrap() {
///     Progress::Complete { value, consumed } => {
///         assert_eq!(value.subprotocol(), Some("ocpp1.6"));
///         assert_eq!(&reply[consumed..], b"\x81\x00"); // the server's first frame
///     }
///     Progress::NeedMore => unreachable!(),
/// }
/// ```
#[derive(Debug)]
pub struct ClientHandshake {
    config: HandshakeConfig,
    reader: HeadReader,
    expected_accept: SecWebSocketAccept,
    offered_subprotocols: Vec<String>,
    offered_extensions: bool,
}

impl ClientHandshake {
    /// Expects the answer to `request`, with the default limits.
    pub fn new(request: &ClientRequest) -> Self {
        Self::with_config(request, HandshakeConfig::new())
    }

    /// Expects the answer to `request`, with the given limits.
    pub fn with_config(request: &ClientRequest, config: HandshakeConfig) -> Self {
        ClientHandshake {
            config,
            reader: HeadReader::new(),
            expected_accept: request.key().accept(),
            offered_subprotocols: request.subprotocols().map(String::from).collect(),
            offered_extensions: request.offers_extensions(),
        }
    }

    /// The limits in force.
    pub const fn config(&self) -> &HandshakeConfig {
        &self.config
    }

    /// Feeds bytes received from the server.
    ///
    /// Returns [`Progress::NeedMore`] while the response head is incomplete (all of `data` was
    /// kept), [`Progress::Complete`] with the checked [`UpgradeResponse`] and the number of bytes
    /// of `data` it used, or the [`ClientHandshakeError`] to fail the connection with. Finished
    /// after `Complete` or an error; later calls return
    /// [`ClientHandshakeError::AlreadyFinished`].
    pub fn handle_data(
        &mut self,
        data: &[u8],
    ) -> Result<Progress<UpgradeResponse>, ClientHandshakeError> {
        let limit = self.config.max_header_bytes();
        match self.reader.push(data, limit) {
            Ok(HeadRead::NeedMore) => Ok(Progress::NeedMore),
            Ok(HeadRead::Complete { head, consumed }) => {
                let value = self.check(head)?;
                Ok(Progress::Complete { value, consumed })
            }
            Err(HeadReadError::TooLarge { .. }) => {
                Err(ClientHandshakeError::HeaderTooLarge { limit })
            }
            Err(HeadReadError::Finished) => Err(ClientHandshakeError::AlreadyFinished),
        }
    }

    /// Bytes of an unfinished response held between calls; at most the byte cap, zero once
    /// finished.
    pub fn buffered_len(&self) -> usize {
        self.reader.buffered_len()
    }

    /// Whether the response completed or was refused.
    pub fn is_finished(&self) -> bool {
        self.reader.is_finished()
    }

    fn check(&self, raw: Vec<u8>) -> Result<UpgradeResponse, ClientHandshakeError> {
        let (status, reason, version, fields) = {
            let mut slots = vec![httparse::EMPTY_HEADER; header_slots(&self.config, raw.len())];
            let mut parsed = httparse::Response::new(&mut slots);
            match parsed.parse(&raw) {
                Ok(httparse::Status::Complete(len)) if len == raw.len() => {}
                Ok(_) => {
                    return Err(ClientHandshakeError::MalformedResponse {
                        reason: "incomplete response head",
                    })
                }
                Err(httparse::Error::TooManyHeaders) => {
                    return Err(ClientHandshakeError::TooManyHeaders {
                        limit: self.config.max_headers(),
                    })
                }
                Err(e) => {
                    return Err(ClientHandshakeError::MalformedResponse {
                        reason: syntax_reason(e),
                    })
                }
            }
            let malformed = ClientHandshakeError::MalformedResponse {
                reason: "status line",
            };
            let span = |part: &[u8]| Span::within(&raw, part);
            let reason = span(parsed.reason.unwrap_or("").as_bytes());
            let (Some(status), Some(reason), Some(version)) = (parsed.code, reason, parsed.version)
            else {
                return Err(malformed);
            };
            let Some(fields) = Field::all_within(&raw, parsed.headers) else {
                return Err(malformed);
            };
            (status, reason, version, fields)
        };
        let head = Head { raw, fields };

        // RFC 6455 §4.1, checks on the server's response, in the RFC's order.
        if status != 101 {
            return Err(ClientHandshakeError::UnexpectedStatus {
                status,
                reason: String::from_utf8_lossy(reason.bytes(&head.raw)).into_owned(),
            });
        }
        if version < 1 {
            return Err(ClientHandshakeError::HttpVersionNotSupported);
        }
        let upgrade_ok = {
            let mut upgrades = head.values("Upgrade").flat_map(list_elements);
            match (upgrades.next(), upgrades.next()) {
                (Some(token), None) => token.eq_ignore_ascii_case(b"websocket"),
                _ => false,
            }
        };
        if !upgrade_ok {
            return Err(ClientHandshakeError::MissingUpgradeWebSocket);
        }
        if !head.has_token("Connection", "Upgrade") {
            return Err(ClientHandshakeError::MissingConnectionUpgrade);
        }
        let mut accepts = head.values("Sec-WebSocket-Accept");
        match (accepts.next(), accepts.next()) {
            (None, _) => return Err(ClientHandshakeError::MissingAccept),
            (Some(value), None) if trim_ows(value) == self.expected_accept.as_bytes() => {}
            _ => return Err(ClientHandshakeError::AcceptMismatch),
        }
        if !self.offered_extensions && head.values("Sec-WebSocket-Extensions").next().is_some() {
            return Err(ClientHandshakeError::ExtensionNotOffered);
        }
        let subprotocol = self.selected_subprotocol(&head)?;
        Ok(UpgradeResponse {
            head,
            status,
            reason,
            subprotocol,
        })
    }

    /// The subprotocol the server selected: at most one element, one we offered.
    fn selected_subprotocol(&self, head: &Head) -> Result<Option<Span>, ClientHandshakeError> {
        let mut selected = head
            .values("Sec-WebSocket-Protocol")
            .flat_map(list_elements);
        Ok(match (selected.next(), selected.next()) {
            (None, _) => None,
            (Some(chosen), None)
                if is_token(chosen)
                    && self
                        .offered_subprotocols
                        .iter()
                        .any(|offered| offered.as_bytes() == chosen) =>
            {
                Some(
                    head.span_of(chosen)
                        .ok_or(ClientHandshakeError::SubprotocolNotOffered)?,
                )
            }
            _ => return Err(ClientHandshakeError::SubprotocolNotOffered),
        })
    }
}

/// A server's valid `101 Switching Protocols` answer (RFC 6455 §4.2.2), owned: the selected
/// subprotocol, the raw extension values and every header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradeResponse {
    head: Head,
    status: u16,
    reason: Span,
    subprotocol: Option<Span>,
}

impl UpgradeResponse {
    /// The status code (101).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The reason phrase as sent.
    pub fn reason(&self) -> &str {
        self.reason.str(&self.head.raw)
    }

    /// The subprotocol the server selected, one of those offered; `None` when it selected none,
    /// even if some were offered: whether to go on without one is the caller's decision
    /// (RFC 6455 §4.2.2 step 5.4 lets a server select none).
    pub fn subprotocol(&self) -> Option<&str> {
        self.subprotocol.map(|s| s.str(&self.head.raw))
    }

    /// The raw values of every `Sec-WebSocket-Extensions` header in order (RFC 6455 §9.1), for
    /// the extension negotiation to check against what was offered.
    pub fn extensions(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.head.values("Sec-WebSocket-Extensions")
    }

    /// The first value of the header called `name` (ASCII case-insensitive).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.head.first(name)
    }

    /// The values of every header called `name`, in order.
    pub fn header_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.head.values(name)
    }

    /// Every header as (name, value), in the order received.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &[u8])> + '_ {
        self.head.iter()
    }

    /// The response head's raw bytes, up to and including the blank line.
    pub fn as_bytes(&self) -> &[u8] {
        &self.head.raw
    }
}
