//! [`Command`]: what a CSMS asks of a charge point, in one vocabulary, made into the request of
//! the charge point's version ([`Command::to_request`]); and the answer back as an
//! [`Outcome`] ([`Command::outcome`]).
//!
//! The station's side reads the same vocabulary: the central system's request of any version
//! as a [`Command`] ([`Command::from_request`]), and its [`Outcome`] made into that version's
//! response ([`Command::answer`]).
//!
//! What a version cannot say is [`ModelError::NotExpressible`], before anything is sent.

use ocpp_messages::{DecodeOptions, OcppVersion, Request, RequestRef, Response};

use crate::{ChargingLimit, IdToken, ModelError, Setting, TransactionId};

wire_names! {
    /// How to reset. Exact per version, not approximated: 1.6 `Hard` and 2.x `Immediate` both
    /// restart at once, stopping transactions ([`ResetKind::Immediate`]); 1.6 `Soft` (stop
    /// transactions gracefully, then restart the software) has no 2.x twin, nor 2.x `OnIdle`
    /// (wait until no transaction is running) a 1.6 one, nor 2.1 `ImmediateAndResume` a 2.0.1
    /// or 1.6 one.
    ResetKind {
        /// 1.6 `Hard`, 2.x `Immediate`.
        Immediate => "Immediate",
        /// 1.6 `Soft` only.
        Soft => "Soft",
        /// 2.x `OnIdle` only.
        OnIdle => "OnIdle",
        /// 2.1 `ImmediateAndResume` only.
        ImmediateAndResume => "ImmediateAndResume",
    }
}

wire_names! {
    /// The message a [`Command::TriggerMessage`] asks for (1.6 `MessageTrigger`, 2.x
    /// `MessageTriggerEnumType`).
    MessageTrigger {
        /// `BootNotification`.
        BootNotification => "BootNotification",
        /// `Heartbeat`.
        Heartbeat => "Heartbeat",
        /// `StatusNotification`.
        StatusNotification => "StatusNotification",
        /// `MeterValues`.
        MeterValues => "MeterValues",
        /// `FirmwareStatusNotification`.
        FirmwareStatusNotification => "FirmwareStatusNotification",
        /// 1.6 only: `DiagnosticsStatusNotification`.
        DiagnosticsStatusNotification => "DiagnosticsStatusNotification",
        /// 2.x only (1.6 asks it with ExtendedTriggerMessage): `LogStatusNotification`.
        LogStatusNotification => "LogStatusNotification",
        /// 2.x only: `TransactionEvent`.
        TransactionEvent => "TransactionEvent",
    }
}

/// A command of the CSMS to a charge point.
///
/// ```
/// use ocpp_messages::OcppVersion;
/// use ocpp_model::{Command, ModelError, TransactionId};
///
/// let stop = Command::RemoteStop { transaction: TransactionId::Number(42) };
/// assert_eq!(stop.to_request(OcppVersion::V1_6)?.action(), "RemoteStopTransaction");
/// assert!(matches!(
///     stop.to_request(OcppVersion::V2_0_1),
///     Err(ModelError::NotExpressible { .. })
/// ));
/// # Ok::<(), ModelError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Command {
    /// Start a transaction: 1.6 `RemoteStartTransaction`, 2.x `RequestStartTransaction`.
    RemoteStart {
        /// The EVSE (1.6 connectorId); `None`: the charge point chooses.
        evse: Option<u32>,
        /// For whom (1.6: the value as idTag, at most 20 characters).
        token: IdToken,
        /// 2.x `remoteStartId` (the station echoes it in TransactionEvent); not sent to 1.6.
        remote_start_id: i32,
        /// A profile for the transaction (purpose [`Tx`](crate::ChargingProfilePurpose::Tx),
        /// no transaction id yet).
        limit: Option<ChargingLimit>,
    },
    /// Stop a transaction: 1.6 `RemoteStopTransaction` (a number id), 2.x
    /// `RequestStopTransaction` (a text id).
    RemoteStop {
        /// The transaction.
        transaction: TransactionId,
    },
    /// Reset the station (1.6, 2.x) or one EVSE (2.x only).
    Reset {
        /// How.
        kind: ResetKind,
        /// 2.x: one EVSE only.
        evse: Option<u32>,
    },
    /// Unlock a connector.
    UnlockConnector {
        /// The EVSE (1.6 connectorId).
        evse: u32,
        /// The connector within it (1.6: only `None` or 1; 2.x: `None` is 1).
        connector: Option<u32>,
    },
    /// Make the station, an EVSE or a connector operative or not.
    ChangeAvailability {
        /// The EVSE (1.6 connectorId); `None`: the whole station (1.6 connectorId 0).
        evse: Option<u32>,
        /// The connector within it (1.6: only `None` or 1).
        connector: Option<u32>,
        /// Operative (true) or inoperative.
        operative: bool,
    },
    /// Ask for a message.
    TriggerMessage {
        /// Which.
        message: MessageTrigger,
        /// For which EVSE (1.6 connectorId).
        evse: Option<u32>,
    },
    /// Set a charging profile.
    SetChargingProfile(ChargingLimit),
    /// Change a configuration setting (1.6 `ChangeConfiguration`, 2.x `SetVariables` of one
    /// variable).
    Configure {
        /// Which setting.
        setting: Setting,
        /// Its new value, as text (both versions carry values as strings).
        value: String,
    },
}

impl Command {
    /// The command's name, for errors and logs.
    pub fn name(&self) -> &'static str {
        match self {
            Command::RemoteStart { .. } => "RemoteStart",
            Command::RemoteStop { .. } => "RemoteStop",
            Command::Reset { .. } => "Reset",
            Command::UnlockConnector { .. } => "UnlockConnector",
            Command::ChangeAvailability { .. } => "ChangeAvailability",
            Command::TriggerMessage { .. } => "TriggerMessage",
            Command::SetChargingProfile(_) => "SetChargingProfile",
            Command::Configure { .. } => "Configure",
        }
    }

    /// The request of `version` that says this command, checked against its schema.
    ///
    /// ```
    /// use ocpp_messages::OcppVersion;
    /// use ocpp_model::{Command, Setting};
    ///
    /// let set = Command::Configure { setting: Setting::HeartbeatInterval, value: "300".into() };
    /// let request = set.to_request(OcppVersion::V2_0_1)?;
    /// assert_eq!(request.action(), "SetVariables");
    /// assert_eq!(
    ///     serde_json::to_string(&request).unwrap(),
    ///     r#"{"setVariableData":[{"attributeValue":"300","component":{"name":"OCPPCommCtrlr"},"variable":{"name":"HeartbeatInterval"}}]}"#
    /// );
    /// # Ok::<(), ocpp_model::ModelError>(())
    /// ```
    pub fn to_request(&self, version: OcppVersion) -> Result<Request, ModelError> {
        let request = match version {
            OcppVersion::V1_6 => crate::v1_6::command(self)?,
            OcppVersion::V2_0_1 => crate::v2::v2_0_1::command(self)?,
            OcppVersion::V2_1 => crate::v2::v2_1::command(self)?,
        };
        request.validate()?;
        Ok(request)
    }

    /// The charge point's answer to this command, as an [`Outcome`].
    ///
    /// ```
    /// use ocpp_messages::{v1_6, Response};
    /// use ocpp_model::{Command, Outcome, ResetKind};
    ///
    /// let reset = Command::Reset { kind: ResetKind::Immediate, evse: None };
    /// let response: Response = v1_6::ResetResponse::new(v1_6::ResetStatus::Accepted).into();
    /// assert_eq!(reset.outcome(&response)?.outcome, Outcome::Accepted);
    /// # Ok::<(), ocpp_model::ModelError>(())
    /// ```
    pub fn outcome(&self, response: &Response) -> Result<CommandOutcome, ModelError> {
        let outcome = match response.view() {
            ocpp_messages::ResponseRef::V1_6(r) => crate::v1_6::outcome(self, r),
            ocpp_messages::ResponseRef::V2_0_1(r) => crate::v2::v2_0_1::outcome(self, r),
            ocpp_messages::ResponseRef::V2_1(r) => crate::v2::v2_1::outcome(self, r),
            #[allow(unreachable_patterns)]
            _ => None,
        };
        outcome.ok_or(ModelError::ResponseMismatch {
            command: self.name(),
            action: response.action(),
        })
    }
}

/// The station's side: a command read from the central system's request, and answered.
impl Command {
    /// The command a central system's request says, of any version, as a station reads it;
    /// `None`: another action, or a request carrying what a [`Command`] does not hold (a
    /// remote start's charging profile or 2.x group token, a 2.x trigger for one connector, a
    /// configuration key or several variables that are not one [`Setting`]). Reading a
    /// request of a version and making it again ([`to_request`](Self::to_request)) gives the
    /// same request; a 1.6 remote start reads with `remote_start_id` 0.
    ///
    /// ```
    /// use ocpp_messages::{v1_6, v2_0_1, Request};
    /// use ocpp_model::{Command, IdToken};
    ///
    /// let v16 = Request::from(v1_6::RemoteStartTransactionRequest::new("TAG-1"));
    /// let token = v2_0_1::IdToken::new("TAG-1", v2_0_1::IdTokenEnum::ISO14443);
    /// let v201 = Request::from(v2_0_1::RequestStartTransactionRequest::new(token, 7));
    /// for request in [v16, v201] {
    ///     let Some(Command::RemoteStart { token, .. }) = Command::from_request(&request) else {
    ///         panic!("a remote start");
    ///     };
    ///     assert_eq!(token.value, "TAG-1");
    /// }
    /// ```
    pub fn from_request(request: &Request) -> Option<Command> {
        match request.view() {
            RequestRef::V1_6(request) => crate::v1_6::read_command(request),
            RequestRef::V2_0_1(request) => crate::v2::v2_0_1::read_command(request),
            RequestRef::V2_1(request) => crate::v2::v2_1::read_command(request),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// The station's answer to this command in `version`: the response whose status says
    /// `outcome` (`Accepted` is an UnlockConnector's `Unlocked`, `Failed` its `UnlockFailed`,
    /// `NotSupported` a TriggerMessage's `NotImplemented` and a 2.x SetVariables'
    /// `UnknownVariable`), checked against the version's schema. A 2.x
    /// RequestStartTransaction's answer carries no `transactionId` (answer its typed request
    /// to give one).
    ///
    /// # Errors
    /// [`ModelError::NotExpressible`] when the version's response has no status for
    /// `outcome` (a 1.6 Reset `Scheduled`, an UnlockConnector `Rejected`...).
    ///
    /// ```
    /// use ocpp_messages::OcppVersion;
    /// use ocpp_model::{Command, ModelError, Outcome, ResetKind};
    ///
    /// let reset = Command::Reset { kind: ResetKind::Immediate, evse: None };
    /// let answer = reset.answer(OcppVersion::V2_0_1, Outcome::Scheduled)?;
    /// assert_eq!(serde_json::to_string(&answer).unwrap(), r#"{"status":"Scheduled"}"#);
    /// assert!(matches!(
    ///     reset.answer(OcppVersion::V1_6, Outcome::Scheduled),
    ///     Err(ModelError::NotExpressible { .. })
    /// ));
    /// # Ok::<(), ModelError>(())
    /// ```
    pub fn answer(&self, version: OcppVersion, outcome: Outcome) -> Result<Response, ModelError> {
        let action = self.action(version);
        let candidates: &[&str] = match outcome {
            Outcome::Accepted => &["Accepted", "Unlocked"],
            Outcome::Rejected => &["Rejected"],
            Outcome::Scheduled => &["Scheduled"],
            Outcome::RebootRequired => &["RebootRequired"],
            Outcome::NotSupported => &["NotSupported", "NotImplemented", "UnknownVariable"],
            Outcome::Failed => &["UnlockFailed"],
        };
        let payload = |status: &str| match self {
            Command::Configure { setting, .. } if version != OcppVersion::V1_6 => {
                let (component, variable) = setting.component_variable();
                format!(
                    r#"{{"setVariableResult":[{{"attributeStatus":"{status}","component":{{"name":"{component}"}},"variable":{{"name":"{variable}"}}}}]}}"#
                )
            }
            _ => format!(r#"{{"status":"{status}"}}"#),
        };
        candidates
            .iter()
            .find_map(|status| {
                let text = payload(status);
                Response::decode(version, action, &text, &DecodeOptions::strict()).ok()
            })
            .ok_or(ModelError::NotExpressible {
                command: self.name(),
                version,
            })
    }

    /// The action that says this command in `version`.
    fn action(&self, version: OcppVersion) -> &'static str {
        let v1_6 = version == OcppVersion::V1_6;
        match self {
            Command::RemoteStart { .. } if v1_6 => "RemoteStartTransaction",
            Command::RemoteStart { .. } => "RequestStartTransaction",
            Command::RemoteStop { .. } if v1_6 => "RemoteStopTransaction",
            Command::RemoteStop { .. } => "RequestStopTransaction",
            Command::Configure { .. } if v1_6 => "ChangeConfiguration",
            Command::Configure { .. } => "SetVariables",
            Command::Reset { .. } => "Reset",
            Command::UnlockConnector { .. } => "UnlockConnector",
            Command::ChangeAvailability { .. } => "ChangeAvailability",
            Command::TriggerMessage { .. } => "TriggerMessage",
            Command::SetChargingProfile(_) => "SetChargingProfile",
        }
    }
}

/// What a charge point answered to a command, in one vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// Done, or will be (`Accepted`, `Unlocked`).
    Accepted,
    /// Refused (`Rejected`; 2.x `OngoingAuthorizedTransaction`, `UnknownConnector`).
    Rejected,
    /// Accepted for later (`Scheduled`).
    Scheduled,
    /// Accepted, effective after a reboot (`RebootRequired`).
    RebootRequired,
    /// Not supported (`NotSupported`, `NotImplemented`; 2.x `UnknownComponent`,
    /// `UnknownVariable`, `NotSupportedAttributeType`).
    NotSupported,
    /// Tried and failed (`UnlockFailed`).
    Failed,
}

impl Outcome {
    /// Every outcome, in the order of the type.
    ///
    /// ```
    /// use ocpp_model::Outcome;
    /// assert_eq!(Outcome::ALL.len(), 6);
    /// ```
    pub const ALL: [Outcome; 6] = [
        Outcome::Accepted,
        Outcome::Rejected,
        Outcome::Scheduled,
        Outcome::RebootRequired,
        Outcome::NotSupported,
        Outcome::Failed,
    ];
}

/// A command's [`Outcome`], with the status as the charge point sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutcome {
    /// The outcome.
    pub outcome: Outcome,
    /// The status as sent.
    pub raw_status: String,
    /// 2.x RequestStartTransaction: the transaction already running, if the station said.
    pub transaction: Option<TransactionId>,
}

impl CommandOutcome {
    pub(crate) fn of(outcome: Outcome, raw_status: &str) -> Self {
        CommandOutcome {
            outcome,
            raw_status: raw_status.to_owned(),
            transaction: None,
        }
    }
}

/// The neutral outcome of a status string that every version spells alike.
pub(crate) fn outcome_of(status: &str) -> Outcome {
    match status {
        "Accepted" | "Unlocked" => Outcome::Accepted,
        "Scheduled" => Outcome::Scheduled,
        "RebootRequired" => Outcome::RebootRequired,
        "NotSupported"
        | "NotImplemented"
        | "UnknownComponent"
        | "UnknownVariable"
        | "NotSupportedAttributeType" => Outcome::NotSupported,
        "UnlockFailed" => Outcome::Failed,
        _ => Outcome::Rejected,
    }
}
