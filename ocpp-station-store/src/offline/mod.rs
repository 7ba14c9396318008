//! Where a charging station keeps the transaction messages that await delivery to the central
//! system: the offline queue of OCPP 1.6 (StartTransaction, StopTransaction and transaction
//! MeterValues, OCPP 1.6 §4.10 / §3.16) and OCPP 2.x (TransactionEvent, OCPP 2.0.1 Part 2 E,
//! "Offline behaviour").
//!
//! [`OfflineStore`] is the seam; [`MemoryStore`] keeps the queue in memory (tests, or a station
//! that accepts losing it on restart), [`FileStore`] keeps it in a journal file that survives the
//! station process being killed at any moment (SIGKILL, power loss): nothing whose `push` returned
//! `Ok` is lost, and nothing whose `remove` returned `Ok` comes back.
//!
//! ```
//! use ocpp_messages::OcppVersion;
//! use ocpp_station_store::offline::{FileStore, OfflineStore, StoredMessage};
//!
//! let dir = std::env::temp_dir().join(format!("ocpp-store-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let mut store = FileStore::open(dir.join("offline-queue.jsonl"))?;
//! store.push(&StoredMessage {
//!     seq: 1,
//!     version: OcppVersion::V2_0_1,
//!     action: "TransactionEvent".into(),
//!     payload: r#"{"eventType":"Started","seqNo":0}"#.into(),
//!     transaction_of: None,
//! })?;
//! drop(store);
//!
//! // After a restart (or a crash), the queue is still there.
//! let mut store = FileStore::open(dir.join("offline-queue.jsonl"))?;
//! assert_eq!(store.load()?.len(), 1);
//! store.remove(1)?; // answered by the central system
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Why a journal file rather than an embedded database
//!
//! The queue is only ever appended to and acknowledged from the front (plus, in 1.6, a message
//! rewritten once its transactionId is known), so a log of those three operations is the whole
//! data structure. A journal needs no C dependency (SQLite) and no engine of its own to trust
//! (sled, redb); it costs one `fsync` per accepted message, which is the floor for a durable
//! queue anyway; and a technician can read it, or rescue it, with `cat` and `jq`.
//!
//! # The journal
//!
//! JSON lines, UTF-8, one record per line, each ended by `\n`:
//!
//! ```text
//! {"push":{"seq":1,"version":"1.6","action":"StartTransaction","payload":"{\"connectorId\":1}"}}
//! {"push":{"seq":2,"version":"1.6","action":"MeterValues","payload":"{…}","transaction_of":1}}
//! {"replace":{"seq":2,"version":"1.6","action":"MeterValues","payload":"{\"transactionId\":7,…}"}}
//! {"remove":1}
//! {"push":{"seq":3,"version":"2.0.1","action":"TransactionEvent","payload":"{…}"},"state":"{…}"}
//! {"remove":3,"state":"{…}"}
//! {"state":"{…}"}
//! ```
//!
//! - `push` adds a message at the end (its `seq` must be greater than every queued one),
//!   `replace` replaces the queued message with the same `seq`, `remove` removes one. Every field of
//!   [`StoredMessage`] is written; `version` is the version number without the subprotocol prefix
//!   (`"1.6"`, `"2.0.1"`, `"2.1"`), `payload` is the JSON text of the CALL payload as a string (so
//!   it is kept byte for byte), and `transaction_of` is left out when it is `None`.
//! - `state` is the application's state that goes with the change of the same line (the
//!   station's [`Transactions`](ocpp_proto::station::Transactions) snapshot, as JSON text
//!   in a string): a transaction message and the state that made it are one record, so a crash
//!   leaves both or neither ([`OfflineStore::push_with_state`]). A line may hold a change and a
//!   state, or a state alone ([`OfflineStore::save_state`], e.g. a 1.6 transactionId learnt
//!   from an answer); the last state read is the store's ([`OfflineStore::load_state`]).
//! - Each record is written with one `write_all` of the whole line, then `sync_data`, before the
//!   method returns `Ok`. A failed write is undone (the file is cut back to its last record); if
//!   even that fails, the store refuses further changes ([`OfflineStoreError::Poisoned`]) until
//!   reopened.
//! - On [`FileStore::open`] the records are replayed. A last line that is not ended by `\n`, or
//!   is not JSON at all, is a write torn by a crash: it is dropped and the file cut back to the
//!   last good record. Anything else that does not read (a bad line followed by other lines, a
//!   record of an unknown shape or version, a `remove` of a message that is not queued) is
//!   [`OfflineStoreError::Corrupt`]: real data is never skipped silently.
//! - Compaction: when a `remove` empties the queue, the file is truncated to zero length instead of
//!   having the record appended; if the store holds a state, the file becomes that state's line
//!   alone instead (written to `<path>.tmp` and renamed over, as below). On `open`, if the
//!   journal holds more dead records than live messages (and more than a few), or only dead
//!   records and a state, the state (as one `state` record) and the live messages (as `push`
//!   records) are written to `<path>.tmp`, synced, renamed over the journal, and the directory
//!   synced: a crash at any point leaves either the old journal or the new one. The directory is
//!   also synced on every `open`, so a newly created journal cannot disappear.
//!
//! One process at a time may use a journal; the file is not locked.

mod file;
mod memory;
mod queue;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;

use ocpp_messages::OcppVersion;

pub use file::FileStore;
pub use memory::MemoryStore;
pub use queue::{NotQueued, OfflineQueue, QueueError, Restart, TransactionOp};

/// One queued message, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMessage {
    /// Its place in the queue: strictly increasing, assigned by the queue (not by the store).
    pub seq: u64,
    /// The OCPP version it was made for.
    pub version: OcppVersion,
    /// The action, e.g. "TransactionEvent".
    pub action: String,
    /// The payload as JSON text (exactly what goes in the CALL).
    pub payload: String,
    /// OCPP 1.6: the `seq` of the StartTransaction whose transactionId this message's
    /// `transactionId` takes once known (None otherwise, or once filled in).
    pub transaction_of: Option<u64>,
}

/// Where queued transaction messages wait. Called from the station's task; every method that
/// returns Ok has made its change durable (for a durable store) before returning.
///
/// A store checks what it is asked: [`push`](OfflineStore::push) refuses a `seq` that is not
/// greater than every queued one ([`OfflineStoreError::OutOfOrder`]), and
/// [`replace`](OfflineStore::replace) and [`remove`](OfflineStore::remove) refuse a `seq` that is
/// not queued ([`OfflineStoreError::NotQueued`]). A refused call changes nothing.
pub trait OfflineStore: Send + 'static {
    /// Every message still queued, in `seq` order (called once, when the station starts).
    fn load(&mut self) -> Result<Vec<StoredMessage>, OfflineStoreError>;
    /// Adds a message at the end.
    fn push(&mut self, message: &StoredMessage) -> Result<(), OfflineStoreError>;
    /// Replaces the message with the same `seq` (1.6: its transactionId filled in).
    fn replace(&mut self, message: &StoredMessage) -> Result<(), OfflineStoreError>;
    /// Removes the message `seq` (answered, or given up).
    fn remove(&mut self, seq: u64) -> Result<(), OfflineStoreError>;

    /// Adds a message at the end together with the state it goes with (e.g. a
    /// [`Transactions`](ocpp_proto::station::Transactions) snapshot), atomically: after a
    /// crash the store has both or neither.
    ///
    /// The default pushes the message and then calls [`save_state`](OfflineStore::save_state),
    /// whose default keeps nothing: a store that does not override these keeps no state (the
    /// station's transactions are then forgotten on restart, as with a store that does not
    /// survive one). [`MemoryStore`] and [`FileStore`] keep it.
    fn push_with_state(
        &mut self,
        message: &StoredMessage,
        state: &str,
    ) -> Result<(), OfflineStoreError> {
        self.push(message)?;
        self.save_state(state)
    }

    /// [`replace`](OfflineStore::replace) and the new state, atomically (default: one after
    /// the other).
    fn replace_with_state(
        &mut self,
        message: &StoredMessage,
        state: &str,
    ) -> Result<(), OfflineStoreError> {
        self.replace(message)?;
        self.save_state(state)
    }

    /// [`remove`](OfflineStore::remove) and the new state, atomically (default: one after the
    /// other).
    fn remove_with_state(&mut self, seq: u64, state: &str) -> Result<(), OfflineStoreError> {
        self.remove(seq)?;
        self.save_state(state)
    }

    /// Replaces the state (a change that queues nothing). Default: kept nowhere.
    fn save_state(&mut self, state: &str) -> Result<(), OfflineStoreError> {
        let _ = state;
        Ok(())
    }

    /// The last state saved (called once, when the station starts). Default: none.
    fn load_state(&mut self) -> Result<Option<String>, OfflineStoreError> {
        Ok(None)
    }
}

/// A boxed store is a store (to choose one at run time).
impl<T: OfflineStore + ?Sized> OfflineStore for Box<T> {
    fn load(&mut self) -> Result<Vec<StoredMessage>, OfflineStoreError> {
        (**self).load()
    }

    fn push(&mut self, message: &StoredMessage) -> Result<(), OfflineStoreError> {
        (**self).push(message)
    }

    fn replace(&mut self, message: &StoredMessage) -> Result<(), OfflineStoreError> {
        (**self).replace(message)
    }

    fn remove(&mut self, seq: u64) -> Result<(), OfflineStoreError> {
        (**self).remove(seq)
    }

    fn push_with_state(
        &mut self,
        message: &StoredMessage,
        state: &str,
    ) -> Result<(), OfflineStoreError> {
        (**self).push_with_state(message, state)
    }

    fn replace_with_state(
        &mut self,
        message: &StoredMessage,
        state: &str,
    ) -> Result<(), OfflineStoreError> {
        (**self).replace_with_state(message, state)
    }

    fn remove_with_state(&mut self, seq: u64, state: &str) -> Result<(), OfflineStoreError> {
        (**self).remove_with_state(seq, state)
    }

    fn save_state(&mut self, state: &str) -> Result<(), OfflineStoreError> {
        (**self).save_state(state)
    }

    fn load_state(&mut self) -> Result<Option<String>, OfflineStoreError> {
        (**self).load_state()
    }
}

/// Why an [`OfflineStore`] refused a call or could not open its journal.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OfflineStoreError {
    /// Reading, writing or syncing the journal (or its directory) failed.
    #[error("offline queue journal {}: {source}", path.display())]
    Io {
        /// The file (or directory) concerned.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// A record of the journal does not read, and it is not a torn last record.
    #[error("offline queue journal {}, line {line}: {reason}", path.display())]
    Corrupt {
        /// The journal.
        path: PathBuf,
        /// The line of the record, counted from 1.
        line: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// `push` of a message whose `seq` is not greater than every queued one.
    #[error("message {seq} is not after the last queued message {last}")]
    OutOfOrder {
        /// The `seq` pushed.
        seq: u64,
        /// The greatest `seq` queued.
        last: u64,
    },
    /// `replace` or `remove` of a message that is not queued.
    #[error("message {seq} is not queued")]
    NotQueued {
        /// The `seq` asked for.
        seq: u64,
    },
    /// The state the store holds does not read (e.g. a transactions snapshot of another
    /// version of this library).
    #[error("offline store state: {0}")]
    State(String),
    /// A write failed and could not be undone, so the journal's state is unknown; the store
    /// refuses changes until it is opened again (which reads what the file holds).
    #[error("offline queue journal {}: a failed write could not be undone; reopen it", path.display())]
    Poisoned {
        /// The journal.
        path: PathBuf,
    },
}

/// One change to the queue: what a journal line holds, once read.
#[derive(Debug)]
enum Change {
    Push(StoredMessage),
    Replace(StoredMessage),
    Remove(u64),
}

/// What a journal line holds, once read: a change to the queue, a new state, or both.
#[derive(Debug)]
struct Record {
    change: Option<Change>,
    state: Option<String>,
}

impl From<Change> for Record {
    fn from(change: Change) -> Self {
        Record {
            change: Some(change),
            state: None,
        }
    }
}

impl Record {
    fn with_state(change: Change, state: &str) -> Self {
        Record {
            change: Some(change),
            state: Some(state.to_owned()),
        }
    }
}

/// The queued messages by `seq` and the last state, with the rules every store follows.
#[derive(Debug, Default)]
struct Queue {
    messages: BTreeMap<u64, StoredMessage>,
    state: Option<String>,
}

impl Queue {
    fn check_push(&self, seq: u64) -> Result<(), OfflineStoreError> {
        match self.messages.last_key_value() {
            Some((&last, _)) if seq <= last => Err(OfflineStoreError::OutOfOrder { seq, last }),
            _ => Ok(()),
        }
    }

    fn check_queued(&self, seq: u64) -> Result<(), OfflineStoreError> {
        if self.messages.contains_key(&seq) {
            Ok(())
        } else {
            Err(OfflineStoreError::NotQueued { seq })
        }
    }

    fn check(&self, record: &Record) -> Result<(), OfflineStoreError> {
        match &record.change {
            Some(Change::Push(message)) => self.check_push(message.seq),
            Some(Change::Replace(message)) => self.check_queued(message.seq),
            Some(Change::Remove(seq)) => self.check_queued(*seq),
            None => Ok(()),
        }
    }

    /// Applies a record that [`Queue::check`] accepted.
    fn commit(&mut self, record: Record) {
        match record.change {
            Some(Change::Push(message) | Change::Replace(message)) => {
                self.messages.insert(message.seq, message);
            }
            Some(Change::Remove(seq)) => {
                self.messages.remove(&seq);
            }
            None => {}
        }
        if let Some(state) = record.state {
            self.state = Some(state);
        }
    }

    fn apply(&mut self, record: Record) -> Result<(), OfflineStoreError> {
        self.check(&record)?;
        self.commit(record);
        Ok(())
    }

    fn to_vec(&self) -> Vec<StoredMessage> {
        self.messages.values().cloned().collect()
    }
}
