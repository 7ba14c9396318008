//! [`ModelError`]: why the model could not translate something, always before anything is sent.

use ocpp_messages::{OcppVersion, Violation};

/// Why a neutral answer or command could not become a message of the charge point's version.
///
/// ```
/// use ocpp_model::{Command, ModelError, ResetKind};
/// use ocpp_messages::OcppVersion;
///
/// let error = Command::Reset { kind: ResetKind::OnIdle, evse: None }
///     .to_request(OcppVersion::V1_6)
///     .unwrap_err();
/// assert_eq!(
///     error,
///     ModelError::NotExpressible { command: "Reset OnIdle", version: OcppVersion::V1_6 }
/// );
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The version has no way to say this (e.g. a 2.x reset `OnIdle` to a 1.6 charge point, a
    /// 1.6 integer transaction id to a 2.x one).
    #[error("{command} cannot be expressed in OCPP {version}")]
    NotExpressible {
        /// What could not be expressed.
        command: &'static str,
        /// The charge point's version.
        version: OcppVersion,
    },
    /// The answer does not answer this event (e.g. a heartbeat answer to a BootNotification).
    #[error("a {answer} answer does not answer {event}")]
    AnswerMismatch {
        /// The event's name.
        event: &'static str,
        /// The answer's name.
        answer: &'static str,
    },
    /// The answer lacks what the version requires (e.g. the transaction id of a 1.6
    /// StartTransaction).
    #[error("the answer to {event} needs {field} in OCPP {version}")]
    Missing {
        /// The event's name.
        event: &'static str,
        /// What is missing.
        field: &'static str,
        /// The charge point's version.
        version: OcppVersion,
    },
    /// A value does not fit the version's field (a number out of range, a string too long).
    #[error("{field} does not fit OCPP {version}")]
    OutOfRange {
        /// The field.
        field: &'static str,
        /// The charge point's version.
        version: OcppVersion,
    },
    /// The event is not one the model answers
    /// ([`StationEvent::Other`](crate::StationEvent::Other)): answer the raw request with its typed
    /// response.
    #[error("{action} is not modelled: answer it with its typed response")]
    NotModelled {
        /// The request's action.
        action: &'static str,
    },
    /// The response is not the answer to this command (another action or version).
    #[error("a {action} response does not answer {command}")]
    ResponseMismatch {
        /// The command's name.
        command: &'static str,
        /// The response's action.
        action: &'static str,
    },
    /// The message made breaks its schema (a bug of the model: reported, never sent).
    #[error("the message made breaks its schema: {0}")]
    Invalid(#[from] Violation),
}
