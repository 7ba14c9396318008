//! How a transaction starts ([`Start`]) and why it ends ([`StationStopReason`]).

use ocpp_messages::{DateTime, OcppVersion};
use serde::{Deserialize, Serialize};

use super::{Evse, IdToken, SampledValue};

/// How a transaction starts ([`Transactions::start`](super::Transactions::start)).
///
/// ```
/// use ocpp_proto::station::{Evse, IdToken, Start};
/// let t0 = ocpp_proto::DateTime::from_unix_timestamp(1_780_000_000).unwrap();
/// let start = Start::new(Evse::new(1), IdToken::new("TAG", "Central"), 0, t0)
///     .with_remote_start_id(7);
/// assert_eq!(start.remote_start_id, Some(7));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Start {
    /// Where.
    pub evse: Evse,
    /// Who.
    pub id_token: IdToken,
    /// The energy register (Energy.Active.Import.Register) at the start, in Wh.
    pub meter_wh: i64,
    /// When.
    pub timestamp: DateTime,
    /// 2.x `remoteStartId` of the RequestStartTransaction that started it (its trigger is then
    /// `RemoteStart`, otherwise `Authorized`).
    pub remote_start_id: Option<i32>,
    /// The reservation it uses.
    pub reservation_id: Option<i32>,
    /// Other values measured at the start, sent beside the energy register (2.x: in the
    /// `Started` event's meter value; 1.6 StartTransaction has room for `meterStart` only).
    pub sampled: Vec<SampledValue>,
}

impl Start {
    /// A transaction on `evse` for `id_token`, the meter at `meter_wh`, at `timestamp`.
    #[must_use]
    pub fn new(evse: Evse, id_token: IdToken, meter_wh: i64, timestamp: DateTime) -> Self {
        Start {
            evse,
            id_token,
            meter_wh,
            timestamp,
            remote_start_id: None,
            reservation_id: None,
            sampled: Vec::new(),
        }
    }

    /// With one more value measured at the start (2.x; see [`Start::sampled`]).
    #[must_use]
    pub fn with_sampled_value(mut self, value: SampledValue) -> Self {
        self.sampled.push(value);
        self
    }

    /// Started by the central system's RequestStartTransaction (2.x) with this id.
    #[must_use]
    pub fn with_remote_start_id(mut self, id: i32) -> Self {
        self.remote_start_id = Some(id);
        self
    }

    /// Uses this reservation.
    #[must_use]
    pub fn with_reservation_id(mut self, id: i32) -> Self {
        self.reservation_id = Some(id);
        self
    }
}

/// Why the station ends one of its transactions, as it sends it: the values 1.6 `Reason` and
/// 2.x `ReasonEnumType` share, with 1.6's two resets apart (spelt per version by
/// [`as_str_in`](Self::as_str_in)). A central system reads a stop as ocpp-model's
/// `StopReason`, in 2.x's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum StationStopReason {
    /// Stopped at the station (by the driver's token, a button).
    Local,
    /// Stopped by the central system (RemoteStopTransaction, RequestStopTransaction).
    Remote,
    /// The cable or the EV went away.
    EVDisconnected,
    /// Complete loss of power: a transaction open when the station went down.
    PowerLoss,
    /// The emergency stop.
    EmergencyStop,
    /// The token was no longer authorised.
    DeAuthorized,
    /// The station rebooted.
    Reboot,
    /// A hard reset (1.6 Reset `Hard`: `HardReset`; 2.x Reset `Immediate`: `ImmediateReset`).
    HardReset,
    /// A soft reset (1.6 Reset `Soft`: `SoftReset`; 2.x, which has no such reason and whose
    /// `OnIdle` reset waits for the transaction: `ImmediateReset`).
    SoftReset,
    /// Anything else.
    Other,
}

impl StationStopReason {
    /// The value on the wire (the same in 1.6 and 2.x but for the resets: 1.6's; see
    /// [`StationStopReason::as_str_in`]).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            StationStopReason::HardReset => "HardReset",
            StationStopReason::SoftReset => "SoftReset",
            StationStopReason::Local => "Local",
            StationStopReason::Remote => "Remote",
            StationStopReason::EVDisconnected => "EVDisconnected",
            StationStopReason::PowerLoss => "PowerLoss",
            StationStopReason::EmergencyStop => "EmergencyStop",
            StationStopReason::DeAuthorized => "DeAuthorized",
            StationStopReason::Reboot => "Reboot",
            StationStopReason::Other => "Other",
        }
    }

    /// The value on the wire in `version` (1.6 `Reason`, 2.x `ReasonEnumType`).
    ///
    /// ```
    /// use ocpp_proto::station::StationStopReason;
    /// use ocpp_proto::OcppVersion;
    /// assert_eq!(StationStopReason::HardReset.as_str_in(OcppVersion::V1_6), "HardReset");
    /// assert_eq!(StationStopReason::HardReset.as_str_in(OcppVersion::V2_0_1), "ImmediateReset");
    /// ```
    #[must_use]
    pub fn as_str_in(self, version: OcppVersion) -> &'static str {
        match (self, version) {
            (
                StationStopReason::HardReset | StationStopReason::SoftReset,
                OcppVersion::V2_0_1 | OcppVersion::V2_1,
            ) => "ImmediateReset",
            _ => self.as_str(),
        }
    }

    /// The 2.x `triggerReason` of the `Ended` event for this reason (TriggerReasonEnumType).
    /// A power loss is `AbnormalCondition` ("an abnormal error or fault condition has
    /// occurred": OCPP 2.0.1 Part 2, data types, `TriggerReasonEnumType`; the same in 2.1), and
    /// the stopped reason says which (`PowerLoss`, "complete loss of power",
    /// `ReasonEnumType`). None of the other triggers fits a station that finds a transaction
    /// open when it starts: no token (`StopAuthorized`), no command (`RemoteStop`,
    /// `ResetCommand`), no EV event.
    #[must_use]
    pub fn trigger_reason(self) -> &'static str {
        match self {
            StationStopReason::Local | StationStopReason::Other => "StopAuthorized",
            StationStopReason::Remote => "RemoteStop",
            StationStopReason::EVDisconnected => "EVCommunicationLost",
            StationStopReason::PowerLoss | StationStopReason::EmergencyStop => "AbnormalCondition",
            StationStopReason::DeAuthorized => "Deauthorized",
            StationStopReason::Reboot
            | StationStopReason::HardReset
            | StationStopReason::SoftReset => "ResetCommand",
        }
    }
}
