//! [`MemoryStore`]: the offline queue in memory.

use super::{Change, OfflineStore, OfflineStoreError, Queue, Record, StoredMessage};

/// An [`OfflineStore`] in memory: fast, and gone when the process ends.
///
/// ```
/// use ocpp_station_store::offline::{MemoryStore, OfflineStore};
///
/// let mut store = MemoryStore::new();
/// assert!(store.is_empty());
/// assert!(store.load()?.is_empty());
/// # Ok::<(), ocpp_station_store::offline::OfflineStoreError>(())
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
    fn load(&mut self) -> Result<Vec<StoredMessage>, OfflineStoreError> {
        Ok(self.queue.to_vec())
    }

    fn push(&mut self, message: &StoredMessage) -> Result<(), OfflineStoreError> {
        self.queue.apply(Change::Push(message.clone()).into())
    }

    fn replace(&mut self, message: &StoredMessage) -> Result<(), OfflineStoreError> {
        self.queue.apply(Change::Replace(message.clone()).into())
    }

    fn remove(&mut self, seq: u64) -> Result<(), OfflineStoreError> {
        self.queue.apply(Change::Remove(seq).into())
    }

    fn push_with_state(
        &mut self,
        message: &StoredMessage,
        state: &str,
    ) -> Result<(), OfflineStoreError> {
        self.queue
            .apply(Record::with_state(Change::Push(message.clone()), state))
    }

    fn replace_with_state(
        &mut self,
        message: &StoredMessage,
        state: &str,
    ) -> Result<(), OfflineStoreError> {
        self.queue
            .apply(Record::with_state(Change::Replace(message.clone()), state))
    }

    fn remove_with_state(&mut self, seq: u64, state: &str) -> Result<(), OfflineStoreError> {
        self.queue
            .apply(Record::with_state(Change::Remove(seq), state))
    }

    fn save_state(&mut self, state: &str) -> Result<(), OfflineStoreError> {
        self.queue.state = Some(state.to_owned());
        Ok(())
    }

    fn load_state(&mut self) -> Result<Option<String>, OfflineStoreError> {
        Ok(self.queue.state.clone())
    }
}
