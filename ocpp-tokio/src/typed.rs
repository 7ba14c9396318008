//! From a typed request to the core's [`Request`] and back from its [`Response`].
//!
//! Until `ocpp-messages` has `From<vX::FooRequest> for Request` and
//! `TryFrom<Response> for vX::FooResponse`, this goes through JSON: the request is serialised
//! and decoded as its version's enum, the response serialised and decoded as the action's type.

use ocpp_messages::action::{ActionRequest, OcppAction, Payload};
use ocpp_messages::decode::DecodeOptions;
use ocpp_server_core::{v1_6, v2_0_1, v2_1, OcppVersion, Request, Response};

use crate::error::CallError;

/// A typed request that [`ChargePoint::call`](crate::ChargePoint::call) can send: every
/// generated `vX::FooRequest` (implemented for all [`ActionRequest`]s).
pub trait TypedCall: ActionRequest + Sized {
    /// The request as the core's [`Request`] for a connection on `negotiated`.
    ///
    /// # Errors
    /// [`CallError::WrongVersion`] when the type belongs to another version.
    fn into_request(self, negotiated: OcppVersion) -> Result<Request, CallError>;

    /// The typed answer out of the core's [`Response`].
    ///
    /// # Errors
    /// [`CallError::InvalidResponse`] or [`CallError::WrongVersion`].
    fn from_response(
        response: Response,
    ) -> Result<<Self::Action as OcppAction>::Response, CallError>;
}

/// The version a generated type belongs to, from its module path.
fn version_of<T>() -> Option<OcppVersion> {
    let name = std::any::type_name::<T>();
    if name.contains("::v1_6::") {
        Some(OcppVersion::V1_6)
    } else if name.contains("::v2_0_1::") {
        Some(OcppVersion::V2_0_1)
    } else if name.contains("::v2_1::") {
        Some(OcppVersion::V2_1)
    } else {
        None
    }
}

fn invalid(error: impl std::fmt::Display) -> CallError {
    CallError::InvalidResponse {
        description: error.to_string(),
    }
}

impl<R: ActionRequest> TypedCall for R {
    fn into_request(self, negotiated: OcppVersion) -> Result<Request, CallError> {
        let version = version_of::<R>().unwrap_or(negotiated);
        if version != negotiated {
            return Err(CallError::WrongVersion);
        }
        let json = serde_json::to_string(&self).map_err(invalid)?;
        let action = <R::Action as OcppAction>::NAME;
        let options = DecodeOptions::lenient();
        let request = match version {
            OcppVersion::V1_6 => v1_6::decode_call_with(action, &json, &options).map(Request::from),
            OcppVersion::V2_0_1 => {
                v2_0_1::decode_call_with(action, &json, &options).map(Request::from)
            }
            _ => v2_1::decode_call_with(action, &json, &options).map(Request::from),
        };
        request.map_err(|_| CallError::WrongVersion)
    }

    fn from_response(
        response: Response,
    ) -> Result<<Self::Action as OcppAction>::Response, CallError> {
        if version_of::<R>().is_some_and(|version| version != response.version()) {
            return Err(CallError::WrongVersion);
        }
        if response.action() != <R::Action as OcppAction>::NAME {
            return Err(invalid(format_args!(
                "a {} response answers a {} request",
                response.action(),
                <R::Action as OcppAction>::NAME
            )));
        }
        let json = serde_json::to_string(&response).map_err(invalid)?;
        <<R::Action as OcppAction>::Response as Payload>::decode_with(
            &json,
            ocpp_messages::validate::Mode::Lenient,
        )
        .map_err(invalid)
    }
}
