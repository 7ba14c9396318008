//! The offline queue: transaction messages, kept in a store, delivered in order, one at a
//! time, each until it is answered.
//!
//! - A message is accepted once the store has it (`push` returned), so a station killed right
//!   after can deliver it when it starts again.
//! - Only the head is ever in flight, and only on an Accepted registration; the rest waits,
//!   so the central system sees the transaction's messages in the order they happened.
//! - A CALLRESULT removes it. A CALLERROR, an answer that does not decode, and no answer
//!   within the call timeout on a connection that stays up count as an attempt: it is sent
//!   again after `retry_interval * attempts`, at most `attempts` times (1.6
//!   `TransactionMessageAttempts` / `TransactionMessageRetryInterval`, 2.0.1
//!   `OCPPCommCtrlr.MessageAttempts{TransactionEvent}` / `MessageAttemptInterval...`), then it is
//!   given up and its caller told the last failure. The wait lets the other CALLs of the
//!   station go meanwhile, and the bound keeps a central system that never answers from
//!   holding the connection's one CALL in flight forever.
//! - An answer lost with the connection (closed while in flight) does not count: the same
//!   content goes again after the next Accepted boot, as OCPP allows for transaction messages
//!   (1.6 §4.7, 2.0.1 E13/E14): the station cannot tell whether it arrived.
//! - OCPP 1.6: a StopTransaction or MeterValues queued for a StartTransaction still in the
//!   queue gets that transaction's id once the StartTransaction is answered.
//! - The station's [`Transactions`] live here, beside the queue they feed: every message they
//!   make is pushed with their new snapshot in one store record (`push_with_state`), and the
//!   1.6 transactionId a StartTransaction's answer gives is recorded with the StartTransaction's
//!   removal (`remove_with_state`). A change the store refuses leaves them as they were.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use ocpp_messages::{DateTime, DecodeOptions, OcppVersion, Request};
use ocpp_proto::station::{
    transaction_id_of, with_transaction_id, OpenTransaction, TransactionMessage, Transactions,
};
use ocpp_proto::{CallFailure, CallOutcome};
use tokio::sync::{oneshot, watch};

use super::store::{OfflineStore, StoreError, StoredMessage};
use super::QueueError;
use std::collections::HashMap;

/// One queued message and who waits for its outcome.
struct Entry {
    stored: StoredMessage,
    waiters: Vec<oneshot::Sender<CallOutcome>>,
    /// CALLERRORs (or undecodable answers) so far.
    attempts: u32,
}

/// The queue of one station: its store, and the messages in order.
pub(crate) struct Queue {
    store: Box<dyn OfflineStore>,
    entries: VecDeque<Entry>,
    next_seq: u64,
    in_flight: Option<u64>,
    /// 1.6: the transactionId each answered StartTransaction got (this run).
    resolved: HashMap<u64, i32>,
    retry_at: Option<Instant>,
    attempts: u32,
    retry_interval: Duration,
    /// The station's transactions, as the store has them.
    transactions: Transactions,
    /// Where the application sees them.
    published: watch::Sender<Transactions>,
}

/// What the application asks of its transactions ([`Queue::transaction`]).
pub(crate) enum TransactionOp {
    Start(ocpp_proto::station::Start),
    Meter {
        evse: i32,
        reading: ocpp_proto::station::Reading,
    },
    Stop {
        evse: i32,
        reading: ocpp_proto::station::Reading,
        reason: ocpp_proto::station::StopReason,
    },
    PowerLoss {
        evse: i32,
    },
}

/// What [`Queue::open`] found of an earlier run's transactions.
pub(crate) struct Restart {
    /// Open when the station started.
    pub(crate) open: Vec<OpenTransaction>,
}

impl Queue {
    /// The queue left in `store` (by an earlier run, maybe killed).
    /// `fresh` makes the transactions' state when the store has none.
    pub(crate) fn open(
        mut store: Box<dyn OfflineStore>,
        attempts: u32,
        retry_interval: Duration,
        fresh: impl FnOnce() -> Transactions,
    ) -> Result<(Queue, Restart), StoreError> {
        let loaded = store.load()?;
        let next_seq = loaded.last().map_or(1, |m| m.seq + 1);
        let transactions = match store.load_state()? {
            Some(snapshot) => Transactions::from_snapshot(&snapshot)
                .map_err(|e| StoreError::State(e.to_string()))?,
            None => fresh(),
        };
        let restart = Restart {
            open: transactions.open().cloned().collect(),
        };
        let (published, _) = watch::channel(transactions.clone());
        let queue = Queue {
            store,
            entries: loaded
                .into_iter()
                .map(|stored| Entry {
                    stored,
                    waiters: Vec::new(),
                    attempts: 0,
                })
                .collect(),
            next_seq,
            in_flight: None,
            resolved: HashMap::new(),
            retry_at: None,
            attempts: attempts.max(1),
            retry_interval,
            transactions,
            published,
        };
        Ok((queue, restart))
    }

    /// The station's transactions, as the application sees them.
    pub(crate) fn watch_transactions(&self) -> watch::Receiver<Transactions> {
        self.published.subscribe()
    }

    /// New transactions are made for `version` (the one a connection was accepted with).
    pub(crate) fn set_transaction_version(&mut self, version: OcppVersion) {
        if self.transactions.version() != version {
            self.transactions.set_version(version);
            self.publish();
        }
    }

    fn publish(&self) {
        self.published.send_replace(self.transactions.clone());
    }

    /// A change of the station's transactions: the message it makes and the new state, in one
    /// store record; the state changes only once the store has them.
    pub(crate) fn transaction(
        &mut self,
        op: TransactionOp,
        now: DateTime,
    ) -> Result<(u64, oneshot::Receiver<CallOutcome>), QueueError> {
        let seq = self.next_seq;
        let mut next = self.transactions.clone();
        let message: TransactionMessage = match op {
            TransactionOp::Start(start) => next.start(start, seq)?,
            TransactionOp::Meter { evse, reading } => next.meter_reading(evse, reading, now)?,
            TransactionOp::Stop {
                evse,
                reading,
                reason,
            } => next.stop_with(evse, reading, now, reason)?,
            TransactionOp::PowerLoss { evse } => next.end_after_power_loss(evse, now)?,
        };
        let ends = next.open().count() < self.transactions.open().count();
        let state = next.to_snapshot();
        match self.push_with(&message.request, message.transaction_of, Some(&state)) {
            Ok(pushed) => {
                self.transactions = next;
                self.publish();
                Ok(pushed)
            }
            Err(QueueError::UnknownTransaction(start)) if ends => {
                // 1.6: its StartTransaction was given up and never got an id: the central
                // system knows no such transaction. It ends here, with nothing to send.
                self.store.save_state(&state)?;
                self.transactions = next;
                self.publish();
                Err(QueueError::UnknownTransaction(start))
            }
            Err(error) => Err(error),
        }
    }

    /// Adds `request` at the end, durably; `transaction_of` is the 1.6 StartTransaction whose
    /// id it takes. Returns its sequence number and where its outcome will come.
    pub(crate) fn push(
        &mut self,
        request: &Request,
        transaction_of: Option<u64>,
    ) -> Result<(u64, oneshot::Receiver<CallOutcome>), QueueError> {
        self.push_with(request, transaction_of, None)
    }

    /// [`Queue::push`], with the transactions' new state in the same record.
    fn push_with(
        &mut self,
        request: &Request,
        transaction_of: Option<u64>,
        state: Option<&str>,
    ) -> Result<(u64, oneshot::Receiver<CallOutcome>), QueueError> {
        let mut transaction_of = transaction_of;
        let mut filled = None;
        if let Some(start) = transaction_of {
            if !self.entries.iter().any(|e| e.stored.seq == start) {
                // The StartTransaction was answered already: its id goes in now.
                let id = *self
                    .resolved
                    .get(&start)
                    .ok_or(QueueError::UnknownTransaction(start))?;
                filled =
                    Some(with_transaction_id(request, id).ok_or(QueueError::NotForATransaction)?);
                transaction_of = None;
            }
        }
        let request = filled.as_ref().unwrap_or(request);
        let payload =
            serde_json::to_string(request).map_err(|e| QueueError::Encode(e.to_string()))?;
        let stored = StoredMessage {
            seq: self.next_seq,
            version: request.version(),
            action: request.action().to_owned(),
            payload,
            transaction_of,
        };
        match state {
            Some(state) => self.store.push_with_state(&stored, state)?,
            None => self.store.push(&stored)?,
        }
        self.next_seq += 1;
        let (tx, rx) = oneshot::channel();
        let seq = stored.seq;
        self.entries.push_back(Entry {
            stored,
            waiters: vec![tx],
            attempts: 0,
        });
        Ok((seq, rx))
    }

    /// When the head may go again after a CALLERROR.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.retry_at
    }

    /// The head, to send on a connection of `version` now (nothing in flight, no retry wait).
    /// A head that cannot go on this version, or whose transaction never got an id, is given
    /// up here.
    pub(crate) fn next(&mut self, now: Instant, version: OcppVersion) -> Option<(u64, Request)> {
        if self.in_flight.is_some() || self.retry_at.is_some_and(|at| now < at) {
            return None;
        }
        self.retry_at = None;
        loop {
            let head = self.entries.front()?;
            let stored = &head.stored;
            let failure = if stored.version != version {
                Some(CallFailure::WrongVersion)
            } else if stored.transaction_of.is_some() {
                // Its StartTransaction left the queue without a transactionId.
                Some(CallFailure::InvalidRequest {
                    description: "its StartTransaction got no transactionId".into(),
                })
            } else {
                match Request::decode(
                    version,
                    &stored.action,
                    &stored.payload,
                    &DecodeOptions::lenient(),
                ) {
                    Ok(request) => {
                        let seq = stored.seq;
                        self.in_flight = Some(seq);
                        return Some((seq, request));
                    }
                    Err(error) => Some(CallFailure::InvalidRequest {
                        description: format!("stored message does not decode: {error}"),
                    }),
                }
            };
            if let Some(failure) = failure {
                tracing::warn!(seq = stored.seq, action = %stored.action, %failure, "queued message given up");
                self.finish_head(Err(failure));
            }
        }
    }

    /// The head could not be written after all (the connection refused it): it stays first.
    pub(crate) fn unsent(&mut self, seq: u64) {
        if self.in_flight == Some(seq) {
            self.in_flight = None;
        }
    }

    /// The outcome of the head, sent as `seq`.
    pub(crate) fn on_outcome(&mut self, now: Instant, seq: u64, outcome: CallOutcome) {
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
                self.finish_head_with(Ok(response), state);
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
                    self.finish_head(Err(failure));
                } else {
                    let wait = self.retry_interval.saturating_mul(head.attempts);
                    self.retry_at = Some(now + wait);
                }
            }
            // Lost with the connection, or never written: the same content goes again.
            Err(_) => {}
        }
    }

    /// 1.6: the StartTransaction `start` got `id`; the messages queued for it take it.
    fn resolve_transaction(&mut self, start: u64, id: i32) {
        self.resolved.insert(start, id);
        for entry in self.entries.iter_mut() {
            if entry.stored.transaction_of != Some(start) {
                continue;
            }
            let decoded = Request::decode(
                entry.stored.version,
                &entry.stored.action,
                &entry.stored.payload,
                &DecodeOptions::lenient(),
            );
            let Some(filled) = decoded.ok().and_then(|r| with_transaction_id(&r, id)) else {
                continue;
            };
            let Ok(payload) = serde_json::to_string(&filled) else {
                continue;
            };
            let mut stored = entry.stored.clone();
            stored.payload = payload;
            stored.transaction_of = None;
            match self.store.replace(&stored) {
                Ok(()) => entry.stored = stored,
                Err(error) => {
                    tracing::error!(%error, seq = stored.seq, "offline store: transactionId not recorded");
                    entry.stored = stored;
                }
            }
        }
    }

    /// Removes the head and tells its callers.
    fn finish_head(&mut self, outcome: CallOutcome) {
        self.finish_head_with(outcome, None);
    }

    /// Removes the head, with the transactions' new state (1.6: the id its answer gave) in
    /// the same record, and tells its callers.
    fn finish_head_with(&mut self, outcome: CallOutcome, state: Option<Transactions>) {
        let Some(head) = self.entries.pop_front() else {
            return;
        };
        let removed = match &state {
            Some(next) => self
                .store
                .remove_with_state(head.stored.seq, &next.to_snapshot()),
            None => self.store.remove(head.stored.seq),
        };
        match removed {
            Ok(()) => {
                if let Some(next) = state {
                    self.transactions = next;
                    self.publish();
                }
            }
            Err(error) => {
                // It stays in the file: after a restart it would go once more (and its answer
                // gives the transactionId again).
                tracing::error!(%error, seq = head.stored.seq, "offline store: answered message not removed");
                if let Some(next) = state {
                    // This run knows the id all the same.
                    self.transactions = next;
                    self.publish();
                }
            }
        }
        for waiter in head.waiters {
            let _ = waiter.send(outcome.clone());
        }
    }
}
