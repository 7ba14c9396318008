//! The stations connected through the controller, and the way to send them CALLs of its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};

#[cfg(doc)]
use crate::LocalController;
use crate::OwnCallError;

/// The stations connected through a [`LocalController`]: cheap to clone.
#[derive(Clone, Default)]
pub struct RelayedStations {
    inner: Arc<Mutex<HashMap<String, Mailbox>>>,
}

impl std::fmt::Debug for RelayedStations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayedStations")
            .field("connected", &self.identities())
            .finish()
    }
}

#[derive(Clone)]
pub(crate) struct Mailbox {
    pub(crate) pair: u64,
    pub(crate) commands: mpsc::Sender<OwnCallRequest>,
}

/// A CALL of the controller's own for one station ([`RelayedStations::call`]), on its way to
/// the station's pair, with where its answer goes.
pub(crate) struct OwnCallRequest {
    pub(crate) action: String,
    pub(crate) payload: String,
    pub(crate) reply: oneshot::Sender<Result<String, OwnCallError>>,
}

impl RelayedStations {
    /// The identities of the stations connected now (their upstream connection open).
    pub fn identities(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.lock().keys().cloned().collect();
        ids.sort();
        ids
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Mailbox>> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Forgets the station `identity` if its entry is still pair `pair`'s (a newer connection
    /// of the same station may have replaced it).
    pub(crate) fn unregister(&self, identity: &str, pair: u64) {
        let mut stations = self.lock();
        if stations.get(identity).is_some_and(|m| m.pair == pair) {
            stations.remove(identity);
        }
    }

    /// Sends a CALL of the controller's own (`action`, and `payload` a JSON object) to the
    /// station `identity`, and returns its answer (a CALLRESULT or CALLERROR, as text). The
    /// answer is not relayed to the central system. The CALL waits while one of the central
    /// system's is in flight at the station (and the central system's next one waits for it).
    ///
    /// ```no_run
    /// # async fn example(stations: ocpp_local_controller::RelayedStations) {
    /// let answer = stations.call("CP1", "ClearCache", "{}").await;
    /// # }
    /// ```
    ///
    /// # Errors
    /// See [`OwnCallError`].
    pub async fn call(
        &self,
        identity: &str,
        action: &str,
        payload: &str,
    ) -> Result<String, OwnCallError> {
        let mailbox = self.lock().get(identity).cloned();
        let mailbox = mailbox.ok_or(OwnCallError::NotConnected)?;
        let (reply, answer) = oneshot::channel();
        let command = OwnCallRequest {
            action: action.into(),
            payload: payload.into(),
            reply,
        };
        mailbox
            .commands
            .try_send(command)
            .map_err(|error| match error {
                mpsc::error::TrySendError::Full(_) => OwnCallError::QueueFull,
                mpsc::error::TrySendError::Closed(_) => OwnCallError::NotConnected,
            })?;
        answer.await.unwrap_or(Err(OwnCallError::Disconnected))
    }
}
