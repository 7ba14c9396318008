//! The charge point's identity, read from the last segment of the upgrade request's path.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

/// A charge point's identity (OCPP-J 1.6 §3.1.1, OCPP 2.0.1 Part 4 §3.1.1): the last segment of
/// the WebSocket URL's path, percent-decoded.
///
/// ```
/// use ocpp_proto::ChargePointIdentity;
/// let id = ChargePointIdentity::from_path("/ocpp/RDAM%7C123", false).unwrap();
/// assert_eq!(id.as_str(), "RDAM|123");
/// // OCPP 2.x: at most 48 characters and no ':'.
/// assert!(ChargePointIdentity::from_path("/ocpp/a:b", true).is_err());
/// ```
///
/// Cloning shares the text (an `Arc<str>`): a server keeps the identity in several places (its
/// connection, its routing table, the application's records) for tens of thousands of charge
/// points, and each copy costs a pointer, not an allocation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChargePointIdentity(Arc<str>);

/// Why a path does not name a charge point.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdentityError {
    /// The path's last segment is empty (e.g. `/ocpp/`).
    #[error("the path has no identity segment")]
    Missing,
    /// A `%` not followed by two hex digits.
    #[error("invalid percent-encoding in the identity")]
    BadPercentEncoding,
    /// The decoded identity is not UTF-8.
    #[error("the identity is not valid UTF-8")]
    NotUtf8,
    /// OCPP 2.x: more than 48 characters (OCPP 2.0.1 Part 4 §3.1.1).
    #[error("the identity has {0} characters; OCPP 2.x allows at most 48")]
    TooLong(usize),
    /// OCPP 2.x: a ':' (it would break Basic authentication's `user:password`).
    #[error("the identity contains ':'")]
    Colon,
    /// A control character.
    #[error("the identity contains a control character")]
    ControlCharacter,
}

impl ChargePointIdentity {
    /// Reads the identity from a raw request path (query excluded). With `strict_v2`, also
    /// applies the OCPP 2.x rules: at most 48 characters and no ':'.
    pub fn from_path(path: &str, strict_v2: bool) -> Result<Self, IdentityError> {
        let segment = path.rsplit('/').next().unwrap_or_default();
        if segment.is_empty() {
            return Err(IdentityError::Missing);
        }
        let decoded = percent_decode(segment)?;
        Self::new(decoded, strict_v2)
    }

    /// Wraps an already decoded identity, checking the same rules as [`Self::from_path`].
    pub fn new(identity: String, strict_v2: bool) -> Result<Self, IdentityError> {
        if identity.is_empty() {
            return Err(IdentityError::Missing);
        }
        if identity.chars().any(char::is_control) {
            return Err(IdentityError::ControlCharacter);
        }
        if strict_v2 {
            let chars = identity.chars().count();
            if chars > 48 {
                return Err(IdentityError::TooLong(chars));
            }
            if identity.contains(':') {
                return Err(IdentityError::Colon);
            }
        }
        Ok(ChargePointIdentity(Arc::from(identity)))
    }

    /// The identity.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ChargePointIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn percent_decode(segment: &str) -> Result<String, IdentityError> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .ok_or(IdentityError::BadPercentEncoding)?;
            let high = hex_value(hex[0]).ok_or(IdentityError::BadPercentEncoding)?;
            let low = hex_value(hex[1]).ok_or(IdentityError::BadPercentEncoding)?;
            out.push(high << 4 | low);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| IdentityError::NotUtf8)
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Lets maps keyed by identity be searched with a `&str` without allocating
/// (`Hash` and `Eq` are those of the text).
impl Borrow<str> for ChargePointIdentity {
    fn borrow(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let id = |p: &str| ChargePointIdentity::from_path(p, true);
        assert_eq!(id("/ocpp/CP001").unwrap().as_str(), "CP001");
        assert_eq!(id("/CP001").unwrap().as_str(), "CP001");
        assert_eq!(id("/a/b/c/%C3%A9t%C3%A9").unwrap().as_str(), "été");
        assert_eq!(id("/ocpp/"), Err(IdentityError::Missing));
        assert_eq!(id("/ocpp/%zz"), Err(IdentityError::BadPercentEncoding));
        assert_eq!(id("/ocpp/%4"), Err(IdentityError::BadPercentEncoding));
        assert_eq!(id("/ocpp/%ff"), Err(IdentityError::NotUtf8));
        assert_eq!(id("/ocpp/%0a"), Err(IdentityError::ControlCharacter));
        assert_eq!(id("/ocpp/a%3Ab"), Err(IdentityError::Colon));
        let long = "x".repeat(49);
        assert_eq!(id(&format!("/{long}")), Err(IdentityError::TooLong(49)));
        assert!(ChargePointIdentity::from_path(&format!("/{long}"), false).is_ok());
        assert!(ChargePointIdentity::from_path("/a:b", false).is_ok());
        assert_eq!(
            id(&format!("/{}", "é".repeat(48)))
                .unwrap()
                .as_str()
                .chars()
                .count(),
            48
        );
    }
}
