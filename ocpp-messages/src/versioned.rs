//! [`Request`] and [`Response`]: a payload of any action of any OCPP version compiled in, for code
//! that serves several versions (the version is negotiated per connection, OCPP-J 1.6 §3,
//! OCPP 2.0.1 Part 4 §3).
//!
//! Every typed payload converts into them with one `.into()`, and back with `try_into()`
//! (`TryFrom`, handing the value back unchanged when it is another action or version).
//! [`Request::view`] borrows one as [`RequestRef`], so that a single `match` reaches every
//! version's and action's payload.
//!
//! ```
//! use ocpp_messages::v1_6::{HeartbeatRequest, HeartbeatResponse};
//! use ocpp_messages::{DateTime, OcppVersion, Request, Response};
//!
//! let request: Request = HeartbeatRequest::default().into();
//! assert_eq!((request.version(), request.action()), (OcppVersion::V1_6, "Heartbeat"));
//!
//! let time: DateTime = "2025-01-02T03:04:05Z".parse().unwrap();
//! let response: Response = HeartbeatResponse::new(time).into();
//! let json = serde_json::to_string(&response).unwrap();
//! assert_eq!(json, r#"{"currentTime":"2025-01-02T03:04:05Z"}"#);
//!
//! // Back to the typed payload of one action:
//! let heartbeat = HeartbeatResponse::try_from(response).unwrap();
//! assert_eq!(heartbeat.current_time.as_str(), "2025-01-02T03:04:05Z");
//! ```

use alloc::boxed::Box;

use crate::decode::{DecodeError, DecodeOptions};
use crate::version::OcppVersion;

#[cfg(feature = "v1_6")]
use crate::v1_6;
#[cfg(feature = "v2_0_1")]
use crate::v2_0_1;
#[cfg(feature = "v2_1")]
use crate::v2_1;

/// A request payload (of a CALL, or of a SEND) of one OCPP version; boxed, as the per-version
/// enums are as large as their largest message.
///
/// ```
/// use ocpp_messages::{v2_0_1, DecodeOptions, OcppVersion, Request};
///
/// let request = Request::decode(
///     OcppVersion::V2_0_1,
///     "Heartbeat",
///     "{}",
///     &DecodeOptions::strict(),
/// )
/// .unwrap();
/// assert_eq!(request, Request::from(v2_0_1::HeartbeatRequest::default()));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Request {
    /// OCPP 1.6.
    #[cfg(feature = "v1_6")]
    V1_6(Box<v1_6::Request>),
    /// OCPP 2.0.1.
    #[cfg(feature = "v2_0_1")]
    V2_0_1(Box<v2_0_1::Request>),
    /// OCPP 2.1.
    #[cfg(feature = "v2_1")]
    V2_1(Box<v2_1::Request>),
}

/// A response payload (of a CALLRESULT) of one OCPP version; boxed like [`Request`].
///
/// ```
/// use ocpp_messages::{v1_6, DecodeOptions, OcppVersion, Response};
///
/// let payload = r#"{"currentTime":"2025-01-02T03:04:05Z"}"#;
/// let response =
///     Response::decode(OcppVersion::V1_6, "Heartbeat", payload, &DecodeOptions::strict())
///         .unwrap();
/// let heartbeat = v1_6::HeartbeatResponse::try_from(response).unwrap();
/// assert_eq!(heartbeat.current_time.as_str(), "2025-01-02T03:04:05Z");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Response {
    /// OCPP 1.6.
    #[cfg(feature = "v1_6")]
    V1_6(Box<v1_6::Response>),
    /// OCPP 2.0.1.
    #[cfg(feature = "v2_0_1")]
    V2_0_1(Box<v2_0_1::Response>),
    /// OCPP 2.1.
    #[cfg(feature = "v2_1")]
    V2_1(Box<v2_1::Response>),
}

/// A borrowed [`Request`] ([`Request::view`]): one `match` over every version and action.
///
/// ```
/// use ocpp_messages::{v1_6, v2_0_1, DecodeOptions, OcppVersion, Request, RequestRef};
///
/// let payload = r#"{"chargePointVendor":"ACME","chargePointModel":"One"}"#;
/// let request =
///     Request::decode(OcppVersion::V1_6, "BootNotification", payload, &DecodeOptions::strict())
///         .unwrap();
/// let model = match request.view() {
///     RequestRef::V1_6(v1_6::Request::BootNotification(boot)) => boot.charge_point_model.as_str(),
///     RequestRef::V2_0_1(v2_0_1::Request::BootNotification(boot)) => {
///         boot.charging_station.model.as_str()
///     }
///     _ => "",
/// };
/// assert_eq!(model, "One");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum RequestRef<'a> {
    /// OCPP 1.6.
    #[cfg(feature = "v1_6")]
    V1_6(&'a v1_6::Request),
    /// OCPP 2.0.1.
    #[cfg(feature = "v2_0_1")]
    V2_0_1(&'a v2_0_1::Request),
    /// OCPP 2.1.
    #[cfg(feature = "v2_1")]
    V2_1(&'a v2_1::Request),
}

/// A borrowed [`Response`] ([`Response::view`]): one `match` over every version and action.
///
/// ```
/// use ocpp_messages::{v1_6, v2_0_1, DateTime, Response, ResponseRef};
///
/// let time = DateTime::from_unix_timestamp(0).unwrap();
/// let response = Response::from(v1_6::HeartbeatResponse::new(time));
/// let time = match response.view() {
///     ResponseRef::V1_6(v1_6::Response::Heartbeat(h)) => Some(h.current_time.unix_timestamp()),
///     ResponseRef::V2_0_1(v2_0_1::Response::Heartbeat(h)) => Some(h.current_time.unix_timestamp()),
///     _ => None,
/// };
/// assert_eq!(time, Some(0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum ResponseRef<'a> {
    /// OCPP 1.6.
    #[cfg(feature = "v1_6")]
    V1_6(&'a v1_6::Response),
    /// OCPP 2.0.1.
    #[cfg(feature = "v2_0_1")]
    V2_0_1(&'a v2_0_1::Response),
    /// OCPP 2.1.
    #[cfg(feature = "v2_1")]
    V2_1(&'a v2_1::Response),
}

/// What `Request` and `Response` share: version, action, view, validation, serialisation.
macro_rules! versioned {
    ($ty:ident, $view:ident, $what:literal) => {
        impl $ty {
            /// The OCPP version of this payload.
            pub fn version(&self) -> OcppVersion {
                match *self {
                    #[cfg(feature = "v1_6")]
                    $ty::V1_6(_) => OcppVersion::V1_6,
                    #[cfg(feature = "v2_0_1")]
                    $ty::V2_0_1(_) => OcppVersion::V2_0_1,
                    #[cfg(feature = "v2_1")]
                    $ty::V2_1(_) => OcppVersion::V2_1,
                }
            }

            /// The action's name as on the wire, e.g. `BootNotification`.
            pub fn action(&self) -> &'static str {
                match *self {
                    #[cfg(feature = "v1_6")]
                    $ty::V1_6(ref p) => p.action().as_str(),
                    #[cfg(feature = "v2_0_1")]
                    $ty::V2_0_1(ref p) => p.action().as_str(),
                    #[cfg(feature = "v2_1")]
                    $ty::V2_1(ref p) => p.action().as_str(),
                }
            }

            #[doc = concat!("Borrows the version's ", $what, " enum, to match versions and actions at once.")]
            pub fn view(&self) -> $view<'_> {
                match *self {
                    #[cfg(feature = "v1_6")]
                    $ty::V1_6(ref p) => $view::V1_6(p),
                    #[cfg(feature = "v2_0_1")]
                    $ty::V2_0_1(ref p) => $view::V2_0_1(p),
                    #[cfg(feature = "v2_1")]
                    $ty::V2_1(ref p) => $view::V2_1(p),
                }
            }

            /// Checks the payload against its schema in strict mode (e.g. before sending it).
            pub fn validate(&self) -> Result<(), crate::validate::Violation> {
                match *self {
                    #[cfg(feature = "v1_6")]
                    $ty::V1_6(ref p) => p.validate(),
                    #[cfg(feature = "v2_0_1")]
                    $ty::V2_0_1(ref p) => p.validate(),
                    #[cfg(feature = "v2_1")]
                    $ty::V2_1(ref p) => p.validate(),
                }
            }
        }

        /// Serialises the payload itself (the version is not written).
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let _ = &serializer;
                match *self {
                    #[cfg(feature = "v1_6")]
                    $ty::V1_6(ref p) => p.serialize(serializer),
                    #[cfg(feature = "v2_0_1")]
                    $ty::V2_0_1(ref p) => p.serialize(serializer),
                    #[cfg(feature = "v2_1")]
                    $ty::V2_1(ref p) => p.serialize(serializer),
                }
            }
        }
    };
}

versioned!(Request, RequestRef, "request");
versioned!(Response, ResponseRef, "response");

impl Request {
    /// Decodes the payload of a CALL (or SEND) of `action` for `version`, strict or lenient as
    /// `options` say for this action.
    ///
    /// Errors: [`DecodeError::UnknownAction`], [`DecodeError::Json`], [`DecodeError::Violation`],
    /// or [`DecodeError::VersionNotCompiled`] when `version`'s feature is off;
    /// [`DecodeError::error_code`] gives the CALLERROR to answer with.
    ///
    /// ```
    /// use ocpp_messages::{DecodeError, DecodeOptions, ErrorCode, OcppVersion, Request};
    ///
    /// let options = DecodeOptions::strict();
    /// let error = Request::decode(OcppVersion::V2_1, "NoSuchAction", "{}", &options).unwrap_err();
    /// assert_eq!(error, DecodeError::UnknownAction("NoSuchAction".into()));
    /// assert_eq!(error.error_code(), ErrorCode::NotImplemented);
    /// ```
    pub fn decode(
        version: OcppVersion,
        action: &str,
        payload: &str,
        options: &DecodeOptions,
    ) -> Result<Request, DecodeError> {
        let _ = (action, payload, options);
        match version {
            #[cfg(feature = "v1_6")]
            OcppVersion::V1_6 => Ok(v1_6::decode_call_with(action, payload, options)?.into()),
            #[cfg(feature = "v2_0_1")]
            OcppVersion::V2_0_1 => Ok(v2_0_1::decode_call_with(action, payload, options)?.into()),
            #[cfg(feature = "v2_1")]
            OcppVersion::V2_1 => Ok(v2_1::decode_call_with(action, payload, options)?.into()),
            #[allow(unreachable_patterns)]
            other => Err(DecodeError::VersionNotCompiled(other)),
        }
    }
}

impl Response {
    /// Decodes the payload of a CALLRESULT answering a CALL of `action` (a CALLRESULT carries no
    /// action name: take it from the pending CALL) for `version`, strict or lenient as `options`
    /// say for this action.
    ///
    /// Errors as [`Request::decode`], and [`DecodeError::NoResponse`] for a SEND-only action.
    pub fn decode(
        version: OcppVersion,
        action: &str,
        payload: &str,
        options: &DecodeOptions,
    ) -> Result<Response, DecodeError> {
        let _ = (action, payload, options);
        match version {
            #[cfg(feature = "v1_6")]
            OcppVersion::V1_6 => Ok(v1_6::decode_result_with(action, payload, options)?.into()),
            #[cfg(feature = "v2_0_1")]
            OcppVersion::V2_0_1 => Ok(v2_0_1::decode_result_with(action, payload, options)?.into()),
            #[cfg(feature = "v2_1")]
            OcppVersion::V2_1 => Ok(v2_1::decode_result_with(action, payload, options)?.into()),
            #[allow(unreachable_patterns)]
            other => Err(DecodeError::VersionNotCompiled(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run with a single version, e.g. `cargo test -p ocpp-messages --lib
    /// --no-default-features --features std,v1_6`: the versions left out are refused.
    #[test]
    fn version_not_compiled() {
        let options = DecodeOptions::strict();
        for version in OcppVersion::ALL {
            let compiled = match version {
                OcppVersion::V1_6 => cfg!(feature = "v1_6"),
                OcppVersion::V2_0_1 => cfg!(feature = "v2_0_1"),
                OcppVersion::V2_1 => cfg!(feature = "v2_1"),
            };
            let request = Request::decode(version, "Heartbeat", "{}", &options);
            let response = Response::decode(
                version,
                "Heartbeat",
                r#"{"currentTime":"2025-01-02T03:04:05Z"}"#,
                &options,
            );
            if compiled {
                assert_eq!(request.map(|r| r.version()), Ok(version));
                assert_eq!(response.map(|r| r.action()), Ok("Heartbeat"));
            } else {
                let error = request.unwrap_err();
                assert_eq!(error, DecodeError::VersionNotCompiled(version));
                assert_eq!(error.error_code(), crate::ErrorCode::ProtocolError);
                assert_eq!(
                    response.unwrap_err(),
                    DecodeError::VersionNotCompiled(version)
                );
            }
        }
    }
}
