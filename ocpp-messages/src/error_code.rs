//! CALLERROR error codes, spelled exactly as each OCPP version requires.
//!
//! OCPP-J 1.6 Table 7 lists ten codes, two of them misspelt (`FormationViolation`,
//! `OccurenceConstraintViolation`); the 1.6 errata keep the typos on purpose. OCPP 2.0.1 Part 4
//! Table 8 and OCPP 2.1 Part 4 Table 9 list twelve codes with the corrected spellings
//! (`FormatViolation`, `OccurrenceConstraintViolation`) and two new ones
//! (`MessageTypeNotSupported`, `RpcFrameworkError`).
//!
//! Three types model this:
//!
//! - [`ErrorCode`]: version-independent, named by meaning, the union of both tables plus
//!   [`ErrorCode::Other`] for codes a peer invented. This is what the envelope carries.
//!   [`ErrorCode::parse`] accepts every spelling of every version (real peers mix them up), and
//!   [`ErrorCode::as_str`] gives the spelling for the negotiated version.
//! - [`ErrorCodeV16`]: exactly the 1.6 table.
//! - [`ErrorCodeV2`]: exactly the 2.0.1 / 2.1 table (the two are identical).
//!
//! Note the meaning of the two codes that several libraries swap: `NotImplemented` is "the
//! action is not known", `NotSupported` is "the action is known but not supported".
//!
//! ```
//! use ocpp_messages::error_code::ErrorCode;
//! use ocpp_messages::version::OcppVersion;
//!
//! let code = ErrorCode::parse("FormationViolation"); // a 1.6 spelling...
//! assert_eq!(code, ErrorCode::FormatViolation);      // ...is the same meaning as 2.x's
//! assert_eq!(code.as_str(OcppVersion::V1_6), "FormationViolation");
//! assert_eq!(code.as_str(OcppVersion::V2_0_1), "FormatViolation");
//! assert_eq!(ErrorCode::parse("Oops"), ErrorCode::Other("Oops".into()));
//! ```

use alloc::string::String;
use core::fmt;
use core::str::FromStr;

use crate::version::OcppVersion;

/// A CALLERROR error code, independent of the version, named by its meaning.
///
/// Built from the wire with [`ErrorCode::parse`], which accepts the spellings of every version;
/// written to the wire with [`ErrorCode::as_str`], which spells it for one version. Codes that
/// only exist in 2.x are mapped to their closest 1.6 code when spelt for 1.6 (see
/// [`ErrorCode::to_v16`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// The requested action is not known by the receiver (all versions).
    NotImplemented,
    /// The requested action is recognised but not supported by the receiver (all versions).
    NotSupported,
    /// An internal error kept the receiver from processing the action (all versions).
    InternalError,
    /// The payload is incomplete (1.6) or does not conform to the PDU structure (2.x).
    ProtocolError,
    /// A security issue kept the receiver from completing the action (all versions).
    SecurityError,
    /// The payload is syntactically incorrect. Spelt `FormationViolation` in 1.6 and
    /// `FormatViolation` in 2.x.
    FormatViolation,
    /// A field of a syntactically correct payload has an invalid value (all versions).
    PropertyConstraintViolation,
    /// A field of a syntactically correct payload violates occurrence constraints. Spelt
    /// `OccurenceConstraintViolation` (sic) in 1.6 and `OccurrenceConstraintViolation` in 2.x.
    OccurrenceConstraintViolation,
    /// A field of a syntactically correct payload violates data type constraints, e.g.
    /// `"somestring": 12` (all versions).
    TypeConstraintViolation,
    /// Any other error not covered by a more specific code (all versions).
    GenericError,
    /// 2.x only: a message type number the receiver does not support.
    MessageTypeNotSupported,
    /// 2.x only: the content is not a valid RPC request, e.g. the message id could not be read.
    RpcFrameworkError,
    /// A code received from a peer that is in no version's table, kept as received.
    ///
    /// [`ErrorCode::parse`] never produces `Other` for a known spelling. When written, the
    /// string is sent as is (useful to proxies); an application answering on its own behalf
    /// should use one of the table codes.
    Other(String),
}

impl ErrorCode {
    /// The known codes (every variant except [`ErrorCode::Other`]).
    pub const KNOWN: [ErrorCode; 12] = [
        ErrorCode::NotImplemented,
        ErrorCode::NotSupported,
        ErrorCode::InternalError,
        ErrorCode::ProtocolError,
        ErrorCode::SecurityError,
        ErrorCode::FormatViolation,
        ErrorCode::PropertyConstraintViolation,
        ErrorCode::OccurrenceConstraintViolation,
        ErrorCode::TypeConstraintViolation,
        ErrorCode::GenericError,
        ErrorCode::MessageTypeNotSupported,
        ErrorCode::RpcFrameworkError,
    ];

    /// Reads a code received on the wire, whatever version's spelling it uses.
    ///
    /// Both `FormationViolation` and `FormatViolation` give [`ErrorCode::FormatViolation`]; both
    /// `OccurenceConstraintViolation` and `OccurrenceConstraintViolation` give
    /// [`ErrorCode::OccurrenceConstraintViolation`]. Matching is exact (case-sensitive);
    /// anything else is kept in [`ErrorCode::Other`].
    #[must_use]
    pub fn parse(code: &str) -> ErrorCode {
        ErrorCode::parse_known(code).unwrap_or_else(|| ErrorCode::Other(String::from(code)))
    }

    /// Like [`ErrorCode::parse`], but returns `None` instead of allocating an
    /// [`ErrorCode::Other`] for an unknown code.
    #[must_use]
    pub fn parse_known(code: &str) -> Option<ErrorCode> {
        Some(match code {
            "NotImplemented" => ErrorCode::NotImplemented,
            "NotSupported" => ErrorCode::NotSupported,
            "InternalError" => ErrorCode::InternalError,
            "ProtocolError" => ErrorCode::ProtocolError,
            "SecurityError" => ErrorCode::SecurityError,
            "FormatViolation" | "FormationViolation" => ErrorCode::FormatViolation,
            "PropertyConstraintViolation" => ErrorCode::PropertyConstraintViolation,
            "OccurrenceConstraintViolation" | "OccurenceConstraintViolation" => {
                ErrorCode::OccurrenceConstraintViolation
            }
            "TypeConstraintViolation" => ErrorCode::TypeConstraintViolation,
            "GenericError" => ErrorCode::GenericError,
            "MessageTypeNotSupported" => ErrorCode::MessageTypeNotSupported,
            "RpcFrameworkError" => ErrorCode::RpcFrameworkError,
            _ => return None,
        })
    }

    /// The exact spelling of this code for `version`.
    ///
    /// For 1.6 this is [`ErrorCode::to_v16`]'s spelling, so the 2.x-only codes come out as
    /// `ProtocolError`. [`ErrorCode::Other`] is returned as received.
    #[must_use]
    pub fn as_str(&self, version: OcppVersion) -> &str {
        if let ErrorCode::Other(code) = self {
            return code;
        }
        match version {
            OcppVersion::V1_6 => self.to_v16().as_str(),
            OcppVersion::V2_0_1 | OcppVersion::V2_1 => self.to_v2().as_str(),
        }
    }

    /// The closest code of the OCPP-J 1.6 table (Table 7).
    ///
    /// The mapping is one to one except for:
    /// - `MessageTypeNotSupported` and `RpcFrameworkError` (2.x only) become `ProtocolError`.
    ///   Both report a frame that breaks the RPC protocol itself rather than a problem with an
    ///   action's payload; `ProtocolError` is the 1.6 code that names the protocol, while
    ///   `GenericError` ("any other error") would hide that category, and `FormationViolation`
    ///   is already the image of `FormatViolation`. (The envelope's own answers to bad frames on
    ///   1.6 do not go through this mapping: they use `FormationViolation` as OCPP-J 1.6 asks,
    ///   see [`crate::envelope::respond_to_parse_error`].)
    /// - [`ErrorCode::Other`] becomes `GenericError`.
    #[must_use]
    pub fn to_v16(&self) -> ErrorCodeV16 {
        match self {
            ErrorCode::NotImplemented => ErrorCodeV16::NotImplemented,
            ErrorCode::NotSupported => ErrorCodeV16::NotSupported,
            ErrorCode::InternalError => ErrorCodeV16::InternalError,
            ErrorCode::ProtocolError
            | ErrorCode::MessageTypeNotSupported
            | ErrorCode::RpcFrameworkError => ErrorCodeV16::ProtocolError,
            ErrorCode::SecurityError => ErrorCodeV16::SecurityError,
            ErrorCode::FormatViolation => ErrorCodeV16::FormationViolation,
            ErrorCode::PropertyConstraintViolation => ErrorCodeV16::PropertyConstraintViolation,
            ErrorCode::OccurrenceConstraintViolation => ErrorCodeV16::OccurenceConstraintViolation,
            ErrorCode::TypeConstraintViolation => ErrorCodeV16::TypeConstraintViolation,
            ErrorCode::GenericError | ErrorCode::Other(_) => ErrorCodeV16::GenericError,
        }
    }

    /// The code of the OCPP 2.0.1 / 2.1 table. Every known code has one;
    /// [`ErrorCode::Other`] becomes `GenericError`.
    #[must_use]
    pub fn to_v2(&self) -> ErrorCodeV2 {
        match self {
            ErrorCode::NotImplemented => ErrorCodeV2::NotImplemented,
            ErrorCode::NotSupported => ErrorCodeV2::NotSupported,
            ErrorCode::InternalError => ErrorCodeV2::InternalError,
            ErrorCode::ProtocolError => ErrorCodeV2::ProtocolError,
            ErrorCode::SecurityError => ErrorCodeV2::SecurityError,
            ErrorCode::FormatViolation => ErrorCodeV2::FormatViolation,
            ErrorCode::PropertyConstraintViolation => ErrorCodeV2::PropertyConstraintViolation,
            ErrorCode::OccurrenceConstraintViolation => ErrorCodeV2::OccurrenceConstraintViolation,
            ErrorCode::TypeConstraintViolation => ErrorCodeV2::TypeConstraintViolation,
            ErrorCode::GenericError | ErrorCode::Other(_) => ErrorCodeV2::GenericError,
            ErrorCode::MessageTypeNotSupported => ErrorCodeV2::MessageTypeNotSupported,
            ErrorCode::RpcFrameworkError => ErrorCodeV2::RpcFrameworkError,
        }
    }

    /// Whether this code is in the table of `version` (so [`ErrorCode::as_str`] does not have to
    /// map it to another code).
    #[must_use]
    pub fn is_defined_in(&self, version: OcppVersion) -> bool {
        match self {
            ErrorCode::Other(_) => false,
            ErrorCode::MessageTypeNotSupported | ErrorCode::RpcFrameworkError => version.is_2x(),
            _ => true,
        }
    }
}

impl FromStr for ErrorCode {
    type Err = core::convert::Infallible;

    /// Same as [`ErrorCode::parse`]; never fails.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(ErrorCode::parse(s))
    }
}

impl From<&str> for ErrorCode {
    fn from(code: &str) -> Self {
        ErrorCode::parse(code)
    }
}

/// The error of the strict `FromStr` of [`ErrorCodeV16`] and [`ErrorCodeV2`]: the text is not a
/// code of that version's table, spelt exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not an error code of this OCPP version's table")]
#[non_exhaustive]
pub struct UnknownErrorCode;

/// An error code of OCPP-J 1.6 (Table 7), spelt exactly as 1.6 spells it, typos included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCodeV16 {
    /// `NotImplemented`: the requested action is not known by the receiver.
    NotImplemented,
    /// `NotSupported`: the requested action is recognised but not supported.
    NotSupported,
    /// `InternalError`: an internal error kept the receiver from processing the action.
    InternalError,
    /// `ProtocolError`: the payload for the action is incomplete.
    ProtocolError,
    /// `SecurityError`: a security issue kept the receiver from completing the action.
    SecurityError,
    /// `FormationViolation` (sic): the payload is syntactically incorrect or does not conform
    /// to the PDU structure for the action.
    FormationViolation,
    /// `PropertyConstraintViolation`: a field contains an invalid value.
    PropertyConstraintViolation,
    /// `OccurenceConstraintViolation` (sic): a field violates occurrence constraints.
    OccurenceConstraintViolation,
    /// `TypeConstraintViolation`: a field violates data type constraints.
    TypeConstraintViolation,
    /// `GenericError`: any other error.
    GenericError,
}

impl ErrorCodeV16 {
    /// The ten codes, in the order of OCPP-J 1.6 Table 7.
    pub const ALL: [ErrorCodeV16; 10] = [
        ErrorCodeV16::NotImplemented,
        ErrorCodeV16::NotSupported,
        ErrorCodeV16::InternalError,
        ErrorCodeV16::ProtocolError,
        ErrorCodeV16::SecurityError,
        ErrorCodeV16::FormationViolation,
        ErrorCodeV16::PropertyConstraintViolation,
        ErrorCodeV16::OccurenceConstraintViolation,
        ErrorCodeV16::TypeConstraintViolation,
        ErrorCodeV16::GenericError,
    ];

    /// The exact 1.6 spelling.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCodeV16::NotImplemented => "NotImplemented",
            ErrorCodeV16::NotSupported => "NotSupported",
            ErrorCodeV16::InternalError => "InternalError",
            ErrorCodeV16::ProtocolError => "ProtocolError",
            ErrorCodeV16::SecurityError => "SecurityError",
            ErrorCodeV16::FormationViolation => "FormationViolation",
            ErrorCodeV16::PropertyConstraintViolation => "PropertyConstraintViolation",
            ErrorCodeV16::OccurenceConstraintViolation => "OccurenceConstraintViolation",
            ErrorCodeV16::TypeConstraintViolation => "TypeConstraintViolation",
            ErrorCodeV16::GenericError => "GenericError",
        }
    }

    /// The closest 1.6 code for a 2.x code; see [`ErrorCode::to_v16`] for the two codes that
    /// have no 1.6 counterpart.
    #[must_use]
    pub fn from_v2(code: ErrorCodeV2) -> ErrorCodeV16 {
        ErrorCode::from(code).to_v16()
    }
}

impl fmt::Display for ErrorCodeV16 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ErrorCodeV16 {
    type Err = UnknownErrorCode;

    /// Strict: only the exact 1.6 spellings. Use [`ErrorCode::parse`] to accept any spelling.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ErrorCodeV16::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or(UnknownErrorCode)
    }
}

/// An error code of OCPP 2.0.1 (Part 4 Table 8) and OCPP 2.1 (Part 4 Table 9), whose tables are
/// identical, spelt exactly as 2.x spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCodeV2 {
    /// `FormatViolation`: the payload for the action is syntactically incorrect.
    FormatViolation,
    /// `GenericError`: any other error not covered by a more specific code.
    GenericError,
    /// `InternalError`: an internal error kept the receiver from processing the action.
    InternalError,
    /// `MessageTypeNotSupported`: a message type number the receiver does not support.
    MessageTypeNotSupported,
    /// `NotImplemented`: the requested action is not known by the receiver.
    NotImplemented,
    /// `NotSupported`: the requested action is recognised but not supported.
    NotSupported,
    /// `OccurrenceConstraintViolation`: a field violates occurrence constraints.
    OccurrenceConstraintViolation,
    /// `PropertyConstraintViolation`: a field contains an invalid value.
    PropertyConstraintViolation,
    /// `ProtocolError`: the payload does not conform to the PDU structure.
    ProtocolError,
    /// `RpcFrameworkError`: not a valid RPC request, e.g. the message id could not be read.
    RpcFrameworkError,
    /// `SecurityError`: a security issue kept the receiver from completing the action.
    SecurityError,
    /// `TypeConstraintViolation`: a field violates data type constraints.
    TypeConstraintViolation,
}

impl ErrorCodeV2 {
    /// The twelve codes, in the (alphabetical) order of OCPP 2.0.1 Part 4 Table 8.
    pub const ALL: [ErrorCodeV2; 12] = [
        ErrorCodeV2::FormatViolation,
        ErrorCodeV2::GenericError,
        ErrorCodeV2::InternalError,
        ErrorCodeV2::MessageTypeNotSupported,
        ErrorCodeV2::NotImplemented,
        ErrorCodeV2::NotSupported,
        ErrorCodeV2::OccurrenceConstraintViolation,
        ErrorCodeV2::PropertyConstraintViolation,
        ErrorCodeV2::ProtocolError,
        ErrorCodeV2::RpcFrameworkError,
        ErrorCodeV2::SecurityError,
        ErrorCodeV2::TypeConstraintViolation,
    ];

    /// The exact 2.x spelling.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCodeV2::FormatViolation => "FormatViolation",
            ErrorCodeV2::GenericError => "GenericError",
            ErrorCodeV2::InternalError => "InternalError",
            ErrorCodeV2::MessageTypeNotSupported => "MessageTypeNotSupported",
            ErrorCodeV2::NotImplemented => "NotImplemented",
            ErrorCodeV2::NotSupported => "NotSupported",
            ErrorCodeV2::OccurrenceConstraintViolation => "OccurrenceConstraintViolation",
            ErrorCodeV2::PropertyConstraintViolation => "PropertyConstraintViolation",
            ErrorCodeV2::ProtocolError => "ProtocolError",
            ErrorCodeV2::RpcFrameworkError => "RpcFrameworkError",
            ErrorCodeV2::SecurityError => "SecurityError",
            ErrorCodeV2::TypeConstraintViolation => "TypeConstraintViolation",
        }
    }
}

impl fmt::Display for ErrorCodeV2 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ErrorCodeV2 {
    type Err = UnknownErrorCode;

    /// Strict: only the exact 2.x spellings. Use [`ErrorCode::parse`] to accept any spelling.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ErrorCodeV2::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or(UnknownErrorCode)
    }
}

impl From<ErrorCodeV16> for ErrorCode {
    fn from(code: ErrorCodeV16) -> Self {
        match code {
            ErrorCodeV16::NotImplemented => ErrorCode::NotImplemented,
            ErrorCodeV16::NotSupported => ErrorCode::NotSupported,
            ErrorCodeV16::InternalError => ErrorCode::InternalError,
            ErrorCodeV16::ProtocolError => ErrorCode::ProtocolError,
            ErrorCodeV16::SecurityError => ErrorCode::SecurityError,
            ErrorCodeV16::FormationViolation => ErrorCode::FormatViolation,
            ErrorCodeV16::PropertyConstraintViolation => ErrorCode::PropertyConstraintViolation,
            ErrorCodeV16::OccurenceConstraintViolation => ErrorCode::OccurrenceConstraintViolation,
            ErrorCodeV16::TypeConstraintViolation => ErrorCode::TypeConstraintViolation,
            ErrorCodeV16::GenericError => ErrorCode::GenericError,
        }
    }
}

impl From<ErrorCodeV2> for ErrorCode {
    fn from(code: ErrorCodeV2) -> Self {
        match code {
            ErrorCodeV2::FormatViolation => ErrorCode::FormatViolation,
            ErrorCodeV2::GenericError => ErrorCode::GenericError,
            ErrorCodeV2::InternalError => ErrorCode::InternalError,
            ErrorCodeV2::MessageTypeNotSupported => ErrorCode::MessageTypeNotSupported,
            ErrorCodeV2::NotImplemented => ErrorCode::NotImplemented,
            ErrorCodeV2::NotSupported => ErrorCode::NotSupported,
            ErrorCodeV2::OccurrenceConstraintViolation => ErrorCode::OccurrenceConstraintViolation,
            ErrorCodeV2::PropertyConstraintViolation => ErrorCode::PropertyConstraintViolation,
            ErrorCodeV2::ProtocolError => ErrorCode::ProtocolError,
            ErrorCodeV2::RpcFrameworkError => ErrorCode::RpcFrameworkError,
            ErrorCodeV2::SecurityError => ErrorCode::SecurityError,
            ErrorCodeV2::TypeConstraintViolation => ErrorCode::TypeConstraintViolation,
        }
    }
}

impl From<ErrorCodeV16> for ErrorCodeV2 {
    /// Lossless: every 1.6 code has a 2.x counterpart with the same meaning.
    fn from(code: ErrorCodeV16) -> Self {
        ErrorCode::from(code).to_v2()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    const V16_SPELLINGS: [&str; 10] = [
        "NotImplemented",
        "NotSupported",
        "InternalError",
        "ProtocolError",
        "SecurityError",
        "FormationViolation",
        "PropertyConstraintViolation",
        "OccurenceConstraintViolation",
        "TypeConstraintViolation",
        "GenericError",
    ];
    const V2_SPELLINGS: [&str; 12] = [
        "FormatViolation",
        "GenericError",
        "InternalError",
        "MessageTypeNotSupported",
        "NotImplemented",
        "NotSupported",
        "OccurrenceConstraintViolation",
        "PropertyConstraintViolation",
        "ProtocolError",
        "RpcFrameworkError",
        "SecurityError",
        "TypeConstraintViolation",
    ];

    #[test]
    fn tables_are_spelt_exactly() {
        let v16: alloc::vec::Vec<_> = ErrorCodeV16::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(v16, V16_SPELLINGS);
        let v2: alloc::vec::Vec<_> = ErrorCodeV2::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(v2, V2_SPELLINGS);
    }

    #[test]
    fn every_spelling_parses_and_respells_per_version() {
        for s in V16_SPELLINGS {
            let code = ErrorCode::parse(s);
            assert!(!matches!(code, ErrorCode::Other(_)), "{s}");
            assert_eq!(code.as_str(OcppVersion::V1_6), s);
            assert_eq!(s.parse::<ErrorCodeV16>().map(ErrorCode::from), Ok(code));
        }
        for s in V2_SPELLINGS {
            let code = ErrorCode::parse(s);
            assert!(!matches!(code, ErrorCode::Other(_)), "{s}");
            assert_eq!(code.as_str(OcppVersion::V2_0_1), s);
            assert_eq!(code.as_str(OcppVersion::V2_1), s);
            assert_eq!(s.parse::<ErrorCodeV2>().map(ErrorCode::from), Ok(code));
        }
    }

    #[test]
    fn typo_spellings_are_version_specific() {
        let f = ErrorCode::parse("FormatViolation");
        assert_eq!(f, ErrorCode::parse("FormationViolation"));
        assert_eq!(f.as_str(OcppVersion::V1_6), "FormationViolation");
        assert_eq!(f.as_str(OcppVersion::V2_1), "FormatViolation");
        let o = ErrorCode::parse("OccurenceConstraintViolation");
        assert_eq!(o, ErrorCode::OccurrenceConstraintViolation);
        assert_eq!(o.as_str(OcppVersion::V1_6), "OccurenceConstraintViolation");
        assert_eq!(
            o.as_str(OcppVersion::V2_0_1),
            "OccurrenceConstraintViolation"
        );
        // The strict per-version parsers refuse the other version's spelling.
        assert!("FormatViolation".parse::<ErrorCodeV16>().is_err());
        assert!("FormationViolation".parse::<ErrorCodeV2>().is_err());
        assert!("OccurrenceConstraintViolation"
            .parse::<ErrorCodeV16>()
            .is_err());
        assert!("OccurenceConstraintViolation"
            .parse::<ErrorCodeV2>()
            .is_err());
    }

    #[test]
    fn two_x_only_codes_map_to_protocol_error_on_1_6() {
        for c in [
            ErrorCode::MessageTypeNotSupported,
            ErrorCode::RpcFrameworkError,
        ] {
            assert_eq!(c.as_str(OcppVersion::V1_6), "ProtocolError");
            assert!(!c.is_defined_in(OcppVersion::V1_6));
            assert!(c.is_defined_in(OcppVersion::V2_0_1));
        }
    }

    #[test]
    fn every_1_6_code_round_trips_through_2x() {
        for c in ErrorCodeV16::ALL {
            assert_eq!(ErrorCodeV16::from_v2(ErrorCodeV2::from(c)), c);
        }
        for c in ErrorCode::KNOWN {
            assert_eq!(ErrorCode::from(c.to_v2()), c);
        }
    }

    #[test]
    fn unknown_codes_are_kept() {
        let c = ErrorCode::parse("formatviolation");
        assert_eq!(c, ErrorCode::Other("formatviolation".to_string()));
        assert_eq!(c.as_str(OcppVersion::V2_1), "formatviolation");
        assert_eq!(c.to_v16(), ErrorCodeV16::GenericError);
        assert_eq!(c.to_v2(), ErrorCodeV2::GenericError);
        assert_eq!(ErrorCode::parse_known(""), None);
    }

    #[test]
    fn not_implemented_and_not_supported_are_not_swapped() {
        assert_eq!(
            ErrorCode::NotImplemented.as_str(OcppVersion::V1_6),
            "NotImplemented"
        );
        assert_eq!(
            ErrorCode::NotSupported.as_str(OcppVersion::V2_0_1),
            "NotSupported"
        );
    }
}
