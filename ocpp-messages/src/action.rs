//! What every generated action and payload type implements, so code can be generic over them:
//! a CALL knows its action, and a CALLRESULT (which carries no action name) is decoded with the
//! response type of the pending CALL's action.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::decode::{decode_payload, DecodeError};
use crate::validate::{Mode, Path, Schema, Violation, ViolationKind};

/// A request or response payload of some action.
pub trait Payload: Schema + Serialize + DeserializeOwned {
    /// Decodes the payload from JSON in strict mode.
    ///
    /// ```
    /// use ocpp_messages::action::Payload;
    /// use ocpp_messages::v2_0_1::HeartbeatRequest;
    ///
    /// assert!(HeartbeatRequest::decode("{}").is_ok());
    /// assert!(HeartbeatRequest::decode("{\"unexpected\":1}").is_err());
    /// ```
    fn decode(payload: &str) -> Result<Self, DecodeError> {
        decode_payload(payload, Mode::Strict)
    }

    /// Decodes the payload from JSON in `mode`.
    fn decode_with(payload: &str, mode: Mode) -> Result<Self, DecodeError> {
        decode_payload(payload, mode)
    }

    /// Checks the payload against its schema in strict mode (e.g. before sending it): catches
    /// what the Rust types cannot express, such as string lengths and number ranges.
    fn validate(&self) -> Result<(), Violation> {
        let value = serde_json::to_value(self)
            .map_err(|e| Violation::new(ViolationKind::Type, &Path::Root, alloc::format!("{e}")))?;
        Self::check_json(&value, &Path::Root, Mode::Strict)
    }
}

impl<T: Schema + Serialize + DeserializeOwned> Payload for T {}

/// An OCPP action: its name on the wire and its request and response payloads.
///
/// ```
/// use ocpp_messages::action::{ActionRequest, OcppAction};
/// use ocpp_messages::v1_6::{BootNotification, BootNotificationRequest};
///
/// assert_eq!(BootNotification::NAME, "BootNotification");
/// // A CALLRESULT is decoded with the response type of the request's action.
/// let response = BootNotificationRequest::decode_response(
///     r#"{"status":"Accepted","currentTime":"2025-01-01T00:00:00Z","interval":300}"#,
/// )
/// .unwrap();
/// assert_eq!(response.interval, 300);
/// ```
pub trait OcppAction {
    /// The action's name on the wire.
    const NAME: &'static str;
    /// The request (CALL or SEND payload).
    type Request: Payload;
    /// The response (CALLRESULT payload); [`NoResponse`] for a SEND-only action.
    type Response: Payload;
}

/// A request payload, linked to its action.
pub trait ActionRequest: Payload {
    /// The action this request belongs to.
    type Action: OcppAction<Request = Self>;

    /// The action's name on the wire.
    fn action_name(&self) -> &'static str {
        <Self::Action as OcppAction>::NAME
    }

    /// Decodes the CALLRESULT payload answering this request, in strict mode.
    fn decode_response(
        payload: &str,
    ) -> Result<<Self::Action as OcppAction>::Response, DecodeError> {
        decode_payload(payload, Mode::Strict)
    }
}

/// A response payload, linked to its action.
pub trait ActionResponse: Payload {
    /// The action this response belongs to.
    type Action: OcppAction<Response = Self>;
}

/// The response of a SEND-only action: there is none, and no value of this type exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoResponse {}

impl Serialize for NoResponse {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        match *self {}
    }
}

impl<'de> Deserialize<'de> for NoResponse {
    fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(serde::de::Error::custom(
            "a SEND-only action has no response",
        ))
    }
}

impl Schema for NoResponse {
    fn check_json(_: &Value, path: &Path<'_>, _: Mode) -> Result<(), Violation> {
        Err(Violation::new(
            ViolationKind::Format,
            path,
            "a SEND-only action has no response",
        ))
    }
    fn conforms(&self, _: Mode) -> bool {
        match *self {}
    }
}
