//! A transaction: started ([`TransactionStarted`]), updated ([`TransactionUpdated`]), ended
//! ([`TransactionEnded`]).
//!
//! 1.6 says it with three actions: `StartTransaction` (the CSMS gives the id in its answer),
//! `MeterValues` with a `transactionId`, and `StopTransaction`. 2.x says it with one,
//! `TransactionEvent` with `eventType` `Started`, `Updated` or `Ended`, whose id the station
//! chose (a string) and whose messages are numbered (`seqNo`).

use core::fmt;

use ocpp_messages::DateTime;

use crate::{IdToken, MeterReading};

/// A transaction's id: 1.6 an integer the CSMS gave out (in its StartTransaction answer), 2.x
/// a string the station chose.
///
/// ```
/// use ocpp_model::TransactionId;
/// assert_eq!(TransactionId::Number(7).to_string(), "7");
/// assert_eq!(TransactionId::Text("a1".into()).to_string(), "a1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TransactionId {
    /// OCPP 1.6: given out by the CSMS.
    Number(i32),
    /// OCPP 2.x: chosen by the station.
    Text(String),
}

impl fmt::Display for TransactionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransactionId::Number(n) => write!(f, "{n}"),
            TransactionId::Text(text) => f.write_str(text),
        }
    }
}

wire_names! {
    /// Why a 2.x transaction message was sent, `TriggerReasonEnumType` (1.6 says none).
    TriggerReason {
        /// Authorized.
        Authorized => "Authorized",
        /// The cable was plugged in.
        CablePluggedIn => "CablePluggedIn",
        /// The charging rate changed.
        ChargingRateChanged => "ChargingRateChanged",
        /// The charging state changed.
        ChargingStateChanged => "ChargingStateChanged",
        /// Deauthorized.
        Deauthorized => "Deauthorized",
        /// The energy limit was reached.
        EnergyLimitReached => "EnergyLimitReached",
        /// The EV stopped answering.
        EvCommunicationLost => "EVCommunicationLost",
        /// The EV was not connected in time.
        EvConnectTimeout => "EVConnectTimeout",
        /// A clock-aligned meter value.
        MeterValueClock => "MeterValueClock",
        /// A periodic meter value.
        MeterValuePeriodic => "MeterValuePeriodic",
        /// The time limit was reached.
        TimeLimitReached => "TimeLimitReached",
        /// Asked by TriggerMessage.
        Trigger => "Trigger",
        /// By an UnlockConnector.
        UnlockCommand => "UnlockCommand",
        /// Stopped by a token.
        StopAuthorized => "StopAuthorized",
        /// The EV left.
        EvDeparted => "EVDeparted",
        /// The EV was detected.
        EvDetected => "EVDetected",
        /// Stopped by the CSMS.
        RemoteStop => "RemoteStop",
        /// Started by the CSMS.
        RemoteStart => "RemoteStart",
        /// An abnormal condition.
        AbnormalCondition => "AbnormalCondition",
        /// Signed data was received.
        SignedDataReceived => "SignedDataReceived",
        /// By a Reset.
        ResetCommand => "ResetCommand",
        /// A value this list does not have (2.1 adds some): see the raw value.
        Unlisted => "",
    }
}

wire_names! {
    /// Why a transaction ended: 2.x `ReasonEnumType`, and 1.6 `Reason` mapped onto it
    /// ([`StopReason::from_1_6`]). Absent in either version means `Local`.
    StopReason {
        /// The token was deauthorized.
        DeAuthorized => "DeAuthorized",
        /// The emergency stop.
        EmergencyStop => "EmergencyStop",
        /// The energy limit was reached.
        EnergyLimitReached => "EnergyLimitReached",
        /// The EV was disconnected.
        EvDisconnected => "EVDisconnected",
        /// A ground fault.
        GroundFault => "GroundFault",
        /// A reset command (1.6 `HardReset` and `SoftReset`).
        ImmediateReset => "ImmediateReset",
        /// Stopped at the station.
        Local => "Local",
        /// Out of credit locally.
        LocalOutOfCredit => "LocalOutOfCredit",
        /// A master pass.
        MasterPass => "MasterPass",
        /// Another reason.
        Other => "Other",
        /// An overcurrent.
        OvercurrentFault => "OvercurrentFault",
        /// Power was lost.
        PowerLoss => "PowerLoss",
        /// Bad power quality.
        PowerQuality => "PowerQuality",
        /// The station rebooted.
        Reboot => "Reboot",
        /// Stopped by the CSMS.
        Remote => "Remote",
        /// The state of charge limit was reached.
        SocLimitReached => "SOCLimitReached",
        /// Stopped by the EV.
        StoppedByEv => "StoppedByEV",
        /// The time limit was reached.
        TimeLimitReached => "TimeLimitReached",
        /// A timeout.
        Timeout => "Timeout",
        /// 1.6 `UnlockCommand` (2.x says it with the trigger reason `UnlockCommand`).
        UnlockCommand => "UnlockCommand",
        /// A value this list does not have: see the raw value.
        Unlisted => "",
    }
}

impl StopReason {
    /// The reason of a 1.6 `Reason` value.
    ///
    /// ```
    /// use ocpp_model::StopReason;
    /// assert_eq!(StopReason::from_1_6("HardReset"), StopReason::ImmediateReset);
    /// assert_eq!(StopReason::from_1_6("EVDisconnected"), StopReason::EvDisconnected);
    /// ```
    pub fn from_1_6(value: &str) -> StopReason {
        match value {
            "HardReset" | "SoftReset" => StopReason::ImmediateReset,
            other => StopReason::from_wire(other).unwrap_or(StopReason::Unlisted),
        }
    }
}

/// A transaction started: 1.6 `StartTransaction`, 2.x `TransactionEvent` `Started`.
///
/// ```
/// use ocpp_messages::{v1_6, DateTime, Request};
/// use ocpp_model::{IdToken, StationEvent};
///
/// let time: DateTime = "2025-01-02T03:04:05Z".parse().unwrap();
/// let request: Request = v1_6::StartTransactionRequest::new(1, "04A2B3C4", 2935, time).into();
/// let event = StationEvent::from_request(&request);
/// let StationEvent::TransactionStarted(started) = event else { panic!() };
/// assert_eq!(started.id, None); // 1.6: given out by the CSMS in its answer
/// assert_eq!(started.token, Some(IdToken::from_id_tag("04A2B3C4")));
/// assert_eq!(started.readings[0].context, "Transaction.Begin");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TransactionStarted {
    /// 2.x: the station's id; 1.6: `None` (the CSMS gives it out in the answer; see
    /// [`TransactionLedger`](crate::TransactionLedger)).
    pub id: Option<TransactionId>,
    /// The EVSE (1.6: `connectorId`).
    pub evse: Option<u32>,
    /// The connector within it (2.x `evse.connectorId`).
    pub connector: Option<u32>,
    /// Who started it.
    pub token: Option<IdToken>,
    /// 2.x `triggerReason`.
    pub trigger: Option<TriggerReason>,
    /// The trigger reason as sent.
    pub raw_trigger: Option<String>,
    /// 2.x `seqNo`.
    pub seq_no: Option<u32>,
    /// 2.x `offline`: sent after the fact; false from 1.6.
    pub offline: bool,
    /// When.
    pub timestamp: DateTime,
    /// The readings sent with it; from 1.6 `meterStart` (Wh) as an
    /// `Energy.Active.Import.Register` reading of context `Transaction.Begin`.
    pub readings: Vec<MeterReading>,
    /// The reservation it uses.
    pub reservation: Option<i32>,
    /// 2.x `remoteStartId`.
    pub remote_start_id: Option<i32>,
    /// 2.x `transactionInfo.chargingState` as sent (`Charging`, `EVConnected`,
    /// `SuspendedEV`, `SuspendedEVSE`, `Idle`); 1.6 has none (its connector status says it).
    pub charging_state: Option<String>,
}

/// A transaction went on: 1.6 `MeterValues` with a `transactionId`, 2.x `TransactionEvent`
/// `Updated`.
#[derive(Debug, Clone, PartialEq)]
pub struct TransactionUpdated {
    /// The transaction.
    pub id: TransactionId,
    /// The EVSE (1.6: `connectorId`; 2.x: given on the first message only).
    pub evse: Option<u32>,
    /// The connector within it.
    pub connector: Option<u32>,
    /// 2.x: a token given on the way (e.g. authorized after the cable was plugged in).
    pub token: Option<IdToken>,
    /// 2.x `triggerReason`.
    pub trigger: Option<TriggerReason>,
    /// The trigger reason as sent.
    pub raw_trigger: Option<String>,
    /// 2.x `seqNo`.
    pub seq_no: Option<u32>,
    /// 2.x `offline`.
    pub offline: bool,
    /// 2.x `timestamp`; 1.6: the last `MeterValue`'s.
    pub timestamp: DateTime,
    /// The readings.
    pub readings: Vec<MeterReading>,
    /// 2.x `transactionInfo.chargingState` as sent (`Charging`, `EVConnected`,
    /// `SuspendedEV`, `SuspendedEVSE`, `Idle`); 1.6 has none (its connector status says it).
    pub charging_state: Option<String>,
}

/// A transaction ended: 1.6 `StopTransaction`, 2.x `TransactionEvent` `Ended`.
#[derive(Debug, Clone, PartialEq)]
pub struct TransactionEnded {
    /// The transaction.
    pub id: TransactionId,
    /// The EVSE, when said (2.x).
    pub evse: Option<u32>,
    /// The connector within it.
    pub connector: Option<u32>,
    /// Who stopped it (1.6 `idTag`, 2.x `idToken`).
    pub token: Option<IdToken>,
    /// 2.x `triggerReason`.
    pub trigger: Option<TriggerReason>,
    /// The trigger reason as sent.
    pub raw_trigger: Option<String>,
    /// Why it ended (absent: `Local`).
    pub reason: StopReason,
    /// The reason as sent (1.6 `reason`, 2.x `stoppedReason`).
    pub raw_reason: Option<String>,
    /// 2.x `seqNo`.
    pub seq_no: Option<u32>,
    /// 2.x `offline`.
    pub offline: bool,
    /// When.
    pub timestamp: DateTime,
    /// The readings: 1.6 `transactionData`, then `meterStop` (Wh) as an
    /// `Energy.Active.Import.Register` reading of context `Transaction.End`.
    pub readings: Vec<MeterReading>,
    /// 2.x `transactionInfo.chargingState` as sent (`Charging`, `EVConnected`,
    /// `SuspendedEV`, `SuspendedEVSE`, `Idle`); 1.6 has none (its connector status says it).
    pub charging_state: Option<String>,
}
