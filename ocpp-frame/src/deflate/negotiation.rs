//! The permessage-deflate negotiation (RFC 7692 §5, §7.1): parsing `Sec-WebSocket-Extensions`
//! (RFC 6455 §9.1), the server's choice among the client's offers, the client's offer and its
//! check of the server's answer.

use alloc::string::String;
use alloc::vec::Vec;

use super::params::{DeflateConfig, DeflateParams, MAX_WINDOW_BITS, MIN_WINDOW_BITS};

/// The extension's registered name (RFC 7692 §7).
pub const EXTENSION_NAME: &str = "permessage-deflate";

const SERVER_NO_CONTEXT_TAKEOVER: &str = "server_no_context_takeover";
const CLIENT_NO_CONTEXT_TAKEOVER: &str = "client_no_context_takeover";
const SERVER_MAX_WINDOW_BITS: &str = "server_max_window_bits";
const CLIENT_MAX_WINDOW_BITS: &str = "client_max_window_bits";

/// Why a client refuses the server's `Sec-WebSocket-Extensions` answer (RFC 7692 §5, §7.1: the
/// client must _Fail the WebSocket Connection_).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NegotiationError {
    /// The header does not follow the grammar of RFC 6455 §9.1.
    #[error("malformed Sec-WebSocket-Extensions header")]
    Malformed,
    /// The server accepted an extension we did not offer.
    #[error("the server accepted an extension that was not offered")]
    UnexpectedExtension,
    /// The server named permessage-deflate more than once.
    #[error("permessage-deflate accepted more than once")]
    Repeated,
    /// A parameter RFC 7692 does not define.
    #[error("unknown permessage-deflate parameter")]
    UnknownParameter,
    /// A parameter given twice (RFC 7692 §7.1).
    #[error("duplicate permessage-deflate parameter {0}")]
    DuplicateParameter(&'static str),
    /// A parameter with a value it may not have, or without one it needs.
    #[error("invalid value of permessage-deflate parameter {0}")]
    InvalidValue(&'static str),
    /// A parameter our offer did not allow the server to send (e.g. `client_max_window_bits`
    /// when we did not offer it, RFC 7692 §7.1.2.2).
    #[error("the server sent {0}, which was not offered")]
    NotOffered(&'static str),
    /// A window larger than the one we offered (RFC 7692 §7.1.2.1).
    #[error("{0} larger than offered")]
    AboveOffer(&'static str),
    /// A parameter we asked for is missing: the server did not accept our offer as made.
    #[error("the answer lacks {0}, which was asked for")]
    Missing(&'static str),
}

/// One element of an extension list: a name and its parameters, values unquoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Extension<'a> {
    pub(crate) name: &'a [u8],
    pub(crate) params: Vec<(&'a [u8], Option<Vec<u8>>)>,
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.at += 1;
        }
    }

    fn token(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        while self.peek().is_some_and(is_tchar) {
            self.at += 1;
        }
        let token = self.bytes.get(start..self.at)?;
        (!token.is_empty()).then_some(token)
    }

    /// A quoted-string (RFC 7230 §3.2.6), unescaped; the opening quote is next.
    fn quoted(&mut self) -> Option<Vec<u8>> {
        self.at += 1;
        let mut value = Vec::new();
        loop {
            let b = self.peek()?;
            self.at += 1;
            match b {
                b'"' => return Some(value),
                b'\\' => {
                    let escaped = self.peek()?;
                    self.at += 1;
                    value.push(escaped);
                }
                _ => value.push(b),
            }
        }
    }
}

/// Parses one `Sec-WebSocket-Extensions` value (RFC 6455 §9.1) into its elements, appended to
/// `out`. `Err` on a syntax error (then nothing of this value is appended).
pub(crate) fn parse_extensions<'a>(
    value: &'a [u8],
    out: &mut Vec<Extension<'a>>,
) -> Result<(), NegotiationError> {
    let mut cursor = Cursor {
        bytes: value,
        at: 0,
    };
    let mut parsed = Vec::new();
    loop {
        // Empty list elements (`a,,b`) are allowed (RFC 7230 §7).
        cursor.skip_ows();
        while cursor.peek() == Some(b',') {
            cursor.at += 1;
            cursor.skip_ows();
        }
        if cursor.peek().is_none() {
            break;
        }
        let name = cursor.token().ok_or(NegotiationError::Malformed)?;
        let mut params = Vec::new();
        loop {
            cursor.skip_ows();
            match cursor.peek() {
                None => break,
                Some(b',') => {
                    cursor.at += 1;
                    break;
                }
                Some(b';') => cursor.at += 1,
                Some(_) => return Err(NegotiationError::Malformed),
            }
            cursor.skip_ows();
            let param = cursor.token().ok_or(NegotiationError::Malformed)?;
            cursor.skip_ows();
            let value = if cursor.peek() == Some(b'=') {
                cursor.at += 1;
                cursor.skip_ows();
                let value = if cursor.peek() == Some(b'"') {
                    cursor.quoted().ok_or(NegotiationError::Malformed)?
                } else {
                    Vec::from(cursor.token().ok_or(NegotiationError::Malformed)?)
                };
                // RFC 6455 §9.1: a quoted value must be a token once unquoted.
                if value.is_empty() || !value.iter().all(|&b| is_tchar(b)) {
                    return Err(NegotiationError::Malformed);
                }
                Some(value)
            } else {
                None
            };
            params.push((param, value));
        }
        parsed.push(Extension { name, params });
    }
    out.append(&mut parsed);
    Ok(())
}

/// A window size value: a decimal integer 8 to 15 without leading zeros (RFC 7692 §7.1.2).
fn window_bits(value: &[u8]) -> Option<u8> {
    match value {
        [d] if (b'8'..=b'9').contains(d) => Some(d - b'0'),
        [b'1', d] if (b'0'..=b'5').contains(d) => Some(10 + d - b'0'),
        _ => None,
    }
}

/// A permessage-deflate element's parameters, checked (RFC 7692 §7.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Parameters {
    server_no_context_takeover: bool,
    client_no_context_takeover: bool,
    server_max_window_bits: Option<u8>,
    /// `Some(None)`: present without a value (allowed in an offer only).
    client_max_window_bits: Option<Option<u8>>,
}

impl Parameters {
    fn parse(params: &[(&[u8], Option<Vec<u8>>)]) -> Result<Self, NegotiationError> {
        let mut out = Parameters::default();
        let mut seen = [false; 4];
        for (name, value) in params {
            let (index, label) = if name.eq_ignore_ascii_case(SERVER_NO_CONTEXT_TAKEOVER.as_bytes())
            {
                (0, SERVER_NO_CONTEXT_TAKEOVER)
            } else if name.eq_ignore_ascii_case(CLIENT_NO_CONTEXT_TAKEOVER.as_bytes()) {
                (1, CLIENT_NO_CONTEXT_TAKEOVER)
            } else if name.eq_ignore_ascii_case(SERVER_MAX_WINDOW_BITS.as_bytes()) {
                (2, SERVER_MAX_WINDOW_BITS)
            } else if name.eq_ignore_ascii_case(CLIENT_MAX_WINDOW_BITS.as_bytes()) {
                (3, CLIENT_MAX_WINDOW_BITS)
            } else {
                return Err(NegotiationError::UnknownParameter);
            };
            if core::mem::replace(&mut seen[index], true) {
                return Err(NegotiationError::DuplicateParameter(label));
            }
            let bits = value.as_deref().map(window_bits);
            match (index, bits) {
                (0, None) => out.server_no_context_takeover = true,
                (1, None) => out.client_no_context_takeover = true,
                (2, Some(Some(bits))) => out.server_max_window_bits = Some(bits),
                (3, None) => out.client_max_window_bits = Some(None),
                (3, Some(Some(bits))) => out.client_max_window_bits = Some(Some(bits)),
                _ => return Err(NegotiationError::InvalidValue(label)),
            }
        }
        Ok(out)
    }
}

/// A server's acceptance of one offer: the agreed parameters and the header value to answer
/// with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The parameters both ends now use.
    pub params: DeflateParams,
    /// The `Sec-WebSocket-Extensions` value of the 101 response.
    pub response: String,
}

fn push_param(out: &mut String, name: &str, bits: Option<u8>) {
    out.push_str("; ");
    out.push_str(name);
    if let Some(bits) = bits {
        out.push('=');
        if bits >= 10 {
            out.push('1');
        }
        out.push(char::from(b'0' + bits % 10));
    }
}

impl DeflateConfig {
    /// Server side: chooses the first acceptable permessage-deflate offer among the values of
    /// the request's `Sec-WebSocket-Extensions` headers (in order, RFC 7692 §5), e.g.
    /// [`UpgradeRequest::extensions`](crate::handshake::UpgradeRequest::extensions).
    ///
    /// An offer with an unknown or duplicate parameter or an invalid value is declined and the
    /// next is tried (RFC 7692 §5.1, §7.1); a header that does not parse is ignored; other
    /// extensions are ignored. `None`: no offer is acceptable, answer without the extension.
    ///
    /// The answer asks for what this config wants: `server_no_context_takeover` and
    /// `client_no_context_takeover` when set (or offered), `server_max_window_bits` at most
    /// the config's and the offer's, `client_max_window_bits` when the client offered it and
    /// one of the two sides wants less than 15 bits.
    ///
    /// ```
    /// use ocpp_frame::deflate::DeflateConfig;
    /// let offers: [&[u8]; 2] = [
    ///     b"permessage-deflate; server_max_window_bits=20, x-custom",
    ///     b"permessage-deflate; client_max_window_bits",
    /// ];
    /// let accepted = DeflateConfig::default().accept_offer(offers).unwrap();
    /// assert_eq!(
    ///     accepted.response,
    ///     "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
    /// );
    /// assert!(accepted.params.client_no_context_takeover);
    /// ```
    pub fn accept_offer<'a, I>(&self, values: I) -> Option<Accepted>
    where
        I: IntoIterator<Item = &'a [u8]>,
    {
        for value in values {
            let mut elements = Vec::new();
            if parse_extensions(value, &mut elements).is_err() {
                continue;
            }
            for element in elements {
                if !element.name.eq_ignore_ascii_case(EXTENSION_NAME.as_bytes()) {
                    continue;
                }
                if let Ok(offer) = Parameters::parse(&element.params) {
                    return Some(self.answer(offer));
                }
            }
        }
        None
    }

    fn answer(&self, offer: Parameters) -> Accepted {
        let server_no_context_takeover =
            offer.server_no_context_takeover || self.server_no_context_takeover;
        let client_no_context_takeover =
            offer.client_no_context_takeover || self.client_no_context_takeover;
        let server_bits = match offer.server_max_window_bits {
            Some(offered) => Some(offered.min(self.server_max_window_bits)),
            None if self.server_max_window_bits < MAX_WINDOW_BITS => {
                Some(self.server_max_window_bits)
            }
            None => None,
        };
        let client_bits = match offer.client_max_window_bits {
            Some(Some(offered)) => Some(offered.min(self.client_max_window_bits)),
            Some(None) if self.client_max_window_bits < MAX_WINDOW_BITS => {
                Some(self.client_max_window_bits)
            }
            _ => None,
        };
        let mut response = String::from(EXTENSION_NAME);
        if server_no_context_takeover {
            push_param(&mut response, SERVER_NO_CONTEXT_TAKEOVER, None);
        }
        if client_no_context_takeover {
            push_param(&mut response, CLIENT_NO_CONTEXT_TAKEOVER, None);
        }
        if server_bits.is_some() {
            push_param(&mut response, SERVER_MAX_WINDOW_BITS, server_bits);
        }
        if client_bits.is_some() {
            push_param(&mut response, CLIENT_MAX_WINDOW_BITS, client_bits);
        }
        Accepted {
            params: DeflateParams {
                server_no_context_takeover,
                client_no_context_takeover,
                server_max_window_bits: server_bits.unwrap_or(MAX_WINDOW_BITS),
                client_max_window_bits: client_bits.unwrap_or(MAX_WINDOW_BITS),
            },
            response,
        }
    }

    /// Client side: the `Sec-WebSocket-Extensions` value offering permessage-deflate with this
    /// config (RFC 7692 §7.1): the no-context-takeover parameters that are set,
    /// `server_max_window_bits` when under 15, and `client_max_window_bits` (with a value when
    /// under 15) unless [`DeflateConfig::offer_client_max_window_bits`] is off.
    ///
    /// ```
    /// use ocpp_frame::deflate::DeflateConfig;
    /// assert_eq!(
    ///     DeflateConfig::default().client_max_window_bits(12).offer(),
    ///     "permessage-deflate; server_no_context_takeover; client_no_context_takeover; \
    ///      client_max_window_bits=12"
    /// );
    /// ```
    pub fn offer(&self) -> String {
        let mut offer = String::from(EXTENSION_NAME);
        if self.server_no_context_takeover {
            push_param(&mut offer, SERVER_NO_CONTEXT_TAKEOVER, None);
        }
        if self.client_no_context_takeover {
            push_param(&mut offer, CLIENT_NO_CONTEXT_TAKEOVER, None);
        }
        if self.server_max_window_bits < MAX_WINDOW_BITS {
            push_param(
                &mut offer,
                SERVER_MAX_WINDOW_BITS,
                Some(self.server_max_window_bits),
            );
        }
        if self.offer_client_max_window_bits {
            let bits = (self.client_max_window_bits < MAX_WINDOW_BITS)
                .then_some(self.client_max_window_bits);
            push_param(&mut offer, CLIENT_MAX_WINDOW_BITS, bits);
        }
        offer
    }

    /// Client side: checks the server's answer to [`DeflateConfig::offer`] (the values of the
    /// response's `Sec-WebSocket-Extensions` headers, e.g.
    /// [`UpgradeResponse::extensions`](crate::handshake::UpgradeResponse::extensions)).
    ///
    /// `Ok(None)`: the server declined (no extension). `Ok(Some(params))`: the agreed
    /// parameters. An error means the client must fail the connection (RFC 7692 §7.1): an
    /// extension or parameter we did not offer, a duplicate, an invalid value, a window over
    /// the one we asked for, or a parameter we asked for left out.
    ///
    /// ```
    /// use ocpp_frame::deflate::{DeflateConfig, NegotiationError};
    /// let config = DeflateConfig::default().offer_client_max_window_bits(false);
    /// let ok: [&[u8]; 1] = [b"permessage-deflate; server_no_context_takeover"];
    /// let params = config.check_response(ok).unwrap().unwrap();
    /// assert!(params.server_no_context_takeover && params.client_no_context_takeover);
    ///
    /// let bad: [&[u8]; 1] =
    ///     [b"permessage-deflate; server_no_context_takeover; client_max_window_bits=10"];
    /// assert_eq!(
    ///     config.check_response(bad),
    ///     Err(NegotiationError::NotOffered("client_max_window_bits"))
    /// );
    /// ```
    pub fn check_response<'a, I>(
        &self,
        values: I,
    ) -> Result<Option<DeflateParams>, NegotiationError>
    where
        I: IntoIterator<Item = &'a [u8]>,
    {
        let mut elements = Vec::new();
        for value in values {
            parse_extensions(value, &mut elements)?;
        }
        let element = match elements.as_slice() {
            [] => return Ok(None),
            [element] => element,
            [..] => {
                let all_ours = elements
                    .iter()
                    .all(|e| e.name.eq_ignore_ascii_case(EXTENSION_NAME.as_bytes()));
                return Err(if all_ours {
                    NegotiationError::Repeated
                } else {
                    NegotiationError::UnexpectedExtension
                });
            }
        };
        if !element.name.eq_ignore_ascii_case(EXTENSION_NAME.as_bytes()) {
            return Err(NegotiationError::UnexpectedExtension);
        }
        let answer = Parameters::parse(&element.params)?;
        if self.server_no_context_takeover && !answer.server_no_context_takeover {
            return Err(NegotiationError::Missing(SERVER_NO_CONTEXT_TAKEOVER));
        }
        let server_bits = match answer.server_max_window_bits {
            Some(bits) if bits > self.server_max_window_bits => {
                return Err(NegotiationError::AboveOffer(SERVER_MAX_WINDOW_BITS))
            }
            Some(bits) => bits,
            None if self.server_max_window_bits < MAX_WINDOW_BITS => {
                return Err(NegotiationError::Missing(SERVER_MAX_WINDOW_BITS))
            }
            None => MAX_WINDOW_BITS,
        };
        let client_bits = match answer.client_max_window_bits {
            None => self.client_max_window_bits,
            Some(_) if !self.offer_client_max_window_bits => {
                return Err(NegotiationError::NotOffered(CLIENT_MAX_WINDOW_BITS))
            }
            // In an answer the parameter needs a value (RFC 7692 §7.1.2.2).
            Some(None) => return Err(NegotiationError::InvalidValue(CLIENT_MAX_WINDOW_BITS)),
            Some(Some(bits)) if bits > self.client_max_window_bits => {
                return Err(NegotiationError::AboveOffer(CLIENT_MAX_WINDOW_BITS))
            }
            Some(Some(bits)) => bits,
        };
        Ok(Some(DeflateParams {
            server_no_context_takeover: answer.server_no_context_takeover,
            client_no_context_takeover: answer.client_no_context_takeover
                || self.client_no_context_takeover,
            server_max_window_bits: server_bits,
            client_max_window_bits: client_bits.max(MIN_WINDOW_BITS),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(config: DeflateConfig, values: &[&[u8]]) -> Option<Accepted> {
        config.accept_offer(values.iter().copied())
    }

    fn plain() -> DeflateConfig {
        DeflateConfig::default()
            .server_no_context_takeover(false)
            .client_no_context_takeover(false)
    }

    #[test]
    fn parses_lists_params_and_quoted_values() {
        let mut out = Vec::new();
        parse_extensions(
            b" a ; x=1 ;y = \"2\" , , b;z, permessage-deflate;q=\"a\\b\"",
            &mut out,
        )
        .unwrap();
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].name, b"a");
        assert_eq!(
            out[0].params,
            [
                (&b"x"[..], Some(b"1".to_vec())),
                (&b"y"[..], Some(b"2".to_vec()))
            ]
        );
        assert_eq!(out[1].params, [(&b"z"[..], None)]);
        assert_eq!(out[2].params, [(&b"q"[..], Some(b"ab".to_vec()))]);
        for bad in [
            &b"a;"[..],
            b"a b",
            b";x",
            b"a;x=",
            b"a;x=\"1",
            b"a;x=\"1 2\"",
            b"a;x=\"\"",
            b"a=1",
        ] {
            assert_eq!(
                parse_extensions(bad, &mut Vec::new()),
                Err(NegotiationError::Malformed),
                "{:?}",
                core::str::from_utf8(bad)
            );
        }
    }

    #[test]
    fn window_bits_values() {
        for (text, bits) in [("8", 8), ("9", 9), ("10", 10), ("15", 15)] {
            assert_eq!(window_bits(text.as_bytes()), Some(bits));
        }
        for text in ["7", "16", "08", "0", "", "1", "+9", "9 "] {
            assert_eq!(window_bits(text.as_bytes()), None, "{text}");
        }
    }

    #[test]
    fn server_takes_first_acceptable_offer() {
        let accepted = accept(
            plain(),
            &[
                b"x-webkit-deflate-frame, permessage-deflate; server_max_window_bits",
                b"permessage-deflate; foo, permessage-deflate; client_max_window_bits; client_max_window_bits",
                b"permessage-deflate; server_no_context_takeover=1",
                b"permessage-deflate; client_max_window_bits=\"16\"",
                b"PerMessage-Deflate; Server_Max_Window_Bits=\"10\"",
                b"permessage-deflate",
            ],
        )
        .unwrap();
        assert_eq!(
            accepted.response,
            "permessage-deflate; server_max_window_bits=10"
        );
        assert_eq!(accepted.params.server_max_window_bits, 10);
        assert_eq!(accepted.params.client_max_window_bits, 15);
        assert_eq!(
            accept(plain(), &[b"x-other", b"permessage-deflate;;"]),
            None
        );
        assert_eq!(accept(plain(), &[]), None);
    }

    #[test]
    fn server_answers_with_its_wishes() {
        let config = DeflateConfig::default()
            .server_max_window_bits(11)
            .client_max_window_bits(9);
        let accepted = accept(config, &[b"permessage-deflate; client_max_window_bits"]).unwrap();
        assert_eq!(
            accepted.response,
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover; \
             server_max_window_bits=11; client_max_window_bits=9"
        );
        // Without client_max_window_bits in the offer, the client's window cannot be limited.
        let accepted = accept(config, &[b"permessage-deflate; server_max_window_bits=13"]).unwrap();
        assert_eq!(accepted.params.client_max_window_bits, 15);
        assert_eq!(accepted.params.server_max_window_bits, 11);
        // The offer's limits win when lower; the client's no-context-takeover is echoed.
        let accepted = accept(
            plain(),
            &[
                b"permessage-deflate; client_no_context_takeover; server_max_window_bits=8; \
                client_max_window_bits=12",
            ],
        )
        .unwrap();
        assert_eq!(
            accepted.response,
            "permessage-deflate; client_no_context_takeover; server_max_window_bits=8; \
             client_max_window_bits=12"
        );
    }

    #[test]
    fn offer_and_answer_round_trip() {
        for server_nct in [false, true] {
            for client_nct in [false, true] {
                for (s_bits, c_bits) in [(15, 15), (9, 15), (15, 8), (12, 10)] {
                    let client = DeflateConfig::default()
                        .server_no_context_takeover(server_nct)
                        .client_no_context_takeover(client_nct)
                        .server_max_window_bits(s_bits)
                        .client_max_window_bits(c_bits);
                    let offer = client.offer();
                    let accepted = accept(plain(), &[offer.as_bytes()]).unwrap();
                    let params = client
                        .check_response([accepted.response.as_bytes()])
                        .unwrap()
                        .unwrap();
                    assert_eq!(params, accepted.params, "{offer}");
                    assert_eq!(params.server_no_context_takeover, server_nct);
                    assert_eq!(params.client_no_context_takeover, client_nct);
                    assert_eq!(params.server_max_window_bits, s_bits);
                    assert_eq!(params.client_max_window_bits, c_bits);
                }
            }
        }
    }

    #[test]
    fn client_refuses_what_it_did_not_offer() {
        let client = plain();
        let check = |values: &[&[u8]]| client.check_response(values.iter().copied());
        assert_eq!(check(&[]), Ok(None));
        assert_eq!(
            check(&[b"x-foo"]),
            Err(NegotiationError::UnexpectedExtension)
        );
        assert_eq!(
            check(&[b"permessage-deflate", b"permessage-deflate"]),
            Err(NegotiationError::Repeated)
        );
        assert_eq!(
            check(&[b"permessage-deflate, x-foo"]),
            Err(NegotiationError::UnexpectedExtension)
        );
        assert_eq!(
            check(&[b"permessage-deflate; foo"]),
            Err(NegotiationError::UnknownParameter)
        );
        assert_eq!(
            check(&[b"permessage-deflate; server_no_context_takeover; server_no_context_takeover"]),
            Err(NegotiationError::DuplicateParameter(
                SERVER_NO_CONTEXT_TAKEOVER
            ))
        );
        assert_eq!(
            check(&[b"permessage-deflate; client_max_window_bits"]),
            Err(NegotiationError::InvalidValue(CLIENT_MAX_WINDOW_BITS))
        );
        assert_eq!(
            check(&[b"permessage-deflate; server_max_window_bits=7"]),
            Err(NegotiationError::InvalidValue(SERVER_MAX_WINDOW_BITS))
        );
        assert_eq!(
            check(&[b"permessage-deflate;"]),
            Err(NegotiationError::Malformed)
        );
        let limited = plain()
            .server_max_window_bits(10)
            .client_max_window_bits(10);
        assert_eq!(
            limited.check_response([&b"permessage-deflate"[..]]),
            Err(NegotiationError::Missing(SERVER_MAX_WINDOW_BITS))
        );
        assert_eq!(
            limited.check_response([&b"permessage-deflate; server_max_window_bits=11"[..]]),
            Err(NegotiationError::AboveOffer(SERVER_MAX_WINDOW_BITS))
        );
        assert_eq!(
            limited.check_response([
                &b"permessage-deflate; server_max_window_bits=9; client_max_window_bits=11"[..]
            ]),
            Err(NegotiationError::AboveOffer(CLIENT_MAX_WINDOW_BITS))
        );
        let wants_reset = plain().server_no_context_takeover(true);
        assert_eq!(
            wants_reset.check_response([&b"permessage-deflate"[..]]),
            Err(NegotiationError::Missing(SERVER_NO_CONTEXT_TAKEOVER))
        );
        // A server may ask the client not to take over context, unasked.
        let params = client
            .check_response([&b"permessage-deflate; client_no_context_takeover"[..]])
            .unwrap()
            .unwrap();
        assert!(params.client_no_context_takeover);
    }
}
