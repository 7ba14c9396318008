//! Typed payloads of the negotiated version: one enum over the three versions' generated types.

use ocpp_messages::decode::{DecodeError, DecodeOptions};
use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::validate::ViolationKind;
use ocpp_messages::version::OcppVersion;
use ocpp_messages::{v1_6, v2_0_1, v2_1};
use serde::Serialize;

/// A request payload (of a CALL or a SEND) of one OCPP version (boxed: the generated enums are
/// as large as their largest message).
///
/// ```
/// use ocpp_server_core::Request;
/// use ocpp_messages::v1_6;
/// let heartbeat = Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}));
/// assert_eq!(heartbeat.action(), "Heartbeat");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Request {
    /// OCPP 1.6.
    V1_6(Box<v1_6::Request>),
    /// OCPP 2.0.1.
    V2_0_1(Box<v2_0_1::Request>),
    /// OCPP 2.1.
    V2_1(Box<v2_1::Request>),
}

/// A response payload (of a CALLRESULT) of one OCPP version.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Response {
    /// OCPP 1.6.
    V1_6(Box<v1_6::Response>),
    /// OCPP 2.0.1.
    V2_0_1(Box<v2_0_1::Response>),
    /// OCPP 2.1.
    V2_1(Box<v2_1::Response>),
}

macro_rules! versioned {
    ($ty:ident) => {
        impl $ty {
            /// The OCPP version of this payload.
            pub fn version(&self) -> OcppVersion {
                match self {
                    $ty::V1_6(_) => OcppVersion::V1_6,
                    $ty::V2_0_1(_) => OcppVersion::V2_0_1,
                    $ty::V2_1(_) => OcppVersion::V2_1,
                }
            }

            /// The action's name as on the wire.
            pub fn action(&self) -> &'static str {
                match self {
                    $ty::V1_6(p) => p.action().as_str(),
                    $ty::V2_0_1(p) => p.action().as_str(),
                    $ty::V2_1(p) => p.action().as_str(),
                }
            }
        }

        impl Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $ty::V1_6(p) => p.serialize(s),
                    $ty::V2_0_1(p) => p.serialize(s),
                    $ty::V2_1(p) => p.serialize(s),
                }
            }
        }

        impl From<v1_6::$ty> for $ty {
            fn from(p: v1_6::$ty) -> Self {
                $ty::V1_6(Box::new(p))
            }
        }

        impl From<v2_0_1::$ty> for $ty {
            fn from(p: v2_0_1::$ty) -> Self {
                $ty::V2_0_1(Box::new(p))
            }
        }

        impl From<v2_1::$ty> for $ty {
            fn from(p: v2_1::$ty) -> Self {
                $ty::V2_1(Box::new(p))
            }
        }
    };
}

versioned!(Request);
versioned!(Response);

/// Decodes a CALL or SEND payload of `action` for `version`.
pub(crate) fn decode_call(
    version: OcppVersion,
    action: &str,
    payload: &str,
    options: &DecodeOptions,
) -> Result<Request, DecodeError> {
    Ok(match version {
        OcppVersion::V1_6 => Request::from(v1_6::decode_call_with(action, payload, options)?),
        OcppVersion::V2_0_1 => Request::from(v2_0_1::decode_call_with(action, payload, options)?),
        OcppVersion::V2_1 => Request::from(v2_1::decode_call_with(action, payload, options)?),
    })
}

/// Decodes a CALLRESULT payload answering a CALL of `action` for `version`.
pub(crate) fn decode_result(
    version: OcppVersion,
    action: &str,
    payload: &str,
    options: &DecodeOptions,
) -> Result<Response, DecodeError> {
    Ok(match version {
        OcppVersion::V1_6 => Response::from(v1_6::decode_result_with(action, payload, options)?),
        OcppVersion::V2_0_1 => {
            Response::from(v2_0_1::decode_result_with(action, payload, options)?)
        }
        OcppVersion::V2_1 => Response::from(v2_1::decode_result_with(action, payload, options)?),
    })
}

/// The CALLERROR code for a payload that failed to decode (OCPP-J 1.6 §4.2.3, OCPP 2.0.1 Part 4
/// §4.3): NotImplemented for an unknown action, the violation's own code otherwise.
pub(crate) fn error_code_for(error: &DecodeError) -> ErrorCode {
    match error {
        DecodeError::UnknownAction(_) => ErrorCode::NotImplemented,
        other => match other.violation_kind() {
            Some(ViolationKind::Type) => ErrorCode::TypeConstraintViolation,
            Some(ViolationKind::Property) => ErrorCode::PropertyConstraintViolation,
            Some(ViolationKind::Occurrence) => ErrorCode::OccurrenceConstraintViolation,
            Some(ViolationKind::Format) => ErrorCode::FormatViolation,
            Some(_) | None => ErrorCode::ProtocolError,
        },
    }
}
