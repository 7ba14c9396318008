//! What the CSMS remembers of each charge point, in words every OCPP version shares: the
//! per-version handlers translate their typed messages into these calls.

use ocpp_proto::ChargePointIdentity;
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};

use ocpp_messages::version::OcppVersion;
use ocpp_messages::Decimal;
use ocpp_model::MeterReading;

use super::shared_text::{shared_text, SharedText};
use super::smart_charging::SmartCharging;
use super::UnixTime;
use super::{BootPolicy, CostUpdate, ItemsPerMessage, SessionId, Tariff};

/// One charge point: its live session (if connected), what it said at boot, its connectors and
/// its transactions. Kept after it disconnects, so that a transaction started before a
/// reconnect can end after it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChargePointRecord {
    /// The identity (last segment of the WebSocket URL), shared with the table's key.
    pub identity: ChargePointIdentity,
    /// The current connection, if any.
    pub session: Option<LiveSession>,
    /// The last BootNotification.
    pub registration: Option<BootDetails>,
    /// When the last Heartbeat arrived.
    pub last_heartbeat: Option<UnixTime>,
    /// Connector states by label: `"1"` (OCPP 1.6 connectorId) or `"1/1"` (2.x evse/connector).
    pub connectors: Connectors,
    /// Transactions, active and the last few ended, in the order they started.
    pub transactions: Vec<Transaction>,
    /// This station's boot policy, overriding the CSMS default (`PUT /chargepoints/ID/boot`).
    pub boot_policy: Option<BootPolicy>,
    /// What its last BootNotification was answered; `None` before the first.
    pub boot_status: Option<BootPolicy>,
    /// Whether we sent it a TriggerMessage since its last BootNotification (a Pending
    /// station may then send what was triggered, see [`super::boot`]).
    pub triggered: bool,
    /// What only some charge points have: reports beyond the typed state, seqNo gaps, a
    /// certificate signing, the items-per-message setting (see [`Extras`]).
    pub extras: Extras,
}

/// What only some charge points have, boxed: a fleet that sends none of it pays one null
/// pointer per record (8 bytes, where these fields took 144 in every record). Reading goes
/// through `Deref` (an empty [`ExtraState`] when nothing was ever kept); [`Extras::get_mut`]
/// allocates on the first write.
///
/// ```
/// use ocpp_reference_csms::Extras;
/// let mut extras = Extras::default();
/// assert!(extras.notifications.is_empty() && !extras.is_allocated());
/// extras.get_mut().seq_no_gap_count += 1;
/// assert_eq!((extras.seq_no_gap_count, extras.is_allocated()), (1, true));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extras(Option<Box<ExtraState>>);

/// The contents of [`Extras`].
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ExtraState {
    /// What the charge point reported beyond the typed state of [`ChargePointRecord`] (NotifyEvent,
    /// NotifyReport, FirmwareStatusNotification, SecurityEventNotification, DataTransfer...),
    /// by action: the last few of each kind, oldest first.
    pub notifications: BTreeMap<&'static str, VecDeque<Notification>>,
    /// How many notifications of each kind arrived in all (including those dropped).
    pub notification_counts: BTreeMap<&'static str, u64>,
    /// OCPP 2.x TransactionEvent `seqNo` gaps and repeats noticed (E: seqNo is incremental
    /// per transaction), the last few.
    pub seq_no_gaps: VecDeque<SeqNoGap>,
    /// How many gaps were noticed in all.
    pub seq_no_gap_count: u64,
    /// Its last SignCertificate and what came of it (A02/A03), if it sent one.
    pub certificate: Option<CertificateSigning>,
    /// CALLs to send it right after the answer just made (CertificateSigned after an accepted
    /// SignCertificate, GetTransactionStatus after a seqNo gap...), oldest first, taken one by
    /// one by the I/O loop with `Csms::take_follow_up`.
    pub(super) follow_ups: VecDeque<ocpp_proto::Request>,
    /// Its `DeviceDataCtrlr.ItemsPerMessage`, from NotifyReport and our GetVariables
    /// (see [`super::items_per_message`]).
    pub items_per_message: ItemsPerMessage,
    /// Its own tariff (`PUT /chargepoints/ID/tariff`), over the CSMS default (see
    /// [`super::tariff`]).
    pub tariff: Option<Tariff>,
    /// The CostUpdated sent to it (OCPP 2.x I02) and their answers, the last few, oldest
    /// first; the latest of a transaction also paces the next one.
    pub cost_updates: VecDeque<CostUpdate>,
    /// The client certificate the TLS layer verified on its last accepted upgrade (security
    /// profile 3), whichever TLS backend did; cleared by an upgrade without one.
    pub client_certificate: Option<super::ClientCertificate>,
    /// Smart charging (K15-K17): its own site limit, its EVs' charging needs, the charging
    /// profiles sent to it (see [`super::smart_charging`]).
    pub smart_charging: SmartCharging,
}

/// What every record without extras reads.
static NO_EXTRAS: ExtraState = ExtraState {
    notifications: BTreeMap::new(),
    notification_counts: BTreeMap::new(),
    seq_no_gaps: VecDeque::new(),
    seq_no_gap_count: 0,
    certificate: None,
    follow_ups: VecDeque::new(),
    items_per_message: ItemsPerMessage {
        get_variables: None,
        set_variables: None,
    },
    tariff: None,
    cost_updates: VecDeque::new(),
    client_certificate: None,
    smart_charging: SmartCharging::EMPTY,
};

impl Extras {
    /// The extras to write to, allocated on the first call.
    pub fn get_mut(&mut self) -> &mut ExtraState {
        self.0.get_or_insert_with(Box::default)
    }

    /// Whether anything was ever written (the box is allocated).
    pub fn is_allocated(&self) -> bool {
        self.0.is_some()
    }

    /// Takes the oldest follow-up CALL, if one waits (allocates nothing).
    pub(super) fn take_follow_up(&mut self) -> Option<ocpp_proto::Request> {
        self.0
            .as_mut()
            .and_then(|extras| extras.follow_ups.pop_front())
    }
}

impl std::ops::Deref for Extras {
    type Target = ExtraState;

    fn deref(&self) -> &ExtraState {
        self.0.as_deref().unwrap_or(&NO_EXTRAS)
    }
}

/// A SignCertificate and what came of it: our answer, the certificate we signed, the
/// station's answer to the CertificateSigned that carried it (OCPP 2.0.1 A02/A03, 1.6
/// security whitepaper §3).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CertificateSigning {
    /// When the SignCertificate arrived.
    pub requested_at: UnixTime,
    /// `ChargingStationCertificate` or `V2GCertificate`.
    pub certificate_type: &'static str,
    /// `Accepted` or `Rejected`: our answer to the SignCertificate.
    pub status: &'static str,
    /// Why it was Rejected (no CA, or the CSR check that failed).
    pub reason: Option<String>,
    /// The serial number (hex) of the certificate we signed.
    pub serial: Option<String>,
    /// Its end of validity, seconds since the Unix epoch.
    pub not_after: Option<i64>,
    /// The station's answer to CertificateSigned: its `status` (`Accepted`, `Rejected`), or
    /// `CALLERROR <code>`, `Timeout`, `Disconnected`; `None` while it is pending.
    pub answer: Option<String>,
    /// When that answer came.
    pub answered_at: Option<UnixTime>,
}

/// One report of a charge point, as it arrived.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Notification {
    /// When it arrived.
    pub at: UnixTime,
    /// The payload as JSON.
    pub payload: Value,
}

/// A TransactionEvent whose `seqNo` was not the one after the last (OCPP 2.0.1 E: messages
/// lost, or sent again).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SeqNoGap {
    /// The transaction.
    pub transaction: String,
    /// The seqNo expected (the last plus one).
    pub expected: i64,
    /// The seqNo received.
    pub received: i64,
    /// When it arrived.
    pub at: UnixTime,
    /// What the GetTransactionStatus the CSMS sent about it found (OCPP 2.x E14), if one was
    /// sent.
    pub check: Option<TransactionStatusCheck>,
}

/// A GetTransactionStatus the CSMS sent after a seqNo gap (OCPP 2.x E14: are messages of the
/// transaction still queued in the station?), and its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransactionStatusCheck {
    /// Sent, not answered yet.
    Asked,
    /// The station's answer.
    Answered {
        /// `ongoingIndicator`: whether the transaction is still ongoing (absent: not said).
        ongoing: Option<bool>,
        /// `messagesInQueue`: whether the station still holds messages of it to send.
        messages_in_queue: bool,
        /// When it answered.
        at: UnixTime,
    },
    /// No usable answer: a CALLERROR, a timeout, a disconnect (the failure's name).
    Failed(String),
}

/// A live WebSocket connection of a charge point.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LiveSession {
    /// Its id.
    pub id: SessionId,
    /// The negotiated OCPP version.
    pub version: OcppVersion,
    /// When the WebSocket opened.
    pub since: UnixTime,
}

/// What a BootNotification said. The texts a fleet repeats (vendor, model, firmware, reason)
/// are shared between the charge points that sent the same; only the serial number is each
/// one's own.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BootDetails {
    /// `chargePointVendor` (1.6) / `chargingStation.vendorName` (2.x).
    pub vendor: SharedText,
    /// `chargePointModel` (1.6) / `chargingStation.model` (2.x).
    pub model: SharedText,
    /// The serial number, if sent.
    pub serial_number: Option<Box<str>>,
    /// The firmware version, if sent.
    pub firmware_version: Option<SharedText>,
    /// 2.x: why it booted (`PowerUp`, ...).
    pub reason: Option<SharedText>,
    /// When it arrived.
    pub at: UnixTime,
}

impl BootDetails {
    /// The details as a BootNotification says them, at `at`.
    pub fn new(
        vendor: &str,
        model: &str,
        serial_number: Option<&str>,
        firmware_version: Option<&str>,
        reason: Option<&str>,
        at: UnixTime,
    ) -> Self {
        BootDetails {
            vendor: shared_text(vendor),
            model: shared_text(model),
            serial_number: serial_number.map(Box::from),
            firmware_version: firmware_version.map(shared_text),
            reason: reason.map(shared_text),
            at,
        }
    }
}

/// The last StatusNotification of a connector.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ConnectorState {
    /// The status as on the wire (`Available`, `Charging`, `Occupied`...), shared with every
    /// connector in the same status.
    pub status: SharedText,
    /// 1.6: the error code unless `NoError`.
    pub error_code: Option<SharedText>,
    /// When it arrived.
    pub at: UnixTime,
}

/// A charge point's connectors by label, in label order: a short sorted list, sized to what it
/// holds (a `BTreeMap` allocates a node for 11 entries on the first, about 1 KiB here, and a
/// station has a few connectors).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Connectors(Vec<(Box<str>, ConnectorState)>);

impl Connectors {
    /// The state of the connector `label`.
    pub fn get(&self, label: &str) -> Option<&ConnectorState> {
        let at = self.0.binary_search_by(|(l, _)| (**l).cmp(label)).ok()?;
        Some(&self.0[at].1)
    }

    /// Sets the state of the connector `label`.
    pub fn insert(&mut self, label: &str, state: ConnectorState) {
        match self.0.binary_search_by(|(l, _)| (**l).cmp(label)) {
            Ok(at) => self.0[at].1 = state,
            Err(at) => {
                self.0.reserve_exact(1);
                self.0.insert(at, (Box::from(label), state));
            }
        }
    }

    /// Labels and states, in label order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ConnectorState)> {
        self.0.iter().map(|(label, state)| (&**label, state))
    }

    /// How many connectors reported.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether none has reported.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::ops::Index<&str> for Connectors {
    type Output = ConnectorState;

    /// The state of the connector `label`; panics if it never reported, as `HashMap`'s index
    /// does (for tests and callers that checked; [`Connectors::get`] does not panic). No path
    /// of the central system indexes: a charge point's input cannot reach this panic.
    #[allow(clippy::panic)]
    fn index(&self, label: &str) -> &ConnectorState {
        match self.get(label) {
            Some(state) => state,
            None => panic!("no connector {label:?}"),
        }
    }
}

/// A charging session.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Transaction {
    /// The id: ours for 1.6 (`transactionId` of StartTransaction.conf), the charge point's for
    /// 2.x (`transactionInfo.transactionId`).
    pub id: String,
    /// The connector label (see [`ChargePointRecord::connectors`]).
    pub connector: String,
    /// The idTag / idToken that started it, if any.
    pub id_tag: Option<String>,
    /// When it started (our clock).
    pub started: UnixTime,
    /// When it ended, if it did.
    pub ended: Option<UnixTime>,
    /// Why it ended (`Local`, `EVDisconnected`...), if said.
    pub stop_reason: Option<String>,
    /// 2.x `chargingState` (`Charging`, `SuspendedEV`...), if said.
    pub charging_state: Option<String>,
    /// The energy register at the start, in Wh, exactly as the charge point wrote it
    /// (scaled to Wh: a `kWh` reading `2.935600` is `2935.600000`).
    pub meter_start_wh: Option<Decimal>,
    /// The last energy register reading, in Wh, exact.
    pub meter_last_wh: Option<Decimal>,
    /// How many sampled values arrived for it.
    pub samples: u64,
    /// 2.x: the last TransactionEvent `seqNo`.
    pub last_seq_no: Option<i64>,
    /// 1.6: the StartTransaction's own words (connector, idTag, timestamp, meterStart), by
    /// which the same StartTransaction sent again gets the same id (see `ledger`).
    pub start_key: Option<String>,
    /// The last signed meter value the charge point sent for it, verbatim, and what checking
    /// its signature found (kept in memory; shown by the admin API).
    pub signed_meter: Option<Box<SignedMeter>>,
}

/// A signed meter value as the meter signed it (1.6 `SignedData` sample, 2.x
/// `signedMeterValue`), and what checking it found: what a customer may be billed for where
/// calibration law asks for it (Germany's Eichrecht).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SignedMeter {
    /// `signedMeterData`, exactly as sent.
    pub data: String,
    /// `encodingMethod` as sent (`OCMF`, `EDL`...), if said.
    pub encoding: Option<String>,
    /// What the check found: `verified with the key the station sent` (the data was not
    /// changed on the way; whether the key is the meter's is for a key register to say),
    /// or why it failed (an invalid signature, an encoding this CSMS does not read, no key).
    pub check: String,
}

impl SignedMeter {
    /// Reads and checks a signed meter value with the key it carries (`ocpp_model`'s OCMF
    /// reader and ECDSA check).
    pub fn check(signed: &ocpp_model::SignedMeterValue) -> SignedMeter {
        let check = match signed.verify(None) {
            Ok(verified) => match verified.key_source {
                ocpp_model::signed_meter::KeySource::Given => "verified with the key given".into(),
                _ => "verified with the key the station sent".into(),
            },
            Err(error) => format!("not verified: {error}"),
        };
        SignedMeter {
            data: signed.signed_meter_data.clone(),
            encoding: signed.encoding_method.clone(),
            check,
        }
    }
}

impl Transaction {
    /// Energy delivered so far (last reading minus start), in Wh, exact.
    pub fn energy_wh(&self) -> Option<Decimal> {
        self.meter_last_wh?.checked_sub(self.meter_start_wh?)
    }

    /// Whether it has not ended.
    pub fn is_active(&self) -> bool {
        self.ended.is_none()
    }
}

impl ChargePointRecord {
    /// A charge point seen for the first time.
    pub fn new(identity: ChargePointIdentity) -> Self {
        ChargePointRecord {
            identity,
            session: None,
            registration: None,
            last_heartbeat: None,
            connectors: Connectors::default(),
            transactions: Vec::new(),
            boot_policy: None,
            boot_status: None,
            triggered: false,
            extras: Extras::default(),
        }
    }

    /// The registration status to show: what its last BootNotification was answered
    /// (`Accepted`, `Pending`, `Rejected`), `Unregistered` before the first.
    pub fn status(&self) -> &'static str {
        match self.boot_status {
            Some(status) => status.as_str(),
            None => "Unregistered",
        }
    }

    /// Keeps a report, dropping the oldest of its kind past `keep`.
    pub fn record_notification(
        &mut self,
        kind: &'static str,
        payload: Value,
        keep: usize,
        at: UnixTime,
    ) {
        let extras = self.extras.get_mut();
        *extras.notification_counts.entry(kind).or_default() += 1;
        if keep == 0 {
            return;
        }
        let list = extras.notifications.entry(kind).or_default();
        while list.len() >= keep {
            list.pop_front();
        }
        list.push_back(Notification { at, payload });
    }

    /// Notes a TransactionEvent `seqNo` of a transaction: a gap or an older seqNo is counted,
    /// logged and kept (the last `keep`); the last seqNo again is the same event sent again,
    /// not a gap. Returns whether it was one.
    pub fn note_seq_no(
        &mut self,
        transaction: &str,
        seq_no: i64,
        keep: usize,
        at: UnixTime,
    ) -> bool {
        let Some(t) = self.transaction_mut(transaction) else {
            return false;
        };
        let last = t.last_seq_no.replace(seq_no);
        let Some(expected) = last.map(|l| l.saturating_add(1)) else {
            return false;
        };
        // The same seqNo again is the same event sent again (its answer lost): not a gap.
        if seq_no == expected || Some(seq_no) == last {
            return false;
        }
        tracing::warn!(identity = %self.identity, transaction, expected, received = seq_no, "TransactionEvent seqNo gap");
        let extras = self.extras.get_mut();
        extras.seq_no_gap_count += 1;
        if keep > 0 {
            while extras.seq_no_gaps.len() >= keep {
                extras.seq_no_gaps.pop_front();
            }
            extras.seq_no_gaps.push_back(SeqNoGap {
                transaction: transaction.into(),
                expected,
                received: seq_no,
                at,
                check: None,
            });
        }
        true
    }

    /// Records a connector status.
    pub fn set_connector_status(
        &mut self,
        connector: &str,
        status: &str,
        error_code: Option<&str>,
        at: UnixTime,
    ) {
        self.connectors.insert(
            connector,
            ConnectorState {
                status: shared_text(status),
                error_code: error_code.map(shared_text),
                at,
            },
        );
    }

    /// The transaction with this id.
    pub fn transaction_mut(&mut self, id: &str) -> Option<&mut Transaction> {
        self.transactions.iter_mut().rev().find(|t| t.id == id)
    }

    /// The active transaction on a connector (the latest one if several).
    pub fn active_transaction_on(&mut self, connector: &str) -> Option<&mut Transaction> {
        self.transactions
            .iter_mut()
            .rev()
            .find(|t| t.is_active() && t.connector == connector)
    }

    /// Starts a transaction, or returns the existing one with this id (a repeated
    /// StartTransaction or `Started` event must not create two).
    pub fn start_transaction(
        &mut self,
        id: String,
        connector: String,
        id_tag: Option<String>,
        meter_start_wh: Option<Decimal>,
        now: UnixTime,
    ) -> &mut Transaction {
        if let Some(index) = self.transactions.iter().position(|t| t.id == id) {
            return &mut self.transactions[index];
        }
        self.transactions.push(Transaction {
            id,
            connector,
            id_tag,
            started: now,
            ended: None,
            stop_reason: None,
            charging_state: None,
            meter_start_wh,
            meter_last_wh: meter_start_wh,
            samples: 0,
            last_seq_no: None,
            start_key: None,
            signed_meter: None,
        });
        let last = self.transactions.len() - 1;
        &mut self.transactions[last]
    }

    /// Ends a transaction (creating it when it was started before this CSMS knew it, e.g.
    /// across a restart), then drops ended ones past `keep`. A transaction already ended
    /// stays as it ended (a StopTransaction or `Ended` sent again changes nothing).
    pub fn end_transaction(
        &mut self,
        id: &str,
        connector: Option<String>,
        meter_stop_wh: Option<Decimal>,
        reason: Option<&str>,
        keep: usize,
        now: UnixTime,
    ) {
        let transaction = match self.transactions.iter().position(|t| t.id == id) {
            Some(index) if self.transactions[index].ended.is_some() => return,
            Some(index) => &mut self.transactions[index],
            None => {
                // Started before a restart and ended since, or an end sent again after a
                // restart (the ended row stays as it was: see `store`).
                tracing::info!(identity = %self.identity, id, "ending a transaction this process does not hold");
                self.start_transaction(id.into(), connector.unwrap_or_default(), None, None, now)
            }
        };
        transaction.ended = Some(now);
        transaction.stop_reason = reason.map(String::from);
        if meter_stop_wh.is_some() {
            transaction.meter_last_wh = meter_stop_wh;
        }
        self.prune_ended(keep);
    }

    /// Applies sampled values to a transaction: the last energy register reading wins.
    pub fn record_meter<'a>(
        transaction: &mut Transaction,
        readings: impl IntoIterator<Item = &'a MeterReading>,
    ) {
        for reading in readings {
            transaction.samples += 1;
            if let Some(signed) = &reading.signed {
                transaction.signed_meter = Some(Box::new(SignedMeter::check(signed)));
            }
            if let Some(wh) = reading.energy_wh() {
                if transaction.meter_start_wh.is_none() {
                    transaction.meter_start_wh = Some(wh);
                }
                transaction.meter_last_wh = Some(wh);
            }
        }
    }

    /// Takes transactions as they were committed (each replaces the one with its id, or
    /// joins the list), then drops ended ones past `keep`.
    pub fn take_committed(
        &mut self,
        committed: impl IntoIterator<Item = Transaction>,
        keep: usize,
    ) {
        for transaction in committed {
            match self
                .transactions
                .iter_mut()
                .find(|t| t.id == transaction.id)
            {
                Some(held) => *held = transaction,
                None => self.transactions.push(transaction),
            }
        }
        self.prune_ended(keep);
    }

    fn prune_ended(&mut self, keep: usize) {
        let ended = self.transactions.iter().filter(|t| !t.is_active()).count();
        let mut excess = ended.saturating_sub(keep);
        self.transactions.retain(|t| {
            if excess > 0 && !t.is_active() {
                excess -= 1;
                false
            } else {
                true
            }
        });
    }
}
