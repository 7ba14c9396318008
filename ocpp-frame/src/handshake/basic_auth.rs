//! HTTP Basic credentials (RFC 7617), how OCPP 1.6 security profile 1/2 and OCPP 2.x charge
//! points authenticate their WebSocket connection.

use alloc::string::String;
use alloc::vec::Vec;
use base64::Engine as _;
use core::fmt;

use crate::handshake::headers::trim_ows;
use crate::handshake::BuildError;

/// A user-id and password from (or for) an `Authorization: Basic` header (RFC 7617 §2).
///
/// Both are kept as bytes: OCPP 1.6 lets the password be a binary `AuthorizationKey`, and
/// RFC 7617 leaves the charset open. [`BasicCredentials::user`] gives the user-id as text when
/// it is UTF-8 (an OCPP charge point identity always is). `Debug` never shows the password.
///
/// ```
/// use ocpp_frame::handshake::BasicCredentials;
///
/// let credentials = BasicCredentials::new(b"CP001", b"\x00\xffsecret").unwrap();
/// assert_eq!(credentials.header_value(), "Basic Q1AwMDE6AP9zZWNyZXQ=");
/// assert_eq!(credentials.user(), Some("CP001"));
/// assert_eq!(credentials.password(), b"\x00\xffsecret");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct BasicCredentials {
    /// `user-id ":" password`, decoded.
    pair: Vec<u8>,
    /// Position of the first colon in `pair`.
    colon: usize,
}

impl BasicCredentials {
    /// Credentials to send. The user-id cannot contain a colon (RFC 7617 §2), the password can
    /// be any bytes.
    pub fn new(user: &[u8], password: &[u8]) -> Result<Self, BuildError> {
        if user.contains(&b':') {
            return Err(BuildError::InvalidBasicUser);
        }
        let mut pair = Vec::with_capacity(user.len() + 1 + password.len());
        pair.extend_from_slice(user);
        pair.push(b':');
        pair.extend_from_slice(password);
        Ok(BasicCredentials {
            pair,
            colon: user.len(),
        })
    }

    /// Parses an `Authorization` header value. `Ok(None)` when the scheme is not `Basic`
    /// (compared case-insensitively, RFC 7235 §2.1), so other schemes stay the application's
    /// business; an error when it is `Basic` but the credentials are malformed. Padding of the
    /// base64 token is optional (some charge-point firmware omits it).
    pub fn parse_authorization(value: &[u8]) -> Result<Option<Self>, BasicAuthError> {
        let value = trim_ows(value);
        let (scheme, rest) = match value.iter().position(|&b| b == b' ') {
            Some(at) => (
                value.get(..at).unwrap_or(&[]),
                value.get(at..).unwrap_or(&[]),
            ),
            None => (value, &[][..]),
        };
        if !scheme.eq_ignore_ascii_case(b"Basic") {
            return Ok(None);
        }
        let token = trim_ows(rest);
        if token.is_empty() {
            return Err(BasicAuthError::MissingCredentials);
        }
        let pair = base64::engine::general_purpose::STANDARD_PAD_INDIFFERENT
            .decode(token)
            .map_err(|_| BasicAuthError::InvalidBase64)?;
        let colon = pair
            .iter()
            .position(|&b| b == b':')
            .ok_or(BasicAuthError::MissingColon)?;
        Ok(Some(BasicCredentials { pair, colon }))
    }

    /// The user-id's bytes.
    pub fn user_bytes(&self) -> &[u8] {
        self.pair.get(..self.colon).unwrap_or(&[])
    }

    /// The user-id as text, if it is UTF-8.
    pub fn user(&self) -> Option<&str> {
        core::str::from_utf8(self.user_bytes()).ok()
    }

    /// The password's bytes (possibly binary).
    pub fn password(&self) -> &[u8] {
        self.pair.get(self.colon + 1..).unwrap_or(&[])
    }

    /// The `Authorization` header value: `Basic base64(user ":" password)` (RFC 7617 §2).
    pub fn header_value(&self) -> String {
        let mut value = String::from("Basic ");
        base64::engine::general_purpose::STANDARD.encode_string(&self.pair, &mut value);
        value
    }
}

impl fmt::Debug for BasicCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BasicCredentials")
            .field("user", &String::from_utf8_lossy(self.user_bytes()))
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Why an `Authorization: Basic` header could not be read. Reported apart from the handshake's
/// own refusals so that the application picks its answer: usually `401` with a
/// `WWW-Authenticate` challenge (RFC 7235 §3.1), or `400`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BasicAuthError {
    /// More than one `Authorization` header.
    #[error("more than one Authorization header")]
    Repeated,
    /// `Basic` without a credentials token.
    #[error("Basic authorization without credentials")]
    MissingCredentials,
    /// The token is not base64 (RFC 4648 §4).
    #[error("Basic credentials are not valid base64")]
    InvalidBase64,
    /// The decoded credentials have no colon between user-id and password (RFC 7617 §2).
    #[error("Basic credentials lack the ':' between user-id and password")]
    MissingColon,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_redacts() {
        let c = BasicCredentials::parse_authorization(b"basic   Q1AwMDE6cGFzczp3b3Jk")
            .unwrap()
            .unwrap();
        assert_eq!(c.user(), Some("CP001"));
        assert_eq!(c.password(), b"pass:word");
        assert!(!alloc::format!("{c:?}").contains("pass:word"));
        assert_eq!(
            BasicCredentials::parse_authorization(b"Bearer abc").unwrap(),
            None
        );
        assert_eq!(
            BasicCredentials::parse_authorization(b"Basic"),
            Err(BasicAuthError::MissingCredentials)
        );
        assert_eq!(
            BasicCredentials::parse_authorization(b"Basic !!!"),
            Err(BasicAuthError::InvalidBase64)
        );
        assert_eq!(
            BasicCredentials::parse_authorization(b"Basic Q1AwMDE="),
            Err(BasicAuthError::MissingColon)
        );
    }
}
