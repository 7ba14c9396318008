//! The one durability rule of the reference CSMS, for what a charge point is told is safe: a
//! transaction's start and end.
//!
//! **A CALL's effect on a transaction's start or end is acknowledged only once it is
//! committed, and a CALL refused leaves no trace.** On every path: the first try, a resend, a
//! resend of a resend, after a reconnect, on both servers (each runs the job this module
//! hands it, [`Answering::Later`], and answers with its result). In order:
//!
//! 1. The CALL is handled against what is committed: the handler changes the charge point's
//!    transactions in memory, and the change is compared with what was there
//!    ([`persistence::changed_transactions`](super::persistence)).
//! 2. A start or an end is taken back out of memory at once (nothing else sees it), and a
//!    job commits it ([`Store::commit_by`](super::store::Store::commit_by), by a deadline counted from the CALL's arrival, so
//!    that a CALL that waited for a worker is still answered within [`DATABASE_WAIT`]). Only
//!    once committed does it go back into memory and the CALLRESULT out. If the commit fails,
//!    the answer is CALLERROR `InternalError` ("send it again", as OCPP-J lets the charge
//!    point) and the store guarantees that nothing of it is written, then or later.
//! 3. While a charge point has a commit under way, its next CALL about a transaction (from a
//!    newer connection: one connection has one CALL at a time) waits for its turn off the
//!    I/O loop, and is then handled against the outcome: a resend of a start that was
//!    committed is recognised, not recorded twice.
//! 4. A resend is recognised by the charge point's own words and answered as the first one
//!    was: a 1.6 StartTransaction by its connector, idTag, timestamp, meterStart and
//!    reservation (the same transaction id, across restarts: the key is stored with the
//!    row), a 2.x event by its transaction id, an end by the transaction having ended (a
//!    row already ended is never written again: see [`store`](super::store)).
//! 5. A commit whose `COMMIT` went out but whose answer never came may have been written
//!    (no database client can know). Its 1.6 start is kept aside as *unconfirmed*: the
//!    resend that follows gets the same id and commits the same row again (an idempotent
//!    upsert), so that no second transaction is opened for it. A start refused outright
//!    is kept aside the same way; it was never written, and its resend writes it once.
//!
//! Changes that need no commit (meter values, `Updated` events, the seqNo) are queued
//! ([`Durability::Later`]) and answered at once, whatever the database is doing.
//!
//! ```
//! use ocpp_reference_csms::ledger;
//! assert!(ledger::keeps_transactions("StopTransaction"));
//! assert!(!ledger::keeps_transactions("Heartbeat"));
//! ```

use std::collections::{HashMap, HashSet};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

use ocpp_messages::error_code::ErrorCode;
use ocpp_proto::{Answer, ChargePointIdentity, Request};

use super::persistence::changed_transactions;
use super::store::{Durability, Record, DATABASE_WAIT};
use super::{fleet::Fleet, Answering, Csms, Later, Transaction, UnixTime};

/// The actions whose answer may change a transaction (and so may wait for a commit).
pub fn keeps_transactions(action: &str) -> bool {
    matches!(
        action,
        "StartTransaction" | "StopTransaction" | "MeterValues" | "TransactionEvent"
    )
}

/// The charge points that have a commit under way, and the turn the next CALL of each waits
/// for.
#[derive(Debug, Default)]
pub(super) struct Ledger {
    committing: Mutex<HashSet<Box<str>>>,
    turn: Condvar,
    /// Per charge point, its latest 1.6 starts whose commit failed (at most
    /// [`UNCONFIRMED_KEPT`]): their resend gets the same id.
    unconfirmed: Mutex<HashMap<Box<str>, Vec<Transaction>>>,
}

/// How many unconfirmed starts a charge point keeps (it resends its latest one).
const UNCONFIRMED_KEPT: usize = 4;

impl Ledger {
    fn committing(&self) -> MutexGuard<'_, HashSet<Box<str>>> {
        self.committing.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn is_committing(&self, identity: &ChargePointIdentity) -> bool {
        self.committing().contains(identity.as_str())
    }

    fn begin(&self, identity: &ChargePointIdentity) {
        self.committing().insert(identity.as_str().into());
    }

    fn end(&self, identity: &ChargePointIdentity) {
        self.committing().remove(identity.as_str());
        self.turn.notify_all();
    }

    fn unconfirmed_of(&self, identity: &ChargePointIdentity) -> Vec<Transaction> {
        let unconfirmed = self.unconfirmed.lock().unwrap_or_else(|p| p.into_inner());
        unconfirmed
            .get(identity.as_str())
            .cloned()
            .unwrap_or_default()
    }

    /// After a commit: its starts are confirmed (`committed`) or kept aside as unconfirmed.
    fn settle_starts(
        &self,
        identity: &ChargePointIdentity,
        starts: &[Transaction],
        committed: bool,
    ) {
        let mut unconfirmed = self.unconfirmed.lock().unwrap_or_else(|p| p.into_inner());
        let starts = starts.iter().filter(|t| t.start_key.is_some());
        if committed {
            if let Some(list) = unconfirmed.get_mut(identity.as_str()) {
                for start in starts {
                    list.retain(|t| t.id != start.id);
                }
                if list.is_empty() {
                    unconfirmed.remove(identity.as_str());
                }
            }
            return;
        }
        let list = unconfirmed.entry(identity.as_str().into()).or_default();
        for start in starts {
            list.retain(|t| t.id != start.id);
            if list.len() == UNCONFIRMED_KEPT {
                list.remove(0);
            }
            list.push(start.clone());
        }
    }

    /// Waits until `identity` has no commit under way; `false` if `deadline` passed first.
    fn wait_turn(&self, identity: &ChargePointIdentity, deadline: Instant) -> bool {
        let mut committing = self.committing();
        while committing.contains(identity.as_str()) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            committing = match self.turn.wait_timeout(committing, left) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        true
    }
}

/// What handling a CALL came to.
enum Step {
    /// Answered: nothing to commit (no change, a change queued, or a refusal).
    Answered(Answering),
    /// A start or an end to commit before the answer.
    Commit(Commit),
}

/// A start or an end on its way to the store, out of memory until it is committed.
struct Commit {
    identity: ChargePointIdentity,
    action: &'static str,
    records: Vec<Record>,
    /// The transactions as they will be once committed.
    committed: Vec<Transaction>,
    /// The CALLs the change makes, queued once it is committed.
    follow_ups: Vec<Request>,
    reply: Answering,
    deadline: Instant,
}

/// The answer to a CALL whose effect could not be committed.
fn not_saved() -> Answer {
    Answer::error(
        ErrorCode::InternalError,
        "the central system could not save this: send it again",
    )
}

impl Csms {
    /// Answers a CALL that may start or end a transaction, under the rule of the
    /// [module](self) (on the I/O loop's thread: what waits is handed back as a job).
    pub(super) fn settle(&self, identity: &ChargePointIdentity, request: &Request) -> Answering {
        let deadline = Instant::now() + DATABASE_WAIT;
        // A 1.6 start needs an id: when the block reserved in the database is used up, a new
        // one is reserved first, off the I/O loop ([`super::transaction_ids`]).
        if request.action() == "StartTransaction" && self.transaction_ids.used_up() {
            let (identity, request) = (identity.clone(), request.clone());
            return Answering::Later(Later::new(move |csms: &Csms| {
                let refilled = match csms.config.get_store() {
                    Some(store) => csms.transaction_ids.refill(&**store),
                    None => Ok(()),
                };
                if let Err(e) = refilled {
                    tracing::warn!(%identity, "StartTransaction refused: {e}");
                    let answer = not_saved();
                    csms.count_answer(&answer);
                    return answer;
                }
                csms.settle_in_turn(&identity, &request, deadline)
            }));
        }
        let step = {
            let mut fleet = self.lock();
            if self.ledger.is_committing(identity) {
                drop(fleet);
                let (identity, request) = (identity.clone(), request.clone());
                return Answering::Later(Later::new(move |csms: &Csms| {
                    csms.settle_in_turn(&identity, &request, deadline)
                }));
            }
            self.step(&mut fleet, identity, request, deadline)
        };
        match step {
            Step::Answered(reply) => {
                if let Answering::Now(answer) = &reply {
                    self.count_answer(answer);
                }
                reply
            }
            Step::Commit(commit) => {
                Answering::Later(Later::new(move |csms: &Csms| csms.commit(commit)))
            }
        }
    }

    /// [`Csms::settle`] for a CALL that came while its charge point had a commit under way:
    /// handled once that commit's outcome is in memory (on a worker thread).
    fn settle_in_turn(
        &self,
        identity: &ChargePointIdentity,
        request: &Request,
        deadline: Instant,
    ) -> Answer {
        loop {
            if !self.ledger.wait_turn(identity, deadline) {
                let answer = not_saved();
                self.count_answer(&answer);
                return answer;
            }
            let mut fleet = self.lock();
            // Another CALL of this charge point may have begun a commit in between.
            if self.ledger.is_committing(identity) {
                continue;
            }
            let step = self.step(&mut fleet, identity, request, deadline);
            drop(fleet);
            return match step {
                Step::Answered(reply) => {
                    let answer = reply.wait(self);
                    self.count_answer(&answer);
                    answer
                }
                Step::Commit(commit) => self.commit(commit),
            };
        }
    }

    /// Handles the CALL against the committed state (under the CSMS's lock): a start or an
    /// end is taken back out of memory and returned to commit; other changes are queued.
    fn step(
        &self,
        fleet: &mut Fleet,
        identity: &ChargePointIdentity,
        request: &Request,
        deadline: Instant,
    ) -> Step {
        let charge_point = fleet.entry(identity);
        let before = charge_point.transactions.clone();
        let queued = charge_point.extras.follow_ups.len();
        let unconfirmed = self.ledger.unconfirmed_of(identity);
        let reply = self.handle(charge_point, request, None, &unconfirmed, UnixTime::now());
        let (records, durability) =
            changed_transactions(identity, &before, &charge_point.transactions);
        if records.is_empty() {
            return Step::Answered(reply);
        }
        let refused = matches!(&reply, Answering::Now(answer) if !answer.is_result());
        if refused || durability == Durability::Committed {
            // Not seen by anything before it is committed; never, if it is refused: neither
            // the change nor the CALLs it made follow (a SetChargingProfile that shares out
            // the power of a transaction that ended, a GetTransactionStatus).
            charge_point.transactions = before;
            let follow_ups = self.withdraw_follow_ups(charge_point, queued);
            if refused {
                return Step::Answered(reply);
            }
            self.ledger.begin(identity);
            // The records are the changed transactions as they will be once committed.
            let committed = records
                .iter()
                .filter_map(|record| match record {
                    Record::Transaction { transaction, .. } => Some(transaction.clone()),
                    _ => None,
                })
                .collect();
            return Step::Commit(Commit {
                identity: identity.clone(),
                action: request.action(),
                records,
                committed,
                follow_ups,
                reply,
                deadline,
            });
        }
        // Queued: the store's thread commits it moments later (an error is logged there).
        if let Err(e) = self.keep(records, Durability::Later) {
            tracing::warn!(%identity, "transaction change not queued: {e}");
        }
        Step::Answered(reply)
    }

    /// Commits a start or an end, then puts it in memory and answers; or answers
    /// `InternalError` with nothing kept (on a worker thread).
    fn commit(&self, commit: Commit) -> Answer {
        let Commit {
            identity,
            action,
            records,
            committed,
            follow_ups,
            reply,
            deadline,
        } = commit;
        let outcome = match self.config.get_store() {
            Some(store) => store.commit_by(records, deadline),
            None => Ok(()),
        };
        {
            let mut fleet = self.lock();
            self.ledger
                .settle_starts(&identity, &committed, outcome.is_ok());
            if outcome.is_ok() {
                let keep = self.config.ended_transactions_kept;
                let charge_point = fleet.entry(&identity);
                charge_point.take_committed(committed, keep);
                for request in follow_ups {
                    self.queue_follow_up(charge_point, request);
                }
            }
            self.ledger.end(&identity);
        }
        let answer = match outcome {
            Ok(()) => reply.wait(self),
            Err(e) => {
                tracing::error!(%identity, action, "not saved: {e}");
                not_saved()
            }
        };
        self.count_answer(&answer);
        answer
    }
}

#[cfg(test)]
mod tests;
