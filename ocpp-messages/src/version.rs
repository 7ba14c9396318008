//! The OCPP protocol versions this crate speaks, named by their WebSocket subprotocol.
//!
//! The version is negotiated once per connection through `Sec-WebSocket-Protocol`
//! (OCPP-J 1.6 §3, OCPP 2.0.1 Part 4 §3, OCPP 2.1 Part 4 §3) and is never taken from
//! the URL. Everything version-dependent in the envelope (error code spelling, which message
//! types exist, what to answer to bad input) takes an [`OcppVersion`].

use core::fmt;
use core::str::FromStr;

/// An OCPP version, as negotiated through the WebSocket subprotocol.
///
/// ```
/// use ocpp_messages::version::OcppVersion;
///
/// let v = OcppVersion::from_subprotocol("ocpp2.0.1").unwrap();
/// assert_eq!(v, OcppVersion::V2_0_1);
/// assert_eq!(v.subprotocol(), "ocpp2.0.1");
/// assert_eq!(v.to_string(), "2.0.1");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OcppVersion {
    /// OCPP 1.6 (edition 2, with the security whitepaper), subprotocol `ocpp1.6`.
    V1_6,
    /// OCPP 2.0.1, subprotocol `ocpp2.0.1`.
    V2_0_1,
    /// OCPP 2.1, subprotocol `ocpp2.1`. Adds the CALLRESULTERROR and SEND message types.
    V2_1,
}

impl OcppVersion {
    /// All versions, oldest first.
    pub const ALL: [OcppVersion; 3] = [OcppVersion::V1_6, OcppVersion::V2_0_1, OcppVersion::V2_1];

    /// The WebSocket subprotocol name of this version (`Sec-WebSocket-Protocol`), e.g. `ocpp1.6`.
    #[must_use]
    pub const fn subprotocol(self) -> &'static str {
        match self {
            OcppVersion::V1_6 => "ocpp1.6",
            OcppVersion::V2_0_1 => "ocpp2.0.1",
            OcppVersion::V2_1 => "ocpp2.1",
        }
    }

    /// The version for a WebSocket subprotocol name, or `None` if it is not one of ours.
    ///
    /// Subprotocol tokens are compared exactly: RFC 6455 §4.1 makes them case-sensitive, and
    /// the OCPP-J documents spell them in lower case.
    #[must_use]
    pub fn from_subprotocol(name: &str) -> Option<OcppVersion> {
        match name {
            "ocpp1.6" => Some(OcppVersion::V1_6),
            "ocpp2.0.1" => Some(OcppVersion::V2_0_1),
            "ocpp2.1" => Some(OcppVersion::V2_1),
            _ => None,
        }
    }

    /// The version number as written in the specifications: `1.6`, `2.0.1` or `2.1`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            OcppVersion::V1_6 => "1.6",
            OcppVersion::V2_0_1 => "2.0.1",
            OcppVersion::V2_1 => "2.1",
        }
    }

    /// Whether this is one of the 2.x versions, which share the error code table of
    /// OCPP 2.0.1 Part 4 Table 8 / OCPP 2.1 Part 4 Table 9 and the 255-character limit on
    /// CALLERROR descriptions.
    #[must_use]
    pub const fn is_2x(self) -> bool {
        matches!(self, OcppVersion::V2_0_1 | OcppVersion::V2_1)
    }
}

impl fmt::Display for OcppVersion {
    /// Writes the version number (`1.6`, `2.0.1`, `2.1`); use [`OcppVersion::subprotocol`] for
    /// the subprotocol name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of [`OcppVersion::from_str`]: the text is neither a version number nor a
/// subprotocol name this crate knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("unknown OCPP version (expected 1.6, 2.0.1, 2.1 or their subprotocol names)")]
#[non_exhaustive]
pub struct UnknownVersion;

impl FromStr for OcppVersion {
    type Err = UnknownVersion;

    /// Accepts the version number (`2.0.1`) or the subprotocol name (`ocpp2.0.1`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(v) = OcppVersion::from_subprotocol(s) {
            return Ok(v);
        }
        OcppVersion::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or(UnknownVersion)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn subprotocol_round_trip() {
        for v in OcppVersion::ALL {
            assert_eq!(OcppVersion::from_subprotocol(v.subprotocol()), Some(v));
            assert_eq!(v.subprotocol().parse::<OcppVersion>(), Ok(v));
            assert_eq!(v.to_string().parse::<OcppVersion>(), Ok(v));
        }
    }

    #[test]
    fn subprotocol_is_exact() {
        for bad in [
            "OCPP1.6",
            "ocpp1.6 ",
            "ocpp2.0",
            "ocpp20",
            "ocpp2.1.0",
            "",
            "ocpp",
        ] {
            assert_eq!(OcppVersion::from_subprotocol(bad), None, "{bad:?}");
        }
        assert_eq!("2.0".parse::<OcppVersion>(), Err(UnknownVersion));
    }

    #[test]
    fn display_and_order() {
        assert_eq!(OcppVersion::V1_6.to_string(), "1.6");
        assert_eq!(OcppVersion::V2_1.to_string(), "2.1");
        assert!(OcppVersion::V1_6 < OcppVersion::V2_0_1 && OcppVersion::V2_0_1 < OcppVersion::V2_1);
        assert!(!OcppVersion::V1_6.is_2x() && OcppVersion::V2_1.is_2x());
    }
}
