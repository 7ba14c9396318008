//! The offline queue as the station's task holds it: `ocpp-station-store`'s
//! [`OfflineQueue`] (every rule of delivery, retry and durability is there), with each
//! delivered message's outcome handed to its caller and the station's transactions published
//! to the application as soon as a call changed them.

use std::time::{Duration, Instant};

use ocpp_messages::{DateTime, OcppVersion, Request};
use ocpp_proto::station::Transactions;
use ocpp_proto::{CallFailure, CallOutcome};
use ocpp_station_store::offline::{
    NotQueued, OfflineQueue, OfflineStore, OfflineStoreError, Restart,
};
use tokio::sync::{oneshot, watch};

use super::{QueueError, Queued, TransactionOp};
use crate::charge_point::CallReply;

/// The queue of one station, and where the application sees its transactions.
pub(crate) struct Queue {
    queue: OfflineQueue<CallReply>,
    published: watch::Sender<Transactions>,
}

/// A message's place in the queue and where its outcome comes.
type Pushed = Result<Queued, QueueError>;

impl Queue {
    /// The queue left in `store` ([`OfflineQueue::open`]).
    pub(crate) fn open(
        store: Box<dyn OfflineStore>,
        attempts: u32,
        retry_interval: Duration,
        fresh: impl FnOnce() -> Transactions,
    ) -> Result<(Queue, Restart), OfflineStoreError> {
        let (queue, restart) = OfflineQueue::open(store, attempts, retry_interval, fresh)?;
        let (published, _) = watch::channel(queue.transactions().clone());
        Ok((Queue { queue, published }, restart))
    }

    /// The station's transactions, as the application sees them.
    pub(crate) fn watch_transactions(&self) -> watch::Receiver<Transactions> {
        self.published.subscribe()
    }

    /// Delivered messages to their callers, changed transactions to the application.
    fn settle(&mut self) {
        while let Some((caller, outcome)) = self.queue.poll_delivered() {
            caller.send(outcome);
        }
        if let Some(transactions) = self.queue.poll_transactions() {
            self.published.send_replace(transactions.clone());
        }
    }

    pub(crate) fn set_transaction_version(&mut self, version: OcppVersion) {
        self.queue.set_transaction_version(version);
        self.settle();
    }

    /// [`OfflineQueue::transaction`], its outcome on a channel.
    pub(crate) fn transaction(&mut self, op: TransactionOp, now: DateTime) -> Pushed {
        let pushed = on_a_channel(|reply| self.queue.transaction(op, now, reply));
        self.settle();
        pushed
    }

    /// [`OfflineQueue::push`], its outcome on a channel.
    pub(crate) fn push(&mut self, request: &Request, transaction_of: Option<u64>) -> Pushed {
        on_a_channel(|reply| self.queue.push(request, transaction_of, reply))
    }

    /// A transaction message through [`Station::call`](super::Station::call): queued, its
    /// caller told the outcome once delivered (or why it was not queued).
    pub(crate) fn push_call(&mut self, request: &Request, reply: CallReply) {
        if let Err(refused) = self.queue.push(request, None, reply) {
            refused.waiter.send(Err(CallFailure::InvalidRequest {
                description: format!("not queued: {}", refused.error),
            }));
        }
    }

    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.queue.poll_timeout()
    }

    /// [`OfflineQueue::next`] (heads it gives up are told at once).
    pub(crate) fn next(&mut self, now: Instant, version: OcppVersion) -> Option<(u64, Request)> {
        let next = self.queue.next(now, version);
        self.settle();
        next
    }

    pub(crate) fn unsent(&mut self, seq: u64) {
        self.queue.unsent(seq);
    }

    pub(crate) fn on_outcome(&mut self, now: Instant, seq: u64, outcome: CallOutcome) {
        self.queue.on_outcome(now, seq, outcome);
        self.settle();
    }

    /// The station stopped: every caller still waiting learns it was not sent (the messages
    /// stay in the store and go after the next start).
    pub(crate) fn stop(&mut self) {
        for caller in self.queue.take_waiters() {
            caller.send(Err(CallFailure::NotConnected));
        }
    }
}

/// Queues a message whose caller waits on a channel: `push` takes the caller's end.
fn on_a_channel(push: impl FnOnce(CallReply) -> Result<u64, NotQueued<CallReply>>) -> Pushed {
    let (reply, outcome) = oneshot::channel();
    let pushed = push(CallReply::Waiting(reply));
    pushed
        .map(|seq| Queued { seq, outcome })
        .map_err(|refused| refused.error)
}
