//! One connection of a charge point as its handlers see it: the handle, the application's
//! per-connection state, and its application-wide state.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use ocpp_proto::{ChargePointIdentity, OcppVersion};

use crate::ChargePoint;

/// One connection of a charge point, as every handler of that connection gets it: its
/// [`ChargePoint`] handle (to call it) and the state the application made for it when it
/// connected ([`Handler::on_upgrade`](crate::Handler::on_upgrade), or the function given to
/// [`Router::new`](crate::Router::new)). Cheap to clone; derefs to the state.
///
/// `A` is the application-wide state a [`Router`](crate::Router) was given with
/// [`Router::with_state`](crate::Router::with_state) (the token list, a database pool, the
/// configuration), the same for every connection: [`Session::app`]. Which state belongs
/// where:
///
/// | state | lives | where |
/// | --- | --- | --- |
/// | per connection (what this connection said: its boot, its connectors' status) | while the connection is open | `S`, made when it connects |
/// | per application (configuration, the token list, a pool, a registry of your own) | while the server runs | `A`, given once to [`Router::with_state`](crate::Router::with_state) |
/// | durable (open transactions, transaction ids given, what an operator set) | across connections, restarts and nodes | a store `A` holds (a database; `ocpp_model`'s transaction ledger) |
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use ocpp_tokio::Session;
///
/// struct ConnectionState {
///     statuses: AtomicU32,
/// }
///
/// fn count(session: &Session<ConnectionState>) {
///     let n = session.statuses.fetch_add(1, Ordering::Relaxed) + 1;
///     println!("{}: {n} status notifications", session.identity());
/// }
/// ```
pub struct Session<S, A = ()> {
    cp: ChargePoint,
    state: Arc<S>,
    app: A,
}

impl<S> Session<S> {
    pub(crate) fn new(cp: ChargePoint, state: Arc<S>) -> Self {
        Session { cp, state, app: () }
    }

    /// This session with the application-wide state `app` (a [`Router`](crate::Router) hands
    /// its handlers this).
    pub(crate) fn with_app<A>(self, app: A) -> Session<S, A> {
        Session {
            cp: self.cp,
            state: self.state,
            app,
        }
    }
}

impl<S, A> Session<S, A> {
    /// This session without its application-wide state.
    pub(crate) fn without_app(self) -> Session<S> {
        Session {
            cp: self.cp,
            state: self.state,
            app: (),
        }
    }

    /// The application-wide state ([`Router::with_state`](crate::Router::with_state)).
    ///
    /// ```
    /// use ocpp_tokio::{v1_6, Reply, Router, Session};
    ///
    /// struct App {
    ///     accepted: Vec<String>,
    /// }
    ///
    /// async fn authorize(
    ///     s: Session<(), std::sync::Arc<App>>,
    ///     r: v1_6::AuthorizeRequest,
    /// ) -> Reply<v1_6::AuthorizeResponse> {
    ///     let known = s.app().accepted.contains(&r.id_tag);
    ///     let status = if known {
    ///         v1_6::AuthorizationStatus::Accepted
    ///     } else {
    ///         v1_6::AuthorizationStatus::Invalid
    ///     };
    ///     Ok(v1_6::AuthorizeResponse::new(v1_6::IdTagInfo::new(status)))
    /// }
    ///
    /// let app = std::sync::Arc::new(App { accepted: vec!["TAG1".into()] });
    /// let router = Router::<()>::default().with_state(app).on(authorize);
    /// # let _ = router;
    /// ```
    pub fn app(&self) -> &A {
        &self.app
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

impl<S, A: Clone> Clone for Session<S, A> {
    fn clone(&self) -> Self {
        Session {
            cp: self.cp.clone(),
            state: Arc::clone(&self.state),
            app: self.app.clone(),
        }
    }
}

impl<S, A> Deref for Session<S, A> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.state
    }
}

impl<S: fmt::Debug, A> fmt::Debug for Session<S, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("charge_point", &self.cp)
            .field("state", &self.state)
            .finish()
    }
}
