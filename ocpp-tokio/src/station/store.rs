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
//! use ocpp_tokio::station::store::{FileStore, OfflineStore, StoredMessage};
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
//!   even that fails, the store refuses further changes ([`StoreError::Poisoned`]) until reopened.
//! - On [`FileStore::open`] the records are replayed. A last line that is not ended by `\n`, or
//!   is not JSON at all, is a write torn by a crash: it is dropped and the file cut back to the
//!   last good record. Anything else that does not read (a bad line followed by other lines, a
//!   record of an unknown shape or version, a `remove` of a message that is not queued) is
//!   [`StoreError::Corrupt`]: real data is never skipped silently.
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

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use ocpp_messages::OcppVersion;
use serde::{Deserialize, Serialize};

/// On `open`, the journal is rewritten when it holds more dead records than live messages and
/// more than this many dead records.
const COMPACT_MIN_DEAD: usize = 32;

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
/// greater than every queued one ([`StoreError::OutOfOrder`]), and
/// [`replace`](OfflineStore::replace) and [`remove`](OfflineStore::remove) refuse a `seq` that is
/// not queued ([`StoreError::NotQueued`]). A refused call changes nothing.
pub trait OfflineStore: Send + 'static {
    /// Every message still queued, in `seq` order (called once, when the station starts).
    fn load(&mut self) -> Result<Vec<StoredMessage>, StoreError>;
    /// Adds a message at the end.
    fn push(&mut self, message: &StoredMessage) -> Result<(), StoreError>;
    /// Replaces the message with the same `seq` (1.6: its transactionId filled in).
    fn replace(&mut self, message: &StoredMessage) -> Result<(), StoreError>;
    /// Removes the message `seq` (answered, or given up).
    fn remove(&mut self, seq: u64) -> Result<(), StoreError>;

    /// Adds a message at the end together with the state it goes with (e.g. a
    /// [`Transactions`](ocpp_proto::station::Transactions) snapshot), atomically: after a
    /// crash the store has both or neither.
    ///
    /// The default pushes the message and then calls [`save_state`](OfflineStore::save_state),
    /// whose default keeps nothing: a store that does not override these keeps no state (the
    /// station's transactions are then forgotten on restart, as with a store that does not
    /// survive one). [`MemoryStore`] and [`FileStore`] keep it.
    fn push_with_state(&mut self, message: &StoredMessage, state: &str) -> Result<(), StoreError> {
        self.push(message)?;
        self.save_state(state)
    }

    /// [`replace`](OfflineStore::replace) and the new state, atomically (default: one after
    /// the other).
    fn replace_with_state(
        &mut self,
        message: &StoredMessage,
        state: &str,
    ) -> Result<(), StoreError> {
        self.replace(message)?;
        self.save_state(state)
    }

    /// [`remove`](OfflineStore::remove) and the new state, atomically (default: one after the
    /// other).
    fn remove_with_state(&mut self, seq: u64, state: &str) -> Result<(), StoreError> {
        self.remove(seq)?;
        self.save_state(state)
    }

    /// Replaces the state (a change that queues nothing). Default: kept nowhere.
    fn save_state(&mut self, state: &str) -> Result<(), StoreError> {
        let _ = state;
        Ok(())
    }

    /// The last state saved (called once, when the station starts). Default: none.
    fn load_state(&mut self) -> Result<Option<String>, StoreError> {
        Ok(None)
    }
}

/// A boxed store is a store (to choose one at run time).
impl<T: OfflineStore + ?Sized> OfflineStore for Box<T> {
    fn load(&mut self) -> Result<Vec<StoredMessage>, StoreError> {
        (**self).load()
    }

    fn push(&mut self, message: &StoredMessage) -> Result<(), StoreError> {
        (**self).push(message)
    }

    fn replace(&mut self, message: &StoredMessage) -> Result<(), StoreError> {
        (**self).replace(message)
    }

    fn remove(&mut self, seq: u64) -> Result<(), StoreError> {
        (**self).remove(seq)
    }

    fn push_with_state(&mut self, message: &StoredMessage, state: &str) -> Result<(), StoreError> {
        (**self).push_with_state(message, state)
    }

    fn replace_with_state(
        &mut self,
        message: &StoredMessage,
        state: &str,
    ) -> Result<(), StoreError> {
        (**self).replace_with_state(message, state)
    }

    fn remove_with_state(&mut self, seq: u64, state: &str) -> Result<(), StoreError> {
        (**self).remove_with_state(seq, state)
    }

    fn save_state(&mut self, state: &str) -> Result<(), StoreError> {
        (**self).save_state(state)
    }

    fn load_state(&mut self) -> Result<Option<String>, StoreError> {
        (**self).load_state()
    }
}

/// Why an [`OfflineStore`] refused a call or could not open its journal.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
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
    fn check_push(&self, seq: u64) -> Result<(), StoreError> {
        match self.messages.last_key_value() {
            Some((&last, _)) if seq <= last => Err(StoreError::OutOfOrder { seq, last }),
            _ => Ok(()),
        }
    }

    fn check_queued(&self, seq: u64) -> Result<(), StoreError> {
        if self.messages.contains_key(&seq) {
            Ok(())
        } else {
            Err(StoreError::NotQueued { seq })
        }
    }

    fn check(&self, record: &Record) -> Result<(), StoreError> {
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

    fn apply(&mut self, record: Record) -> Result<(), StoreError> {
        self.check(&record)?;
        self.commit(record);
        Ok(())
    }

    fn to_vec(&self) -> Vec<StoredMessage> {
        self.messages.values().cloned().collect()
    }
}

/// An [`OfflineStore`] in memory: fast, and gone when the process ends.
///
/// ```
/// use ocpp_tokio::station::store::{MemoryStore, OfflineStore};
///
/// let mut store = MemoryStore::new();
/// assert!(store.is_empty());
/// assert!(store.load()?.is_empty());
/// # Ok::<(), ocpp_tokio::station::store::StoreError>(())
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    queue: Queue,
}

impl MemoryStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// How many messages are queued.
    #[must_use]
    pub fn len(&self) -> usize {
        self.queue.messages.len()
    }

    /// Whether no message is queued.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.queue.messages.is_empty()
    }
}

impl OfflineStore for MemoryStore {
    fn load(&mut self) -> Result<Vec<StoredMessage>, StoreError> {
        Ok(self.queue.to_vec())
    }

    fn push(&mut self, message: &StoredMessage) -> Result<(), StoreError> {
        self.queue.apply(Change::Push(message.clone()).into())
    }

    fn replace(&mut self, message: &StoredMessage) -> Result<(), StoreError> {
        self.queue.apply(Change::Replace(message.clone()).into())
    }

    fn remove(&mut self, seq: u64) -> Result<(), StoreError> {
        self.queue.apply(Change::Remove(seq).into())
    }

    fn push_with_state(&mut self, message: &StoredMessage, state: &str) -> Result<(), StoreError> {
        self.queue
            .apply(Record::with_state(Change::Push(message.clone()), state))
    }

    fn replace_with_state(
        &mut self,
        message: &StoredMessage,
        state: &str,
    ) -> Result<(), StoreError> {
        self.queue
            .apply(Record::with_state(Change::Replace(message.clone()), state))
    }

    fn remove_with_state(&mut self, seq: u64, state: &str) -> Result<(), StoreError> {
        self.queue
            .apply(Record::with_state(Change::Remove(seq), state))
    }

    fn save_state(&mut self, state: &str) -> Result<(), StoreError> {
        self.queue.state = Some(state.to_owned());
        Ok(())
    }

    fn load_state(&mut self) -> Result<Option<String>, StoreError> {
        Ok(self.queue.state.clone())
    }
}

/// An [`OfflineStore`] in a journal file that survives a crash at any moment (see the
/// [module documentation](self) for the format and the guarantees). The queued messages are
/// kept in memory too, so [`load`](OfflineStore::load) does not read the file.
#[derive(Debug)]
pub struct FileStore {
    path: PathBuf,
    /// Opened for appending: every write goes to the end.
    file: File,
    /// The length of the journal up to its last durable record.
    len: u64,
    queue: Queue,
    /// A failed write could not be undone.
    poisoned: bool,
}

impl FileStore {
    /// Opens (creating if needed) the journal at `path`.
    ///
    /// The directory must exist. Replays the journal, drops a torn last record, and compacts the
    /// file if it is mostly dead records (see the [module documentation](self)).
    ///
    /// ```
    /// use ocpp_tokio::station::store::{FileStore, OfflineStore};
    ///
    /// let dir = std::env::temp_dir().join(format!("ocpp-store-open-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let mut store = FileStore::open(dir.join("queue.jsonl"))?;
    /// assert!(store.load()?.is_empty());
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`StoreError::Io`] if the file cannot be opened, read, repaired or compacted;
    /// [`StoreError::Corrupt`] if a record other than a torn last one does not read.
    pub fn open(path: impl AsRef<Path>) -> Result<FileStore, StoreError> {
        let path = path.as_ref().to_path_buf();
        let tmp = tmp_path(&path);
        // What a crashed compaction left behind; the journal itself is intact.
        match fs::remove_file(&tmp) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(io_error(&tmp, e)),
            _ => {}
        }
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|e| io_error(&path, e))?;
        // The file may have just been created: make its directory entry durable.
        sync_dir(&path)?;
        let mut bytes = Vec::new();
        (&file)
            .read_to_end(&mut bytes)
            .map_err(|e| io_error(&path, e))?;
        let replay = replay(&path, &bytes)?;
        let mut store = FileStore {
            path,
            file,
            len: replay.good_len,
            queue: replay.queue,
            poisoned: false,
        };
        if replay.good_len < bytes.len() as u64 {
            tracing::warn!(
                path = %store.path.display(),
                dropped_bytes = bytes.len() as u64 - replay.good_len,
                "offline queue journal: dropped a record torn by a crash"
            );
            store.cut_to(replay.good_len)?;
        }
        let live = store.queue.messages.len();
        // Records that hold nothing live: the state is one line however many set it.
        let kept = live + usize::from(store.queue.state.is_some());
        let dead = replay.records.saturating_sub(kept);
        if live == 0 && store.queue.state.is_none() && store.len > 0 {
            store.cut_to(0)?;
        } else if (live == 0 && dead > 0) || (dead > live && dead > COMPACT_MIN_DEAD) {
            tracing::debug!(
                path = %store.path.display(),
                live,
                dead,
                "offline queue journal: compacting"
            );
            store.rewrite()?;
        }
        Ok(store)
    }

    /// The journal's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, source: io::Error) -> StoreError {
        io_error(&self.path, source)
    }

    fn check_usable(&self) -> Result<(), StoreError> {
        if self.poisoned {
            Err(StoreError::Poisoned {
                path: self.path.clone(),
            })
        } else {
            Ok(())
        }
    }

    /// Cuts the journal to `len` bytes, durably.
    fn cut_to(&mut self, len: u64) -> Result<(), StoreError> {
        self.file
            .set_len(len)
            .and_then(|()| self.file.sync_all())
            .map_err(|e| io_error(&self.path, e))?;
        self.len = len;
        Ok(())
    }

    /// Appends one record, durably; on failure, cuts the file back to its last record.
    fn append(&mut self, record: &Record) -> Result<(), StoreError> {
        self.check_usable()?;
        let line = encode(record).map_err(|e| self.io(e))?;
        let written = (&self.file)
            .write_all(&line)
            .and_then(|()| self.file.sync_data());
        match written {
            Ok(()) => {
                self.len += line.len() as u64;
                Ok(())
            }
            Err(e) => {
                let len = self.len;
                if self.cut_to(len).is_err() {
                    self.poisoned = true;
                }
                Err(self.io(e))
            }
        }
    }

    /// Writes the state and the live messages to `<path>.tmp` and renames it over the journal.
    fn rewrite(&mut self) -> Result<(), StoreError> {
        let bytes = journal_bytes(&self.queue.messages, self.queue.state.as_deref())
            .map_err(|e| self.io(e))?;
        self.rewrite_with(&bytes)
    }

    /// Writes `bytes` to `<path>.tmp` and renames it over the journal.
    fn rewrite_with(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        let tmp = tmp_path(&self.path);
        let mut out = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(|e| io_error(&tmp, e))?;
        out.write_all(bytes)
            .and_then(|()| out.sync_all())
            .map_err(|e| io_error(&tmp, e))?;
        drop(out);
        fs::rename(&tmp, &self.path).map_err(|e| io_error(&self.path, e))?;
        // From here the journal is the new file: never append to the old one again, and if
        // it cannot be opened or its rename made durable, refuse changes until reopened.
        let reopened = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| io_error(&self.path, e))
            .and_then(|file| sync_dir(&self.path).map(|()| file));
        match reopened {
            Ok(file) => {
                self.file = file;
                self.len = bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                self.poisoned = true;
                Err(e)
            }
        }
    }
}

impl OfflineStore for FileStore {
    fn load(&mut self) -> Result<Vec<StoredMessage>, StoreError> {
        Ok(self.queue.to_vec())
    }

    fn push(&mut self, message: &StoredMessage) -> Result<(), StoreError> {
        self.write(Change::Push(message.clone()).into())
    }

    fn replace(&mut self, message: &StoredMessage) -> Result<(), StoreError> {
        self.write(Change::Replace(message.clone()).into())
    }

    fn remove(&mut self, seq: u64) -> Result<(), StoreError> {
        self.write(Change::Remove(seq).into())
    }

    fn push_with_state(&mut self, message: &StoredMessage, state: &str) -> Result<(), StoreError> {
        self.write(Record::with_state(Change::Push(message.clone()), state))
    }

    fn replace_with_state(
        &mut self,
        message: &StoredMessage,
        state: &str,
    ) -> Result<(), StoreError> {
        self.write(Record::with_state(Change::Replace(message.clone()), state))
    }

    fn remove_with_state(&mut self, seq: u64, state: &str) -> Result<(), StoreError> {
        self.write(Record::with_state(Change::Remove(seq), state))
    }

    fn save_state(&mut self, state: &str) -> Result<(), StoreError> {
        self.write(Record {
            change: None,
            state: Some(state.to_owned()),
        })
    }

    fn load_state(&mut self) -> Result<Option<String>, StoreError> {
        Ok(self.queue.state.clone())
    }
}

impl FileStore {
    /// Checks, writes durably, then applies one record.
    fn write(&mut self, record: Record) -> Result<(), StoreError> {
        self.queue.check(&record)?;
        let empties =
            matches!(record.change, Some(Change::Remove(_))) && self.queue.messages.len() == 1;
        if empties {
            // The queue empties: stop the journal growing. Without a state, an empty file says
            // so; with one, the file becomes the state's line alone (written aside, renamed
            // over: a crash leaves the old journal or the new one).
            self.check_usable()?;
            let state = record.state.as_deref().or(self.queue.state.as_deref());
            if let Some(state) = state {
                let bytes = journal_bytes(&BTreeMap::new(), Some(state)).map_err(|e| self.io(e))?;
                self.rewrite_with(&bytes)?;
            } else if let Err(e) = self.cut_to(0) {
                // set_len may have happened without its sync: the file no longer holds the
                // message the queue still has.
                self.poisoned = true;
                return Err(e);
            }
        } else {
            self.append(&record)?;
        }
        self.queue.commit(record);
        Ok(())
    }
}

/// A journal line as written: one change, a state, or both.
#[derive(Serialize)]
struct RecordOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    push: Option<EntryOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    replace: Option<EntryOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    remove: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'a str>,
}

#[derive(Serialize)]
struct EntryOut<'a> {
    seq: u64,
    version: &'static str,
    action: &'a str,
    payload: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    transaction_of: Option<u64>,
}

impl<'a> From<&'a StoredMessage> for EntryOut<'a> {
    fn from(message: &'a StoredMessage) -> Self {
        EntryOut {
            seq: message.seq,
            version: message.version.as_str(),
            action: &message.action,
            payload: &message.payload,
            transaction_of: message.transaction_of,
        }
    }
}

/// A journal line as read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordIn {
    #[serde(default)]
    push: Option<EntryIn>,
    #[serde(default)]
    replace: Option<EntryIn>,
    #[serde(default)]
    remove: Option<u64>,
    #[serde(default)]
    state: Option<String>,
}

#[derive(Deserialize)]
struct EntryIn {
    seq: u64,
    version: String,
    action: String,
    payload: String,
    #[serde(default)]
    transaction_of: Option<u64>,
}

impl EntryIn {
    fn into_message(self) -> Result<StoredMessage, String> {
        let version = self
            .version
            .parse::<OcppVersion>()
            .map_err(|_| format!("unknown OCPP version {:?}", self.version))?;
        Ok(StoredMessage {
            seq: self.seq,
            version,
            action: self.action,
            payload: self.payload,
            transaction_of: self.transaction_of,
        })
    }
}

/// A journal holding `state` and `messages` only: what compaction writes.
fn journal_bytes(
    messages: &BTreeMap<u64, StoredMessage>,
    state: Option<&str>,
) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    if let Some(state) = state {
        let record = Record {
            change: None,
            state: Some(state.to_owned()),
        };
        bytes.extend_from_slice(&encode(&record)?);
    }
    for message in messages.values() {
        bytes.extend_from_slice(&encode(&Change::Push(message.clone()).into())?);
    }
    Ok(bytes)
}

/// The line of a record, with its `\n`.
fn encode(record: &Record) -> io::Result<Vec<u8>> {
    let mut out = RecordOut {
        push: None,
        replace: None,
        remove: None,
        state: record.state.as_deref(),
    };
    match &record.change {
        Some(Change::Push(message)) => out.push = Some(message.into()),
        Some(Change::Replace(message)) => out.replace = Some(message.into()),
        Some(Change::Remove(seq)) => out.remove = Some(*seq),
        None => {}
    }
    let mut line = serde_json::to_vec(&out)?;
    line.push(b'\n');
    Ok(line)
}

/// How a journal line reads.
enum Parsed {
    Record(Record),
    /// Not JSON at all: torn, if it is the last line.
    NotJson(String),
    /// JSON, but not a record this version knows: corrupt wherever it is.
    Bad(String),
}

fn parse(line: &[u8]) -> Parsed {
    if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(line) {
        return Parsed::NotJson(e.to_string());
    }
    let record = match serde_json::from_slice::<RecordIn>(line) {
        Ok(record) => record,
        Err(e) => return Parsed::Bad(e.to_string()),
    };
    let change = match (record.push, record.replace, record.remove) {
        (Some(entry), None, None) => entry.into_message().map(|m| Some(Change::Push(m))),
        (None, Some(entry), None) => entry.into_message().map(|m| Some(Change::Replace(m))),
        (None, None, Some(seq)) => Ok(Some(Change::Remove(seq))),
        (None, None, None) if record.state.is_some() => Ok(None),
        (None, None, None) => Err("an empty record".to_owned()),
        _ => Err("more than one change in a record".to_owned()),
    };
    match change {
        Ok(change) => Parsed::Record(Record {
            change,
            state: record.state,
        }),
        Err(reason) => Parsed::Bad(reason),
    }
}

/// What a journal holds.
struct Replay {
    queue: Queue,
    /// The length up to the end of the last good record.
    good_len: u64,
    /// How many good records.
    records: usize,
}

fn replay(path: &Path, bytes: &[u8]) -> Result<Replay, StoreError> {
    let corrupt = |line: u64, reason: String| StoreError::Corrupt {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let mut queue = Queue::default();
    let mut records = 0;
    let mut start = 0;
    let mut line_no = 0;
    // A last piece without its `\n` is a torn write: it is left out of `good_len`.
    while let Some(newline) = bytes[start..].iter().position(|&b| b == b'\n') {
        line_no += 1;
        let end = start + newline + 1;
        match parse(&bytes[start..end - 1]) {
            Parsed::Record(record) => {
                queue
                    .apply(record)
                    .map_err(|e| corrupt(line_no, e.to_string()))?;
                records += 1;
            }
            Parsed::NotJson(_) if end == bytes.len() => break,
            Parsed::NotJson(reason) | Parsed::Bad(reason) => return Err(corrupt(line_no, reason)),
        }
        start = end;
    }
    Ok(Replay {
        queue,
        good_len: start as u64,
        records,
    })
}

fn io_error(path: &Path, source: io::Error) -> StoreError {
    StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Replaces the file at `path` with `bytes` durably, the one way the station's state files
/// are written (the device model's, the local authorization list's): `<path>.tmp` written and
/// synced, renamed over `path`, the directory synced. A crash at any point leaves the old
/// file or the new one, whole.
pub(crate) fn replace_durably(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = tmp_path(path);
    {
        let mut file = File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    fs::rename(&tmp, path)?;
    sync_dir(path).map_err(|e| match e {
        StoreError::Io { source, .. } => source,
        other => io::Error::other(other.to_string()),
    })
}

/// `<path>.tmp`: where compaction writes the new journal.
fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

/// Makes the directory entries of `path`'s directory durable (a created or renamed journal).
#[cfg(unix)]
fn sync_dir(path: &Path) -> Result<(), StoreError> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error(dir, e))
}

/// Directories cannot be opened for syncing here; the rename is as durable as the platform makes it.
#[cfg(not(unix))]
fn sync_dir(_path: &Path) -> Result<(), StoreError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A directory under the system's temporary directory, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            static NEXT: AtomicU64 = AtomicU64::new(0);
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir()
                .join(format!("ocpp-store-test-{}-{name}-{n}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        fn journal(&self) -> PathBuf {
            self.0.join("queue.jsonl")
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn message(seq: u64, version: OcppVersion, action: &str, payload: &str) -> StoredMessage {
        StoredMessage {
            seq,
            version,
            action: action.into(),
            payload: payload.into(),
            transaction_of: None,
        }
    }

    fn file_len(path: &Path) -> u64 {
        fs::metadata(path).unwrap().len()
    }

    fn lines(path: &Path) -> usize {
        fs::read_to_string(path).unwrap().lines().count()
    }

    fn round_trip(store: &mut dyn OfflineStore) {
        assert_eq!(store.load().unwrap(), vec![]);
        let start = message(
            1,
            OcppVersion::V1_6,
            "StartTransaction",
            r#"{"connectorId":1,"idTag":"A\"B\n","meterStart":0,"timestamp":"2025-01-01T00:00:00Z"}"#,
        );
        let mut meter = message(
            2,
            OcppVersion::V1_6,
            "MeterValues",
            r#"{"connectorId":1,"transactionId":0,"meterValue":[]}"#,
        );
        meter.transaction_of = Some(1);
        let event = message(
            3,
            OcppVersion::V2_0_1,
            "TransactionEvent",
            r#"{"eventType":"Started","seqNo":0,"ünï":"☃"}"#,
        );
        for m in [&start, &meter, &event] {
            store.push(m).unwrap();
        }
        assert_eq!(
            store.load().unwrap(),
            vec![start.clone(), meter.clone(), event.clone()]
        );

        let filled = StoredMessage {
            payload: r#"{"connectorId":1,"transactionId":42,"meterValue":[]}"#.into(),
            transaction_of: None,
            ..meter.clone()
        };
        store.replace(&filled).unwrap();
        store.remove(1).unwrap();
        assert_eq!(store.load().unwrap(), vec![filled.clone(), event.clone()]);

        // Refusals change nothing.
        assert!(matches!(
            store.push(&message(3, OcppVersion::V2_1, "TransactionEvent", "{}")),
            Err(StoreError::OutOfOrder { seq: 3, last: 3 })
        ));
        assert!(matches!(
            store.replace(&start),
            Err(StoreError::NotQueued { seq: 1 })
        ));
        assert!(matches!(
            store.remove(9),
            Err(StoreError::NotQueued { seq: 9 })
        ));
        assert_eq!(store.load().unwrap(), vec![filled, event]);

        store.remove(3).unwrap();
        store.remove(2).unwrap();
        assert_eq!(store.load().unwrap(), vec![]);
        let later = message(10, OcppVersion::V2_1, "TransactionEvent", "{}");
        store.push(&later).unwrap();
        assert_eq!(store.load().unwrap(), vec![later]);
    }

    #[test]
    fn round_trip_memory_store() {
        let mut store = MemoryStore::new();
        round_trip(&mut store);
        assert_eq!(store.len(), 1);
        assert!(!store.is_empty());
    }

    #[test]
    fn round_trip_file_store() {
        let dir = TempDir::new("round-trip");
        let mut store = FileStore::open(dir.journal()).unwrap();
        assert_eq!(store.path(), dir.journal());
        round_trip(&mut store);
        drop(store);
        let mut store = FileStore::open(dir.journal()).unwrap();
        assert_eq!(
            store.load().unwrap(),
            vec![message(10, OcppVersion::V2_1, "TransactionEvent", "{}")]
        );
    }

    #[test]
    fn journal_is_json_lines() {
        let dir = TempDir::new("format");
        let mut store = FileStore::open(dir.journal()).unwrap();
        let mut m = message(1, OcppVersion::V1_6, "MeterValues", r#"{"a":1}"#);
        m.transaction_of = Some(7);
        store.push(&m).unwrap();
        store
            .push(&message(2, OcppVersion::V2_0_1, "TransactionEvent", "{}"))
            .unwrap();
        m.transaction_of = None;
        store.replace(&m).unwrap();
        store.remove(1).unwrap();
        assert_eq!(
            fs::read_to_string(dir.journal()).unwrap(),
            concat!(
                r#"{"push":{"seq":1,"version":"1.6","action":"MeterValues","payload":"{\"a\":1}","transaction_of":7}}"#,
                "\n",
                r#"{"push":{"seq":2,"version":"2.0.1","action":"TransactionEvent","payload":"{}"}}"#,
                "\n",
                r#"{"replace":{"seq":1,"version":"1.6","action":"MeterValues","payload":"{\"a\":1}"}}"#,
                "\n",
                r#"{"remove":1}"#,
                "\n",
            )
        );
    }

    #[test]
    fn reopen_gives_the_same_messages_in_order() {
        let dir = TempDir::new("reopen");
        let mut store = FileStore::open(dir.journal()).unwrap();
        let versions = [OcppVersion::V1_6, OcppVersion::V2_0_1, OcppVersion::V2_1];
        for seq in 1..=20 {
            let v = versions[seq as usize % 3];
            store
                .push(&message(
                    seq,
                    v,
                    "TransactionEvent",
                    &format!("{{\"seqNo\":{seq}}}"),
                ))
                .unwrap();
        }
        for seq in [2, 5, 19] {
            store.remove(seq).unwrap();
        }
        let before = store.load().unwrap();
        assert_eq!(before.len(), 17);
        drop(store);
        let mut store = FileStore::open(dir.journal()).unwrap();
        assert_eq!(store.load().unwrap(), before);
        assert!(before.windows(2).all(|w| w[0].seq < w[1].seq));
    }

    #[test]
    fn torn_last_record_is_dropped_and_the_file_cut_back() {
        let dir = TempDir::new("torn");
        let mut store = FileStore::open(dir.journal()).unwrap();
        let first = message(1, OcppVersion::V1_6, "StartTransaction", "{}");
        let second = message(2, OcppVersion::V1_6, "StopTransaction", "{}");
        store.push(&first).unwrap();
        store.push(&second).unwrap();
        drop(store);
        let good = file_len(&dir.journal());

        // Half a line, as a crash in the middle of the write leaves it.
        let line = encode(&Record::from(Change::Push(message(
            3,
            OcppVersion::V1_6,
            "MeterValues",
            "{}",
        ))))
        .unwrap();
        let mut file = OpenOptions::new().append(true).open(dir.journal()).unwrap();
        file.write_all(&line[..line.len() / 2]).unwrap();
        drop(file);
        assert!(file_len(&dir.journal()) > good);

        let mut store = FileStore::open(dir.journal()).unwrap();
        assert_eq!(file_len(&dir.journal()), good);
        assert_eq!(store.load().unwrap(), vec![first.clone(), second.clone()]);
        let third = message(3, OcppVersion::V1_6, "MeterValues", "{}");
        store.push(&third).unwrap();
        drop(store);
        let mut store = FileStore::open(dir.journal()).unwrap();
        assert_eq!(
            store.load().unwrap(),
            vec![first.clone(), second.clone(), third.clone()]
        );
        drop(store);

        // A complete last line of garbage (zeros from a power loss, then a newline) is dropped too.
        let good = file_len(&dir.journal());
        let mut file = OpenOptions::new().append(true).open(dir.journal()).unwrap();
        file.write_all(b"\0\0\0\0\n").unwrap();
        drop(file);
        let mut store = FileStore::open(dir.journal()).unwrap();
        assert_eq!(file_len(&dir.journal()), good);
        assert_eq!(store.load().unwrap(), vec![first, second, third]);
    }

    #[test]
    fn corrupt_middle_line_is_an_error() {
        let dir = TempDir::new("corrupt");
        let mut store = FileStore::open(dir.journal()).unwrap();
        for seq in 1..=3 {
            store
                .push(&message(seq, OcppVersion::V2_0_1, "TransactionEvent", "{}"))
                .unwrap();
        }
        drop(store);
        let text = fs::read_to_string(dir.journal()).unwrap();
        let mut records: Vec<&str> = text.lines().collect();
        records[1] = r#"{"push":{"seq":2,"vers"#;
        fs::write(dir.journal(), records.join("\n") + "\n").unwrap();
        match FileStore::open(dir.journal()) {
            Err(StoreError::Corrupt { path, line, .. }) => {
                assert_eq!(path, dir.journal());
                assert_eq!(line, 2);
            }
            other => panic!("expected Corrupt, got {other:?}"),
        }
        // The file is left as it was, for a technician to look at.
        assert_eq!(lines(&dir.journal()), 3);

        // A well-formed record that makes no sense is corrupt even as the last line.
        for (bad, line) in [
            (r#"{"remove":9}"#, 4),
            (
                r#"{"push":{"seq":4,"version":"9.9","action":"X","payload":"{}"}}"#,
                4,
            ),
            (
                r#"{"push":{"seq":1,"version":"1.6","action":"X","payload":"{}"}}"#,
                4,
            ),
            (r#"{"frobnicate":1}"#, 4),
        ] {
            fs::write(dir.journal(), text.clone() + bad + "\n").unwrap();
            match FileStore::open(dir.journal()) {
                Err(StoreError::Corrupt { line: l, .. }) => assert_eq!(l, line, "{bad}"),
                other => panic!("expected Corrupt for {bad}, got {other:?}"),
            }
        }
    }

    #[test]
    fn emptied_queue_truncates_the_file() {
        let dir = TempDir::new("empty");
        let mut store = FileStore::open(dir.journal()).unwrap();
        for seq in 1..=3 {
            store
                .push(&message(seq, OcppVersion::V1_6, "MeterValues", "{}"))
                .unwrap();
        }
        store.remove(2).unwrap();
        store.remove(1).unwrap();
        assert!(file_len(&dir.journal()) > 0);
        store.remove(3).unwrap();
        assert_eq!(file_len(&dir.journal()), 0);
        drop(store);
        let mut store = FileStore::open(dir.journal()).unwrap();
        assert_eq!(store.load().unwrap(), vec![]);
        store
            .push(&message(4, OcppVersion::V1_6, "MeterValues", "{}"))
            .unwrap();
        assert_eq!(lines(&dir.journal()), 1);
    }

    #[test]
    fn many_dead_records_are_compacted_on_open() {
        let dir = TempDir::new("compact");
        let mut store = FileStore::open(dir.journal()).unwrap();
        for seq in 1..=100 {
            store
                .push(&message(
                    seq,
                    OcppVersion::V2_1,
                    "TransactionEvent",
                    &format!("{{\"n\":{seq}}}"),
                ))
                .unwrap();
        }
        for seq in 1..=90 {
            store.remove(seq).unwrap();
        }
        let mut filled = message(
            95,
            OcppVersion::V2_1,
            "TransactionEvent",
            "{\"filled\":true}",
        );
        filled.transaction_of = None;
        store.replace(&filled).unwrap();
        let live = store.load().unwrap();
        drop(store);
        assert_eq!(lines(&dir.journal()), 191);
        // What a compaction killed half-way leaves behind.
        fs::write(tmp_path(&dir.journal()), b"{\"push\":").unwrap();

        let mut store = FileStore::open(dir.journal()).unwrap();
        assert_eq!(lines(&dir.journal()), 10);
        assert!(!tmp_path(&dir.journal()).exists());
        assert_eq!(store.load().unwrap(), live);
        let next = message(101, OcppVersion::V2_1, "TransactionEvent", "{}");
        store.push(&next).unwrap();
        drop(store);
        let mut store = FileStore::open(dir.journal()).unwrap();
        let mut expected = live;
        expected.push(next);
        assert_eq!(store.load().unwrap(), expected);
        assert_eq!(lines(&dir.journal()), 11);
    }

    #[test]
    fn few_dead_records_are_kept() {
        let dir = TempDir::new("no-compact");
        let mut store = FileStore::open(dir.journal()).unwrap();
        for seq in 1..=10 {
            store
                .push(&message(seq, OcppVersion::V1_6, "MeterValues", "{}"))
                .unwrap();
        }
        for seq in 1..=8 {
            store.remove(seq).unwrap();
        }
        drop(store);
        let _store = FileStore::open(dir.journal()).unwrap();
        assert_eq!(lines(&dir.journal()), 18);
    }

    #[test]
    fn state_rides_with_the_change_of_its_line() {
        let dir = TempDir::new("state-format");
        let mut store = FileStore::open(dir.journal()).unwrap();
        assert_eq!(store.load_state().unwrap(), None);
        let m = message(1, OcppVersion::V2_0_1, "TransactionEvent", "{}");
        store.push_with_state(&m, r#"{"open":1}"#).unwrap();
        store
            .push(&message(2, OcppVersion::V2_0_1, "TransactionEvent", "{}"))
            .unwrap();
        store.save_state(r#"{"open":2}"#).unwrap();
        store.replace_with_state(&m, "s3").unwrap();
        store.remove_with_state(1, "s4").unwrap();
        assert_eq!(
            fs::read_to_string(dir.journal()).unwrap(),
            concat!(
                r#"{"push":{"seq":1,"version":"2.0.1","action":"TransactionEvent","payload":"{}"},"state":"{\"open\":1}"}"#,
                "\n",
                r#"{"push":{"seq":2,"version":"2.0.1","action":"TransactionEvent","payload":"{}"}}"#,
                "\n",
                r#"{"state":"{\"open\":2}"}"#,
                "\n",
                r#"{"replace":{"seq":1,"version":"2.0.1","action":"TransactionEvent","payload":"{}"},"state":"s3"}"#,
                "\n",
                r#"{"remove":1,"state":"s4"}"#,
                "\n",
            )
        );
        drop(store);
        let mut store = FileStore::open(dir.journal()).unwrap();
        assert_eq!(store.load_state().unwrap().as_deref(), Some("s4"));
        assert_eq!(store.load().unwrap().len(), 1);

        // A refused change leaves the state as it was.
        assert!(store.remove_with_state(9, "s5").is_err());
        assert!(store.push_with_state(&m, "s5").is_err());
        assert_eq!(store.load_state().unwrap().as_deref(), Some("s4"));

        // Two changes in one line, or none, are corrupt.
        for bad in [
            r#"{"remove":2,"push":{"seq":3,"version":"1.6","action":"X","payload":"{}"}}"#,
            "{}",
        ] {
            let text = fs::read_to_string(dir.journal()).unwrap();
            let other = TempDir::new("state-bad");
            fs::write(other.journal(), text + bad + "\n").unwrap();
            assert!(
                matches!(
                    FileStore::open(other.journal()),
                    Err(StoreError::Corrupt { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn state_round_trip_memory_store() {
        let mut store = MemoryStore::new();
        assert_eq!(store.load_state().unwrap(), None);
        store
            .push_with_state(
                &message(1, OcppVersion::V1_6, "StartTransaction", "{}"),
                "a",
            )
            .unwrap();
        store.save_state("b").unwrap();
        store.remove_with_state(1, "c").unwrap();
        assert!(store.is_empty());
        assert_eq!(store.load_state().unwrap().as_deref(), Some("c"));
    }

    #[test]
    fn an_emptied_queue_keeps_the_state() {
        let dir = TempDir::new("state-empty");
        let mut store = FileStore::open(dir.journal()).unwrap();
        store
            .push_with_state(
                &message(1, OcppVersion::V1_6, "StartTransaction", "{}"),
                "a",
            )
            .unwrap();
        store
            .push_with_state(&message(2, OcppVersion::V1_6, "StopTransaction", "{}"), "b")
            .unwrap();
        store.remove(1).unwrap();
        store.remove(2).unwrap();
        // The journal is the state's line alone.
        assert_eq!(
            fs::read_to_string(dir.journal()).unwrap(),
            "{\"state\":\"b\"}\n"
        );
        assert!(!tmp_path(&dir.journal()).exists());
        store
            .push_with_state(
                &message(3, OcppVersion::V1_6, "StartTransaction", "{}"),
                "c",
            )
            .unwrap();
        store.remove_with_state(3, "d").unwrap();
        assert_eq!(
            fs::read_to_string(dir.journal()).unwrap(),
            "{\"state\":\"d\"}\n"
        );
        drop(store);
        let mut store = FileStore::open(dir.journal()).unwrap();
        assert_eq!(store.load().unwrap(), vec![]);
        assert_eq!(store.load_state().unwrap().as_deref(), Some("d"));
        // Many state lines and nothing queued: compacted to one on open.
        for n in 0..5 {
            store.save_state(&format!("e{n}")).unwrap();
        }
        drop(store);
        let mut store = FileStore::open(dir.journal()).unwrap();
        assert_eq!(lines(&dir.journal()), 1);
        assert_eq!(store.load_state().unwrap().as_deref(), Some("e4"));
    }

    #[test]
    fn compaction_keeps_the_state() {
        let dir = TempDir::new("state-compact");
        let mut store = FileStore::open(dir.journal()).unwrap();
        for seq in 1..=60 {
            let m = message(seq, OcppVersion::V2_1, "TransactionEvent", "{}");
            store.push_with_state(&m, &format!("s{seq}")).unwrap();
        }
        for seq in 1..=55 {
            store.remove(seq).unwrap();
        }
        let live = store.load().unwrap();
        drop(store);
        let mut store = FileStore::open(dir.journal()).unwrap();
        assert_eq!(lines(&dir.journal()), 6);
        assert_eq!(store.load().unwrap(), live);
        assert_eq!(store.load_state().unwrap().as_deref(), Some("s60"));
    }

    /// A kill at any byte of the write path: the journal cut at every offset opens to the
    /// messages and the state of the last whole record, never a message without its state or
    /// a state without its message.
    #[test]
    fn a_cut_at_every_offset_gives_a_message_with_its_state() {
        let dir = TempDir::new("state-cut");
        let mut store = FileStore::open(dir.journal()).unwrap();
        // After each record: the file's length, the messages and the state.
        let mut after = vec![(0u64, Vec::new(), None)];
        let snapshot =
            |store: &mut FileStore, after: &mut Vec<(u64, Vec<StoredMessage>, Option<String>)>| {
                after.push((
                    file_len(store.path()),
                    store.load().unwrap(),
                    store.load_state().unwrap(),
                ));
            };
        let mut seqs = Vec::new();
        for seq in 1..=6u64 {
            // Each state names the messages queued with it.
            seqs.push(seq);
            let state = format!("{seqs:?} ünï");
            let m = message(
                seq,
                OcppVersion::V2_0_1,
                "TransactionEvent",
                &format!("{{\"seqNo\":{seq}}}"),
            );
            store.push_with_state(&m, &state).unwrap();
            snapshot(&mut store, &mut after);
            if seq % 2 == 0 {
                let first = seqs.remove(0);
                store
                    .remove_with_state(first, &format!("{seqs:?} ünï"))
                    .unwrap();
                snapshot(&mut store, &mut after);
            }
            if seq == 3 {
                store.save_state(&format!("{seqs:?} ünï")).unwrap();
                snapshot(&mut store, &mut after);
            }
        }
        drop(store);
        let bytes = fs::read(dir.journal()).unwrap();
        for cut in 0..=bytes.len() {
            let other = TempDir::new("state-cut-at");
            fs::write(other.journal(), &bytes[..cut]).unwrap();
            let mut reopened = FileStore::open(other.journal()).unwrap();
            let (_, messages, state) = after
                .iter()
                .rev()
                .find(|(len, _, _)| *len <= cut as u64)
                .unwrap();
            let loaded = reopened.load().unwrap();
            let loaded_state = reopened.load_state().unwrap();
            assert_eq!(&loaded, messages, "cut at {cut}");
            assert_eq!(&loaded_state, state, "cut at {cut}");
            if let Some(state) = loaded_state {
                let seqs: Vec<u64> = loaded.iter().map(|m| m.seq).collect();
                assert_eq!(state, format!("{seqs:?} ünï"), "cut at {cut}");
            }
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Push {
            version: usize,
            action: String,
            payload: String,
            transaction_of: Option<u64>,
        },
        /// A push whose `seq` is not after the last queued one.
        PushStale,
        Replace {
            pick: usize,
            payload: String,
            clear: bool,
        },
        Remove {
            pick: usize,
        },
        RemoveUnknown,
        Reopen,
        /// The next change carries this state.
        State(String),
        SaveState(String),
    }

    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(any::<char>(), 0..24).prop_map(String::from_iter)
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            5 => (0..3usize, "[A-Za-z]{1,12}", text(), proptest::option::of(0..50u64)).prop_map(
                |(version, action, payload, transaction_of)| Op::Push {
                    version,
                    action,
                    payload,
                    transaction_of
                }
            ),
            1 => Just(Op::PushStale),
            2 => (any::<usize>(), text(), any::<bool>())
                .prop_map(|(pick, payload, clear)| Op::Replace { pick, payload, clear }),
            4 => any::<usize>().prop_map(|pick| Op::Remove { pick }),
            1 => Just(Op::RemoveUnknown),
            1 => Just(Op::Reopen),
            2 => text().prop_map(Op::State),
            1 => text().prop_map(Op::SaveState),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn file_store_loads_what_memory_store_loads(ops in proptest::collection::vec(op(), 0..120)) {
            let dir = TempDir::new("prop");
            let mut memory = MemoryStore::new();
            let mut file = FileStore::open(dir.journal()).unwrap();
            let mut next_seq = 1u64;
            let mut state: Option<String> = None;
            for op in ops {
                let live = memory.load().unwrap();
                let (a, b) = match op {
                    Op::Push { version, action, payload, transaction_of } => {
                        let m = StoredMessage {
                            seq: next_seq,
                            version: OcppVersion::ALL[version],
                            action,
                            payload,
                            transaction_of,
                        };
                        next_seq += 1;
                        match state.take() {
                            Some(s) => (memory.push_with_state(&m, &s), file.push_with_state(&m, &s)),
                            None => (memory.push(&m), file.push(&m)),
                        }
                    }
                    Op::PushStale => {
                        let seq = live.last().map_or(0, |m| m.seq);
                        let m = message(seq, OcppVersion::V1_6, "MeterValues", "{}");
                        (memory.push(&m), file.push(&m))
                    }
                    Op::Replace { pick, payload, clear } => {
                        if live.is_empty() {
                            continue;
                        }
                        let mut m = live[pick % live.len()].clone();
                        m.payload = payload;
                        if clear {
                            m.transaction_of = None;
                        }
                        (memory.replace(&m), file.replace(&m))
                    }
                    Op::Remove { pick } => {
                        if live.is_empty() {
                            continue;
                        }
                        let seq = live[pick % live.len()].seq;
                        match state.take() {
                            Some(s) => (memory.remove_with_state(seq, &s), file.remove_with_state(seq, &s)),
                            None => (memory.remove(seq), file.remove(seq)),
                        }
                    }
                    Op::State(s) => {
                        state = Some(s);
                        continue;
                    }
                    Op::SaveState(s) => (memory.save_state(&s), file.save_state(&s)),
                    Op::RemoveUnknown => (memory.remove(next_seq + 7), file.remove(next_seq + 7)),
                    Op::Reopen => {
                        drop(file);
                        file = FileStore::open(dir.journal()).unwrap();
                        (Ok(()), Ok(()))
                    }
                };
                prop_assert_eq!(a.is_ok(), b.is_ok(), "{:?} vs {:?}", a, b);
                prop_assert_eq!(memory.load().unwrap(), file.load().unwrap());
                prop_assert_eq!(memory.load_state().unwrap(), file.load_state().unwrap());
            }
            drop(file);
            let mut file = FileStore::open(dir.journal()).unwrap();
            prop_assert_eq!(memory.load().unwrap(), file.load().unwrap());
            prop_assert_eq!(memory.load_state().unwrap(), file.load_state().unwrap());
        }
    }
}
