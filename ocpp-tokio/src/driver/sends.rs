//! The handles' SENDs (OCPP 2.1) on their way out, one path for the server's and the
//! station's side: the message hook sees each SEND written; one the connection refuses for
//! back-pressure waits here, with every SEND after it, and goes again after the next write,
//! in order; what still waits when the connection ends learns `NotConnected`.

use std::collections::VecDeque;
use std::time::Instant;

use ocpp_messages::Request;
use ocpp_proto::{Connection, RefusalReason};
use tokio::sync::oneshot;

use crate::error::SendError;
use crate::hook::{ConnectionHook, Traffic};

/// Where a SEND's handle learns whether it was written.
pub(crate) type SendReply = oneshot::Sender<Result<(), SendError>>;

/// The SENDs the connection refused for back-pressure, oldest first (empty: no allocation).
#[derive(Default)]
pub(crate) struct SendRetry(VecDeque<(Request, SendReply)>);

impl SendRetry {
    /// Whether no SEND waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A handle's SEND: onto the connection now, unless older ones wait (it goes behind
    /// them: SENDs keep their order).
    pub(crate) fn send<C>(
        &mut self,
        conn: &mut Connection<C>,
        hook: Option<ConnectionHook<'_>>,
        now: Instant,
        request: Request,
        reply: SendReply,
    ) {
        if !self.0.is_empty() {
            self.0.push_back((request, reply));
        } else if let Some(refused) = put_send(conn, hook, now, request, reply) {
            self.0.push_front(refused);
        }
    }

    /// Bytes were written: the waiting SENDs go again, in order, until one is refused
    /// again. Whether any went.
    pub(crate) fn on_written<C>(
        &mut self,
        conn: &mut Connection<C>,
        hook: Option<ConnectionHook<'_>>,
        now: Instant,
    ) -> bool {
        let mut progressed = false;
        while let Some((request, reply)) = self.0.pop_front() {
            if let Some(refused) = put_send(conn, hook, now, request, reply) {
                self.0.push_front(refused);
                break;
            }
            progressed = true;
        }
        progressed
    }

    /// The connection is over: every SEND still waiting learns `NotConnected`.
    pub(crate) fn end(&mut self) {
        for (_, reply) in self.0.drain(..) {
            let _ = reply.send(Err(SendError::NotConnected));
        }
    }
}

/// A SEND onto the connection: the hook, if any, sees it written and `reply` learns it; a
/// SEND refused for back-pressure comes back to wait, any other refusal goes to `reply`.
fn put_send<C>(
    conn: &mut Connection<C>,
    hook: Option<ConnectionHook<'_>>,
    now: Instant,
    request: Request,
    reply: SendReply,
) -> Option<(Request, SendReply)> {
    let hooked = hook.map(|hook| (hook, request.clone()));
    match conn.send(now, request) {
        Ok(id) => {
            if let Some((hook, request)) = &hooked {
                hook.see(&id, Traffic::SendOut(request));
            }
            let _ = reply.send(Ok(()));
            None
        }
        Err(refused) if refused.reason == RefusalReason::Backpressure => {
            Some((refused.message, reply))
        }
        Err(refused) => {
            let _ = reply.send(Err(SendError::from(refused.reason)));
            None
        }
    }
}
