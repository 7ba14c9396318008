//! The RPC messages: [`RpcMessage`] and the shapes it carries ([`Call`], [`CallResult`],
//! [`CallError`]).
//!
//! One set of types serves both directions: parsed messages borrow from the input
//! (`RpcMessage<'a>`), messages the application builds own their data (`RpcMessage<'static>`).
//! Payloads stay raw JSON ([`RawValue`]) so that the typed layer can decode them once the
//! action, and with it the schema, is known.

use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::vec::Vec;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::error::{ParseError, SerializeError};
use super::message_id::MessageId;
use super::message_type::MessageTypeId;
use crate::error_code::ErrorCode;
use crate::version::OcppVersion;

/// One OCPP-J RPC message (OCPP-J 1.6 §4.2, OCPP 2.0.1 Part 4 §4.2, OCPP 2.1 Part 4 §4.2).
///
/// Parse with [`RpcMessage::parse`]; write with [`RpcMessage::write_to`] or the `write_*`
/// functions of [`crate::envelope`], which serialize a typed payload without building a
/// message first.
///
/// ```
/// use ocpp_messages::envelope::RpcMessage;
/// use ocpp_messages::version::OcppVersion;
///
/// let bytes = br#"[2,"19223201","BootNotification",{"chargePointVendor":"VendorX","chargePointModel":"M1"}]"#;
/// if let RpcMessage::Call(call) = RpcMessage::parse(bytes, OcppVersion::V1_6)? {
///     assert_eq!(call.id, "19223201");
///     assert_eq!(call.action, "BootNotification");
///     assert_eq!(call.payload.get(), r#"{"chargePointVendor":"VendorX","chargePointModel":"M1"}"#);
/// }
/// # Ok::<(), ocpp_messages::envelope::ParseError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum RpcMessage<'a> {
    /// 2, CALL: a request.
    Call(Call<'a>),
    /// 3, CALLRESULT: the successful answer to a CALL, matched to it by id.
    CallResult(CallResult<'a>),
    /// 4, CALLERROR: the error answer to a CALL.
    CallError(CallError<'a>),
    /// 5, CALLRESULTERROR (OCPP 2.1 only): answers a CALLRESULT that could not be processed.
    CallResultError(CallError<'a>),
    /// 6, SEND (OCPP 2.1 only): a message that is never answered; same layout as a CALL.
    Send(Call<'a>),
}

/// A CALL or a SEND: `[2|6,"<id>","<Action>",{payload}]`.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    /// The message id, unique per sender.
    pub id: MessageId<'a>,
    /// The action name, case-sensitive (e.g. `BootNotification`). Not checked here: an unknown
    /// action is answered `NotImplemented` by the layer that knows the actions.
    pub action: Cow<'a, str>,
    /// The payload, a JSON object kept as raw text.
    pub payload: Cow<'a, RawValue>,
}

/// A CALLRESULT: `[3,"<id>",{payload}]`. It carries no action: match it to the pending CALL
/// by id.
#[derive(Debug, Clone)]
pub struct CallResult<'a> {
    /// The id of the CALL this answers.
    pub id: MessageId<'a>,
    /// The payload, a JSON object kept as raw text.
    pub payload: Cow<'a, RawValue>,
}

/// A CALLERROR or CALLRESULTERROR: `[4|5,"<id>","<code>","<description>",{details}]`.
#[derive(Debug, Clone)]
pub struct CallError<'a> {
    /// The id of the CALL (or, for CALLRESULTERROR, the CALLRESULT) this answers, or `"-1"`.
    pub id: MessageId<'a>,
    /// The error code; received codes of any version's spelling are read by meaning.
    pub code: ErrorCode,
    /// A free-form description, `""` when there is none. OCPP 2.x limits it to 255 characters:
    /// the writer truncates it for 2.x; the parser accepts any length.
    pub description: Cow<'a, str>,
    /// The details object as raw JSON; `None` is written as `{}` (and is what the parser gives
    /// for a CALLERROR that omits the element, which some peers do).
    pub details: Option<Cow<'a, RawValue>>,
}

fn raw_eq(a: &RawValue, b: &RawValue) -> bool {
    a.get() == b.get()
}

impl PartialEq for Call<'_> {
    /// Payloads compare as text: `{"a":1}` and `{ "a": 1 }` differ.
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.action == other.action && raw_eq(&self.payload, &other.payload)
    }
}

impl PartialEq for CallResult<'_> {
    /// Payloads compare as text.
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && raw_eq(&self.payload, &other.payload)
    }
}

impl PartialEq for CallError<'_> {
    /// Details compare as text, `None` being the same as `{}`.
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.code == other.code
            && self.description == other.description
            && self.details_json() == other.details_json()
    }
}

impl<'a> RpcMessage<'a> {
    /// Parses one WebSocket text message for the negotiated `version`.
    ///
    /// Same as [`crate::envelope::parse`]: the payload is not decoded, only checked to be a JSON
    /// object nested at most [`crate::envelope::MAX_NESTING_DEPTH`] deep.
    ///
    /// # Errors
    /// A [`ParseError`] that says what was wrong and what could still be read (message type,
    /// id); [`ParseError::respond`] turns it into what to send back.
    pub fn parse(bytes: &'a [u8], version: OcppVersion) -> Result<RpcMessage<'a>, ParseError> {
        super::parse::parse(bytes, version)
    }

    /// The message type.
    #[must_use]
    pub fn message_type(&self) -> MessageTypeId {
        match self {
            RpcMessage::Call(_) => MessageTypeId::Call,
            RpcMessage::CallResult(_) => MessageTypeId::CallResult,
            RpcMessage::CallError(_) => MessageTypeId::CallError,
            RpcMessage::CallResultError(_) => MessageTypeId::CallResultError,
            RpcMessage::Send(_) => MessageTypeId::Send,
        }
    }

    /// The message id.
    #[must_use]
    pub fn id(&self) -> &MessageId<'a> {
        match self {
            RpcMessage::Call(c) | RpcMessage::Send(c) => &c.id,
            RpcMessage::CallResult(r) => &r.id,
            RpcMessage::CallError(e) | RpcMessage::CallResultError(e) => &e.id,
        }
    }

    /// The action of a CALL or SEND.
    #[must_use]
    pub fn action(&self) -> Option<&str> {
        match self {
            RpcMessage::Call(c) | RpcMessage::Send(c) => Some(&c.action),
            _ => None,
        }
    }

    /// The raw payload of a CALL, SEND or CALLRESULT.
    #[must_use]
    pub fn payload(&self) -> Option<&RawValue> {
        match self {
            RpcMessage::Call(c) | RpcMessage::Send(c) => Some(&c.payload),
            RpcMessage::CallResult(r) => Some(&r.payload),
            _ => None,
        }
    }

    /// A copy that owns all its data, independent of the input buffer.
    #[must_use]
    pub fn into_owned(self) -> RpcMessage<'static> {
        match self {
            RpcMessage::Call(c) => RpcMessage::Call(c.into_owned()),
            RpcMessage::CallResult(r) => RpcMessage::CallResult(r.into_owned()),
            RpcMessage::CallError(e) => RpcMessage::CallError(e.into_owned()),
            RpcMessage::CallResultError(e) => RpcMessage::CallResultError(e.into_owned()),
            RpcMessage::Send(c) => RpcMessage::Send(c.into_owned()),
        }
    }

    /// Appends this message, serialized for `version`, to `buf`.
    ///
    /// CALLERROR and CALLRESULTERROR are written with the error code spelt for `version` and,
    /// on 2.x, the description truncated to 255 characters.
    ///
    /// # Errors
    /// [`SerializeError::NotInVersion`] for a CALLRESULTERROR or SEND on 1.6 or 2.0.1;
    /// [`SerializeError::PayloadNotAnObject`] / [`SerializeError::DetailsNotAnObject`] if a raw
    /// payload or details is not a JSON object. Nothing is appended on error.
    pub fn write_to(&self, buf: &mut Vec<u8>, version: OcppVersion) -> Result<(), SerializeError> {
        let message_type = self.message_type();
        if !message_type.exists_in(version) {
            return Err(SerializeError::NotInVersion {
                message_type,
                version,
            });
        }
        match self {
            RpcMessage::Call(c) => super::serialize::write_call(buf, &c.id, &c.action, &*c.payload),
            RpcMessage::Send(c) => super::serialize::write_send(buf, &c.id, &c.action, &*c.payload),
            RpcMessage::CallResult(r) => {
                super::serialize::write_call_result(buf, &r.id, &*r.payload)
            }
            RpcMessage::CallError(e) => {
                super::serialize::write_error_frame(buf, MessageTypeId::CallError, version, e)
            }
            RpcMessage::CallResultError(e) => {
                super::serialize::write_error_frame(buf, MessageTypeId::CallResultError, version, e)
            }
        }
    }

    /// This message serialized for `version` into a new buffer; see [`RpcMessage::write_to`].
    ///
    /// # Errors
    /// As [`RpcMessage::write_to`].
    pub fn to_vec(&self, version: OcppVersion) -> Result<Vec<u8>, SerializeError> {
        let mut buf = Vec::new();
        self.write_to(&mut buf, version)?;
        Ok(buf)
    }
}

impl<'a> Call<'a> {
    /// A CALL (or SEND) with a raw payload borrowed from the caller.
    #[must_use]
    pub fn new(id: MessageId<'a>, action: impl Into<Cow<'a, str>>, payload: &'a RawValue) -> Self {
        Call {
            id,
            action: action.into(),
            payload: Cow::Borrowed(payload),
        }
    }

    /// Decodes the payload into a typed request, borrowing strings from it where `T` allows.
    ///
    /// # Errors
    /// The `serde_json` error if the payload does not match `T`.
    pub fn deserialize_payload<'de, T: Deserialize<'de>>(
        &'de self,
    ) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.payload.get())
    }

    /// A copy that owns all its data.
    #[must_use]
    pub fn into_owned(self) -> Call<'static> {
        Call {
            id: self.id.into_owned(),
            action: Cow::Owned(self.action.into_owned()),
            payload: Cow::Owned(self.payload.into_owned()),
        }
    }
}

impl<'a> CallResult<'a> {
    /// A CALLRESULT with a raw payload borrowed from the caller.
    #[must_use]
    pub fn new(id: MessageId<'a>, payload: &'a RawValue) -> Self {
        CallResult {
            id,
            payload: Cow::Borrowed(payload),
        }
    }

    /// Decodes the payload into a typed response, borrowing strings from it where `T` allows.
    ///
    /// # Errors
    /// The `serde_json` error if the payload does not match `T`.
    pub fn deserialize_payload<'de, T: Deserialize<'de>>(
        &'de self,
    ) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.payload.get())
    }

    /// A copy that owns all its data.
    #[must_use]
    pub fn into_owned(self) -> CallResult<'static> {
        CallResult {
            id: self.id.into_owned(),
            payload: Cow::Owned(self.payload.into_owned()),
        }
    }
}

impl<'a> CallError<'a> {
    /// A CALLERROR (or CALLRESULTERROR) with details `{}`.
    #[must_use]
    pub fn new(id: MessageId<'a>, code: ErrorCode, description: impl Into<Cow<'a, str>>) -> Self {
        CallError {
            id,
            code,
            description: description.into(),
            details: None,
        }
    }

    /// The details as JSON text: `{}` when there are none.
    #[must_use]
    pub fn details_json(&self) -> &str {
        match &self.details {
            Some(details) => details.get(),
            None => "{}",
        }
    }

    /// A copy that owns all its data.
    #[must_use]
    pub fn into_owned(self) -> CallError<'static> {
        CallError {
            id: self.id.into_owned(),
            code: self.code,
            description: Cow::Owned(self.description.into_owned()),
            details: self
                .details
                .map(|d| Cow::<'static, RawValue>::Owned(d.into_owned())),
        }
    }
}

/// Serializes a value into an owned raw payload, for building a [`Call`] or [`CallResult`]
/// that owns its data. (To send at once, the `write_*` functions avoid this copy.)
///
/// # Errors
/// [`SerializeError::Payload`] if serialization fails, [`SerializeError::PayloadNotAnObject`]
/// if the value is not a JSON object.
pub fn to_payload<T: serde::Serialize + ?Sized>(
    value: &T,
) -> Result<Box<RawValue>, SerializeError> {
    let raw = serde_json::value::to_raw_value(value).map_err(SerializeError::Payload)?;
    if raw.get().starts_with('{') {
        Ok(raw)
    } else {
        Err(SerializeError::PayloadNotAnObject)
    }
}
