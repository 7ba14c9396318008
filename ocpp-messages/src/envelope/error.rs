//! What can go wrong reading or writing an RPC frame.

use super::message_id::{MessageId, MessageIdError};
use super::message_type::MessageTypeId;
use super::respond::{respond_to_parse_error, Disposition};
use crate::version::OcppVersion;

/// Why a WebSocket text message is not a valid RPC frame for the negotiated version.
///
/// Each variant keeps what could still be read (the message type, a valid id) so that
/// [`ParseError::respond`] can answer exactly as the version requires. Ids carried here have
/// been validated (a JSON string of at most 36 characters); nothing else from the input is kept,
/// so the error can be logged or echoed without leaking the peer's bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The bytes are not one JSON text (RFC 8259): a syntax error, truncated input, invalid
    /// UTF-8, a string with an invalid escape (e.g. a lone surrogate), or data after the array.
    #[error("the message is not valid JSON")]
    InvalidJson {
        /// The message type, if the first element was read and is defined for the version.
        message_type: Option<MessageTypeId>,
        /// The id, if the message type was read and the second element is a valid id.
        id: Option<MessageId<'static>>,
    },
    /// Valid JSON whose top level is not an array.
    #[error("the message is not a JSON array")]
    NotAnArray,
    /// `[]`.
    #[error("the message is an empty array")]
    EmptyArray,
    /// The first element is not a number.
    #[error("the message type is not a number")]
    MessageTypeNotANumber,
    /// The first element is a number that is not a message type of the version: anything but
    /// 2, 3, 4 on 1.6 and 2.0.1, anything but 2 to 6 on 2.1. Non-integers (`2.0`) and numbers
    /// out of range count as unknown types too.
    #[error("message type {} is not defined in this OCPP version", DisplayNumber(*.number))]
    UnknownMessageType {
        /// The number, if it is an integer that fits an `i64`.
        number: Option<i64>,
        /// The id, if the second element is a valid id.
        id: Option<MessageId<'static>>,
    },
    /// The message type is known but the id is missing, not a string, or too long.
    #[error("{message_type}: {problem}")]
    InvalidMessageId {
        /// The message type.
        message_type: MessageTypeId,
        /// What is wrong with the id.
        problem: MessageIdError,
    },
    /// The message type and id are fine, but the rest of the frame is not.
    #[error("{message_type} {id}: {problem}")]
    Malformed {
        /// The message type.
        message_type: MessageTypeId,
        /// The id, valid.
        id: MessageId<'static>,
        /// What is wrong.
        problem: Malformation,
    },
}

/// Prints an optional message type number.
struct DisplayNumber(Option<i64>);

impl core::fmt::Display for DisplayNumber {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(n) => write!(f, "{n}"),
            None => f.write_str("(not an integer)"),
        }
    }
}

/// What is wrong with a frame whose message type and id are fine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum Malformation {
    /// The array has the wrong number of elements: 4 for CALL and SEND, 3 for CALLRESULT,
    /// 5 for CALLERROR and CALLRESULTERROR (4 is tolerated there, details being optional in
    /// practice).
    #[error("the frame has {found} elements, expected {expected}")]
    WrongLength {
        /// The number of elements the type requires.
        expected: usize,
        /// The number of elements found.
        found: usize,
    },
    /// The action of a CALL or SEND is not a string.
    #[error("the action is not a string")]
    ActionNotAString,
    /// The payload is not a JSON object.
    #[error("the payload is not a JSON object")]
    PayloadNotAnObject,
    /// The payload or details nest deeper than [`super::MAX_NESTING_DEPTH`].
    #[error("the payload is nested too deeply")]
    TooDeep,
    /// The error code of a CALLERROR or CALLRESULTERROR is not a string.
    #[error("the error code is not a string")]
    ErrorCodeNotAString,
    /// The error description is not a string.
    #[error("the error description is not a string")]
    DescriptionNotAString,
    /// The error details are not a JSON object.
    #[error("the error details are not a JSON object")]
    DetailsNotAnObject,
}

impl ParseError {
    /// What to send back for this error on a connection of `version`: see
    /// [`respond_to_parse_error`], the one place where those rules live.
    pub fn respond(&self, version: OcppVersion) -> Disposition {
        respond_to_parse_error(self, version)
    }

    /// The message type, when it could be read and is defined for the version.
    #[must_use]
    pub fn message_type(&self) -> Option<MessageTypeId> {
        match self {
            ParseError::InvalidJson { message_type, .. } => *message_type,
            ParseError::InvalidMessageId { message_type, .. }
            | ParseError::Malformed { message_type, .. } => Some(*message_type),
            _ => None,
        }
    }

    /// The id, when it could be read and is valid. A connection can use it to fail the
    /// pending CALL that a malformed CALLRESULT or CALLERROR was meant to answer.
    #[must_use]
    pub fn id(&self) -> Option<&MessageId<'static>> {
        match self {
            ParseError::InvalidJson { id, .. } | ParseError::UnknownMessageType { id, .. } => {
                id.as_ref()
            }
            ParseError::Malformed { id, .. } => Some(id),
            _ => None,
        }
    }
}

/// Why a message could not be written. Nothing is appended to the buffer on error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SerializeError {
    /// The payload's `Serialize` implementation failed (e.g. a map with non-string keys).
    #[error("the payload could not be serialized: {0}")]
    Payload(serde_json::Error),
    /// The payload did not serialize to a JSON object, as every OCPP payload must.
    #[error("the payload is not a JSON object")]
    PayloadNotAnObject,
    /// The error details are not a JSON object.
    #[error("the error details are not a JSON object")]
    DetailsNotAnObject,
    /// The message type does not exist in the version (CALLRESULTERROR and SEND are 2.1 only).
    #[error("{message_type} does not exist in OCPP {version}")]
    NotInVersion {
        /// The message type.
        message_type: MessageTypeId,
        /// The version it was to be written for.
        version: OcppVersion,
    },
}
