//! Decoding a payload into its typed form: parse the JSON, check it against the schema (strict
//! or lenient), then build the Rust value.
//!
//! Numbers declared `"type": "number"` in the schemas decode to [`Decimal`](crate::Decimal),
//! read from the payload's text digit for digit: `2935.600` is encoded again as `2935.600`,
//! and `minimum`, `maximum` and `multipleOf` are checked exactly. Integers are 32-bit, as OCPP
//! defines them.

use alloc::collections::BTreeSet;
use alloc::string::{String, ToString};

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error_code::ErrorCode;
use crate::validate::{Mode, Path, Schema, Violation, ViolationKind};
use crate::version::OcppVersion;

/// Why a payload could not be decoded. Each variant tells which CALLERROR to answer with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The action name is not one of the version's actions: answer `NotImplemented`.
    #[error("unknown action `{0}`")]
    UnknownAction(String),
    /// The action is SEND-only (OCPP 2.1 `NotifyPeriodicEventStream`), so no CALLRESULT can
    /// answer it.
    #[error("`{0}` is a SEND-only action and has no response")]
    NoResponse(&'static str),
    /// The payload is not valid JSON: answer `FormationViolation` (1.6) / `FormatViolation`
    /// (2.x).
    #[error("payload is not valid JSON: {0}")]
    Json(String),
    /// The payload is JSON but breaks the action's schema; the kind gives the error code.
    #[error("payload violates the schema: {0}")]
    Violation(#[from] Violation),
    /// The payload is of an OCPP version whose feature (`v1_6`, `v2_0_1`, `v2_1`) is off in
    /// this build, so it has no types to decode into: answer `ProtocolError`.
    #[error("OCPP {0} is not compiled in (its cargo feature is off)")]
    VersionNotCompiled(OcppVersion),
}

impl DecodeError {
    /// The violation kind this error maps to: [`ViolationKind::Format`] for JSON that does not
    /// parse, the violation's kind for a schema violation, `None` for an unknown action (answer
    /// `NotImplemented`) or a response to a SEND-only action.
    pub fn violation_kind(&self) -> Option<ViolationKind> {
        match self {
            DecodeError::Json(_) => Some(ViolationKind::Format),
            DecodeError::Violation(v) => Some(v.kind()),
            DecodeError::UnknownAction(_)
            | DecodeError::NoResponse(_)
            | DecodeError::VersionNotCompiled(_) => None,
        }
    }

    /// The CALLERROR code to answer a payload that failed to decode with (OCPP-J 1.6 §4.2.3,
    /// OCPP 2.0.1 Part 4 §4.3): `NotImplemented` for an unknown action, the code of the
    /// violation's kind (`TypeConstraintViolation`, `PropertyConstraintViolation`,
    /// `OccurrenceConstraintViolation`, `FormatViolation`) for JSON that does not parse or
    /// breaks the schema, `ProtocolError` otherwise. The code is spelt per version when written
    /// (`FormationViolation` in 1.6).
    ///
    /// ```
    /// use ocpp_messages::{v1_6, ErrorCode};
    ///
    /// let unknown = v1_6::decode_call("NoSuchAction", "{}").unwrap_err();
    /// assert_eq!(unknown.error_code(), ErrorCode::NotImplemented);
    /// let missing = v1_6::decode_call("BootNotification", "{}").unwrap_err();
    /// assert_eq!(missing.error_code(), ErrorCode::OccurrenceConstraintViolation);
    /// let not_json = v1_6::decode_call("Heartbeat", "{").unwrap_err();
    /// assert_eq!(not_json.error_code(), ErrorCode::FormatViolation);
    /// ```
    pub fn error_code(&self) -> ErrorCode {
        match self {
            DecodeError::UnknownAction(_) => ErrorCode::NotImplemented,
            other => match other.violation_kind() {
                Some(ViolationKind::Type) => ErrorCode::TypeConstraintViolation,
                Some(ViolationKind::Property) => ErrorCode::PropertyConstraintViolation,
                Some(ViolationKind::Occurrence) => ErrorCode::OccurrenceConstraintViolation,
                Some(ViolationKind::Format) => ErrorCode::FormatViolation,
                None => ErrorCode::ProtocolError,
            },
        }
    }
}

/// The error of `Action::from_str`: the name is not an action of this version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("unknown action")]
pub struct UnknownAction;

/// Which actions are decoded strictly and which leniently ([`Mode`]).
///
/// ```
/// use ocpp_messages::{DecodeOptions, Mode};
///
/// let options = DecodeOptions::strict().with_lenient_action("StatusNotification");
/// assert_eq!(options.mode_for("StatusNotification"), Mode::Lenient);
/// assert_eq!(options.mode_for("BootNotification"), Mode::Strict);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecodeOptions {
    default: Mode,
    exceptions: BTreeSet<String>,
}

impl DecodeOptions {
    /// Every action strict (the default).
    pub fn strict() -> Self {
        DecodeOptions {
            default: Mode::Strict,
            exceptions: BTreeSet::new(),
        }
    }

    /// Every action lenient.
    pub fn lenient() -> Self {
        DecodeOptions {
            default: Mode::Lenient,
            exceptions: BTreeSet::new(),
        }
    }

    /// Decodes `action` leniently whatever the default.
    pub fn with_lenient_action(mut self, action: &str) -> Self {
        self.set(action, Mode::Lenient);
        self
    }

    /// Decodes `action` strictly whatever the default.
    pub fn with_strict_action(mut self, action: &str) -> Self {
        self.set(action, Mode::Strict);
        self
    }

    fn set(&mut self, action: &str, mode: Mode) {
        if mode == self.default {
            self.exceptions.remove(action);
        } else {
            self.exceptions.insert(action.to_string());
        }
    }

    /// The mode for `action`.
    pub fn mode_for(&self, action: &str) -> Mode {
        match (self.default, self.exceptions.contains(action)) {
            (mode, false) => mode,
            (Mode::Strict, true) => Mode::Lenient,
            (Mode::Lenient, true) => Mode::Strict,
        }
    }
}

mod one_pass;

/// Parses `payload`, checks it against `T`'s schema in `mode` and builds the value.
///
/// A payload that keeps the schema is read in one pass, straight into `T`; one that breaks
/// it (or has a `null` somewhere) is read again through a `serde_json::Value`, checked rule
/// by rule ([`Schema::check_json`]), and the first violation found is the error. Both ways
/// give the same answer.
///
/// ```
/// use ocpp_messages::decode::decode_payload;
/// use ocpp_messages::validate::Mode;
/// use ocpp_messages::v1_6::StatusNotificationRequest;
///
/// let ok = r#"{"connectorId":1,"errorCode":"NoError","status":"Available"}"#;
/// let status: StatusNotificationRequest = decode_payload(ok, Mode::Strict)?;
/// assert_eq!(status.connector_id, 1);
/// let unknown = r#"{"connectorId":1,"errorCode":"NoError","status":"Available","x":1}"#;
/// let err = decode_payload::<StatusNotificationRequest>(unknown, Mode::Strict).unwrap_err();
/// assert_eq!(err.error_code(), ocpp_messages::ErrorCode::FormatViolation); // additionalProperties
/// assert!(decode_payload::<StatusNotificationRequest>(unknown, Mode::Lenient).is_ok());
/// # Ok::<(), ocpp_messages::DecodeError>(())
/// ```
pub fn decode_payload<T: Schema + DeserializeOwned>(
    payload: &str,
    mode: Mode,
) -> Result<T, DecodeError> {
    if let Some(value) = one_pass::decode(payload, mode) {
        return Ok(value);
    }
    decode_checked(payload, mode)
}

/// [`decode_payload`] without the one-pass attempt: always through a `serde_json::Value` and
/// [`Schema::check_json`]. Slower, and the same answer; for differential tests.
///
/// ```
/// use ocpp_messages::decode::{decode_checked, decode_payload};
/// use ocpp_messages::validate::Mode;
/// use ocpp_messages::v1_6::HeartbeatResponse;
///
/// let text = r#"{"currentTime":"2025-01-01T00:00:00Z"}"#;
/// assert_eq!(
///     decode_checked::<HeartbeatResponse>(text, Mode::Strict),
///     decode_payload::<HeartbeatResponse>(text, Mode::Strict)
/// );
/// ```
pub fn decode_checked<T: Schema + DeserializeOwned>(
    payload: &str,
    mode: Mode,
) -> Result<T, DecodeError> {
    let value: Value =
        serde_json::from_str(payload).map_err(|e| DecodeError::Json(e.to_string()))?;
    T::check_json(&value, &Path::Root, mode)?;
    // Built from the text rather than the `Value`, so that numbers keep their digits (a
    // `Value` holds an f64). Serde refuses a duplicate property, which the `Value` took (the
    // last one wins): such a payload is built from the `Value`, as `decode_value` does.
    match serde_json::from_str(payload) {
        Ok(typed) => Ok(typed),
        Err(_) => build(value),
    }
}

/// Checks an already parsed payload against `T`'s schema in `mode` and builds the value.
///
/// Numbers come from the `Value`, so a [`Decimal`](crate::Decimal) has the digits of its
/// `f64` (`2935.600` reads as `2935.6`, the same value) unless serde_json's
/// `arbitrary_precision` is on; decode from the text ([`decode_payload`]) to keep them all.
pub fn decode_value<T: Schema + DeserializeOwned>(
    value: Value,
    mode: Mode,
) -> Result<T, DecodeError> {
    T::check_json(&value, &Path::Root, mode)?;
    build(value)
}

fn build<T: DeserializeOwned>(value: Value) -> Result<T, DecodeError> {
    // After the check, building the value only fails where a type is narrower than the check
    // (never, for the generated types); report it as a type violation rather than panic.
    T::deserialize(value)
        .map_err(|e| Violation::new(ViolationKind::Type, &Path::Root, e.to_string()).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn violation(kind: ViolationKind) -> DecodeError {
        DecodeError::Violation(Violation::new(kind, &Path::Root, "rule"))
    }

    #[test]
    fn error_code_per_kind() {
        assert_eq!(
            DecodeError::UnknownAction("Foo".into()).error_code(),
            ErrorCode::NotImplemented
        );
        assert_eq!(
            DecodeError::Json("eof".into()).error_code(),
            ErrorCode::FormatViolation
        );
        for (kind, code) in [
            (ViolationKind::Type, ErrorCode::TypeConstraintViolation),
            (
                ViolationKind::Property,
                ErrorCode::PropertyConstraintViolation,
            ),
            (
                ViolationKind::Occurrence,
                ErrorCode::OccurrenceConstraintViolation,
            ),
            (ViolationKind::Format, ErrorCode::FormatViolation),
        ] {
            assert_eq!(violation(kind).error_code(), code, "{kind:?}");
        }
        assert_eq!(
            DecodeError::NoResponse("NotifyPeriodicEventStream").error_code(),
            ErrorCode::ProtocolError
        );
        assert_eq!(
            DecodeError::VersionNotCompiled(OcppVersion::V2_1).error_code(),
            ErrorCode::ProtocolError
        );
    }

    #[test]
    fn error_code_spelt_per_version() {
        let code = violation(ViolationKind::Occurrence).error_code();
        assert_eq!(
            code.as_str(OcppVersion::V1_6),
            "OccurenceConstraintViolation"
        );
        assert_eq!(
            code.as_str(OcppVersion::V2_0_1),
            "OccurrenceConstraintViolation"
        );
    }
}
