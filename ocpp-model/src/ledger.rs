//! [`TransactionLedger`]: the transaction state that must outlive a connection, a process and
//! a node, and its one rule; [`InMemoryLedger`], the implementation for tests and single
//! processes.
//!
//! **The rule.** A transaction's start and end are acknowledged to the charge point only once
//! recorded, and a charge point that sends a transaction message again (its answer was lost)
//! is answered as the first time, without a second record:
//!
//! - a 1.6 StartTransaction is recognised by its [`StartKey`] (connector, idTag, timestamp,
//!   meterStart, reservation) and gets the id it was given the first time, across restarts and
//!   nodes (the key is kept with the transaction);
//! - a 2.x TransactionEvent is recognised by its transaction id and `seqNo` (one already seen,
//!   or lower, changes nothing);
//! - the end of an ended transaction changes nothing.
//!
//! 1.6 transaction ids are the CSMS's: [`TransactionLedger::next_transaction_id`] never gives
//! the same one twice, so it must be backed by the store itself (a sequence, a counter row),
//! never by a counter in one process's memory.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use ocpp_messages::DateTime;

use crate::{
    Decimal, IdToken, StopReason, TransactionEnded, TransactionId, TransactionStarted,
    TransactionUpdated,
};

/// What recognises a 1.6 StartTransaction sent again: everything the charge point said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartKey {
    /// `connectorId`.
    pub connector: Option<u32>,
    /// `idTag`.
    pub id_tag: Option<String>,
    /// `timestamp`, as sent.
    pub timestamp: String,
    /// `meterStart` (the `Transaction.Begin` reading).
    pub meter_start: Option<Decimal>,
    /// `reservationId`.
    pub reservation: Option<i32>,
}

impl StartKey {
    /// The key of a start; `None` for a start that carries its own id (2.x).
    ///
    /// ```
    /// use ocpp_messages::{v1_6, DateTime, Request};
    /// use ocpp_model::{StartKey, StationEvent};
    ///
    /// let time: DateTime = "2025-01-02T03:04:05Z".parse().unwrap();
    /// let start: Request = v1_6::StartTransactionRequest::new(1, "TAG", 10, time).into();
    /// let event = StationEvent::from_request(&start);
    /// let StationEvent::TransactionStarted(start) = event else { panic!() };
    /// assert_eq!(StartKey::of(&start).unwrap().id_tag.as_deref(), Some("TAG"));
    /// ```
    pub fn of(start: &TransactionStarted) -> Option<StartKey> {
        if start.id.is_some() {
            return None;
        }
        Some(StartKey {
            connector: start.evse,
            id_tag: start.token.as_ref().map(|t| t.value.clone()),
            timestamp: start.timestamp.as_str().to_owned(),
            meter_start: start
                .readings
                .iter()
                .find(|r| r.context == "Transaction.Begin")
                .and_then(|r| r.value),
            reservation: start.reservation,
        })
    }
}

/// The key as one line of text, for a store's column: `connector|idTag|timestamp|meterStart|
/// reservation`, an absent part empty (`1|04A2B3C4|2025-01-02T03:04:05Z|2935|`). It reads back
/// with [`str::parse`].
impl core::fmt::Display for StartKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let part = |value: Option<String>| value.unwrap_or_default();
        write!(
            f,
            "{}|{}|{}|{}|{}",
            part(self.connector.map(|c| c.to_string())),
            self.id_tag.as_deref().unwrap_or_default(),
            self.timestamp,
            part(self.meter_start.map(|m| m.to_string())),
            part(self.reservation.map(|r| r.to_string())),
        )
    }
}

/// A [`StartKey`]'s text that does not read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a start key (connector|idTag|timestamp|meterStart|reservation)")]
pub struct StartKeyError;

/// Reads the text [`StartKey`]'s `Display` writes (an idTag may hold `|`: the other parts
/// cannot).
///
/// ```
/// use ocpp_model::StartKey;
///
/// let key: StartKey = "1|A|B|2025-01-02T03:04:05Z|2935.5|".parse()?;
/// assert_eq!(key.id_tag.as_deref(), Some("A|B"));
/// assert_eq!(key.to_string(), "1|A|B|2025-01-02T03:04:05Z|2935.5|");
/// # Ok::<(), ocpp_model::ledger::StartKeyError>(())
/// ```
impl core::str::FromStr for StartKey {
    type Err = StartKeyError;

    fn from_str(text: &str) -> Result<Self, StartKeyError> {
        let (connector, rest) = text.split_once('|').ok_or(StartKeyError)?;
        let mut tail = rest.rsplitn(4, '|');
        let (reservation, meter_start, timestamp, id_tag) =
            match (tail.next(), tail.next(), tail.next(), tail.next()) {
                (Some(r), Some(m), Some(t), Some(i)) => (r, m, t, i),
                _ => return Err(StartKeyError),
            };
        fn optional<T: core::str::FromStr>(part: &str) -> Result<Option<T>, StartKeyError> {
            match part {
                "" => Ok(None),
                part => part.parse().map(Some).map_err(|_| StartKeyError),
            }
        }
        Ok(StartKey {
            connector: optional(connector)?,
            id_tag: (!id_tag.is_empty()).then(|| id_tag.to_owned()),
            timestamp: timestamp.to_owned(),
            meter_start: optional(meter_start)?,
            reservation: optional(reservation)?,
        })
    }
}

/// What a ledger did with a transaction message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Recorded {
    /// Recorded now (a start opened, an end closed, an update's seqNo kept).
    New(TransactionId),
    /// Already recorded (a resend): nothing changed; answer as the first time.
    Repeated(TransactionId),
    /// A 1.6 transaction id the ledger never gave this charge point: nothing recorded.
    Unknown,
}

impl Recorded {
    /// The transaction's id, when known.
    pub fn id(&self) -> Option<&TransactionId> {
        match self {
            Recorded::New(id) | Recorded::Repeated(id) => Some(id),
            Recorded::Unknown => None,
        }
    }

    /// The 1.6 id to answer a StartTransaction with.
    pub fn number(&self) -> Option<i32> {
        match self.id() {
            Some(TransactionId::Number(n)) => Some(*n),
            _ => None,
        }
    }
}

/// A transaction as a ledger keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerTransaction {
    /// Its id.
    pub id: TransactionId,
    /// The EVSE (1.6 connectorId).
    pub evse: Option<u32>,
    /// Who started it.
    pub token: Option<IdToken>,
    /// When it started (`None`: first seen in an update or end).
    pub started: Option<DateTime>,
    /// 1.6: the start's key.
    pub start_key: Option<StartKey>,
    /// When it ended, and why (`None`: open).
    pub ended: Option<(DateTime, StopReason)>,
    /// 2.x: the highest `seqNo` seen.
    pub last_seq_no: Option<u32>,
}

/// Where the transactions of every charge point are kept.
///
/// **Contract.** Each method is one atomic step: when it returns `Ok`, what it recorded is
/// durable (it survives a crash of this process, and every other node sharing the store sees
/// it from then on), so the caller may acknowledge the message; when it returns `Err`, nothing
/// of that call is recorded, now or later, and the caller answers CALLERROR `InternalError`
/// so that the charge point sends the message again. (The one outcome no database client can
/// know, a `COMMIT` sent and never answered, is an `Err` that may have been recorded; the
/// implementation's error says so, and the message sent again is then
/// [`Recorded::Repeated`]: the steps are idempotent for that reason.) Methods may block (a database round
/// trip): call them off an event loop, or from the job a mio loop hands to a worker.
///
/// Calls about one charge point come one at a time (one connection, one CALL at a time); calls
/// about different charge points may come concurrently, hence `&self`.
pub trait TransactionLedger {
    /// Why the store failed.
    type Error: std::error::Error + Send + Sync + 'static;

    /// A 1.6 transaction id never given before by this store, to any charge point, on any
    /// node, before or after a restart. Once returned it is spent, used or not (gaps are
    /// allowed, repeats never).
    fn next_transaction_id(&self) -> Result<i32, Self::Error>;

    /// Records a start: 1.6 (no id: recognised by its [`StartKey`] or given
    /// [`next_transaction_id`](TransactionLedger::next_transaction_id)), or 2.x (its id).
    /// A start recorded before gives [`Recorded::Repeated`] with the same id.
    fn record_start(
        &self,
        charge_point: &str,
        start: &TransactionStarted,
    ) -> Result<Recorded, Self::Error>;

    /// Records an update: 2.x keeps its seqNo (a seqNo not above the last seen is
    /// [`Recorded::Repeated`]; a transaction first seen here is opened); 1.6 checks the id is
    /// this charge point's ([`Recorded::Unknown`] otherwise). An update of an ended
    /// transaction is [`Recorded::Repeated`].
    fn record_update(
        &self,
        charge_point: &str,
        update: &TransactionUpdated,
    ) -> Result<Recorded, Self::Error>;

    /// Records an end: an open transaction is closed ([`Recorded::New`]); an ended one is left
    /// as it is ([`Recorded::Repeated`]); a 2.x transaction first seen here is recorded ended;
    /// an unknown 1.6 id is [`Recorded::Unknown`].
    fn record_end(
        &self,
        charge_point: &str,
        end: &TransactionEnded,
    ) -> Result<Recorded, Self::Error>;

    /// The transactions of `charge_point` not ended, oldest first.
    fn open_transactions(&self, charge_point: &str) -> Result<Vec<LedgerTransaction>, Self::Error>;

    /// One transaction of `charge_point`, open or ended.
    fn transaction(
        &self,
        charge_point: &str,
        id: &TransactionId,
    ) -> Result<Option<LedgerTransaction>, Self::Error>;
}

/// Why the [`InMemoryLedger`] failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InMemoryLedgerError {
    /// Every positive `i32` was given out.
    #[error("every 1.6 transaction id was given out")]
    IdsExhausted,
}

#[derive(Debug)]
struct State {
    next_id: i32,
    charge_points: HashMap<String, Vec<LedgerTransaction>>,
}

/// A [`TransactionLedger`] in memory: durable as long as the process (tests, one process that
/// may forget on restart); ids from a counter.
///
/// ```
/// use ocpp_messages::{v1_6, DateTime, Request};
/// use ocpp_model::{InMemoryLedger, Recorded, StationEvent, TransactionId, TransactionLedger};
///
/// let ledger = InMemoryLedger::new();
/// let time: DateTime = "2025-01-02T03:04:05Z".parse().unwrap();
/// let start: Request = v1_6::StartTransactionRequest::new(1, "TAG", 10, time).into();
/// let event = StationEvent::from_request(&start);
/// let StationEvent::TransactionStarted(start) = event else { panic!() };
/// let first = ledger.record_start("CP1", &start)?;
/// assert_eq!(first, Recorded::New(TransactionId::Number(1)));
/// // Sent again after a lost answer: the same id, nothing recorded twice.
/// assert_eq!(ledger.record_start("CP1", &start)?, Recorded::Repeated(TransactionId::Number(1)));
/// assert_eq!(ledger.open_transactions("CP1")?.len(), 1);
/// # Ok::<(), ocpp_model::InMemoryLedgerError>(())
/// ```
#[derive(Debug)]
pub struct InMemoryLedger {
    state: Mutex<State>,
}

impl Default for InMemoryLedger {
    fn default() -> Self {
        InMemoryLedger::new()
    }
}

impl State {
    /// The transactions of `charge_point` (none at first).
    fn transactions_of(&mut self, charge_point: &str) -> &mut Vec<LedgerTransaction> {
        self.charge_points
            .entry(charge_point.to_owned())
            .or_default()
    }
}

impl InMemoryLedger {
    /// An empty ledger whose first 1.6 id is 1.
    pub fn new() -> Self {
        InMemoryLedger::starting_at(1)
    }

    /// An empty ledger whose first 1.6 id is `next_id`.
    pub fn starting_at(next_id: i32) -> Self {
        InMemoryLedger {
            state: Mutex::new(State {
                next_id,
                charge_points: HashMap::new(),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn give_id(state: &mut State) -> Result<i32, InMemoryLedgerError> {
    let id = state.next_id;
    state.next_id = id.checked_add(1).ok_or(InMemoryLedgerError::IdsExhausted)?;
    Ok(id)
}

/// A transaction an update or an end names that was not recorded: a 1.6 id (one the ledger
/// gives) is unknown; a 2.x one is recorded as first seen there.
fn first_seen(list: &mut Vec<LedgerTransaction>, transaction: LedgerTransaction) -> Recorded {
    if let TransactionId::Number(_) = transaction.id {
        return Recorded::Unknown;
    }
    let id = transaction.id.clone();
    list.push(transaction);
    Recorded::New(id)
}

impl LedgerTransaction {
    /// A transaction whose start the ledger has not seen, open.
    fn unstarted(
        id: &TransactionId,
        evse: Option<u32>,
        token: Option<&IdToken>,
        last_seq_no: Option<u32>,
    ) -> Self {
        LedgerTransaction {
            id: id.clone(),
            evse,
            token: token.cloned(),
            started: None,
            start_key: None,
            ended: None,
            last_seq_no,
        }
    }
}

fn seen(seq_no: Option<u32>, last: Option<u32>) -> bool {
    matches!((seq_no, last), (Some(s), Some(l)) if s <= l)
}

impl TransactionLedger for InMemoryLedger {
    type Error = InMemoryLedgerError;

    fn next_transaction_id(&self) -> Result<i32, Self::Error> {
        give_id(&mut self.state())
    }

    fn record_start(
        &self,
        charge_point: &str,
        start: &TransactionStarted,
    ) -> Result<Recorded, Self::Error> {
        let key = StartKey::of(start);
        let mut state = self.state();
        let known = state.charge_points.get(charge_point).and_then(|list| {
            list.iter()
                .find(|t| match (&key, &start.id) {
                    (Some(key), _) => t.start_key.as_ref() == Some(key),
                    (None, Some(id)) => &t.id == id,
                    (None, None) => false,
                })
                .map(|t| t.id.clone())
        });
        if let Some(id) = known {
            return Ok(Recorded::Repeated(id));
        }
        let id = match &start.id {
            Some(id) => id.clone(),
            None => TransactionId::Number(give_id(&mut state)?),
        };
        state.transactions_of(charge_point).push(LedgerTransaction {
            id: id.clone(),
            evse: start.evse,
            token: start.token.clone(),
            started: Some(start.timestamp.clone()),
            start_key: key,
            ended: None,
            last_seq_no: start.seq_no,
        });
        Ok(Recorded::New(id))
    }

    fn record_update(
        &self,
        charge_point: &str,
        update: &TransactionUpdated,
    ) -> Result<Recorded, Self::Error> {
        let mut state = self.state();
        let list = state.transactions_of(charge_point);
        match list.iter_mut().find(|t| t.id == update.id) {
            Some(t) if t.ended.is_some() || seen(update.seq_no, t.last_seq_no) => {
                Ok(Recorded::Repeated(t.id.clone()))
            }
            Some(t) => {
                t.last_seq_no = update.seq_no.or(t.last_seq_no);
                Ok(Recorded::New(t.id.clone()))
            }
            None => {
                let unstarted = LedgerTransaction::unstarted(
                    &update.id,
                    update.evse,
                    update.token.as_ref(),
                    update.seq_no,
                );
                Ok(first_seen(list, unstarted))
            }
        }
    }

    fn record_end(
        &self,
        charge_point: &str,
        end: &TransactionEnded,
    ) -> Result<Recorded, Self::Error> {
        let ended = Some((end.timestamp.clone(), end.reason));
        let mut state = self.state();
        let list = state.transactions_of(charge_point);
        match list.iter_mut().find(|t| t.id == end.id) {
            Some(t) if t.ended.is_some() => Ok(Recorded::Repeated(t.id.clone())),
            Some(t) => {
                t.ended = ended;
                t.last_seq_no = end.seq_no.max(t.last_seq_no);
                Ok(Recorded::New(t.id.clone()))
            }
            None => {
                let unstarted =
                    LedgerTransaction::unstarted(&end.id, end.evse, end.token.as_ref(), end.seq_no);
                Ok(first_seen(list, LedgerTransaction { ended, ..unstarted }))
            }
        }
    }

    fn open_transactions(&self, charge_point: &str) -> Result<Vec<LedgerTransaction>, Self::Error> {
        let state = self.state();
        Ok(state
            .charge_points
            .get(charge_point)
            .map(|list| list.iter().filter(|t| t.ended.is_none()).cloned().collect())
            .unwrap_or_default())
    }

    fn transaction(
        &self,
        charge_point: &str,
        id: &TransactionId,
    ) -> Result<Option<LedgerTransaction>, Self::Error> {
        let state = self.state();
        Ok(state
            .charge_points
            .get(charge_point)
            .and_then(|list| list.iter().find(|t| &t.id == id).cloned()))
    }
}
