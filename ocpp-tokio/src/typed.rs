//! From a typed request to the core's [`Request`] and back from its [`Response`], through
//! `ocpp-messages`' conversions (`From<vX::FooRequest> for ocpp_messages::Request`,
//! `TryFrom<ocpp_messages::Response> for vX::FooResponse`): no serialisation.
//!
//! The public API speaks `ocpp_messages::{Request, Response}`. `ocpp_server_core` has its own
//! types of the same shape (one box per version); until it re-exports `ocpp_messages`' ones,
//! the functions here move the boxes across at the boundary (no copy of the payload).

use ocpp_messages::action::{ActionRequest, OcppAction};
use ocpp_messages::{Request, Response};
use ocpp_server_core::OcppVersion;

use crate::error::CallError;

/// The response type of a request's action.
pub type ResponseOf<R> = <<R as ActionRequest>::Action as OcppAction>::Response;

/// A typed request that [`ChargePoint::call`](crate::ChargePoint::call) can send: every
/// generated `vX::FooRequest` (implemented for all of them).
pub trait TypedCall: ActionRequest + Sized {
    /// The request as a [`Request`] for a connection on `negotiated`.
    ///
    /// # Errors
    /// [`CallError::WrongVersion`] when the type belongs to another version.
    fn into_request(self, negotiated: OcppVersion) -> Result<Request, CallError>;

    /// The request as a [`Request`] of its own version (for a [`Remote`](crate::Remote), which
    /// knows the charge point's version).
    fn into_any_request(self) -> Request;

    /// The typed answer out of a [`Response`].
    ///
    /// # Errors
    /// [`CallError::WrongVersion`] for a response of another version,
    /// [`CallError::InvalidResponse`] for one of another action.
    fn from_response(response: Response) -> Result<ResponseOf<Self>, CallError>;
}

impl<R> TypedCall for R
where
    R: ActionRequest + Into<Request>,
    ResponseOf<R>: TryFrom<Response, Error = Response>,
{
    fn into_request(self, negotiated: OcppVersion) -> Result<Request, CallError> {
        let request = self.into_any_request();
        if request.version() != negotiated {
            return Err(CallError::WrongVersion);
        }
        Ok(request)
    }

    fn into_any_request(self) -> Request {
        self.into()
    }

    fn from_response(response: Response) -> Result<ResponseOf<Self>, CallError> {
        ResponseOf::<Self>::try_from(response).map_err(|other| {
            // The core decodes a CALLRESULT with the CALL's action and version, so this only
            // happens through a `Remote` that answered something else.
            if other.action() == <R::Action as OcppAction>::NAME {
                CallError::WrongVersion
            } else {
                CallError::InvalidResponse {
                    description: format!("a {} {} response", other.version(), other.action()),
                }
            }
        })
    }
}

/// A [`Request`] as the core's (`None`: a version the core lacks).
pub(crate) fn request_to_core(request: Request) -> Option<ocpp_server_core::Request> {
    use ocpp_server_core::Request as Core;
    match request {
        Request::V1_6(r) => Some(Core::V1_6(r)),
        Request::V2_0_1(r) => Some(Core::V2_0_1(r)),
        Request::V2_1(r) => Some(Core::V2_1(r)),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// A [`Response`] as the core's.
pub(crate) fn response_to_core(response: Response) -> Option<ocpp_server_core::Response> {
    use ocpp_server_core::Response as Core;
    match response {
        Response::V1_6(r) => Some(Core::V1_6(r)),
        Response::V2_0_1(r) => Some(Core::V2_0_1(r)),
        Response::V2_1(r) => Some(Core::V2_1(r)),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// The core's response as a [`Response`].
pub(crate) fn response_from_core(response: ocpp_server_core::Response) -> Option<Response> {
    use ocpp_server_core::Response as Core;
    match response {
        Core::V1_6(r) => Some(Response::V1_6(r)),
        Core::V2_0_1(r) => Some(Response::V2_0_1(r)),
        Core::V2_1(r) => Some(Response::V2_1(r)),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// The core's request as a [`Request`].
pub(crate) fn request_from_core(request: ocpp_server_core::Request) -> Option<Request> {
    use ocpp_server_core::Request as Core;
    match request {
        Core::V1_6(r) => Some(Request::V1_6(r)),
        Core::V2_0_1(r) => Some(Request::V2_0_1(r)),
        Core::V2_1(r) => Some(Request::V2_1(r)),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}
