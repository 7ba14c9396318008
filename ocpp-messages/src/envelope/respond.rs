//! What to answer to a frame that could not be parsed: the OCPP-J bad-input rules, per version,
//! in one place.

use alloc::borrow::Cow;
use alloc::vec::Vec;

use super::error::{Malformation, ParseError, SerializeError};
use super::message::{CallError, RpcMessage};
use super::message_id::{MessageId, MessageIdError};
use super::message_type::MessageTypeId;
use crate::error_code::ErrorCode;
use crate::version::OcppVersion;

/// What to do about a frame that could not be parsed; see [`respond_to_parse_error`].
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub enum Disposition {
    /// Send nothing; the connection goes on.
    Ignore,
    /// Send this CALLERROR (message type 4).
    Reply(CallError<'static>),
    /// Send this CALLRESULTERROR (message type 5, OCPP 2.1 only): the frame was a CALLRESULT.
    ReplyResultError(CallError<'static>),
}

impl Disposition {
    /// The error to send, if any.
    #[must_use]
    pub fn reply(&self) -> Option<&CallError<'static>> {
        match self {
            Disposition::Ignore => None,
            Disposition::Reply(e) | Disposition::ReplyResultError(e) => Some(e),
        }
    }

    /// The message to send, if any.
    #[must_use]
    pub fn into_message(self) -> Option<RpcMessage<'static>> {
        match self {
            Disposition::Ignore => None,
            Disposition::Reply(e) => Some(RpcMessage::CallError(e)),
            Disposition::ReplyResultError(e) => Some(RpcMessage::CallResultError(e)),
        }
    }

    /// Appends the reply, if any, serialized for `version`, to `buf`; returns whether
    /// something was written.
    ///
    /// # Errors
    /// None in practice: the replies this module builds are always writable for the version
    /// they were built for. [`SerializeError::NotInVersion`] if a
    /// [`Disposition::ReplyResultError`] is written for 1.6 or 2.0.1.
    pub fn write_to(
        &self,
        buf: &mut Vec<u8>,
        version: OcppVersion,
    ) -> Result<bool, SerializeError> {
        match self {
            Disposition::Ignore => Ok(false),
            Disposition::Reply(e) => {
                super::serialize::write_error_frame(buf, MessageTypeId::CallError, version, e)?;
                Ok(true)
            }
            Disposition::ReplyResultError(e) => {
                if !MessageTypeId::CallResultError.exists_in(version) {
                    return Err(SerializeError::NotInVersion {
                        message_type: MessageTypeId::CallResultError,
                        version,
                    });
                }
                super::serialize::write_error_frame(
                    buf,
                    MessageTypeId::CallResultError,
                    version,
                    e,
                )?;
                Ok(true)
            }
        }
    }
}

/// Decides what to send back for a frame that failed to parse on a connection of `version`.
///
/// This is the single place where the OCPP-J bad-input rules live. The reply never contains
/// anything from the input except a valid id (a JSON string of at most 36 characters): the
/// description is a fixed English sentence and the details are `{}`. In particular invalid
/// JSON is never echoed (OCPP 2.0.1 Part 4 §4.2.3).
///
/// The rules, in the order they are applied:
///
/// 1. **Unknown message type** (a number that is not a type of `version`; 5 and 6 count as
///    unknown on 1.6 and 2.0.1):
///    - 1.6: ignored (OCPP-J 1.6 §4.1.3);
///    - 2.0.1: CALLERROR `MessageTypeNotSupported` with the frame's id, or `"-1"` if it cannot
///      be read (OCPP 2.0.1 Part 4 §4.4; §4.1.3 says to ignore it instead: the document
///      contradicts itself and answering is the safer reading, since the peer learns why it
///      gets no answer);
///    - 2.1: ignored (OCPP 2.1 Part 4 §4.4).
/// 2. **Never answer an answer that carries no request**: a malformed CALLERROR, CALLRESULTERROR
///    (2.1) or SEND (2.1) is ignored. A SEND is never answered (OCPP 2.1 Part 4 §4.2, SEND), and
///    answering an error with an error risks an endless exchange between two peers; the
///    connection goes on, as for an error whose id matches no pending CALL.
/// 3. **A malformed CALLRESULT** is answered on 2.1 only, with a CALLRESULTERROR (OCPP 2.1
///    Part 4 §4.2, CALLRESULTERROR, which exists for exactly this). On 1.6 and 2.0.1 it is ignored: a CALLERROR
///    carrying the CALLRESULT's id would be taken by the peer as the answer to its own pending
///    CALL if that happens to have the same id (ids are only unique per sender). The caller
///    should fail its own pending CALL with that id ([`ParseError::id`]).
/// 4. **Otherwise** (a CALL, or a frame whose type could not be read) the answer is a
///    CALLERROR (OCPP-J 1.6 errata §3.2: a message that cannot be processed gets a CALLERROR;
///    OCPP 2.0.1 Part 4 §4.1.7 and OCPP 2.1 Part 4 §4.1.7: invalid JSON or a broken structure
///    SHALL get a CALLERROR), with:
///    - **id**: the frame's id when it could be read and is valid, `"-1"` otherwise (OCPP 2.0.1
///      Part 4 §4.2.3; 1.6 defines no id for this case and the same convention is used). An
///      id that is not a string (e.g. the integer `19223201`) or longer than 36 characters is
///      never echoed;
///    - **code**, when the id could not be read (top level not an array, empty array, message
///      type not a number, id missing, not a string or too long): `RpcFrameworkError` on 2.x
///      ("not a valid RPC request, e.g. MessageId could not be read", OCPP 2.0.1 Part 4
///      Table 8), `FormationViolation` on 1.6 (the frame does not conform to the PDU
///      structure, OCPP-J 1.6 Table 7);
///    - **code**, otherwise (invalid JSON, trailing data, wrong number of elements, an action
///      or error code that is not a string, a payload or details that is not an object or is
///      nested too deeply): `FormationViolation` on 1.6, `FormatViolation` on 2.x.
///
/// ```
/// use ocpp_messages::envelope::{parse, Disposition};
/// use ocpp_messages::version::OcppVersion;
///
/// let err = parse(b"[2, \"17\", \"Heartbeat\", {", OcppVersion::V2_0_1).unwrap_err();
/// let reply = err.respond(OcppVersion::V2_0_1);
/// let mut out = Vec::new();
/// reply.write_to(&mut out, OcppVersion::V2_0_1)?;
/// assert_eq!(out, br#"[4,"17","FormatViolation","Message is not valid JSON",{}]"#);
///
/// let err = parse(b"[7, \"17\"]", OcppVersion::V1_6).unwrap_err();
/// assert_eq!(err.respond(OcppVersion::V1_6), Disposition::Ignore);
/// # Ok::<(), ocpp_messages::envelope::SerializeError>(())
/// ```
pub fn respond_to_parse_error(error: &ParseError, version: OcppVersion) -> Disposition {
    match error {
        ParseError::UnknownMessageType { id, .. } => match version {
            OcppVersion::V1_6 | OcppVersion::V2_1 => Disposition::Ignore,
            OcppVersion::V2_0_1 => Disposition::Reply(reply(
                id.as_ref(),
                ErrorCode::MessageTypeNotSupported,
                "Message type not supported",
            )),
        },
        ParseError::InvalidJson { message_type, id } => by_type(
            *message_type,
            version,
            reply(
                id.as_ref(),
                ErrorCode::FormatViolation,
                "Message is not valid JSON",
            ),
        ),
        ParseError::NotAnArray => by_type(
            None,
            version,
            unreadable_id(version, "Message is not a JSON array"),
        ),
        ParseError::EmptyArray => by_type(
            None,
            version,
            unreadable_id(version, "Message is an empty array"),
        ),
        ParseError::MessageTypeNotANumber => by_type(
            None,
            version,
            unreadable_id(version, "MessageTypeId is not a number"),
        ),
        ParseError::InvalidMessageId {
            message_type,
            problem,
        } => {
            let description = match problem {
                MessageIdError::Missing => "MessageId is missing",
                MessageIdError::NotAString => "MessageId is not a string",
                MessageIdError::TooLong => "MessageId is longer than 36 characters",
            };
            by_type(
                Some(*message_type),
                version,
                unreadable_id(version, description),
            )
        }
        ParseError::Malformed {
            message_type,
            id,
            problem,
        } => {
            let description = match problem {
                Malformation::WrongLength { .. } => "Message has the wrong number of elements",
                Malformation::ActionNotAString => "Action is not a string",
                Malformation::PayloadNotAnObject => "Payload is not a JSON object",
                Malformation::TooDeep => "Payload is nested too deeply",
                Malformation::ErrorCodeNotAString => "ErrorCode is not a string",
                Malformation::DescriptionNotAString => "ErrorDescription is not a string",
                Malformation::DetailsNotAnObject => "ErrorDetails is not a JSON object",
            };
            by_type(
                Some(*message_type),
                version,
                reply(Some(id), ErrorCode::FormatViolation, description),
            )
        }
    }
}

/// Rules 2 to 4: whether and how to answer, by the type of the faulty frame.
fn by_type(
    message_type: Option<MessageTypeId>,
    version: OcppVersion,
    error: CallError<'static>,
) -> Disposition {
    match message_type {
        None | Some(MessageTypeId::Call) => Disposition::Reply(error),
        Some(MessageTypeId::CallResult) if version == OcppVersion::V2_1 => {
            Disposition::ReplyResultError(error)
        }
        Some(
            MessageTypeId::CallResult
            | MessageTypeId::CallError
            | MessageTypeId::CallResultError
            | MessageTypeId::Send,
        ) => Disposition::Ignore,
    }
}

/// The error for a frame whose id could not be read: id `"-1"`, `RpcFrameworkError` on 2.x,
/// `FormationViolation` on 1.6.
fn unreadable_id(version: OcppVersion, description: &'static str) -> CallError<'static> {
    let code = if version.is_2x() {
        ErrorCode::RpcFrameworkError
    } else {
        ErrorCode::FormatViolation
    };
    reply(None, code, description)
}

fn reply(
    id: Option<&MessageId<'static>>,
    code: ErrorCode,
    description: &'static str,
) -> CallError<'static> {
    CallError {
        id: id.cloned().unwrap_or(MessageId::UNREADABLE),
        code,
        description: Cow::Borrowed(description),
        details: None,
    }
}
