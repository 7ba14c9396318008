//! The OCPP 1.6 transaction ids this CSMS gives out (1.6 §4.8: the central system names a
//! transaction in its StartTransaction answer). An id is never given twice:
//!
//! - **with a store that keeps a shared counter** (SQLite, PostgreSQL: every node of a cluster
//!   on one database), ids come from blocks of [`BLOCK`] reserved in the database
//!   ([`Store::reserve_transaction_ids`]), so that two nodes never give the same id, and a
//!   charge point that moves between nodes never gets an id it had before; a block is reserved
//!   off the I/O loop, by the start that finds the last one used up ([`super::ledger`]), and
//!   the ids of a block left unused at a restart are skipped;
//! - **otherwise** (no store, or a store without a counter), from this process's own count,
//!   which starts after the highest id saved.

use std::ops::Range;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::{Store, StoreError};

/// How many ids a node reserves at a time.
pub(super) const BLOCK: u32 = 100;

/// The ids to give out (see the [module](self)).
#[derive(Debug)]
pub(super) struct TransactionIds {
    /// This process's own count (without a shared counter).
    own: AtomicI32,
    /// The block reserved in the shared counter; `None`: there is no shared counter.
    shared: Mutex<Option<Range<i32>>>,
}

impl TransactionIds {
    /// Ids from 1, counted by this process.
    pub(super) fn new() -> Self {
        TransactionIds {
            own: AtomicI32::new(1),
            shared: Mutex::new(None),
        }
    }

    fn shared(&self) -> MutexGuard<'_, Option<Range<i32>>> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The process's own count goes on after `highest` (the highest id saved).
    pub(super) fn after(&self, highest: i32) {
        self.own
            .fetch_max(highest.saturating_add(1), Ordering::AcqRel);
    }

    /// Takes the ids from `store`'s shared counter from now on, if it keeps one: reserves a
    /// first block (a failure leaves none: the next start reserves it).
    pub(super) fn share(&self, store: &dyn Store) {
        match store.reserve_transaction_ids(BLOCK) {
            Ok(Some(block)) => *self.shared() = Some(block),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!("no transaction ids reserved yet: {e}");
                *self.shared() = Some(0..0);
            }
        }
    }

    /// Whether a 1.6 start must first reserve a block (the shared one is used up).
    pub(super) fn used_up(&self) -> bool {
        self.shared()
            .as_ref()
            .is_some_and(|block| block.start >= block.end)
    }

    /// Reserves a new block from `store` when the one held is used up (blocking: off the I/O
    /// loop).
    ///
    /// # Errors
    /// The database failed: the start that needed it is answered "send it again".
    pub(super) fn refill(&self, store: &dyn Store) -> Result<(), StoreError> {
        if !self.used_up() {
            return Ok(());
        }
        let block = store.reserve_transaction_ids(BLOCK)?;
        let mut shared = self.shared();
        // Another start may have refilled it meanwhile: its block is kept, this one skipped.
        if let (Some(held), Some(block)) = (shared.as_mut(), block) {
            if held.start >= held.end {
                *held = block;
            }
        }
        Ok(())
    }

    /// The next id; `None` when the shared block is used up (see [`TransactionIds::refill`]).
    pub(super) fn next(&self) -> Option<i32> {
        match self.shared().as_mut() {
            Some(block) => block.next(),
            None => Some(self.own.fetch_add(1, Ordering::Relaxed)),
        }
    }
}
