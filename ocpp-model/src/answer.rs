//! [`Answer`]: a handler's one neutral answer, made into the versioned [`Response`] by
//! [`respond`].

use ocpp_messages::{DateTime, OcppVersion, Response};

use crate::{Authorization, BootAnswer, Event, ModelError};

/// What the CSMS answers to an [`Event`].
///
/// | event | answer |
/// | --- | --- |
/// | `Booted` | [`Answer::Boot`] |
/// | `Heartbeat` | [`Answer::Heartbeat`] |
/// | `AuthorizationRequested` | [`Answer::Authorization`] |
/// | `TransactionStarted` | [`Answer::Transaction`]: 1.6 needs `transaction_id` and `authorization` |
/// | `TransactionUpdated`, `TransactionEnded` | [`Answer::Transaction`] (or [`Answer::Received`]) |
/// | `StatusChanged`, `MeterReadings`, `SecurityEvent`, `FirmwareStatus`, `LogStatus` | [`Answer::Received`] |
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Answer {
    /// A BootNotification's answer.
    Boot(BootAnswer),
    /// A Heartbeat's answer: the CSMS's clock.
    Heartbeat {
        /// The CSMS's clock.
        current_time: DateTime,
    },
    /// An Authorize's answer.
    Authorization(Authorization),
    /// A transaction message's answer.
    Transaction {
        /// 1.6 StartTransaction: the id given out (from
        /// [`TransactionLedger::record_start`](crate::TransactionLedger::record_start));
        /// ignored otherwise.
        transaction_id: Option<i32>,
        /// The token's authorization (1.6 `idTagInfo`, required for a start; 2.x
        /// `idTokenInfo`).
        authorization: Option<Authorization>,
    },
    /// Received; nothing to say (the empty responses).
    Received,
}

impl From<BootAnswer> for Answer {
    fn from(answer: BootAnswer) -> Self {
        Answer::Boot(answer)
    }
}

impl From<Authorization> for Answer {
    fn from(authorization: Authorization) -> Self {
        Answer::Authorization(authorization)
    }
}

impl Answer {
    /// A Heartbeat's answer.
    ///
    /// ```
    /// use ocpp_messages::DateTime;
    /// use ocpp_model::Answer;
    ///
    /// let now = DateTime::from_unix_timestamp(0).unwrap();
    /// assert_eq!(Answer::heartbeat(now.clone()), Answer::Heartbeat { current_time: now });
    /// ```
    pub fn heartbeat(current_time: DateTime) -> Self {
        Answer::Heartbeat { current_time }
    }

    fn name(&self) -> &'static str {
        match self {
            Answer::Boot(_) => "Boot",
            Answer::Heartbeat { .. } => "Heartbeat",
            Answer::Authorization(_) => "Authorization",
            Answer::Transaction { .. } => "Transaction",
            Answer::Received => "Received",
        }
    }

    pub(crate) fn mismatch(&self, event: &Event) -> ModelError {
        ModelError::AnswerMismatch {
            event: event.name(),
            answer: self.name(),
        }
    }
}

/// Makes the response of `version` that answers `event` with `answer`, checked against its
/// schema before it is handed out.
///
/// ```
/// use ocpp_messages::{v1_6, v2_0_1, DateTime, OcppVersion, Request};
/// use ocpp_model::{respond, Answer, Authorization, AuthorizationStatus, Event};
///
/// let time: DateTime = "2025-01-02T03:04:05Z".parse().unwrap();
/// let start: Request = v1_6::StartTransactionRequest::new(1, "04A2B3C4", 0, time).into();
/// let answer = Answer::Transaction {
///     transaction_id: Some(42),
///     authorization: Some(Authorization::new(AuthorizationStatus::Accepted)),
/// };
/// let response = respond(&Event::from_request(&start), &answer, OcppVersion::V1_6)?;
/// assert_eq!(
///     serde_json::to_string(&response).unwrap(),
///     r#"{"idTagInfo":{"status":"Accepted"},"transactionId":42}"#
/// );
/// # Ok::<(), ocpp_model::ModelError>(())
/// ```
pub fn respond(
    event: &Event,
    answer: &Answer,
    version: OcppVersion,
) -> Result<Response, ModelError> {
    let response = match version {
        OcppVersion::V1_6 => crate::v1_6::respond(event, answer)?,
        OcppVersion::V2_0_1 => crate::v2::v2_0_1::respond(event, answer)?,
        OcppVersion::V2_1 => crate::v2::v2_1::respond(event, answer)?,
    };
    response.validate()?;
    Ok(response)
}

impl Event {
    /// [`respond`] as a method.
    ///
    /// ```
    /// use ocpp_messages::{v2_0_1, DateTime, OcppVersion, Request};
    /// use ocpp_model::{Answer, Event};
    ///
    /// let heartbeat: Request = v2_0_1::HeartbeatRequest::default().into();
    /// let now = DateTime::from_unix_timestamp(0).unwrap();
    /// let response = Event::from_request(&heartbeat)
    ///     .respond(&Answer::Heartbeat { current_time: now }, OcppVersion::V2_0_1)?;
    /// assert_eq!(response.action(), "Heartbeat");
    /// # Ok::<(), ocpp_model::ModelError>(())
    /// ```
    pub fn respond(&self, answer: &Answer, version: OcppVersion) -> Result<Response, ModelError> {
        respond(self, answer, version)
    }
}
