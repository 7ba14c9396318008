//! [`FileStore`]: the offline queue in a journal file (the format is the
//! [`offline`](super) module's documentation).

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use ocpp_messages::OcppVersion;
use serde::{Deserialize, Serialize};

use super::{Change, OfflineStore, OfflineStoreError, Queue, Record, StoredMessage};
use crate::durable::{self, tmp_path};

/// On `open`, the journal is rewritten when it holds more dead records than live messages and
/// more than this many dead records.
const COMPACT_MIN_DEAD: usize = 32;

/// An [`OfflineStore`] in a journal file that survives a crash at any moment (see the
/// [module documentation](super) for the format and the guarantees). The queued messages are
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
    /// file if it is mostly dead records (see the [module documentation](super)).
    ///
    /// ```
    /// use ocpp_station_store::offline::{FileStore, OfflineStore};
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
    /// [`OfflineStoreError::Io`] if the file cannot be opened, read, repaired or compacted;
    /// [`OfflineStoreError::Corrupt`] if a record other than a torn last one does not read.
    pub fn open(path: impl AsRef<Path>) -> Result<FileStore, OfflineStoreError> {
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

    fn io(&self, source: io::Error) -> OfflineStoreError {
        io_error(&self.path, source)
    }

    fn check_usable(&self) -> Result<(), OfflineStoreError> {
        if self.poisoned {
            Err(OfflineStoreError::Poisoned {
                path: self.path.clone(),
            })
        } else {
            Ok(())
        }
    }

    /// Cuts the journal to `len` bytes, durably.
    fn cut_to(&mut self, len: u64) -> Result<(), OfflineStoreError> {
        self.file
            .set_len(len)
            .and_then(|()| self.file.sync_all())
            .map_err(|e| io_error(&self.path, e))?;
        self.len = len;
        Ok(())
    }

    /// Appends one record, durably; on failure, cuts the file back to its last record.
    fn append(&mut self, record: &Record) -> Result<(), OfflineStoreError> {
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
    fn rewrite(&mut self) -> Result<(), OfflineStoreError> {
        let bytes = journal_bytes(&self.queue.messages, self.queue.state.as_deref())
            .map_err(|e| self.io(e))?;
        self.rewrite_with(&bytes)
    }

    /// Writes `bytes` to `<path>.tmp` and renames it over the journal.
    fn rewrite_with(&mut self, bytes: &[u8]) -> Result<(), OfflineStoreError> {
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
    fn load(&mut self) -> Result<Vec<StoredMessage>, OfflineStoreError> {
        Ok(self.queue.to_vec())
    }

    fn push(&mut self, message: &StoredMessage) -> Result<(), OfflineStoreError> {
        self.write(Change::Push(message.clone()).into())
    }

    fn replace(&mut self, message: &StoredMessage) -> Result<(), OfflineStoreError> {
        self.write(Change::Replace(message.clone()).into())
    }

    fn remove(&mut self, seq: u64) -> Result<(), OfflineStoreError> {
        self.write(Change::Remove(seq).into())
    }

    fn push_with_state(
        &mut self,
        message: &StoredMessage,
        state: &str,
    ) -> Result<(), OfflineStoreError> {
        self.write(Record::with_state(Change::Push(message.clone()), state))
    }

    fn replace_with_state(
        &mut self,
        message: &StoredMessage,
        state: &str,
    ) -> Result<(), OfflineStoreError> {
        self.write(Record::with_state(Change::Replace(message.clone()), state))
    }

    fn remove_with_state(&mut self, seq: u64, state: &str) -> Result<(), OfflineStoreError> {
        self.write(Record::with_state(Change::Remove(seq), state))
    }

    fn save_state(&mut self, state: &str) -> Result<(), OfflineStoreError> {
        self.write(Record {
            change: None,
            state: Some(state.to_owned()),
        })
    }

    fn load_state(&mut self) -> Result<Option<String>, OfflineStoreError> {
        Ok(self.queue.state.clone())
    }
}

impl FileStore {
    /// Checks, writes durably, then applies one record.
    fn write(&mut self, record: Record) -> Result<(), OfflineStoreError> {
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
pub(super) fn encode(record: &Record) -> io::Result<Vec<u8>> {
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

fn replay(path: &Path, bytes: &[u8]) -> Result<Replay, OfflineStoreError> {
    let corrupt = |line: u64, reason: String| OfflineStoreError::Corrupt {
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

fn io_error(path: &Path, source: io::Error) -> OfflineStoreError {
    OfflineStoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Makes the directory entries of `path`'s directory durable (a created or renamed journal).
fn sync_dir(path: &Path) -> Result<(), OfflineStoreError> {
    durable::sync_dir(path).map_err(|e| io_error(durable::dir_of(path), e))
}
