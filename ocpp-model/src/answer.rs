//! [`EventAnswer`]: a handler's one neutral answer, made into the versioned [`Response`] by
//! [`respond`].

use ocpp_messages::{DateTime, DecodeOptions, OcppVersion, Request, Response};

use crate::{Authorization, BootAnswer, Decimal, ModelError, StationEvent};

/// What the CSMS answers to a [`StationEvent`].
///
/// | event | answer |
/// | --- | --- |
/// | `Booted` | [`EventAnswer::Boot`] |
/// | `Heartbeat` | [`EventAnswer::Heartbeat`] |
/// | `AuthorizationRequested` | [`EventAnswer::Authorization`] |
/// | `TransactionStarted` | [`EventAnswer::Transaction`]: 1.6 needs `transaction_id` and `authorization` |
/// | `TransactionUpdated`, `TransactionEnded` | [`EventAnswer::Transaction`] (or [`EventAnswer::Received`]) |
/// | `StatusChanged`, `MeterReadings`, `SecurityEvent`, `FirmwareStatus`, `LogStatus` | [`EventAnswer::Received`] |
/// | `Other` (a request the model does not read) | [`EventAnswer::Received`] when its response has no required field (NotifyReport, NotifyEvent, the status notifications...); otherwise its typed response |
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum EventAnswer {
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
        /// 2.x `totalCost`: the running cost (an `Updated`, 2.1) or the final one (`Ended`),
        /// in the currency of the tariff, exact. 1.6 has no cost in its answers: ignored there.
        total_cost: Option<Decimal>,
    },
    /// Received; nothing to say (the empty responses).
    Received,
}

impl From<BootAnswer> for EventAnswer {
    fn from(answer: BootAnswer) -> Self {
        EventAnswer::Boot(answer)
    }
}

impl From<Authorization> for EventAnswer {
    fn from(authorization: Authorization) -> Self {
        EventAnswer::Authorization(authorization)
    }
}

impl EventAnswer {
    /// A Heartbeat's answer.
    ///
    /// ```
    /// use ocpp_messages::DateTime;
    /// use ocpp_model::EventAnswer;
    ///
    /// let now = DateTime::from_unix_timestamp(0).unwrap();
    /// assert_eq!(EventAnswer::heartbeat(now.clone()), EventAnswer::Heartbeat { current_time: now });
    /// ```
    pub fn heartbeat(current_time: DateTime) -> Self {
        EventAnswer::Heartbeat { current_time }
    }

    /// A transaction message's answer: the 1.6 id given out (for a StartTransaction) and
    /// the token's authorization, without a cost ([`EventAnswer::with_total_cost`] adds one).
    ///
    /// ```
    /// use ocpp_model::{EventAnswer, Authorization, AuthorizationStatus, Decimal};
    ///
    /// let accepted = Authorization::new(AuthorizationStatus::Accepted);
    /// let answer = EventAnswer::transaction(Some(42), Some(accepted)).with_total_cost(Decimal::new(1250, 2));
    /// assert!(matches!(answer, EventAnswer::Transaction { total_cost: Some(_), .. }));
    /// ```
    pub fn transaction(transaction_id: Option<i32>, authorization: Option<Authorization>) -> Self {
        EventAnswer::Transaction {
            transaction_id,
            authorization,
            total_cost: None,
        }
    }

    /// The same answer with a `totalCost` (a transaction answer; other answers are returned
    /// unchanged, they carry no cost).
    pub fn with_total_cost(self, cost: Decimal) -> Self {
        match self {
            EventAnswer::Transaction {
                transaction_id,
                authorization,
                ..
            } => EventAnswer::Transaction {
                transaction_id,
                authorization,
                total_cost: Some(cost),
            },
            other => other,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            EventAnswer::Boot(_) => "Boot",
            EventAnswer::Heartbeat { .. } => "Heartbeat",
            EventAnswer::Authorization(_) => "Authorization",
            EventAnswer::Transaction { .. } => "Transaction",
            EventAnswer::Received => "Received",
        }
    }

    pub(crate) fn mismatch(&self, event: &StationEvent) -> ModelError {
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
/// use ocpp_model::{respond, Authorization, AuthorizationStatus, EventAnswer, StationEvent};
///
/// let time: DateTime = "2025-01-02T03:04:05Z".parse().unwrap();
/// let start: Request = v1_6::StartTransactionRequest::new(1, "04A2B3C4", 0, time).into();
/// let answer = EventAnswer::transaction(
///     Some(42),
///     Some(Authorization::new(AuthorizationStatus::Accepted)),
/// );
/// let response = respond(&StationEvent::from_request(&start), &answer, OcppVersion::V1_6)?;
/// assert_eq!(
///     serde_json::to_string(&response).unwrap(),
///     r#"{"idTagInfo":{"status":"Accepted"},"transactionId":42}"#
/// );
/// # Ok::<(), ocpp_model::ModelError>(())
/// ```
pub fn respond(
    event: &StationEvent,
    answer: &EventAnswer,
    version: OcppVersion,
) -> Result<Response, ModelError> {
    if let (StationEvent::Other(request), EventAnswer::Received) = (event, answer) {
        return acknowledge(request, version);
    }
    let response = match version {
        OcppVersion::V1_6 => crate::v1_6::respond(event, answer)?,
        OcppVersion::V2_0_1 => crate::v2::v2_0_1::respond(event, answer)?,
        OcppVersion::V2_1 => crate::v2::v2_1::respond(event, answer)?,
    };
    response.validate()?;
    Ok(response)
}

/// The empty response of a request the model does not read: for a report or notification
/// (NotifyReport, NotifyEvent, ReservationStatusUpdate...), whose response has no required
/// field, "received" is the whole answer in every version, so one line acknowledges them all.
fn acknowledge(request: &Request, version: OcppVersion) -> Result<Response, ModelError> {
    let not_modelled = || ModelError::NotModelled {
        action: request.action(),
    };
    if request.version() != version {
        return Err(not_modelled());
    }
    // The schema decides: `{}` is a valid response exactly when nothing is required.
    Response::decode(version, request.action(), "{}", &DecodeOptions::strict())
        .map_err(|_| not_modelled())
}

impl StationEvent {
    /// [`respond`] as a method.
    ///
    /// ```
    /// use ocpp_messages::{v2_0_1, DateTime, OcppVersion, Request};
    /// use ocpp_model::{EventAnswer, StationEvent};
    ///
    /// let heartbeat: Request = v2_0_1::HeartbeatRequest::default().into();
    /// let now = DateTime::from_unix_timestamp(0).unwrap();
    /// let response = StationEvent::from_request(&heartbeat)
    ///     .respond(&EventAnswer::Heartbeat { current_time: now }, OcppVersion::V2_0_1)?;
    /// assert_eq!(response.action(), "Heartbeat");
    /// # Ok::<(), ocpp_model::ModelError>(())
    /// ```
    pub fn respond(
        &self,
        answer: &EventAnswer,
        version: OcppVersion,
    ) -> Result<Response, ModelError> {
        respond(self, answer, version)
    }
}
