//! The application behind a station's connection, type-erased for the task.

use std::sync::Arc;

use ocpp_proto::{Answer, Closed};

use crate::{BoxFuture, ChargePoint, Handler, IncomingCall, Session};

/// One connection's application session (type-erased [`Session`] and handler).
pub(crate) trait AppSession: Send + Sync {
    fn on_connect(&self) -> BoxFuture<()>;
    fn on_call(&self, call: IncomingCall) -> BoxFuture<Answer>;
    fn on_send(&self, send: IncomingCall) -> BoxFuture<()>;
    fn on_close(&self, closed: Closed) -> BoxFuture<()>;
}

/// A handler and the station's state: the [`App`] behind a station, whose sessions are
/// [`BoundSession`]s.
pub(super) struct BoundApp<H: Handler> {
    pub(crate) handler: Arc<H>,
    pub(crate) state: Arc<H::State>,
}

pub(super) struct BoundSession<H: Handler> {
    pub(super) handler: Arc<H>,
    pub(super) session: Session<H::State>,
}

impl<H: Handler> App for BoundApp<H> {
    fn session(&self, cp: ChargePoint) -> Arc<dyn AppSession> {
        Arc::new(BoundSession {
            handler: self.handler.clone(),
            session: Session::new(cp, self.state.clone()),
        })
    }
}

impl<H: Handler> AppSession for BoundSession<H> {
    fn on_connect(&self) -> BoxFuture<()> {
        let (handler, session) = (self.handler.clone(), self.session.clone());
        Box::pin(async move { handler.on_connect(session).await })
    }

    fn on_call(&self, call: IncomingCall) -> BoxFuture<Answer> {
        let (handler, session) = (self.handler.clone(), self.session.clone());
        Box::pin(async move { handler.on_call(&session, call).await })
    }

    fn on_send(&self, send: IncomingCall) -> BoxFuture<()> {
        let (handler, session) = (self.handler.clone(), self.session.clone());
        Box::pin(async move { handler.on_send(&session, send).await })
    }

    fn on_close(&self, closed: Closed) -> BoxFuture<()> {
        let (handler, session) = (self.handler.clone(), self.session.clone());
        Box::pin(async move { handler.on_close(session, closed).await })
    }
}

/// The application behind a station: its handler and state, type-erased for the task.
pub(crate) trait App: Send + Sync + 'static {
    /// The session of one connection.
    fn session(&self, cp: ChargePoint) -> Arc<dyn AppSession>;
}
