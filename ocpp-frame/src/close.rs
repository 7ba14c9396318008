//! Close codes and close frames (RFC 6455 §5.5.1, §7.4, and the IANA "WebSocket Close Code Number
//! Registry").

use bytes::Bytes;

use crate::{ProtocolError, Utf8Bytes};

/// A close status code (RFC 6455 §7.4).
///
/// Any `u16` can be held; [`CloseCode::is_valid_on_wire`] says whether a peer may send it.
///
/// ```
/// use ocpp_frame::CloseCode;
/// assert!(CloseCode::NORMAL.is_valid_on_wire());
/// assert!(!CloseCode::NO_STATUS_RECEIVED.is_valid_on_wire()); // 1005 is never sent
/// assert!(CloseCode::from(4000).is_valid_on_wire()); // private use
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CloseCode(u16);

impl CloseCode {
    /// 1000: the purpose of the connection was fulfilled.
    pub const NORMAL: CloseCode = CloseCode(1000);
    /// 1001: the endpoint is going away (server shutdown, page left).
    pub const GOING_AWAY: CloseCode = CloseCode(1001);
    /// 1002: the peer broke the protocol.
    pub const PROTOCOL_ERROR: CloseCode = CloseCode(1002);
    /// 1003: a data type the endpoint cannot accept (e.g. binary where only text is understood).
    pub const UNSUPPORTED_DATA: CloseCode = CloseCode(1003);
    /// 1005: reserved; stands for "the close frame had no code". Never sent.
    pub const NO_STATUS_RECEIVED: CloseCode = CloseCode(1005);
    /// 1006: reserved; stands for "closed without a close frame". Never sent.
    pub const ABNORMAL: CloseCode = CloseCode(1006);
    /// 1007: a message's data was not consistent with its type (e.g. invalid UTF-8 in text).
    pub const INVALID_PAYLOAD: CloseCode = CloseCode(1007);
    /// 1008: a message violated the endpoint's policy.
    pub const POLICY_VIOLATION: CloseCode = CloseCode(1008);
    /// 1009: a message was too big to process.
    pub const MESSAGE_TOO_BIG: CloseCode = CloseCode(1009);
    /// 1010: the client expected an extension the server did not negotiate.
    pub const MANDATORY_EXTENSION: CloseCode = CloseCode(1010);
    /// 1011: the server met an unexpected condition.
    pub const INTERNAL_ERROR: CloseCode = CloseCode(1011);
    /// 1012: the service is restarting (IANA registry).
    pub const SERVICE_RESTART: CloseCode = CloseCode(1012);
    /// 1013: try again later (IANA registry).
    pub const TRY_AGAIN_LATER: CloseCode = CloseCode(1013);
    /// 1014: a gateway or proxy got an invalid response upstream (IANA registry).
    pub const BAD_GATEWAY: CloseCode = CloseCode(1014);
    /// 1015: reserved; stands for "the TLS handshake failed". Never sent.
    pub const TLS_HANDSHAKE: CloseCode = CloseCode(1015);

    /// The numeric code.
    pub const fn as_u16(self) -> u16 {
        self.0
    }

    /// Whether a close frame may carry this code (RFC 6455 §7.4.1-§7.4.2 and the IANA registry):
    /// 1000-1003 and 1007-1014 are defined, 3000-4999 are for libraries, frameworks and
    /// applications. 1004 is reserved, 1005, 1006 and 1015 must never be sent, everything below
    /// 1000 and from 1016 to 2999 is unassigned, and nothing above 4999 exists.
    pub const fn is_valid_on_wire(self) -> bool {
        matches!(self.0, 1000..=1003 | 1007..=1014 | 3000..=4999)
    }
}

impl From<u16> for CloseCode {
    fn from(code: u16) -> Self {
        CloseCode(code)
    }
}

impl From<CloseCode> for u16 {
    fn from(code: CloseCode) -> Self {
        code.0
    }
}

impl core::fmt::Display for CloseCode {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The code and reason of a close frame that carried a payload (RFC 6455 §5.5.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloseFrame {
    /// The status code.
    pub code: CloseCode,
    /// The reason, valid UTF-8, at most 123 bytes.
    pub reason: Utf8Bytes,
}

/// Parses and validates a close payload: empty (no code), or a valid code and a UTF-8 reason.
/// The longest close reason in bytes: a control frame carries at most 125 bytes, two of them
/// the code (RFC 6455 §5.5, §5.5.1).
pub const MAX_CLOSE_REASON_LEN: usize = 123;

/// `reason` cut to at most [`MAX_CLOSE_REASON_LEN`] bytes at a character boundary, so that it
/// fits a close frame and stays valid UTF-8.
///
/// ```
/// use ocpp_frame::truncate_close_reason;
/// assert_eq!(truncate_close_reason("bye"), "bye");
/// let long = "é".repeat(100); // 200 bytes
/// assert_eq!(truncate_close_reason(&long).len(), 122);
/// ```
pub fn truncate_close_reason(reason: &str) -> &str {
    let mut cut = reason.len().min(MAX_CLOSE_REASON_LEN);
    while !reason.is_char_boundary(cut) {
        cut -= 1;
    }
    &reason[..cut]
}

pub(crate) fn parse_close_payload(payload: Bytes) -> Result<Option<CloseFrame>, ProtocolError> {
    match payload.len() {
        0 => Ok(None),
        1 => Err(ProtocolError::InvalidClosePayloadLength),
        _ => {
            let code = CloseCode(u16::from_be_bytes([payload[0], payload[1]]));
            if !code.is_valid_on_wire() {
                return Err(ProtocolError::InvalidCloseCode(code.0));
            }
            let reason = Utf8Bytes::try_from(payload.slice(2..))
                .map_err(|_| ProtocolError::InvalidCloseReason)?;
            Ok(Some(CloseFrame { code, reason }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_validity_matches_registry() {
        for code in [
            0u16, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535,
        ] {
            assert!(!CloseCode(code).is_valid_on_wire(), "{code}");
        }
        for code in [
            1000u16, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999,
            4000, 4999,
        ] {
            assert!(CloseCode(code).is_valid_on_wire(), "{code}");
        }
    }

    #[test]
    fn close_payloads() {
        assert_eq!(parse_close_payload(Bytes::new()), Ok(None));
        assert_eq!(
            parse_close_payload(Bytes::from_static(&[3])),
            Err(ProtocolError::InvalidClosePayloadLength)
        );
        assert_eq!(
            parse_close_payload(Bytes::from_static(&[0x03, 0xED])),
            Err(ProtocolError::InvalidCloseCode(1005))
        );
        assert_eq!(
            parse_close_payload(Bytes::from_static(&[0x03, 0xE8, 0xff])),
            Err(ProtocolError::InvalidCloseReason)
        );
        let frame = parse_close_payload(Bytes::from_static(b"\x03\xe8bye"))
            .unwrap()
            .unwrap();
        assert_eq!(frame.code, CloseCode::NORMAL);
        assert_eq!(frame.reason.as_str(), "bye");
    }
}
