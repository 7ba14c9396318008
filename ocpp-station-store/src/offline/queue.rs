//! The offline queue's rules, Sans-IO: [`OfflineQueue`].

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use ocpp_messages::{DateTime, DecodeOptions, OcppVersion, Request};
use ocpp_proto::station::{
    transaction_id_of, with_transaction_id, OpenTransaction, Reading, Start, StationStopReason,
    TransactionError, TransactionMessage, Transactions,
};
use ocpp_proto::{CallFailure, CallOutcome};

use super::{OfflineStore, OfflineStoreError, StoredMessage};

/// Why a message was not queued: nothing of it is in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// Only transaction messages go through the offline queue (1.6 Start/StopTransaction and
    /// MeterValues with a transactionId; 2.x TransactionEvent).
    #[error("not a transaction message: {0}")]
    NotATransactionMessage(&'static str),
    /// A message for a 1.6 StartTransaction that carries no transactionId to fill in.
    #[error("only a 1.6 StopTransaction or MeterValues can take a transaction's id")]
    NotForATransaction,
    /// A message for a StartTransaction this station no longer knows (given up, or of an
    /// earlier run).
    #[error("StartTransaction {0} is not known")]
    UnknownTransaction(u64),
    /// The message did not serialise.
    #[error("encode: {0}")]
    Encode(String),
    /// The station's transactions refused the change (e.g. a transaction is open on the EVSE
    /// already, or none is): nothing was queued.
    #[error(transparent)]
    Transaction(#[from] TransactionError),
    /// The store refused it: the message was not accepted.
    #[error(transparent)]
    Store(#[from] OfflineStoreError),
    /// The station that owns the queue stopped (a driver's answer to a caller it can no
    /// longer reach the queue for).
    #[error("the station stopped")]
    Stopped,
}

/// A message the queue did not take, and its waiter, handed back.
#[derive(Debug)]
pub struct NotQueued<W> {
    /// Why.
    pub error: QueueError,
    /// The waiter given with it.
    pub waiter: W,
}

/// A change of the station's transactions ([`OfflineQueue::transaction`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TransactionOp {
    /// A transaction starts.
    Start(Start),
    /// A meter reading of the transaction open on `evse`.
    Meter {
        /// The EVSE (1.6: the connector).
        evse: i32,
        /// The reading.
        reading: Reading,
    },
    /// The transaction open on `evse` stops.
    Stop {
        /// The EVSE (1.6: the connector).
        evse: i32,
        /// The last reading.
        reading: Reading,
        /// Why.
        reason: StationStopReason,
    },
    /// The transaction open on `evse` ended with a power loss (found open at a restart).
    PowerLoss {
        /// The EVSE (1.6: the connector).
        evse: i32,
    },
}

/// What [`OfflineQueue::open`] found of an earlier run's transactions.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Restart {
    /// Open when the station started.
    pub open: Vec<OpenTransaction>,
}

/// One queued message and who waits for its outcome (none for one of an earlier run).
struct Entry<W> {
    stored: StoredMessage,
    waiter: Option<W>,
    /// CALLERRORs (or undecodable answers) so far.
    attempts: u32,
}

/// The offline queue's rules, Sans-IO: transaction messages kept in an [`OfflineStore`],
/// delivered in order, one at a time, each until it is answered. A driver hands it each
/// connection's progress (what it could send, the outcome of what it sent, the time) and
/// takes back what to send, when to look again, and whose messages were delivered.
///
/// - A message is accepted once the store has it (`push` returned), so a station killed right
///   after can deliver it when it starts again.
/// - Only the head is ever in flight, and only when the driver asks for it ([`next`]: on an
///   Accepted registration); the rest waits, so the central system sees the transaction's
///   messages in the order they happened.
/// - A CALLRESULT removes it. A CALLERROR, an answer that does not decode, and no answer
///   within the call timeout on a connection that stays up count as an attempt: it is sent
///   again after `retry_interval * attempts`, at most `attempts` times (1.6
///   `TransactionMessageAttempts` / `TransactionMessageRetryInterval`, 2.0.1
///   `OCPPCommCtrlr.MessageAttempts{TransactionEvent}` / `MessageAttemptInterval...`), then it
///   is given up and its waiter told the last failure. The wait lets the other CALLs of the
///   station go meanwhile, and the bound keeps a central system that never answers from
///   holding the connection's one CALL in flight forever.
/// - An answer lost with the connection (closed while in flight) does not count: the same
///   content goes again after the next Accepted boot, as OCPP allows for transaction messages
///   (1.6 §4.7, 2.0.1 E13/E14): the station cannot tell whether it arrived.
/// - OCPP 1.6: a StopTransaction or MeterValues queued for a StartTransaction still in the
///   queue gets that transaction's id once the StartTransaction is answered.
/// - The station's [`Transactions`] live here, beside the queue they feed: every message they
///   make is pushed with their new snapshot in one store record
///   ([`OfflineStore::push_with_state`]), and the 1.6 transactionId a StartTransaction's
///   answer gives is recorded with the StartTransaction's removal
///   ([`OfflineStore::remove_with_state`]). A change the store refuses leaves them as they
///   were.
///
/// Who waits for a message is the driver's type `W` (a channel's sender, a callback): the
/// queue keeps it with the message and hands it back with the outcome
/// ([`poll_delivered`](OfflineQueue::poll_delivered)), as the core hands back a CALL's caller.
///
/// ```
/// use std::time::{Duration, Instant};
/// use ocpp_messages::{DateTime, DecodeOptions, OcppVersion, Response};
/// use ocpp_proto::station::{Evse, IdToken, Start, Transactions};
/// use ocpp_station_store::offline::{MemoryStore, OfflineQueue, TransactionOp};
///
/// let (mut queue, restart) = OfflineQueue::<&str>::open(
///     Box::new(MemoryStore::new()),
///     3,
///     Duration::from_secs(10),
///     || Transactions::new(OcppVersion::V2_0_1, "CP001"),
/// )?;
/// assert!(restart.open.is_empty());
/// let start = Start::new(Evse::new(1), IdToken::new("TAG", "Central"), 0, DateTime::now());
/// let seq = queue.transaction(TransactionOp::Start(start), DateTime::now(), "the caller")
///     .map_err(|refused| refused.error)?;
/// assert!(queue.poll_transactions().is_some_and(|t| t.open().count() == 1));
///
/// // Online and Accepted: the head goes, and its answer delivers it.
/// let now = Instant::now();
/// let (sent, request) = queue.next(now, OcppVersion::V2_0_1).expect("the head");
/// assert_eq!((sent, request.action()), (seq, "TransactionEvent"));
/// assert!(queue.next(now, OcppVersion::V2_0_1).is_none(), "one in flight");
/// let answer = Response::decode(OcppVersion::V2_0_1, "TransactionEvent", "{}", &DecodeOptions::lenient())?;
/// queue.on_outcome(now, seq, Ok(answer));
/// let (waiter, outcome) = queue.poll_delivered().expect("delivered");
/// assert_eq!(waiter, "the caller");
/// assert!(outcome.is_ok() && queue.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// [`next`]: OfflineQueue::next
pub struct OfflineQueue<W> {
    store: Box<dyn OfflineStore>,
    entries: VecDeque<Entry<W>>,
    next_seq: u64,
    in_flight: Option<u64>,
    /// 1.6: the transactionId each answered StartTransaction got (this run).
    resolved: HashMap<u64, i32>,
    retry_at: Option<Instant>,
    attempts: u32,
    retry_interval: Duration,
    /// The station's transactions, as the store has them.
    transactions: Transactions,
    /// They changed since [`OfflineQueue::poll_transactions`] last said so.
    transactions_changed: bool,
    /// Messages delivered or given up, with their waiters, until the driver takes them.
    delivered: VecDeque<(W, CallOutcome)>,
}

impl<W> std::fmt::Debug for OfflineQueue<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OfflineQueue")
            .field("queued", &self.entries.len())
            .field("in_flight", &self.in_flight)
            .field("retry_at", &self.retry_at)
            .finish_non_exhaustive()
    }
}

impl<W> OfflineQueue<W> {
    /// The queue left in `store` (by an earlier run, maybe killed), each message given up
    /// after `attempts` failed answers (at least 1), waiting `retry_interval * attempts`
    /// between them. `fresh` makes the transactions' state when the store has none.
    pub fn open(
        mut store: Box<dyn OfflineStore>,
        attempts: u32,
        retry_interval: Duration,
        fresh: impl FnOnce() -> Transactions,
    ) -> Result<(Self, Restart), OfflineStoreError> {
        let loaded = store.load()?;
        let next_seq = loaded.last().map_or(1, |m| m.seq + 1);
        let transactions = match store.load_state()? {
            Some(snapshot) => Transactions::from_snapshot(&snapshot)
                .map_err(|e| OfflineStoreError::State(e.to_string()))?,
            None => fresh(),
        };
        let restart = Restart {
            open: transactions.open().cloned().collect(),
        };
        let entries = loaded.into_iter().map(|stored| Entry {
            stored,
            waiter: None,
            attempts: 0,
        });
        let queue = OfflineQueue {
            store,
            entries: entries.collect(),
            next_seq,
            in_flight: None,
            resolved: HashMap::new(),
            retry_at: None,
            attempts: attempts.max(1),
            retry_interval,
            transactions,
            transactions_changed: false,
            delivered: VecDeque::new(),
        };
        Ok((queue, restart))
    }

    /// How many messages wait (the one in flight included).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no message waits.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The station's transactions, as the store has them.
    pub fn transactions(&self) -> &Transactions {
        &self.transactions
    }

    /// The station's transactions once after each change (to publish them), else `None`.
    pub fn poll_transactions(&mut self) -> Option<&Transactions> {
        std::mem::take(&mut self.transactions_changed).then_some(&self.transactions)
    }

    /// New transactions are made for `version` (the one a connection was accepted with).
    pub fn set_transaction_version(&mut self, version: OcppVersion) {
        if self.transactions.version() != version {
            self.transactions.set_version(version);
            self.transactions_changed = true;
        }
    }

    /// A change of the station's transactions: the message it makes and the new state, in one
    /// store record; the state changes only once the store has them. Returns the message's
    /// place in the queue; `waiter` gets its outcome.
    pub fn transaction(
        &mut self,
        op: TransactionOp,
        now: DateTime,
        waiter: W,
    ) -> Result<u64, NotQueued<W>> {
        let seq = self.next_seq;
        let mut next = self.transactions.clone();
        let message: Result<TransactionMessage, TransactionError> = match op {
            TransactionOp::Start(start) => next.start(start, seq),
            TransactionOp::Meter { evse, reading } => next.meter_reading(evse, reading, now),
            TransactionOp::Stop {
                evse,
                reading,
                reason,
            } => next.stop_with(evse, reading, now, reason),
            TransactionOp::PowerLoss { evse } => next.end_after_power_loss(evse, now),
        };
        let message = match message {
            Ok(message) => message,
            Err(error) => return Err(not_queued(error.into(), waiter)),
        };
        let ends = next.open().count() < self.transactions.open().count();
        let state = next.to_snapshot();
        match self.push_with(
            &message.request,
            message.transaction_of,
            Some(&state),
            waiter,
        ) {
            Ok(pushed) => {
                self.set_transactions(next);
                Ok(pushed)
            }
            Err(NotQueued {
                error: QueueError::UnknownTransaction(start),
                waiter,
            }) if ends => {
                // 1.6: its StartTransaction was given up and never got an id: the central
                // system knows no such transaction. It ends here, with nothing to send.
                if let Err(error) = self.store.save_state(&state) {
                    return Err(not_queued(error.into(), waiter));
                }
                self.set_transactions(next);
                Err(not_queued(QueueError::UnknownTransaction(start), waiter))
            }
            Err(refused) => Err(refused),
        }
    }

    /// Adds `request` at the end, durably; `transaction_of` is the 1.6 StartTransaction whose
    /// id it takes. Returns its place in the queue; `waiter` gets its outcome.
    pub fn push(
        &mut self,
        request: &Request,
        transaction_of: Option<u64>,
        waiter: W,
    ) -> Result<u64, NotQueued<W>> {
        self.push_with(request, transaction_of, None, waiter)
    }

    /// [`OfflineQueue::push`], with the transactions' new state in the same record.
    fn push_with(
        &mut self,
        request: &Request,
        transaction_of: Option<u64>,
        state: Option<&str>,
        waiter: W,
    ) -> Result<u64, NotQueued<W>> {
        let mut transaction_of = transaction_of;
        let mut filled = None;
        if let Some(start) = transaction_of {
            if !self.entries.iter().any(|e| e.stored.seq == start) {
                // The StartTransaction was answered already: its id goes in now.
                let Some(&id) = self.resolved.get(&start) else {
                    return Err(not_queued(QueueError::UnknownTransaction(start), waiter));
                };
                let Some(request) = with_transaction_id(request, id) else {
                    return Err(not_queued(QueueError::NotForATransaction, waiter));
                };
                filled = Some(request);
                transaction_of = None;
            }
        }
        let request = filled.as_ref().unwrap_or(request);
        let payload = match serde_json::to_string(request) {
            Ok(payload) => payload,
            Err(e) => return Err(not_queued(QueueError::Encode(e.to_string()), waiter)),
        };
        let stored = StoredMessage {
            seq: self.next_seq,
            version: request.version(),
            action: request.action().to_owned(),
            payload,
            transaction_of,
        };
        let kept = match state {
            Some(state) => self.store.push_with_state(&stored, state),
            None => self.store.push(&stored),
        };
        if let Err(error) = kept {
            return Err(not_queued(error.into(), waiter));
        }
        self.next_seq += 1;
        let seq = stored.seq;
        self.entries.push_back(Entry {
            stored,
            waiter: Some(waiter),
            attempts: 0,
        });
        Ok(seq)
    }

    /// When the head may go again after a failed answer.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.retry_at
    }

    /// The head, to send on a connection of `version` now (nothing in flight, no retry wait),
    /// with its place in the queue. A head that cannot go on this version, or whose
    /// transaction never got an id, is given up here (its waiter told why).
    pub fn next(&mut self, now: Instant, version: OcppVersion) -> Option<(u64, Request)> {
        if self.in_flight.is_some() || self.retry_at.is_some_and(|at| now < at) {
            return None;
        }
        self.retry_at = None;
        loop {
            let stored = &self.entries.front()?.stored;
            let failure = if stored.version != version {
                CallFailure::WrongVersion
            } else if stored.transaction_of.is_some() {
                // Its StartTransaction left the queue without a transactionId.
                CallFailure::InvalidRequest {
                    description: "its StartTransaction got no transactionId".into(),
                }
            } else {
                match decode(stored) {
                    Ok(request) => {
                        let seq = stored.seq;
                        self.in_flight = Some(seq);
                        return Some((seq, request));
                    }
                    Err(error) => CallFailure::InvalidRequest {
                        description: format!("stored message does not decode: {error}"),
                    },
                }
            };
            tracing::warn!(seq = stored.seq, action = %stored.action, %failure, "queued message given up");
            self.finish_head(Err(failure), None);
        }
    }

    /// The head could not be written after all (the connection refused it): it stays first.
    pub fn unsent(&mut self, seq: u64) {
        if self.in_flight == Some(seq) {
            self.in_flight = None;
        }
    }

    /// The outcome of the head, sent as `seq` (any other `seq` is ignored).
    pub fn on_outcome(&mut self, now: Instant, seq: u64, outcome: CallOutcome) {
        if self.in_flight != Some(seq) {
            return;
        }
        self.in_flight = None;
        match outcome {
            Ok(response) => {
                let mut state = None;
                if let Some(id) = transaction_id_of(&response) {
                    self.resolve_transaction(seq, id);
                    let mut next = self.transactions.clone();
                    if next.on_transaction_id(seq, id).is_some() {
                        state = Some(next);
                    }
                }
                self.finish_head(Ok(response), state);
            }
            Err(
                failure @ (CallFailure::ErrorResponse { .. }
                | CallFailure::InvalidResponse { .. }
                | CallFailure::Timeout),
            ) => {
                let Some(head) = self.entries.front_mut() else {
                    return;
                };
                head.attempts += 1;
                if head.attempts >= self.attempts {
                    tracing::warn!(seq, action = %head.stored.action, %failure, "queued message given up after its attempts");
                    self.finish_head(Err(failure), None);
                } else {
                    let wait = self.retry_interval.saturating_mul(head.attempts);
                    self.retry_at = Some(now + wait);
                }
            }
            // Lost with the connection, or never written: the same content goes again.
            Err(_) => {}
        }
    }

    /// A message delivered (answered) or given up, with its waiter; `None` when there is no
    /// more. Take them after each call that hands the queue an outcome or asks it for the
    /// head ([`on_outcome`](Self::on_outcome), [`next`](Self::next)).
    pub fn poll_delivered(&mut self) -> Option<(W, CallOutcome)> {
        self.delivered.pop_front()
    }

    /// Takes the waiters of every queued message, for a driver that stops: the messages stay
    /// in the store (they go after the next start), the waiters learn it from the driver.
    pub fn take_waiters(&mut self) -> impl Iterator<Item = W> + '_ {
        self.entries
            .iter_mut()
            .filter_map(|entry| entry.waiter.take())
    }

    /// 1.6: the StartTransaction `start` got `id`; the messages queued for it take it.
    fn resolve_transaction(&mut self, start: u64, id: i32) {
        self.resolved.insert(start, id);
        for entry in self.entries.iter_mut() {
            if entry.stored.transaction_of != Some(start) {
                continue;
            }
            let filled = decode(&entry.stored)
                .ok()
                .and_then(|r| with_transaction_id(&r, id));
            let Some(payload) = filled.and_then(|r| serde_json::to_string(&r).ok()) else {
                continue;
            };
            let mut stored = entry.stored.clone();
            stored.payload = payload;
            stored.transaction_of = None;
            if let Err(error) = self.store.replace(&stored) {
                tracing::error!(%error, seq = stored.seq, "offline store: transactionId not recorded");
            }
            entry.stored = stored;
        }
    }

    /// Removes the head, with the transactions' new state (1.6: the id its answer gave) in
    /// the same record, and hands its waiter the outcome.
    fn finish_head(&mut self, outcome: CallOutcome, state: Option<Transactions>) {
        let Some(head) = self.entries.pop_front() else {
            return;
        };
        let removed = match &state {
            Some(next) => self
                .store
                .remove_with_state(head.stored.seq, &next.to_snapshot()),
            None => self.store.remove(head.stored.seq),
        };
        if let Err(error) = removed {
            // It stays in the file: after a restart it would go once more (and its answer
            // gives the transactionId again). This run knows the id all the same.
            tracing::error!(%error, seq = head.stored.seq, "offline store: answered message not removed");
        }
        if let Some(next) = state {
            self.set_transactions(next);
        }
        if let Some(waiter) = head.waiter {
            self.delivered.push_back((waiter, outcome));
        }
    }

    fn set_transactions(&mut self, next: Transactions) {
        self.transactions = next;
        self.transactions_changed = true;
    }
}

fn not_queued<W>(error: QueueError, waiter: W) -> NotQueued<W> {
    NotQueued { error, waiter }
}

/// A stored message as the request it was.
fn decode(stored: &StoredMessage) -> Result<Request, ocpp_messages::DecodeError> {
    Request::decode(
        stored.version,
        &stored.action,
        &stored.payload,
        &DecodeOptions::lenient(),
    )
}

#[cfg(test)]
mod tests;
