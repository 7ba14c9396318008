//! The claim a write's caller and the store's thread race for, so that a refused write is
//! never written (the [store](super)'s "A refused write is never written").

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{StoreError, COMMIT_WAIT};

/// Queued: neither taken nor withdrawn yet.
const QUEUED: u8 = 0;
/// The store's thread took the write: its outcome is the commit's.
const TAKEN: u8 = 1;
/// The caller gave up first, or the thread found the deadline passed: never written.
const WITHDRAWN: u8 = 2;

/// One write's claim, shared by its caller and the store's thread.
#[derive(Debug, Clone)]
pub(super) struct Claim {
    state: Arc<AtomicU8>,
    deadline: Instant,
}

impl Claim {
    /// A write queued now, whose caller waits until `deadline` for it to be taken.
    pub(super) fn new(deadline: Instant) -> Claim {
        Claim {
            state: Arc::new(AtomicU8::new(QUEUED)),
            deadline,
        }
    }

    /// By when the write's statements must have run (its `COMMIT` may take
    /// [`COMMIT_WAIT`] more).
    pub(super) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The store's thread takes the write, unless its caller withdrew it or its deadline
    /// passed (then it is withdrawn here): a write not taken is never written.
    pub(super) fn take(&self) -> bool {
        let next = if Instant::now() >= self.deadline {
            WITHDRAWN
        } else {
            TAKEN
        };
        self.state
            .compare_exchange(QUEUED, next, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
            && next == TAKEN
    }

    /// The caller's wait for the write's outcome, sent on `answer`. Not taken by the
    /// deadline: withdrawn, [`StoreError::Unavailable`] (never written). Taken: its
    /// statements end by the deadline and its `COMMIT` within [`COMMIT_WAIT`], so the
    /// outcome is the commit's; a `COMMIT` never answered is a [`StoreError::Commit`] whose
    /// outcome nobody knows.
    pub(super) fn outcome<T>(
        &self,
        answer: &std_mpsc::Receiver<Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        match answer.recv_timeout(left) {
            Ok(outcome) => return outcome,
            Err(std_mpsc::RecvTimeoutError::Disconnected) => return Err(self.unanswered()),
            Err(std_mpsc::RecvTimeoutError::Timeout) => {}
        }
        let withdrawn = self
            .state
            .compare_exchange(QUEUED, WITHDRAWN, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if withdrawn || self.state.load(Ordering::Acquire) == WITHDRAWN {
            return Err(StoreError::Unavailable);
        }
        // A second more than the commit's own bound, for the thread to send its outcome.
        match answer.recv_timeout(COMMIT_WAIT + Duration::from_secs(1)) {
            Ok(outcome) => outcome,
            Err(_) => Err(self.unanswered()),
        }
    }

    /// Why the store's thread sent nothing: a write withdrawn (by its caller, or by the
    /// thread at its deadline, which then drops it unanswered) was never written; one it
    /// took may have been (the thread stopped, or its `COMMIT` was never answered); one
    /// still queued was dropped with the stopped thread's queue.
    fn unanswered(&self) -> StoreError {
        match self.state.load(Ordering::Acquire) {
            WITHDRAWN => StoreError::Unavailable,
            TAKEN => StoreError::Commit("no answer from the commit".into()),
            _ => StoreError::Stopped,
        }
    }
}
