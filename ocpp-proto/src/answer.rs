//! The one answer rule: how a peer's CALL is answered, and what happens when an answer cannot
//! be sent as given ([`Connection::answer`](crate::Connection::answer)).
//!
//! Every CALL received gets exactly one answer (OCPP-J 1.6 §4.1.1, 2.0.1 Part 4 §4.1): the
//! application's, or, when the application's cannot go out as given (a result of another action
//! or version than the CALL's, a payload that does not serialise), a CALLERROR `InternalError`
//! in its place, never a wrong payload. The application learns what went wrong from
//! [`AnswerError`]; every driver (mio, tokio, the charge-point side) goes through this rule.

use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::version::OcppVersion;

use crate::Response;

/// How a CALL is answered: a CALLRESULT, or a CALLERROR.
///
/// ```
/// use ocpp_proto::{v1_6, Answer, DateTime, ErrorAnswer, ErrorCode};
/// let now = DateTime::from_unix_timestamp(1_780_000_000).unwrap();
/// let ok = Answer::result(v1_6::HeartbeatResponse::new(now));
/// let refused = Answer::from(ErrorAnswer::new(ErrorCode::SecurityError, "not accepted yet"));
/// assert_eq!(ok.action(), Some("Heartbeat"));
/// assert!(!refused.is_result());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Answer {
    /// A CALLRESULT with this payload (of the CALL's action and the connection's version).
    Result(Response),
    /// A CALLERROR.
    Error(ErrorAnswer),
}

impl Answer {
    /// A CALLRESULT: a generated response (`v1_6::HeartbeatResponse`), a version's response
    /// enum, or a [`Response`].
    pub fn result(response: impl Into<Response>) -> Self {
        Answer::Result(response.into())
    }

    /// A CALLERROR with this code (spelled for the connection's version) and description.
    pub fn error(code: ErrorCode, description: impl Into<String>) -> Self {
        Answer::Error(ErrorAnswer::new(code, description))
    }

    /// CALLERROR `NotSupported` for a known action this application does not serve (OCPP-J:
    /// `NotImplemented` is for unknown actions, which the core answers itself).
    pub fn not_supported(action: &str) -> Self {
        Answer::Error(ErrorAnswer::not_supported(action))
    }

    /// Whether this is a CALLRESULT.
    pub fn is_result(&self) -> bool {
        matches!(self, Answer::Result(_))
    }

    /// The action of a CALLRESULT's payload (`None` for a CALLERROR).
    pub fn action(&self) -> Option<&'static str> {
        match self {
            Answer::Result(response) => Some(response.action()),
            Answer::Error(_) => None,
        }
    }
}

impl From<ErrorAnswer> for Answer {
    fn from(error: ErrorAnswer) -> Self {
        Answer::Error(error)
    }
}

/// A typed handler's result (`Ok(v1_6::HeartbeatResponse)` or `Err(ErrorAnswer)`) as an
/// [`Answer`].
impl<T: Into<Response>> From<Result<T, ErrorAnswer>> for Answer {
    fn from(result: Result<T, ErrorAnswer>) -> Self {
        match result {
            Ok(response) => Answer::Result(response.into()),
            Err(error) => Answer::Error(error),
        }
    }
}

/// A CALLERROR the application answers with: the code (spelled for the connection's version
/// when it is written) and a description (OCPP 2.x: cut to 255 characters).
///
/// ```
/// use ocpp_proto::{ErrorAnswer, ErrorCode};
/// let error = ErrorAnswer::new(ErrorCode::SecurityError, "boot first");
/// assert_eq!(error.code, ErrorCode::SecurityError);
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("CALLERROR {code:?}: {description}")]
#[non_exhaustive]
pub struct ErrorAnswer {
    /// The error code.
    pub code: ErrorCode,
    /// What went wrong, for the peer's log.
    pub description: String,
}

impl ErrorAnswer {
    /// A CALLERROR with this code and description.
    pub fn new(code: ErrorCode, description: impl Into<String>) -> Self {
        ErrorAnswer {
            code,
            description: description.into(),
        }
    }

    /// `NotSupported`: a known action this application does not serve.
    pub fn not_supported(action: &str) -> Self {
        ErrorAnswer::new(
            ErrorCode::NotSupported,
            format!("{action} is not supported here"),
        )
    }

    /// `InternalError` saying `error`: the application could not do what the CALL asks (a
    /// store that could not record it, say), and the charge point may send it again. Made to
    /// be given to `map_err`.
    ///
    /// ```
    /// use ocpp_proto::{ErrorAnswer, ErrorCode};
    ///
    /// let saved: Result<(), std::io::Error> = Err(std::io::Error::other("disk full"));
    /// let answer = saved.map_err(ErrorAnswer::internal).unwrap_err();
    /// assert_eq!(answer, ErrorAnswer::new(ErrorCode::InternalError, "disk full"));
    /// ```
    pub fn internal(error: impl std::fmt::Display) -> Self {
        ErrorAnswer::new(ErrorCode::InternalError, error.to_string())
    }
}

/// Why [`Connection::answer`](crate::Connection::answer) did not send the answer as given.
///
/// Two kinds: the CALL could not be answered at all ([`AnswerError::NotOpen`],
/// [`AnswerError::UnknownId`]: nothing was written), or the answer was the application's bug
/// and the peer got CALLERROR `InternalError` in its place (the other variants:
/// [`AnswerError::was_answered`] is true), so the CALL still has its one answer.
///
/// ```
/// use std::time::Instant;
/// use ocpp_proto::{v1_6, Answer, AnswerError, Connection, DateTime, MessageId};
///
/// /// `id` is a Heartbeat CALL; answering it with a BootNotificationResponse is a bug.
/// fn answer_wrongly(csms: &mut Connection, id: &MessageId<'_>) {
///     let status = v1_6::RegistrationStatus::Accepted;
///     let wrong = v1_6::BootNotificationResponse::new(status, DateTime::now(), 300);
///     let refused = csms.answer(Instant::now(), id, Answer::result(wrong)).unwrap_err();
///     assert!(matches!(refused, AnswerError::WrongAction { call: "Heartbeat", .. }));
///     assert!(refused.was_answered()); // the charge point got CALLERROR InternalError instead
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// The connection is not open: nothing was written (the CALL is listed in
    /// [`Closed::unanswered_incoming`](crate::Closed::unanswered_incoming)).
    #[error("the connection is not open")]
    NotOpen,
    /// No CALL of the peer with this id awaits an answer (answered already, or never
    /// delivered): nothing was written.
    #[error("no CALL with this id awaits an answer")]
    UnknownId,
    /// The result is of another action than the CALL's: the peer was sent CALLERROR
    /// `InternalError` instead.
    #[error("a {answer} result for a {call} CALL (sent InternalError instead)")]
    WrongAction {
        /// The CALL's action.
        call: &'static str,
        /// The result's action.
        answer: &'static str,
    },
    /// The result is of another OCPP version than the connection's: the peer was sent
    /// CALLERROR `InternalError` instead.
    #[error(
        "an OCPP {answer} result on an OCPP {connection} connection (sent InternalError instead)"
    )]
    WrongVersion {
        /// The connection's version.
        connection: OcppVersion,
        /// The result's version.
        answer: OcppVersion,
    },
    /// The result did not serialise as a JSON object: the peer was sent CALLERROR
    /// `InternalError` instead.
    #[error("the result does not serialise (sent InternalError instead)")]
    Serialize,
}

impl AnswerError {
    /// Whether the CALL got its one answer anyway (a CALLERROR `InternalError` in place of the
    /// application's): true for every variant but [`AnswerError::NotOpen`] and
    /// [`AnswerError::UnknownId`].
    pub fn was_answered(&self) -> bool {
        !matches!(self, AnswerError::NotOpen | AnswerError::UnknownId)
    }
}
