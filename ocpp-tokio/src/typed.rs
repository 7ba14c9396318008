//! From a typed request to [`Request`] and back from [`Response`], through `ocpp-messages`'
//! conversions (`From<vX::FooRequest> for Request`, `TryFrom<Response> for vX::FooResponse`):
//! no serialisation.

use ocpp_messages::action::{ActionRequest, OcppAction};
use ocpp_messages::{Request, Response};
use ocpp_proto::OcppVersion;

use ocpp_proto::CallFailure;

/// The response type of a request's action.
pub type ResponseOf<R> = <<R as ActionRequest>::Action as OcppAction>::Response;

/// A typed request that [`ChargePoint::call`](crate::ChargePoint::call) can send: every
/// generated `vX::FooRequest` (implemented for all of them).
pub trait TypedCall: ActionRequest + Sized {
    /// The request as a [`Request`] for a connection on `negotiated`.
    ///
    /// # Errors
    /// [`CallFailure::WrongVersion`] when the type belongs to another version.
    fn into_request(self, negotiated: OcppVersion) -> Result<Request, CallFailure>;

    /// The request as a [`Request`] of its own version (for a [`Remote`](crate::registry::Remote), which
    /// knows the charge point's version).
    fn into_any_request(self) -> Request;

    /// The typed answer out of a [`Response`].
    ///
    /// # Errors
    /// [`CallFailure::WrongVersion`] for a response of another version,
    /// [`CallFailure::InvalidResponse`] for one of another action.
    fn from_response(response: Response) -> Result<ResponseOf<Self>, CallFailure>;
}

impl<R> TypedCall for R
where
    R: ActionRequest + Into<Request>,
    ResponseOf<R>: TryFrom<Response, Error = Response>,
{
    fn into_request(self, negotiated: OcppVersion) -> Result<Request, CallFailure> {
        let request = self.into_any_request();
        if request.version() != negotiated {
            return Err(CallFailure::WrongVersion);
        }
        Ok(request)
    }

    fn into_any_request(self) -> Request {
        self.into()
    }

    fn from_response(response: Response) -> Result<ResponseOf<Self>, CallFailure> {
        ResponseOf::<Self>::try_from(response).map_err(|other| {
            // The core decodes a CALLRESULT with the CALL's action and version, so this only
            // happens through a `Remote` that answered something else.
            if other.action() == <R::Action as OcppAction>::NAME {
                CallFailure::WrongVersion
            } else {
                CallFailure::InvalidResponse {
                    description: format!("a {} {} response", other.version(), other.action()),
                }
            }
        })
    }
}
