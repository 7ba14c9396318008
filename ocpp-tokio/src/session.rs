//! One connection of a charge point as its handlers see it: the handle and the application's
//! per-connection state.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use ocpp_server_core::{ChargePointIdentity, OcppVersion};

use crate::ChargePoint;

/// One connection of a charge point, as every handler of that connection gets it: its
/// [`ChargePoint`] handle (to call it) and the state the application made for it when it
/// connected ([`Handler::on_upgrade`](crate::Handler::on_upgrade), or the function given to
/// [`Router::new`](crate::Router::new)). Cheap to clone; derefs to the state.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use ocpp_tokio::Session;
///
/// struct Station {
///     statuses: AtomicU32,
/// }
///
/// fn count(session: &Session<Station>) {
///     let n = session.statuses.fetch_add(1, Ordering::Relaxed) + 1;
///     println!("{}: {n} status notifications", session.identity());
/// }
/// ```
pub struct Session<S> {
    cp: ChargePoint,
    state: Arc<S>,
}

impl<S> Session<S> {
    pub(crate) fn new(cp: ChargePoint, state: Arc<S>) -> Self {
        Session { cp, state }
    }

    /// The connection's handle: to call the charge point, close it, change its settings.
    pub fn charge_point(&self) -> &ChargePoint {
        &self.cp
    }

    /// The charge point's identity.
    pub fn identity(&self) -> &ChargePointIdentity {
        self.cp.identity()
    }

    /// The OCPP version of this connection.
    pub fn version(&self) -> OcppVersion {
        self.cp.version()
    }

    /// The application's state for this connection.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// The state, shared (e.g. to keep it in a task that outlives the handler).
    pub fn shared_state(&self) -> &Arc<S> {
        &self.state
    }
}

impl<S> Clone for Session<S> {
    fn clone(&self) -> Self {
        Session {
            cp: self.cp.clone(),
            state: Arc::clone(&self.state),
        }
    }
}

impl<S> Deref for Session<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.state
    }
}

impl<S: fmt::Debug> fmt::Debug for Session<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("charge_point", &self.cp)
            .field("state", &self.state)
            .finish()
    }
}
