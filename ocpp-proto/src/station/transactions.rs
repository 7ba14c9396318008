//! A station's own transactions per EVSE and the messages they make: [`Transactions`].

use std::collections::{BTreeMap, VecDeque};

use ocpp_messages::{DateTime, OcppVersion, Request};

use ocpp_messages::Decimal;
use serde::{Deserialize, Serialize};

#[cfg(feature = "v1_6")]
use ocpp_messages::v1_6;
#[cfg(feature = "v2_0_1")]
use ocpp_messages::v2_0_1;
#[cfg(feature = "v2_1")]
use ocpp_messages::v2_1;

/// The longest 2.x `transactionId` (`identifierString[0..36]`).
const MAX_TRANSACTION_ID: usize = 36;
/// The longest prefix of the 2.x transaction ids, so that prefix and counter fit in 36.
pub const MAX_TRANSACTION_ID_PREFIX: usize = 24;

/// An EVSE and its connector: where a transaction takes place. OCPP 1.6 knows connectors only:
/// there `id` is the `connectorId` (and `connector` is not used).
///
/// ```
/// use ocpp_proto::station::Evse;
/// let evse = Evse::new(2).with_connector(1);
/// assert_eq!((evse.id, evse.connector), (2, Some(1)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Evse {
    /// 2.x `evseId`; 1.6 `connectorId`.
    pub id: i32,
    /// 2.x `connectorId` on the EVSE, when the station says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector: Option<i32>,
}

impl Evse {
    /// EVSE `id` (1.6: connector `id`).
    #[must_use]
    pub fn new(id: i32) -> Self {
        Evse {
            id,
            connector: None,
        }
    }

    /// The connector on the EVSE (2.x).
    #[must_use]
    pub fn with_connector(mut self, connector: i32) -> Self {
        self.connector = Some(connector);
        self
    }
}

/// Who authorised a transaction: 1.6 `idTag` (the `id`), 2.x `IdTokenType` (`id` and its
/// `type`, e.g. `"ISO14443"`, `"Central"`).
///
/// ```
/// use ocpp_proto::station::IdToken;
/// let token = IdToken::new("04A1B2C3", "ISO14443");
/// assert_eq!(token.id, "04A1B2C3");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdToken {
    /// The token (1.6 `idTag`, 2.x `idToken`).
    pub id: String,
    /// The 2.x `type` as on the wire (not used on 1.6).
    pub kind: String,
}

impl IdToken {
    /// A token and its 2.x type.
    pub fn new(id: impl Into<String>, kind: impl Into<String>) -> Self {
        IdToken {
            id: id.into(),
            kind: kind.into(),
        }
    }
}

/// `measurand` of the energy register every transaction message carries.
pub const ENERGY_REGISTER: &str = "Energy.Active.Import.Register";

/// One sampled value a transaction message carries besides the energy register (power,
/// current, voltage, state of charge...): an exact [`Decimal`], never a float, with the
/// protocol's names for what was measured and its unit (OCPP 1.6 §7.31 `Measurand`, §7.45
/// `UnitOfMeasure`; 2.x `MeasurandEnumType`, Part 2 appendix "Standardized Units of
/// Measurements"), which 1.6 and 2.x spell alike.
///
/// ```
/// use ocpp_proto::station::SampledValue;
/// let power = SampledValue::power_w(11_000);
/// assert_eq!((power.measurand.as_str(), power.unit.as_str()), ("Power.Active.Import", "W"));
/// let soc = SampledValue::soc_percent(80);
/// let current = SampledValue::current_a("15.9".parse::<ocpp_proto::Decimal>().unwrap()).with_phase("L1");
/// assert_eq!(current.value.to_string(), "15.9");
/// # let _ = soc;
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SampledValue {
    /// What was measured (`Power.Active.Import`, `Current.Import`, `SoC`...).
    pub measurand: String,
    /// The value, exact.
    pub value: Decimal,
    /// Its unit (`W`, `A`, `V`, `Percent`...).
    pub unit: String,
    /// The phase (`L1`, `L1-N`...), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Where it was measured (`Outlet`, `EV`...), if not the default (`Outlet`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

impl SampledValue {
    /// `value` of `measurand` in `unit`.
    ///
    /// ```
    /// use ocpp_proto::station::SampledValue;
    /// let voltage = SampledValue::new("Voltage", 230, "V");
    /// assert_eq!(voltage.value, 230.into());
    /// ```
    pub fn new(
        measurand: impl Into<String>,
        value: impl Into<Decimal>,
        unit: impl Into<String>,
    ) -> Self {
        SampledValue {
            measurand: measurand.into(),
            value: value.into(),
            unit: unit.into(),
            phase: None,
            location: None,
        }
    }

    /// The active power imported, in W (`Power.Active.Import`).
    pub fn power_w(value: impl Into<Decimal>) -> Self {
        SampledValue::new("Power.Active.Import", value, "W")
    }

    /// The current imported, in A (`Current.Import`).
    pub fn current_a(value: impl Into<Decimal>) -> Self {
        SampledValue::new("Current.Import", value, "A")
    }

    /// The voltage, in V (`Voltage`).
    pub fn voltage_v(value: impl Into<Decimal>) -> Self {
        SampledValue::new("Voltage", value, "V")
    }

    /// The EV's state of charge, in percent (`SoC`, measured at the EV).
    pub fn soc_percent(value: impl Into<Decimal>) -> Self {
        SampledValue::new("SoC", value, "Percent").with_location("EV")
    }

    /// On `phase` (`L1`, `L2`, `L3`, `N`, `L1-N`...).
    #[must_use]
    pub fn with_phase(mut self, phase: impl Into<String>) -> Self {
        self.phase = Some(phase.into());
        self
    }

    /// Measured at `location` (`Body`, `Cable`, `EV`, `Inlet`, `Outlet`).
    #[must_use]
    pub fn with_location(mut self, location: impl Into<String>) -> Self {
        self.location = Some(location.into());
        self
    }
}

/// A meter reading of a transaction: the energy register (`Energy.Active.Import.Register`,
/// Wh, an integer: what is billed) and any other [`SampledValue`]s, sent in one meter value;
/// `triggered` when the central system asked for it (TriggerMessage: 2.x trigger `Trigger`,
/// context `Trigger` in both versions) rather than periodic.
///
/// ```
/// use ocpp_proto::station::{Reading, SampledValue};
/// let reading = Reading::new(12_345)
///     .with_sampled_value(SampledValue::power_w(11_000))
///     .with_sampled_value(SampledValue::soc_percent(64));
/// assert_eq!(reading.sampled.len(), 2);
/// let plain: Reading = 12_345.into();
/// assert!(plain.sampled.is_empty() && !plain.triggered);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Reading {
    /// The energy register, Wh.
    pub energy_wh: i64,
    /// The other values, in the order sent (after the energy register).
    pub sampled: Vec<SampledValue>,
    /// Asked for by the central system (TriggerMessage), not periodic.
    pub triggered: bool,
}

impl Reading {
    /// The energy register at `energy_wh`, nothing else.
    #[must_use]
    pub fn new(energy_wh: i64) -> Self {
        Reading {
            energy_wh,
            sampled: Vec::new(),
            triggered: false,
        }
    }

    /// With one more sampled value.
    #[must_use]
    pub fn with_sampled_value(mut self, value: SampledValue) -> Self {
        self.sampled.push(value);
        self
    }

    /// Asked for by a TriggerMessage.
    #[must_use]
    pub fn triggered(mut self) -> Self {
        self.triggered = true;
        self
    }
}

impl From<i64> for Reading {
    fn from(energy_wh: i64) -> Self {
        Reading::new(energy_wh)
    }
}

/// How a transaction starts ([`Transactions::start`]).
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

/// Why a transaction ended: the values 1.6 `Reason` and 2.x `ReasonEnumType` share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum StopReason {
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

impl StopReason {
    /// The value on the wire (the same in 1.6 and 2.x but for the resets: 1.6's; see
    /// [`StopReason::as_str_in`]).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::HardReset => "HardReset",
            StopReason::SoftReset => "SoftReset",
            StopReason::Local => "Local",
            StopReason::Remote => "Remote",
            StopReason::EVDisconnected => "EVDisconnected",
            StopReason::PowerLoss => "PowerLoss",
            StopReason::EmergencyStop => "EmergencyStop",
            StopReason::DeAuthorized => "DeAuthorized",
            StopReason::Reboot => "Reboot",
            StopReason::Other => "Other",
        }
    }

    /// The value on the wire in `version` (1.6 `Reason`, 2.x `ReasonEnumType`).
    ///
    /// ```
    /// use ocpp_proto::station::StopReason;
    /// use ocpp_proto::OcppVersion;
    /// assert_eq!(StopReason::HardReset.as_str_in(OcppVersion::V1_6), "HardReset");
    /// assert_eq!(StopReason::HardReset.as_str_in(OcppVersion::V2_0_1), "ImmediateReset");
    /// ```
    #[must_use]
    pub fn as_str_in(self, version: OcppVersion) -> &'static str {
        match (self, version) {
            (
                StopReason::HardReset | StopReason::SoftReset,
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
            StopReason::Local | StopReason::Other => "StopAuthorized",
            StopReason::Remote => "RemoteStop",
            StopReason::EVDisconnected => "EVCommunicationLost",
            StopReason::PowerLoss | StopReason::EmergencyStop => "AbnormalCondition",
            StopReason::DeAuthorized => "Deauthorized",
            StopReason::Reboot | StopReason::HardReset | StopReason::SoftReset => "ResetCommand",
        }
    }
}

/// How a transaction is known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransactionRef {
    /// 2.x: the `transactionId` the station made.
    Id(String),
    /// 1.6: the central system has not answered the StartTransaction yet; it is the queued
    /// message with this place (`seq`) in the offline queue.
    Pending(u64),
    /// 1.6: the `transactionId` the central system gave.
    Given(i32),
}

/// An open transaction, as [`Transactions`] keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OpenTransaction {
    /// Where.
    pub evse: Evse,
    /// The version its messages are made for.
    #[serde(with = "version_text")]
    pub version: OcppVersion,
    /// Its id.
    pub id: TransactionRef,
    /// 2.x: the `seqNo` of its next TransactionEvent (1 after `Started`).
    pub next_seq_no: u32,
    /// Who started it.
    pub id_token: IdToken,
    /// The energy register at its start, Wh.
    pub meter_start_wh: i64,
    /// The last reading given ([`Transactions::meter`]), Wh.
    pub meter_wh: i64,
    /// The other values of the last reading ([`Transactions::meter_reading`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sampled: Vec<SampledValue>,
    /// When it started.
    pub started_at: DateTime,
    /// 2.x: the `remoteStartId` it started with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_start_id: Option<i32>,
}

/// A transaction message made by [`Transactions`], to go through the offline queue.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TransactionMessage {
    /// The CALL.
    pub request: Request,
    /// 1.6: the queue place of the StartTransaction whose `transactionId` this message's
    /// takes once the central system gave it (until then it carries a provisional id).
    pub transaction_of: Option<u64>,
}

/// Why [`Transactions`] refused a change (nothing changed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransactionError {
    /// A transaction is open on the EVSE already (one at a time per EVSE).
    #[error("a transaction is open on EVSE {0} already")]
    Busy(i32),
    /// No transaction is open on the EVSE.
    #[error("no transaction is open on EVSE {0}")]
    NotOpen(i32),
    /// A value does not fit the version's message (1.6 Wh are `integer`; 2.1 ids unsigned).
    #[error("{0} is out of range for this OCPP version")]
    OutOfRange(&'static str),
    /// A name the version does not know (a sampled value's measurand, unit, phase or
    /// location).
    #[error("{0} {1:?} is not a value of this OCPP version")]
    UnknownValue(&'static str, String),
    /// The version's messages are not compiled in (a feature of this crate).
    #[error("OCPP {0} is not enabled in this build")]
    VersionDisabled(&'static str),
    /// A snapshot that does not read.
    #[error("transaction snapshot: {0}")]
    Snapshot(String),
}

/// A station's transactions, per EVSE: what is open, under which id, at which `seqNo`, with which
/// meter reading; and the transaction messages each change makes (OCPP 1.6 §4.8 StartTransaction,
/// §4.7 MeterValues, §4.10 StopTransaction; OCPP 2.0.1 and 2.1 E01-E07 TransactionEvent).
///
/// `Transactions` is Sans-IO: every change takes the time (and a start, the place its message
/// will have in the station's offline queue), changes the state, and hands back the
/// [`TransactionMessage`] to queue. The whole state serialises to one JSON snapshot
/// ([`Transactions::to_snapshot`], [`Transactions::from_snapshot`]), so that a driver can write
/// the message and the state that made it in one record of its journal: a station killed at any
/// moment either has both or neither.
///
/// - OCPP 2.0.1 and 2.1: the station makes the `transactionId` (a prefix chosen when the state
///   was created, then a counter: unique as long as the snapshot is kept); `seqNo` is 0 on
///   `Started` and one more on every TransactionEvent of the same transaction (Part 2 E,
///   "seqNo"), never reused, also across a restart.
/// - OCPP 1.6: the central system gives the `transactionId` in its StartTransaction answer, which
///   a station offline learns late. Until then the transaction is known by the queue place of its
///   StartTransaction ([`TransactionRef::Pending`]), and the MeterValues and StopTransaction it
///   makes carry [`TransactionMessage::transaction_of`] so the queue fills the id in once known
///   ([`with_transaction_id`](super::with_transaction_id)); [`Transactions::on_transaction_id`]
///   records it here.
/// - After a restart the open transactions are those of the snapshot; a station that lost power
///   ends them with [`Transactions::end_after_power_loss`] (stopped reason `PowerLoss`, the last
///   meter reading known), or resumes them (nothing to do: the next [`Transactions::meter`]
///   goes on with the next `seqNo`).
///
/// ```
/// use ocpp_proto::station::{Evse, IdToken, Start, StopReason, Transactions};
/// use ocpp_proto::{DateTime, OcppVersion};
///
/// let t0 = DateTime::from_unix_timestamp(1_780_000_000).unwrap();
/// let mut transactions = Transactions::new(OcppVersion::V2_0_1, "CP001-");
/// let evse = Evse::new(1).with_connector(1);
/// let started = transactions
///     .start(Start::new(evse, IdToken::new("TAG-1", "ISO14443"), 1_000, t0.clone()), 1)
///     .unwrap();
/// assert_eq!(started.request.action(), "TransactionEvent");
/// transactions.meter(evse.id, 1_500, t0.clone()).unwrap();
/// let ended = transactions.stop(evse.id, 2_000, t0, StopReason::Local).unwrap();
/// let payload = serde_json::to_value(&ended.request).unwrap();
/// assert_eq!(payload["seqNo"], 2);
/// assert_eq!(payload["transactionInfo"]["stoppedReason"], "Local");
///
/// // The state survives as one JSON text.
/// let snapshot = transactions.to_snapshot();
/// let again = Transactions::from_snapshot(&snapshot).unwrap();
/// assert!(again.open().next().is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transactions {
    /// The version new transactions are made for.
    #[serde(with = "version_text")]
    version: OcppVersion,
    /// 2.x: what every transactionId starts with.
    prefix: String,
    /// 2.x: the number of the next transactionId.
    next_number: u64,
    /// The open transactions by EVSE id.
    open: BTreeMap<i32, OpenTransaction>,
    /// The last [`MAX_ENDED`] transactions that ended, oldest first (1.6: so that the id of
    /// one ended before its StartTransaction was answered, e.g. after a restart, is kept).
    #[serde(default)]
    ended: VecDeque<OpenTransaction>,
}

/// How many ended transactions [`Transactions::ended`] keeps.
pub const MAX_ENDED: usize = 8;

impl Transactions {
    /// No transaction yet; new ones made for `version`; 2.x ids start with `prefix` (cut to
    /// its first [`MAX_TRANSACTION_ID_PREFIX`] bytes), e.g. the station's identity and the time
    /// the state was created, so that ids stay unique even if the state is lost.
    ///
    /// ```
    /// use ocpp_proto::station::Transactions;
    /// use ocpp_proto::OcppVersion;
    /// let transactions = Transactions::new(OcppVersion::V1_6, "");
    /// assert_eq!(transactions.version(), OcppVersion::V1_6);
    /// ```
    pub fn new(version: OcppVersion, prefix: &str) -> Self {
        let mut end = prefix.len().min(MAX_TRANSACTION_ID_PREFIX);
        while !prefix.is_char_boundary(end) {
            end -= 1;
        }
        Transactions {
            version,
            prefix: prefix[..end].to_owned(),
            next_number: 1,
            open: BTreeMap::new(),
            ended: VecDeque::new(),
        }
    }

    /// The version new transactions are made for.
    #[must_use]
    pub fn version(&self) -> OcppVersion {
        self.version
    }

    /// Makes new transactions for `version` (e.g. the one the last connection negotiated);
    /// open transactions keep theirs.
    pub fn set_version(&mut self, version: OcppVersion) {
        self.version = version;
    }

    /// The open transactions, by EVSE.
    pub fn open(&self) -> impl Iterator<Item = &OpenTransaction> {
        self.open.values()
    }

    /// The open transaction on `evse`.
    #[must_use]
    pub fn get(&self, evse: i32) -> Option<&OpenTransaction> {
        self.open.get(&evse)
    }

    /// The state as one JSON text.
    #[must_use]
    pub fn to_snapshot(&self) -> String {
        // Only strings, integers and maps with integer keys: serde_json cannot fail on it.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The state a snapshot holds.
    ///
    /// # Errors
    /// [`TransactionError::Snapshot`] when it does not read.
    pub fn from_snapshot(snapshot: &str) -> Result<Self, TransactionError> {
        serde_json::from_str(snapshot).map_err(|e| TransactionError::Snapshot(e.to_string()))
    }

    /// Starts a transaction: the 1.6 StartTransaction or the 2.x TransactionEvent `Started`
    /// (`seqNo` 0, `triggerReason` `RemoteStart` or `Authorized`, the meter reading as
    /// `Energy.Active.Import.Register` with context `Transaction.Begin`). `queue_seq` is the
    /// place the message will have in the offline queue (1.6: the transaction is known by it
    /// until answered).
    ///
    /// # Errors
    /// [`TransactionError::Busy`], [`TransactionError::OutOfRange`],
    /// [`TransactionError::VersionDisabled`]; nothing changed.
    pub fn start(
        &mut self,
        start: Start,
        queue_seq: u64,
    ) -> Result<TransactionMessage, TransactionError> {
        if self.open.contains_key(&start.evse.id) {
            return Err(TransactionError::Busy(start.evse.id));
        }
        let version = self.version;
        let id = match version {
            OcppVersion::V1_6 => TransactionRef::Pending(queue_seq),
            OcppVersion::V2_0_1 | OcppVersion::V2_1 => {
                let id = format!("{}{}", self.prefix, self.next_number);
                if id.len() > MAX_TRANSACTION_ID {
                    return Err(TransactionError::OutOfRange("transactionId"));
                }
                TransactionRef::Id(id)
            }
        };
        let open = OpenTransaction {
            evse: start.evse,
            version,
            id,
            next_seq_no: 0,
            id_token: start.id_token.clone(),
            meter_start_wh: start.meter_wh,
            meter_wh: start.meter_wh,
            sampled: start.sampled.clone(),
            started_at: start.timestamp.clone(),
            remote_start_id: start.remote_start_id,
        };
        let request = message::started(&open, &start)?;
        if version != OcppVersion::V1_6 {
            self.next_number += 1;
        }
        let mut open = open;
        open.next_seq_no = 1;
        self.open.insert(start.evse.id, open);
        Ok(TransactionMessage {
            request,
            transaction_of: None,
        })
    }

    /// A periodic meter reading of the transaction on `evse`: 1.6 MeterValues with its
    /// `transactionId` (provisional while unknown: see [`TransactionMessage::transaction_of`]),
    /// 2.x TransactionEvent `Updated` (`MeterValuePeriodic`, the next `seqNo`).
    ///
    /// # Errors
    /// [`TransactionError::NotOpen`], [`TransactionError::OutOfRange`]; nothing changed.
    pub fn meter(
        &mut self,
        evse: i32,
        meter_wh: i64,
        timestamp: DateTime,
    ) -> Result<TransactionMessage, TransactionError> {
        self.meter_reading(evse, Reading::new(meter_wh), timestamp)
    }

    /// [`Transactions::meter`] with other sampled values beside the energy register (power,
    /// current, state of charge...), all in one meter value; a [`Reading::triggered`] one is
    /// 2.x trigger `Trigger`, context `Trigger`.
    ///
    /// ```
    /// use ocpp_proto::station::{Evse, IdToken, Reading, SampledValue, Start, Transactions};
    /// use ocpp_proto::{DateTime, OcppVersion};
    ///
    /// let t0 = DateTime::from_unix_timestamp(1_780_000_000).unwrap();
    /// let mut transactions = Transactions::new(OcppVersion::V1_6, "");
    /// transactions.start(Start::new(Evse::new(1), IdToken::new("TAG", ""), 0, t0.clone()), 1).unwrap();
    /// let reading = Reading::new(2_750).with_sampled_value(SampledValue::power_w(11_000));
    /// let message = transactions.meter_reading(1, reading, t0).unwrap();
    /// let payload = serde_json::to_value(&message.request).unwrap();
    /// let sampled = &payload["meterValue"][0]["sampledValue"];
    /// assert_eq!((sampled[0]["value"].as_str(), sampled[1]["value"].as_str()), (Some("2750"), Some("11000")));
    /// assert_eq!(sampled[1]["measurand"], "Power.Active.Import");
    /// ```
    ///
    /// # Errors
    /// [`TransactionError::NotOpen`], [`TransactionError::OutOfRange`],
    /// [`TransactionError::UnknownValue`]; nothing changed.
    pub fn meter_reading(
        &mut self,
        evse: i32,
        reading: Reading,
        timestamp: DateTime,
    ) -> Result<TransactionMessage, TransactionError> {
        let open = self
            .open
            .get(&evse)
            .ok_or(TransactionError::NotOpen(evse))?;
        let message = message::updated(open, &reading, timestamp)?;
        if let Some(open) = self.open.get_mut(&evse) {
            open.meter_wh = reading.energy_wh;
            open.sampled = reading.sampled;
            open.next_seq_no = open.next_seq_no.saturating_add(1);
        }
        Ok(message)
    }

    /// Ends the transaction on `evse`: 1.6 StopTransaction (`meterStop`, `reason`), 2.x
    /// TransactionEvent `Ended` (the next `seqNo`, `stoppedReason`, the trigger of
    /// [`StopReason::trigger_reason`], the reading with context `Transaction.End`).
    ///
    /// # Errors
    /// [`TransactionError::NotOpen`], [`TransactionError::OutOfRange`]; nothing changed.
    pub fn stop(
        &mut self,
        evse: i32,
        meter_wh: i64,
        timestamp: DateTime,
        reason: StopReason,
    ) -> Result<TransactionMessage, TransactionError> {
        self.stop_with(evse, Reading::new(meter_wh), timestamp, reason)
    }

    /// [`Transactions::stop`] with other sampled values beside the energy register (2.x: in
    /// the `Ended` event's meter value; 1.6: in StopTransaction's `transactionData`, context
    /// `Transaction.End`).
    ///
    /// ```
    /// use ocpp_proto::station::{Evse, IdToken, Reading, SampledValue, Start, StopReason, Transactions};
    /// use ocpp_proto::{DateTime, OcppVersion};
    ///
    /// let t0 = DateTime::from_unix_timestamp(1_780_000_000).unwrap();
    /// let mut transactions = Transactions::new(OcppVersion::V2_1, "CP1-");
    /// transactions.start(Start::new(Evse::new(1), IdToken::new("TAG", "Central"), 0, t0.clone()), 1).unwrap();
    /// let reading = Reading::new(9_000).with_sampled_value(SampledValue::soc_percent(80));
    /// let ended = transactions.stop_with(1, reading, t0, StopReason::EVDisconnected).unwrap();
    /// let payload = serde_json::to_value(&ended.request).unwrap();
    /// assert_eq!(payload["meterValue"][0]["sampledValue"][1]["measurand"], "SoC");
    /// ```
    ///
    /// # Errors
    /// As [`Transactions::meter_reading`].
    pub fn stop_with(
        &mut self,
        evse: i32,
        reading: Reading,
        timestamp: DateTime,
        reason: StopReason,
    ) -> Result<TransactionMessage, TransactionError> {
        let open = self
            .open
            .get(&evse)
            .ok_or(TransactionError::NotOpen(evse))?;
        let message = message::ended(open, &reading, timestamp, reason)?;
        if let Some(mut ended) = self.open.remove(&evse) {
            ended.meter_wh = reading.energy_wh;
            ended.sampled = reading.sampled;
            if self.ended.len() == MAX_ENDED {
                self.ended.pop_front();
            }
            self.ended.push_back(ended);
        }
        Ok(message)
    }

    /// After a restart: ends the transaction that was open on `evse` when the station lost
    /// power, with the last meter reading known ([`StopReason::PowerLoss`]; 2.x trigger
    /// `AbnormalCondition`, its `seqNo` going on from the last one sent).
    ///
    /// ```
    /// use ocpp_proto::station::{Evse, IdToken, Start, Transactions};
    /// use ocpp_proto::{DateTime, OcppVersion};
    ///
    /// let t0 = DateTime::from_unix_timestamp(1_780_000_000).unwrap();
    /// let mut before = Transactions::new(OcppVersion::V1_6, "");
    /// before.start(Start::new(Evse::new(1), IdToken::new("TAG", ""), 500, t0.clone()), 7).unwrap();
    /// before.meter(1, 650, t0.clone()).unwrap();
    /// // Killed; the snapshot is what the journal kept.
    /// let mut after = Transactions::from_snapshot(&before.to_snapshot()).unwrap();
    /// let stop = after.end_after_power_loss(1, t0).unwrap();
    /// let payload = serde_json::to_value(&stop.request).unwrap();
    /// assert_eq!((payload["reason"].as_str(), payload["meterStop"].as_i64()), (Some("PowerLoss"), Some(650)));
    /// // Its id is the StartTransaction's (queued as 7), once the central system gives it.
    /// assert_eq!(stop.transaction_of, Some(7));
    /// ```
    ///
    /// # Errors
    /// As [`Transactions::stop`].
    pub fn end_after_power_loss(
        &mut self,
        evse: i32,
        timestamp: DateTime,
    ) -> Result<TransactionMessage, TransactionError> {
        let open = self
            .open
            .get(&evse)
            .ok_or(TransactionError::NotOpen(evse))?;
        let meter_wh = open.meter_wh;
        self.stop(evse, meter_wh, timestamp, StopReason::PowerLoss)
    }

    /// OCPP 1.6: the StartTransaction queued at `start_seq` was answered with `id`. Returns the
    /// EVSE whose transaction now has it: an open one ([`Transactions::transaction_id`]) or one
    /// of the last that ended ([`Transactions::ended`], e.g. ended with `PowerLoss` at a restart
    /// before its StartTransaction was answered); `None` when none has that StartTransaction.
    ///
    /// ```
    /// use ocpp_proto::station::{Evse, IdToken, Start, Transactions};
    /// use ocpp_proto::{DateTime, OcppVersion};
    ///
    /// let t0 = DateTime::from_unix_timestamp(1_780_000_000).unwrap();
    /// let mut transactions = Transactions::new(OcppVersion::V1_6, "");
    /// transactions.start(Start::new(Evse::new(2), IdToken::new("TAG", ""), 0, t0.clone()), 41).unwrap();
    /// assert_eq!(transactions.transaction_id(2), None);
    /// assert_eq!(transactions.on_transaction_id(41, 4711), Some(2));
    /// assert_eq!(transactions.transaction_id(2).as_deref(), Some("4711"));
    /// let meter = transactions.meter(2, 10, t0).unwrap();
    /// assert_eq!(meter.transaction_of, None); // it carries 4711 itself
    /// ```
    pub fn on_transaction_id(&mut self, start_seq: u64, id: i32) -> Option<i32> {
        let pending = TransactionRef::Pending(start_seq);
        let transaction = self
            .open
            .values_mut()
            .chain(self.ended.iter_mut())
            .find(|t| t.id == pending)?;
        transaction.id = TransactionRef::Given(id);
        Some(transaction.evse.id)
    }

    /// The last transactions that ended (at most [`MAX_ENDED`]), oldest first, each with its
    /// last reading: for the id a 1.6 central system gave one that ended before it answered.
    ///
    /// ```
    /// use ocpp_proto::station::{Evse, IdToken, Start, StopReason, TransactionRef, Transactions};
    /// use ocpp_proto::{DateTime, OcppVersion};
    ///
    /// let t0 = DateTime::from_unix_timestamp(1_780_000_000).unwrap();
    /// let mut transactions = Transactions::new(OcppVersion::V1_6, "");
    /// transactions.start(Start::new(Evse::new(1), IdToken::new("TAG", ""), 0, t0.clone()), 3).unwrap();
    /// transactions.end_after_power_loss(1, t0).unwrap();
    /// transactions.on_transaction_id(3, 99);
    /// assert_eq!(transactions.ended().last().map(|t| &t.id), Some(&TransactionRef::Given(99)));
    /// ```
    pub fn ended(&self) -> impl Iterator<Item = &OpenTransaction> {
        self.ended.iter()
    }

    /// OCPP 1.6: the `transactionId` of the transaction on `evse`, once the central system
    /// gave it; 2.x: the one the station made (as a string).
    #[must_use]
    pub fn transaction_id(&self, evse: i32) -> Option<String> {
        match &self.open.get(&evse)?.id {
            TransactionRef::Id(id) => Some(id.clone()),
            TransactionRef::Given(id) => Some(id.to_string()),
            TransactionRef::Pending(_) => None,
        }
    }
}

/// `OcppVersion` as its number, `"1.6"`.
mod version_text {
    use ocpp_messages::OcppVersion;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &OcppVersion, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(v.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<OcppVersion, D::Error> {
        let text = String::deserialize(d)?;
        text.parse()
            .map_err(|_| serde::de::Error::custom(format!("unknown OCPP version {text:?}")))
    }
}

/// The messages, per version.
mod message {
    use super::*;

    const ENERGY: &str = ENERGY_REGISTER;

    /// `value` checked against the version's list (`from_wire` keeps what it does not know).
    #[allow(dead_code)]
    fn known<T>(
        value: &str,
        what: &'static str,
        from_wire: impl Fn(&str) -> T,
        recognized: impl Fn(&T) -> bool,
    ) -> Result<T, TransactionError> {
        let parsed = from_wire(value);
        if recognized(&parsed) {
            Ok(parsed)
        } else {
            Err(TransactionError::UnknownValue(what, value.to_owned()))
        }
    }

    /// The context of a periodic or triggered reading.
    fn update_context(reading: &Reading) -> (&'static str, &'static str) {
        if reading.triggered {
            ("Trigger", "Trigger")
        } else {
            ("MeterValuePeriodic", "Sample.Periodic")
        }
    }

    #[cfg(feature = "v1_6")]
    fn wh_i32(wh: i64) -> Result<i32, TransactionError> {
        i32::try_from(wh).map_err(|_| TransactionError::OutOfRange("meter value (Wh)"))
    }

    #[allow(dead_code)]
    fn disabled(version: OcppVersion) -> TransactionError {
        TransactionError::VersionDisabled(version.as_str())
    }

    /// 1.6: the id, or a provisional 0 and the StartTransaction it waits for.
    #[cfg(feature = "v1_6")]
    fn id_1_6(open: &OpenTransaction) -> (i32, Option<u64>) {
        match open.id {
            TransactionRef::Given(id) => (id, None),
            TransactionRef::Pending(seq) => (0, Some(seq)),
            TransactionRef::Id(_) => (0, None),
        }
    }

    #[cfg(feature = "v1_6")]
    fn sampled_1_6(
        wh: i64,
        sampled: &[SampledValue],
        context: &str,
        timestamp: DateTime,
    ) -> Result<v1_6::MeterValue, TransactionError> {
        let energy = v1_6::SampledValue::new(wh.to_string())
            .with_measurand(v1_6::Measurand::from_wire(ENERGY))
            .with_context(v1_6::ReadingContext::from_wire(context))
            .with_unit(v1_6::UnitOfMeasure::from_wire("Wh"));
        let mut values = vec![energy];
        for s in sampled {
            let mut value = v1_6::SampledValue::new(s.value.to_string())
                .with_measurand(known(
                    &s.measurand,
                    "measurand",
                    v1_6::Measurand::from_wire,
                    v1_6::Measurand::is_recognized,
                )?)
                .with_context(v1_6::ReadingContext::from_wire(context))
                .with_unit(known(
                    &s.unit,
                    "unit",
                    v1_6::UnitOfMeasure::from_wire,
                    v1_6::UnitOfMeasure::is_recognized,
                )?);
            if let Some(phase) = &s.phase {
                value = value.with_phase(known(
                    phase,
                    "phase",
                    v1_6::Phase::from_wire,
                    v1_6::Phase::is_recognized,
                )?);
            }
            if let Some(location) = &s.location {
                value = value.with_location(known(
                    location,
                    "location",
                    v1_6::Location::from_wire,
                    v1_6::Location::is_recognized,
                )?);
            }
            values.push(value);
        }
        Ok(v1_6::MeterValue::new(timestamp, values))
    }

    pub(super) fn started(
        open: &OpenTransaction,
        start: &Start,
    ) -> Result<Request, TransactionError> {
        match open.version {
            #[cfg(feature = "v1_6")]
            OcppVersion::V1_6 => {
                let mut request = v1_6::StartTransactionRequest::new(
                    open.evse.id,
                    open.id_token.id.clone(),
                    wh_i32(start.meter_wh)?,
                    start.timestamp.clone(),
                );
                request.reservation_id = start.reservation_id;
                Ok(request.into())
            }
            #[cfg(feature = "v2_0_1")]
            OcppVersion::V2_0_1 => {
                let trigger = if start.remote_start_id.is_some() {
                    "RemoteStart"
                } else {
                    "Authorized"
                };
                let mut event = v2_0_1_event(
                    open,
                    "Started",
                    trigger,
                    start.timestamp.clone(),
                    start.meter_wh,
                    &start.sampled,
                    "Transaction.Begin",
                )?
                .with_id_token(v2_0_1::IdToken::new(
                    open.id_token.id.clone(),
                    v2_0_1::IdTokenEnum::from_wire(&open.id_token.kind),
                ));
                event.reservation_id = start.reservation_id;
                Ok(event.into())
            }
            #[cfg(feature = "v2_1")]
            OcppVersion::V2_1 => {
                let trigger = if start.remote_start_id.is_some() {
                    "RemoteStart"
                } else {
                    "Authorized"
                };
                let mut event = v2_1_event(
                    open,
                    "Started",
                    trigger,
                    start.timestamp.clone(),
                    start.meter_wh,
                    &start.sampled,
                    "Transaction.Begin",
                )?
                .with_id_token(v2_1::IdToken::new(
                    open.id_token.id.clone(),
                    open.id_token.kind.clone(),
                ));
                if let Some(id) = start.reservation_id {
                    let id = u32::try_from(id)
                        .map_err(|_| TransactionError::OutOfRange("reservationId"))?;
                    event = event.with_reservation_id(id);
                }
                Ok(event.into())
            }
            #[allow(unreachable_patterns)]
            other => Err(disabled(other)),
        }
    }

    pub(super) fn updated(
        open: &OpenTransaction,
        reading: &Reading,
        timestamp: DateTime,
    ) -> Result<TransactionMessage, TransactionError> {
        #[allow(unused_variables)] // 1.6 has no trigger
        let (trigger, context) = update_context(reading);
        let (meter_wh, sampled) = (reading.energy_wh, reading.sampled.as_slice());
        let (request, transaction_of): (Request, _) = match open.version {
            #[cfg(feature = "v1_6")]
            OcppVersion::V1_6 => {
                let (id, transaction_of) = id_1_6(open);
                let meter = sampled_1_6(meter_wh, sampled, context, timestamp)?;
                let request = v1_6::MeterValuesRequest::new(open.evse.id, vec![meter])
                    .with_transaction_id(id);
                (request.into(), transaction_of)
            }
            #[cfg(feature = "v2_0_1")]
            OcppVersion::V2_0_1 => {
                let event = v2_0_1_event(
                    open, "Updated", trigger, timestamp, meter_wh, sampled, context,
                )?;
                (event.into(), None)
            }
            #[cfg(feature = "v2_1")]
            OcppVersion::V2_1 => {
                let event = v2_1_event(
                    open, "Updated", trigger, timestamp, meter_wh, sampled, context,
                )?;
                (event.into(), None)
            }
            #[allow(unreachable_patterns)]
            other => return Err(disabled(other)),
        };
        Ok(TransactionMessage {
            request,
            transaction_of,
        })
    }

    pub(super) fn ended(
        open: &OpenTransaction,
        reading: &Reading,
        timestamp: DateTime,
        reason: StopReason,
    ) -> Result<TransactionMessage, TransactionError> {
        let (meter_wh, sampled) = (reading.energy_wh, reading.sampled.as_slice());
        let (request, transaction_of): (Request, _) = match open.version {
            #[cfg(feature = "v1_6")]
            OcppVersion::V1_6 => {
                let (id, transaction_of) = id_1_6(open);
                let data = (!sampled.is_empty())
                    .then(|| sampled_1_6(meter_wh, sampled, "Transaction.End", timestamp.clone()))
                    .transpose()?;
                let mut request =
                    v1_6::StopTransactionRequest::new(wh_i32(meter_wh)?, timestamp, id);
                request.reason = Some(v1_6::Reason::from_wire(reason.as_str_in(OcppVersion::V1_6)));
                if let Some(data) = data {
                    // The same JSON shape under another generated name.
                    let data = serde_json::to_value(data)
                        .and_then(serde_json::from_value::<v1_6::TransactionData>)
                        .map_err(|_| TransactionError::OutOfRange("transactionData"))?;
                    request.transaction_data = Some(vec![data]);
                }
                (request.into(), transaction_of)
            }
            #[cfg(feature = "v2_0_1")]
            OcppVersion::V2_0_1 => {
                let mut event = v2_0_1_event(
                    open,
                    "Ended",
                    reason.trigger_reason(),
                    timestamp,
                    meter_wh,
                    sampled,
                    "Transaction.End",
                )?;
                event.transaction_info =
                    event
                        .transaction_info
                        .with_stopped_reason(v2_0_1::ReasonEnum::from_wire(
                            reason.as_str_in(OcppVersion::V2_0_1),
                        ));
                (event.into(), None)
            }
            #[cfg(feature = "v2_1")]
            OcppVersion::V2_1 => {
                let mut event = v2_1_event(
                    open,
                    "Ended",
                    reason.trigger_reason(),
                    timestamp,
                    meter_wh,
                    sampled,
                    "Transaction.End",
                )?;
                event.transaction_info =
                    event
                        .transaction_info
                        .with_stopped_reason(v2_1::ReasonEnum::from_wire(
                            reason.as_str_in(OcppVersion::V2_1),
                        ));
                (event.into(), None)
            }
            #[allow(unreachable_patterns)]
            other => return Err(disabled(other)),
        };
        Ok(TransactionMessage {
            request,
            transaction_of,
        })
    }

    /// The longest 2.x `unitOfMeasure.unit` (`string[0..20]`).
    #[cfg(any(feature = "v2_0_1", feature = "v2_1"))]
    const MAX_UNIT: usize = 20;

    #[cfg(any(feature = "v2_0_1", feature = "v2_1"))]
    fn transaction_id(open: &OpenTransaction) -> String {
        match &open.id {
            TransactionRef::Id(id) => id.clone(),
            TransactionRef::Given(id) => id.to_string(),
            TransactionRef::Pending(seq) => seq.to_string(),
        }
    }

    #[cfg(feature = "v2_0_1")]
    fn v2_0_1_event(
        open: &OpenTransaction,
        kind: &str,
        trigger: &str,
        timestamp: DateTime,
        meter_wh: i64,
        sampled: &[SampledValue],
        context: &str,
    ) -> Result<v2_0_1::TransactionEventRequest, TransactionError> {
        let seq_no =
            i32::try_from(open.next_seq_no).map_err(|_| TransactionError::OutOfRange("seqNo"))?;
        let mut info = v2_0_1::Transaction::new(transaction_id(open));
        if let (Some(id), "Started") = (open.remote_start_id, kind) {
            info = info.with_remote_start_id(id);
        }
        let mut evse = v2_0_1::EVSE::new(open.evse.id);
        if let Some(connector) = open.evse.connector {
            evse = evse.with_connector_id(connector);
        }
        let energy = v2_0_1::SampledValue::new(Decimal::from(meter_wh))
            .with_measurand(v2_0_1::MeasurandEnum::from_wire(ENERGY))
            .with_context(v2_0_1::ReadingContextEnum::from_wire(context));
        let mut values = vec![energy];
        for s in sampled {
            if s.unit.len() > MAX_UNIT {
                return Err(TransactionError::UnknownValue("unit", s.unit.clone()));
            }
            let mut value = v2_0_1::SampledValue::new(s.value)
                .with_measurand(known(
                    &s.measurand,
                    "measurand",
                    v2_0_1::MeasurandEnum::from_wire,
                    v2_0_1::MeasurandEnum::is_recognized,
                )?)
                .with_context(v2_0_1::ReadingContextEnum::from_wire(context))
                .with_unit_of_measure(v2_0_1::UnitOfMeasure::default().with_unit(s.unit.clone()));
            if let Some(phase) = &s.phase {
                value = value.with_phase(known(
                    phase,
                    "phase",
                    v2_0_1::PhaseEnum::from_wire,
                    v2_0_1::PhaseEnum::is_recognized,
                )?);
            }
            if let Some(location) = &s.location {
                value = value.with_location(known(
                    location,
                    "location",
                    v2_0_1::LocationEnum::from_wire,
                    v2_0_1::LocationEnum::is_recognized,
                )?);
            }
            values.push(value);
        }
        Ok(v2_0_1::TransactionEventRequest::new(
            v2_0_1::TransactionEventEnum::from_wire(kind),
            timestamp.clone(),
            v2_0_1::TriggerReasonEnum::from_wire(trigger),
            seq_no,
            info,
        )
        .with_evse(evse)
        .with_meter_value(vec![v2_0_1::MeterValue::new(values, timestamp)]))
    }

    #[cfg(feature = "v2_1")]
    fn v2_1_event(
        open: &OpenTransaction,
        kind: &str,
        trigger: &str,
        timestamp: DateTime,
        meter_wh: i64,
        sampled: &[SampledValue],
        context: &str,
    ) -> Result<v2_1::TransactionEventRequest, TransactionError> {
        let unsigned =
            |v: i32, what| u32::try_from(v).map_err(|_| TransactionError::OutOfRange(what));
        let mut info = v2_1::Transaction::new(transaction_id(open));
        if let (Some(id), "Started") = (open.remote_start_id, kind) {
            info = info.with_remote_start_id(id);
        }
        let mut evse = v2_1::EVSE::new(unsigned(open.evse.id, "evseId")?);
        if let Some(connector) = open.evse.connector {
            evse = evse.with_connector_id(unsigned(connector, "connectorId")?);
        }
        let energy = v2_1::SampledValue::new(Decimal::from(meter_wh))
            .with_measurand(v2_1::MeasurandEnum::from_wire(ENERGY))
            .with_context(v2_1::ReadingContextEnum::from_wire(context));
        let mut values = vec![energy];
        for s in sampled {
            if s.unit.len() > MAX_UNIT {
                return Err(TransactionError::UnknownValue("unit", s.unit.clone()));
            }
            let mut value = v2_1::SampledValue::new(s.value)
                .with_measurand(known(
                    &s.measurand,
                    "measurand",
                    v2_1::MeasurandEnum::from_wire,
                    v2_1::MeasurandEnum::is_recognized,
                )?)
                .with_context(v2_1::ReadingContextEnum::from_wire(context))
                .with_unit_of_measure(v2_1::UnitOfMeasure::default().with_unit(s.unit.clone()));
            if let Some(phase) = &s.phase {
                value = value.with_phase(known(
                    phase,
                    "phase",
                    v2_1::PhaseEnum::from_wire,
                    v2_1::PhaseEnum::is_recognized,
                )?);
            }
            if let Some(location) = &s.location {
                value = value.with_location(known(
                    location,
                    "location",
                    v2_1::LocationEnum::from_wire,
                    v2_1::LocationEnum::is_recognized,
                )?);
            }
            values.push(value);
        }
        Ok(v2_1::TransactionEventRequest::new(
            v2_1::TransactionEventEnum::from_wire(kind),
            timestamp.clone(),
            v2_1::TriggerReasonEnum::from_wire(trigger),
            open.next_seq_no,
            info,
        )
        .with_evse(evse)
        .with_meter_value(vec![v2_1::MeterValue::new(values, timestamp)]))
    }
}

#[cfg(all(test, feature = "v1_6", feature = "v2_0_1", feature = "v2_1"))]
mod tests {
    use super::*;
    use ocpp_messages::DecodeOptions;
    use proptest::prelude::*;
    use serde_json::Value;
    use std::collections::HashMap;

    fn at(s: i64) -> DateTime {
        DateTime::from_unix_timestamp(1_780_000_000 + s).unwrap()
    }

    fn token() -> IdToken {
        IdToken::new("TAG-1", "ISO14443")
    }

    /// The payload as JSON, after checking that it decodes strictly as its version's message.
    fn payload(message: &TransactionMessage) -> Value {
        let request = &message.request;
        let text = serde_json::to_string(request).unwrap();
        Request::decode(
            request.version(),
            request.action(),
            &text,
            &DecodeOptions::strict(),
        )
        .unwrap_or_else(|e| panic!("{text}: {e}"));
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn v2_transaction_seq_nos_and_payloads() {
        for version in [OcppVersion::V2_0_1, OcppVersion::V2_1] {
            let mut t = Transactions::new(version, "CP1-x-");
            let evse = Evse::new(2).with_connector(1);
            let start = Start::new(evse, token(), 1_000, at(0)).with_remote_start_id(7);
            let started = payload(&t.start(start.clone(), 1).unwrap());
            assert_eq!(started["eventType"], "Started");
            assert_eq!(started["seqNo"], 0);
            assert_eq!(started["triggerReason"], "RemoteStart");
            assert_eq!(started["transactionInfo"]["transactionId"], "CP1-x-1");
            assert_eq!(started["transactionInfo"]["remoteStartId"], 7);
            assert_eq!(
                started["evse"],
                serde_json::json!({"id": 2, "connectorId": 1})
            );
            assert_eq!(started["idToken"]["idToken"], "TAG-1");
            let sampled = &started["meterValue"][0]["sampledValue"][0];
            assert_eq!(sampled["value"], 1000);
            assert_eq!(sampled["measurand"], "Energy.Active.Import.Register");
            assert_eq!(sampled["context"], "Transaction.Begin");
            assert_eq!(t.start(start, 2), Err(TransactionError::Busy(2)));

            let updated = payload(&t.meter(2, 1_250, at(60)).unwrap());
            assert_eq!(updated["eventType"], "Updated");
            assert_eq!(updated["seqNo"], 1);
            assert_eq!(updated["triggerReason"], "MeterValuePeriodic");
            assert_eq!(updated["meterValue"][0]["sampledValue"][0]["value"], 1250);

            // A restart: the state from its snapshot, the transaction ended on power loss.
            let mut t = Transactions::from_snapshot(&t.to_snapshot()).unwrap();
            assert_eq!(t.transaction_id(2).as_deref(), Some("CP1-x-1"));
            let ended = payload(&t.end_after_power_loss(2, at(120)).unwrap());
            assert_eq!(ended["eventType"], "Ended");
            assert_eq!(ended["seqNo"], 2);
            assert_eq!(ended["triggerReason"], "AbnormalCondition");
            assert_eq!(ended["transactionInfo"]["stoppedReason"], "PowerLoss");
            assert_eq!(ended["meterValue"][0]["sampledValue"][0]["value"], 1250);
            assert_eq!(t.meter(2, 1, at(1)), Err(TransactionError::NotOpen(2)));

            // The next transaction has the next id.
            let next = payload(&t.start(Start::new(evse, token(), 0, at(200)), 5).unwrap());
            assert_eq!(next["transactionInfo"]["transactionId"], "CP1-x-2");
            assert_eq!(next["triggerReason"], "Authorized");
        }
    }

    #[test]
    fn v1_6_transaction_learns_its_id() {
        let mut t = Transactions::new(OcppVersion::V1_6, "");
        let start = t
            .start(Start::new(Evse::new(1), token(), 10, at(0)), 41)
            .unwrap();
        let start = payload(&start);
        assert_eq!(start["connectorId"], 1);
        assert_eq!(start["idTag"], "TAG-1");
        assert_eq!(start["meterStart"], 10);
        assert_eq!(t.transaction_id(1), None);
        let meter = t.meter(1, 20, at(60)).unwrap();
        assert_eq!(meter.transaction_of, Some(41));
        let values = payload(&meter);
        assert_eq!(values["meterValue"][0]["sampledValue"][0]["value"], "20");
        assert_eq!(values["meterValue"][0]["sampledValue"][0]["unit"], "Wh");
        assert_eq!(t.on_transaction_id(40, 9), None);
        assert_eq!(t.on_transaction_id(41, 4711), Some(1));
        assert_eq!(t.transaction_id(1).as_deref(), Some("4711"));
        let mut t = Transactions::from_snapshot(&t.to_snapshot()).unwrap();
        let stop = t.end_after_power_loss(1, at(90)).unwrap();
        assert_eq!(stop.transaction_of, None);
        let stop = payload(&stop);
        assert_eq!(stop["transactionId"], 4711);
        assert_eq!(stop["meterStop"], 20);
        assert_eq!(stop["reason"], "PowerLoss");
        // 1.6 Wh are 32-bit integers.
        let big = Start::new(Evse::new(1), token(), i64::from(i32::MAX) + 1, at(0));
        assert_eq!(
            t.start(big, 44),
            Err(TransactionError::OutOfRange("meter value (Wh)"))
        );
        assert!(t.open().next().is_none());
    }

    #[test]
    fn sampled_values_go_with_the_energy_register_in_every_version() {
        let reading = || {
            Reading::new(1_500)
                .with_sampled_value(SampledValue::power_w(Decimal::new(110_005, 1)))
                .with_sampled_value(SampledValue::current_a(16).with_phase("L1"))
                .with_sampled_value(SampledValue::soc_percent(64))
        };
        for version in OcppVersion::ALL {
            let mut t = Transactions::new(version, "CP-");
            let start = Start::new(Evse::new(1), token(), 1_000, at(0))
                .with_sampled_value(SampledValue::power_w(0));
            let started = payload(&t.start(start, 1).unwrap());
            let updated = payload(&t.meter_reading(1, reading(), at(60)).unwrap());
            let triggered = payload(&t.meter_reading(1, reading().triggered(), at(61)).unwrap());
            // The reading is kept, with its values: a restart keeps them too.
            let mut t = Transactions::from_snapshot(&t.to_snapshot()).unwrap();
            assert_eq!(t.get(1).unwrap().sampled, reading().sampled);
            let ended = payload(
                &t.stop_with(1, reading(), at(90), StopReason::Local)
                    .unwrap(),
            );
            let (values, stop_values) = match version {
                OcppVersion::V1_6 => {
                    assert_eq!(
                        triggered["meterValue"][0]["sampledValue"][0]["context"],
                        "Trigger"
                    );
                    (
                        updated["meterValue"][0]["sampledValue"].clone(),
                        ended["transactionData"][0]["sampledValue"].clone(),
                    )
                }
                _ => {
                    assert_eq!(
                        started["meterValue"][0]["sampledValue"][1]["measurand"],
                        "Power.Active.Import"
                    );
                    assert_eq!(triggered["triggerReason"], "Trigger");
                    assert_eq!(triggered["seqNo"], 2);
                    (
                        updated["meterValue"][0]["sampledValue"].clone(),
                        ended["meterValue"][0]["sampledValue"].clone(),
                    )
                }
            };
            for values in [&values, &stop_values] {
                let measurands: Vec<&str> = values
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v["measurand"].as_str().unwrap())
                    .collect();
                assert_eq!(
                    measurands,
                    [
                        "Energy.Active.Import.Register",
                        "Power.Active.Import",
                        "Current.Import",
                        "SoC"
                    ],
                    "{version}"
                );
                assert_eq!(values[2]["phase"], "L1");
                assert_eq!(values[3]["location"], "EV");
            }
            // The exact digits, as the version types them (1.6 a string, 2.x a number).
            let power = &values[1]["value"];
            assert_eq!(power.to_string().trim_matches('"'), "11000.5", "{version}");
            let unit = match version {
                OcppVersion::V1_6 => values[3]["unit"].clone(),
                _ => values[3]["unitOfMeasure"]["unit"].clone(),
            };
            assert_eq!(unit, "Percent");

            // A name the version does not know is refused, nothing changed.
            let mut t = Transactions::new(version, "CP-");
            t.start(Start::new(Evse::new(1), token(), 0, at(0)), 1)
                .unwrap();
            let before = t.clone();
            let odd = Reading::new(1).with_sampled_value(SampledValue::new("Joy", 1, "W"));
            assert_eq!(
                t.meter_reading(1, odd, at(1)),
                Err(TransactionError::UnknownValue("measurand", "Joy".into()))
            );
            assert_eq!(t, before);
        }
    }

    #[test]
    fn every_trigger_and_reason_is_a_value_of_the_version() {
        let reasons = [
            StopReason::Local,
            StopReason::Remote,
            StopReason::EVDisconnected,
            StopReason::PowerLoss,
            StopReason::EmergencyStop,
            StopReason::DeAuthorized,
            StopReason::Reboot,
            StopReason::HardReset,
            StopReason::SoftReset,
            StopReason::Other,
        ];
        for reason in reasons {
            assert!(v1_6::Reason::from_wire(reason.as_str_in(OcppVersion::V1_6)).is_recognized());
            assert!(
                v2_0_1::ReasonEnum::from_wire(reason.as_str_in(OcppVersion::V2_0_1))
                    .is_recognized()
            );
            assert!(
                v2_1::ReasonEnum::from_wire(reason.as_str_in(OcppVersion::V2_1)).is_recognized()
            );
            assert!(v2_0_1::TriggerReasonEnum::from_wire(reason.trigger_reason()).is_recognized());
            assert!(v2_1::TriggerReasonEnum::from_wire(reason.trigger_reason()).is_recognized());
        }
    }

    #[test]
    fn long_prefix_is_cut() {
        let prefix = "ü".repeat(20);
        let mut t = Transactions::new(OcppVersion::V2_0_1, &prefix);
        let started = t
            .start(Start::new(Evse::new(1), token(), 0, at(0)), 1)
            .unwrap();
        let id = payload(&started)["transactionInfo"]["transactionId"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(id.len() <= MAX_TRANSACTION_ID, "{id}");
    }

    #[derive(Debug, Clone)]
    enum Op {
        Start {
            evse: i32,
            remote: bool,
        },
        Meter {
            evse: i32,
            wh: u16,
        },
        Stop {
            evse: i32,
        },
        /// 1.6: the central system answers the oldest StartTransaction not answered yet.
        Answer,
        /// The process is killed: the state comes back from its snapshot; each open
        /// transaction is ended after the power loss, or resumed.
        Restart {
            end: bool,
        },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (1..4i32, any::<bool>()).prop_map(|(evse, remote)| Op::Start { evse, remote }),
            4 => (1..4i32, any::<u16>()).prop_map(|(evse, wh)| Op::Meter { evse, wh }),
            2 => (1..4i32).prop_map(|evse| Op::Stop { evse }),
            2 => Just(Op::Answer),
            1 => any::<bool>().prop_map(|end| Op::Restart { end }),
        ]
    }

    /// What the central system would see of one transaction.
    #[derive(Debug, Default)]
    struct Seen {
        kinds: Vec<String>,
        seq_nos: Vec<i64>,
    }

    /// Files a message under its transaction (2.x: its id; 1.6: its StartTransaction's seq).
    fn record(
        version: OcppVersion,
        message: TransactionMessage,
        seq: u64,
        given: &HashMap<u64, i32>,
        seen: &mut BTreeMap<String, Seen>,
    ) -> Result<(), TestCaseError> {
        let value = payload(&message);
        let key = match version {
            OcppVersion::V1_6 => {
                let start = match (message.request.action(), message.transaction_of) {
                    ("StartTransaction", _) => seq,
                    (_, Some(start)) => start,
                    (_, None) => {
                        // The id must be one given.
                        let id = value["transactionId"].as_i64().unwrap() as i32;
                        let start = given.iter().find(|(_, &g)| g == id).map(|(s, _)| *s);
                        prop_assert!(start.is_some(), "id {} was never given", id);
                        start.unwrap()
                    }
                };
                start.to_string()
            }
            _ => value["transactionInfo"]["transactionId"]
                .as_str()
                .unwrap()
                .to_owned(),
        };
        let entry = seen.entry(key).or_default();
        match message.request.action() {
            "StartTransaction" => entry.kinds.push("Started".into()),
            "MeterValues" => entry.kinds.push("Updated".into()),
            "StopTransaction" => entry.kinds.push("Ended".into()),
            _ => {
                entry
                    .kinds
                    .push(value["eventType"].as_str().unwrap().to_owned());
                entry.seq_nos.push(value["seqNo"].as_i64().unwrap());
            }
        }
        Ok(())
    }

    fn run(version: OcppVersion, ops: Vec<Op>) -> Result<(), TestCaseError> {
        let mut t = Transactions::new(version, "CP-");
        let mut queue_seq = 0u64;
        // 1.6: StartTransactions not answered, in order; ids given by their seq.
        let mut unanswered: Vec<u64> = Vec::new();
        let mut given: HashMap<u64, i32> = HashMap::new();
        // By transaction key: 2.x id, 1.6 start seq.
        let mut seen: BTreeMap<String, Seen> = BTreeMap::new();
        let mut meter = 0i64;
        for op in ops {
            match op {
                Op::Start { evse, remote } => {
                    queue_seq += 1;
                    let mut start =
                        Start::new(Evse::new(evse), token(), meter, at(queue_seq as i64));
                    if remote {
                        start = start.with_remote_start_id(evse);
                    }
                    let open_before = t.get(evse).is_some();
                    match t.start(start, queue_seq) {
                        Ok(message) => {
                            prop_assert!(!open_before);
                            if version == OcppVersion::V1_6 {
                                unanswered.push(queue_seq);
                            }
                            record(version, message, queue_seq, &given, &mut seen)?;
                        }
                        Err(e) => prop_assert_eq!(e, TransactionError::Busy(evse)),
                    }
                }
                Op::Meter { evse, wh } => {
                    queue_seq += 1;
                    meter += i64::from(wh);
                    match t.meter(evse, meter, at(queue_seq as i64)) {
                        Ok(message) => record(version, message, queue_seq, &given, &mut seen)?,
                        Err(e) => prop_assert_eq!(e, TransactionError::NotOpen(evse)),
                    }
                }
                Op::Stop { evse } => {
                    queue_seq += 1;
                    match t.stop(evse, meter, at(queue_seq as i64), StopReason::Local) {
                        Ok(message) => record(version, message, queue_seq, &given, &mut seen)?,
                        Err(e) => prop_assert_eq!(e, TransactionError::NotOpen(evse)),
                    }
                }
                Op::Answer => {
                    if !unanswered.is_empty() {
                        let start = unanswered.remove(0);
                        let id = 1000 + start as i32;
                        given.insert(start, id);
                        let given_to = TransactionRef::Given(id);
                        match t.on_transaction_id(start, id) {
                            Some(evse) if t.get(evse).is_some_and(|o| o.id == given_to) => {
                                prop_assert_eq!(t.transaction_id(evse), Some(id.to_string()));
                            }
                            // Ended before its answer: the id is kept with it.
                            Some(_) => prop_assert!(t.ended().any(|e| e.id == given_to)),
                            // Ended longer ago than what is kept.
                            None => prop_assert!(t.ended().count() == MAX_ENDED),
                        }
                    }
                }
                Op::Restart { end } => {
                    let known: Vec<(i32, Option<String>)> = t
                        .open()
                        .map(|o| (o.evse.id, t.transaction_id(o.evse.id)))
                        .collect();
                    let ended: Vec<TransactionRef> = t.ended().map(|e| e.id.clone()).collect();
                    t = Transactions::from_snapshot(&t.to_snapshot()).unwrap();
                    // 1.6 ids once known are kept, of ended transactions too.
                    prop_assert_eq!(ended, t.ended().map(|e| e.id.clone()).collect::<Vec<_>>());
                    for (evse, id) in known {
                        // 1.6 ids once known are kept.
                        prop_assert_eq!(t.transaction_id(evse), id);
                        if end {
                            queue_seq += 1;
                            let message =
                                t.end_after_power_loss(evse, at(queue_seq as i64)).unwrap();
                            record(version, message, queue_seq, &given, &mut seen)?;
                        }
                    }
                }
            }
        }
        // The last restart ends everything.
        let open: Vec<i32> = t.open().map(|o| o.evse.id).collect();
        for evse in open {
            queue_seq += 1;
            let message = t.end_after_power_loss(evse, at(queue_seq as i64)).unwrap();
            record(version, message, queue_seq, &given, &mut seen)?;
        }
        for (key, s) in &seen {
            // Started once, first; Ended once, last; Updated between.
            prop_assert_eq!(
                s.kinds.first().map(String::as_str),
                Some("Started"),
                "{}",
                key
            );
            prop_assert_eq!(s.kinds.last().map(String::as_str), Some("Ended"), "{}", key);
            prop_assert_eq!(s.kinds.iter().filter(|k| *k == "Started").count(), 1);
            prop_assert_eq!(s.kinds.iter().filter(|k| *k == "Ended").count(), 1);
            if version != OcppVersion::V1_6 {
                let expected: Vec<i64> = (0..s.kinds.len() as i64).collect();
                prop_assert_eq!(&s.seq_nos, &expected, "{}", key);
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn transactions_start_once_end_once_seq_nos_count(
            version in 0..3usize,
            ops in proptest::collection::vec(op(), 0..60),
        ) {
            run(OcppVersion::ALL[version], ops)?;
        }
    }
}
