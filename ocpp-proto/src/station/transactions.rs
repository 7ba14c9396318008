//! A station's own transactions per EVSE and the messages they make: [`Transactions`].

use std::collections::{BTreeMap, VecDeque};

use ocpp_messages::{DateTime, OcppVersion, Request};

use serde::{Deserialize, Serialize};

mod message;
mod meter_values;
mod start_stop;
#[cfg(all(test, feature = "v1_6", feature = "v2_0_1", feature = "v2_1"))]
mod tests;

pub use meter_values::{Reading, SampledValue, ENERGY_REGISTER};
pub use start_stop::{Start, StationStopReason};

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

/// Who authorised a transaction: `ocpp-model`'s [`IdToken`](ocpp_model::IdToken), the one id
/// token type of the workspace. On the wire a transaction's token is the 1.6 `idTag` (its
/// `value`; the type is not sent) or the 2.x `IdTokenType` (`idToken`: its `value`, `type`: its
/// [`kind`](ocpp_model::IdTokenType::as_str)). In a [`Transactions`] snapshot it is
/// `{"id": value, "kind": type}`, as it always was.
///
/// ```
/// use ocpp_proto::station::{IdToken, IdTokenType};
/// let token = IdToken::new("04A1B2C3", "ISO14443");
/// assert_eq!(token.value, "04A1B2C3");
/// assert_eq!(token.kind, IdTokenType::Iso14443);
/// assert_eq!(token, ocpp_model::IdToken::from_id_tag("04A1B2C3"));
/// ```
pub use ocpp_model::IdToken;
/// The type of an [`IdToken`] (2.x `IdTokenEnumType`, free text in 2.1): `ocpp-model`'s
/// [`IdTokenType`](ocpp_model::IdTokenType).
pub use ocpp_model::IdTokenType;

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
/// use ocpp_proto::station::{Evse, IdToken, Start, StationStopReason, Transactions};
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
/// let ended = transactions.stop(evse.id, 2_000, t0, StationStopReason::Local).unwrap();
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

    /// The transaction open on `evse`.
    fn open_on(&self, evse: i32) -> Result<&OpenTransaction, TransactionError> {
        self.open.get(&evse).ok_or(TransactionError::NotOpen(evse))
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
        let message = message::updated(self.open_on(evse)?, &reading, timestamp)?;
        if let Some(open) = self.open.get_mut(&evse) {
            open.meter_wh = reading.energy_wh;
            open.sampled = reading.sampled;
            open.next_seq_no = open.next_seq_no.saturating_add(1);
        }
        Ok(message)
    }

    /// Ends the transaction on `evse`: 1.6 StopTransaction (`meterStop`, `reason`), 2.x
    /// TransactionEvent `Ended` (the next `seqNo`, `stoppedReason`, the trigger of
    /// [`StationStopReason::trigger_reason`], the reading with context `Transaction.End`).
    ///
    /// # Errors
    /// [`TransactionError::NotOpen`], [`TransactionError::OutOfRange`]; nothing changed.
    pub fn stop(
        &mut self,
        evse: i32,
        meter_wh: i64,
        timestamp: DateTime,
        reason: StationStopReason,
    ) -> Result<TransactionMessage, TransactionError> {
        self.stop_with(evse, Reading::new(meter_wh), timestamp, reason)
    }

    /// [`Transactions::stop`] with other sampled values beside the energy register (2.x: in
    /// the `Ended` event's meter value; 1.6: in StopTransaction's `transactionData`, context
    /// `Transaction.End`).
    ///
    /// ```
    /// use ocpp_proto::station::{Evse, IdToken, Reading, SampledValue, Start, StationStopReason, Transactions};
    /// use ocpp_proto::{DateTime, OcppVersion};
    ///
    /// let t0 = DateTime::from_unix_timestamp(1_780_000_000).unwrap();
    /// let mut transactions = Transactions::new(OcppVersion::V2_1, "CP1-");
    /// transactions.start(Start::new(Evse::new(1), IdToken::new("TAG", "Central"), 0, t0.clone()), 1).unwrap();
    /// let reading = Reading::new(9_000).with_sampled_value(SampledValue::soc_percent(80));
    /// let ended = transactions.stop_with(1, reading, t0, StationStopReason::EVDisconnected).unwrap();
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
        reason: StationStopReason,
    ) -> Result<TransactionMessage, TransactionError> {
        let message = message::ended(self.open_on(evse)?, &reading, timestamp, reason)?;
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
    /// power, with the last meter reading known ([`StationStopReason::PowerLoss`]; 2.x trigger
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
        let meter_wh = self.open_on(evse)?.meter_wh;
        self.stop(evse, meter_wh, timestamp, StationStopReason::PowerLoss)
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
    /// use ocpp_proto::station::{Evse, IdToken, Start, StationStopReason, TransactionRef, Transactions};
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
