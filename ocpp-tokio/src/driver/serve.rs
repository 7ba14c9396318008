//! The central system's side of a connection: a charge point's upgrade, its CALLs and SENDs
//! to the handler, the handles' commands, the registry and the cluster claim. The
//! [`Driver`](super::Driver) pumps bytes and time; this is what it asks at each step.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use ocpp_proto::{
    Answer, CallFailure, CallOutcome, Closed, Connection, Event, MessageId, Rejection,
};
use tokio::sync::oneshot;

use super::sends::SendRetry;
use super::{DriverSide, Flow, ServerShared};
use crate::charge_point::{CallReply, LinkCommand, TaskLink};
use crate::handler::PeerCertificate;
use crate::handler::{Connecting, IncomingCall};
use crate::hook::{self, ConnectionHook, Traffic};
use crate::presence::PresenceTicket;
use crate::{BoxFuture, ChargePoint, Handler, Session};

/// The central system's side of one charge point's connection.
///
/// What every connected charge point needs is inline; what only the upgrade, a SEND, a
/// cluster claim or the end need is in [`Rare`], boxed while in use: an idle connection holds
/// a pointer for it (the task is allocated at its largest state, so every inline byte is a
/// byte per connection). Registered in the registry exactly while `session` is set (until
/// the end takes it).
pub(crate) struct Serve<H: Handler> {
    shared: Arc<ServerShared<H>>,
    link: Arc<TaskLink>,
    /// Once connected: the handle and the state, as the handlers get them.
    session: Option<Session<H::State>>,
    /// The handler's answer to the CALL being handled, with the CALL's id (kept in the
    /// future's box: 16 bytes here rather than 40).
    answer: Option<BoxFuture<(MessageId<'static>, Answer)>>,
    rare: Option<Box<Rare<H>>>,
}

/// The side's state that an idle connected charge point does not need (see [`Serve`]).
struct Rare<H: Handler> {
    certificate: Option<PeerCertificate>,
    /// The peer's address, until the upgrade request hands it to the handler.
    peer: Option<std::net::SocketAddr>,
    /// From the upgrade request until connected (then the session's handle has it).
    identity: Option<ocpp_proto::ChargePointIdentity>,
    upgrade: Option<BoxFuture<Result<H::State, Rejection>>>,
    /// The application's state for this connection, from the upgrade decision.
    state: Option<Arc<H::State>>,
    sends: VecDeque<BoxFuture<()>>,
    /// SENDs refused for back-pressure, retried after the next write.
    send_retry: SendRetry,
    /// The cluster claim this connection made.
    claim: Option<PresenceTicket>,
    /// Until the other nodes can find the charge point (or the wait is over): the output, the
    /// 101 first, waits.
    claiming: Option<oneshot::Receiver<()>>,
    closed: Option<Box<Closed>>,
    /// Once closed: until when the last bytes may take to leave.
    linger: Option<Instant>,
}

impl<H: Handler> Rare<H> {
    fn new(certificate: Option<PeerCertificate>, peer: Option<std::net::SocketAddr>) -> Self {
        Rare {
            certificate,
            peer,
            identity: None,
            upgrade: None,
            state: None,
            sends: VecDeque::new(),
            send_retry: SendRetry::default(),
            claim: None,
            claiming: None,
            closed: None,
            linger: None,
        }
    }

    /// Whether nothing in it is in use (it can be freed).
    fn is_unused(&self) -> bool {
        self.certificate.is_none()
            && self.peer.is_none()
            && self.identity.is_none()
            && self.upgrade.is_none()
            && self.state.is_none()
            && self.sends.is_empty()
            && self.send_retry.is_empty()
            && self.claim.is_none()
            && self.claiming.is_none()
            && self.closed.is_none()
            && self.linger.is_none()
    }
}

impl<H: Handler> Serve<H> {
    /// The side of an accepted stream whose upgrade request comes next; the handler learns
    /// `certificate` and `peer` from [`Connecting`].
    pub(super) fn new(
        shared: Arc<ServerShared<H>>,
        link: Arc<TaskLink>,
        certificate: Option<PeerCertificate>,
        peer: Option<std::net::SocketAddr>,
    ) -> Self {
        Serve {
            shared,
            link,
            session: None,
            answer: None,
            rare: Some(Box::new(Rare::new(certificate, peer))),
        }
    }

    /// The rarely used state, made when first needed.
    fn rare(&mut self) -> &mut Rare<H> {
        self.rare
            .get_or_insert_with(|| Box::new(Rare::new(None, None)))
    }

    /// The charge point's identity, once its upgrade request was read.
    fn identity(&self) -> Option<&ocpp_proto::ChargePointIdentity> {
        match (&self.session, &self.rare) {
            (Some(session), _) => Some(session.charge_point().identity()),
            (None, Some(rare)) => rare.identity.as_ref(),
            (None, None) => None,
        }
    }

    /// The message hook, if set, naming the charge point (nobody before its upgrade request).
    fn message_hook(&self) -> Option<ConnectionHook<'_>> {
        Some(ConnectionHook {
            hook: self.shared.hook.as_ref()?,
            identity: self.identity().map_or("", |i| i.as_str()),
        })
    }

    // ---- commands from handles ----

    /// Applies one command; returns false for `Abort`.
    fn on_command(
        &mut self,
        conn: &mut Connection<CallReply>,
        now: Instant,
        command: LinkCommand,
    ) -> bool {
        match command {
            LinkCommand::Call {
                request,
                reply,
                deadline,
            } => {
                let sent = hook::put_call(conn, self.message_hook(), now, request, reply, deadline);
                if let Err(refused) = sent {
                    let (_, reply) = refused.message;
                    reply.send(Err(CallFailure::from(refused.reason)));
                }
            }
            LinkCommand::Send { request, reply } => {
                self.with_send_retry(|retry, hook| retry.send(conn, hook, now, request, reply));
            }
            LinkCommand::Abort => return false,
            common => common.apply_common(conn, now),
        }
        true
    }

    /// Runs `f` on the SENDs waiting for a retry (the shared path, [`SendRetry`]), with the
    /// message hook; they stay in [`Rare`] only while some wait.
    fn with_send_retry<T>(
        &mut self,
        f: impl FnOnce(&mut SendRetry, Option<ConnectionHook<'_>>) -> T,
    ) -> T {
        let mut retry = self
            .rare
            .as_mut()
            .map(|rare| std::mem::take(&mut rare.send_retry))
            .unwrap_or_default();
        let result = f(&mut retry, self.message_hook());
        if !retry.is_empty() {
            self.rare().send_retry = retry;
        }
        result
    }

    /// The handler's answer, through the core's answer rule (which owns what happens when it
    /// cannot be sent as given); the hook sees what went out.
    fn respond(
        &mut self,
        conn: &mut Connection<CallReply>,
        now: Instant,
        id: MessageId<'static>,
        answer: Answer,
    ) {
        if let Err(error) = hook::put_answer(conn, self.message_hook(), now, &id, answer) {
            tracing::warn!(identity = ?self.identity(), "answer: {error}");
        }
    }

    /// Hands the outcome of our CALL `id` to its caller, the one the core kept with it (a
    /// caller that stopped waiting does not hear of it).
    fn complete(&mut self, id: &MessageId<'static>, outcome: CallOutcome, reply: CallReply) {
        if let Some(hook) = self.message_hook() {
            hook.see(id, Traffic::OutcomeIn(&outcome));
        }
        reply.send(outcome);
    }

    fn on_connected(
        &mut self,
        conn: &mut Connection<CallReply>,
        now: Instant,
        version: ocpp_proto::OcppVersion,
    ) {
        let Some(rare) = self
            .rare
            .as_mut()
            .filter(|r| r.identity.is_some() && r.state.is_some())
        else {
            return;
        };
        let (Some(identity), Some(state)) = (rare.identity.take(), rare.state.take()) else {
            return;
        };
        self.link.init_config(conn.config().clone());
        let shared_state: Arc<dyn std::any::Any + Send + Sync> = state.clone();
        let _ = self.link.state.set(shared_state);
        let cp = ChargePoint::new(self.link.clone(), identity.clone(), version);
        let session = Session::new(cp.clone(), state);
        // From here on registered (see `Serve`): nothing below returns early.
        self.session = Some(session.clone());
        let draining = self.shared.draining.load(Ordering::Acquire);
        let registry = &self.shared.registry;
        let replaced = match registry.presence() {
            Some(presence) if !draining => {
                let mut replaced = None;
                let mut registered = false;
                let joined = presence.connect(&identity, &cp, &mut || {
                    if !registered {
                        registered = true;
                        replaced = registry.register(identity.clone(), cp.clone());
                    }
                });
                if !registered {
                    replaced = registry.register(identity, cp); // a presence that forgot
                }
                if let Some(joined) = joined {
                    let rare = self.rare();
                    rare.claim = Some(joined.ticket);
                    rare.claiming = joined.registered;
                }
                replaced
            }
            _ => registry.register(identity, cp),
        };
        if let Some(old) = replaced {
            // ocpp-go #314/#358, SteVe #357: the newer connection wins.
            let why = ocpp_proto::Superseded::NewerConnection;
            old.close(ocpp_proto::Superseded::CLOSE_CODE, why.reason());
        }
        if draining {
            let (code, reason) = self.shared.shutdown_close();
            conn.close(now, code, reason);
        }
        let handler = self.shared.handler.clone();
        tokio::spawn(async move { handler.on_connect(session).await });
    }
}

impl<H: Handler> DriverSide for Serve<H> {
    type Caller = CallReply;

    #[inline]
    fn poll_commands(
        &mut self,
        cx: &mut Context<'_>,
        now: Instant,
        conn: &mut Connection<CallReply>,
    ) -> Flow {
        let mut flow = Flow::Idle;
        while let Some(command) = self.link.pop(cx.waker()) {
            flow = Flow::Busy;
            if !self.on_command(conn, now, command) {
                // Shutdown past its grace period: the connection ends here.
                return Flow::Abort;
            }
        }
        flow
    }

    #[inline]
    fn on_event(
        &mut self,
        now: Instant,
        conn: &mut Connection<CallReply>,
        event: Event<CallReply>,
    ) {
        match event {
            Event::UpgradeRequested(request) => {
                let handler = self.shared.handler.clone();
                let rare = self.rare();
                rare.identity = Some(request.identity.clone());
                let connecting =
                    Connecting::new(request, rare.certificate.take(), rare.peer.take());
                rare.upgrade = Some(Box::pin(
                    async move { handler.on_upgrade(connecting).await },
                ));
            }
            Event::Connected { version } => self.on_connected(conn, now, version),
            Event::Call { id, request } => {
                if let Some(hook) = self.message_hook() {
                    hook.see(&id, Traffic::CallIn(&request));
                }
                let Some(session) = self.session.clone() else {
                    let answer = Answer::not_supported(request.action());
                    return self.respond(conn, now, id, answer);
                };
                let handler = self.shared.handler.clone();
                let call = IncomingCall::new(id.clone(), request);
                self.answer = Some(Box::pin(async move {
                    let answer = handler.on_call(&session, call).await;
                    (id, answer)
                }));
            }
            Event::Send { id, request } => {
                if let Some(hook) = self.message_hook() {
                    hook.see(&id, Traffic::SendIn(&request));
                }
                let Some(session) = self.session.clone() else {
                    return;
                };
                let handler = self.shared.handler.clone();
                let send = IncomingCall::new(id, request);
                self.rare().sends.push_back(Box::pin(async move {
                    handler.on_send(&session, send).await
                }));
            }
            Event::CallCompleted {
                id,
                outcome,
                caller,
                ..
            } => self.complete(&id, outcome, caller),
            Event::UnmatchedResponse { id } => {
                tracing::debug!(id = id.as_str(), "answer to no CALL of ours");
            }
            Event::CallResultError { id, code, .. } => {
                tracing::debug!(
                    id = id.as_str(),
                    ?code,
                    "the charge point refused our CALLRESULT"
                );
            }
            Event::Closed(closed) => {
                // Each CALL left over ends as the core says: sent (it may have run) or not.
                let closed = closed.settle_callers(|call, reply| {
                    self.complete(&call.id, Err(call.failure()), reply);
                });
                self.rare().closed = Some(Box::new(closed));
            }
            _ => {}
        }
    }

    #[inline]
    fn poll_handlers(
        &mut self,
        cx: &mut Context<'_>,
        now: Instant,
        conn: &mut Connection<CallReply>,
    ) -> bool {
        let mut progressed = false;
        if let Some(upgrade) = self.rare.as_mut().and_then(|r| r.upgrade.as_mut()) {
            if let Poll::Ready(decision) = upgrade.as_mut().poll(cx) {
                let rare = self.rare();
                rare.upgrade = None;
                progressed = true;
                let decision = decision.map(|state| rare.state = Some(Arc::new(state)));
                if let Err(rejection) = &decision {
                    tracing::debug!(identity = ?self.identity(), %rejection, "upgrade refused");
                }
                let result = conn.decide(now, decision);
                if result.is_err() {
                    tracing::debug!("upgrade decision after the handshake ended");
                }
            }
        }
        if let Some(answer) = &mut self.answer {
            if let Poll::Ready((id, answer)) = answer.as_mut().poll(cx) {
                progressed = true;
                self.answer = None;
                self.respond(conn, now, id, answer);
            }
        }
        if let Some(rare) = &mut self.rare {
            progressed |= super::poll_sends(&mut rare.sends, cx);
        }
        progressed
    }

    /// Whether the output waits for the cluster claim (the charge point has not seen its 101
    /// yet); polls the wait, which ends with the registration or when the connection closed.
    #[inline]
    fn holds_output(&mut self, cx: &mut Context<'_>, conn: &Connection<CallReply>) -> bool {
        let Some(registered) = self.rare.as_mut().and_then(|r| r.claiming.as_mut()) else {
            return false;
        };
        if Pin::new(registered).poll(cx).is_pending() && !conn.is_closed() {
            return true;
        }
        self.rare().claiming = None;
        false
    }

    /// SENDs refused for back-pressure go again.
    #[inline]
    fn on_written(&mut self, now: Instant, conn: &mut Connection<CallReply>) -> bool {
        let waiting = self.rare.as_ref().is_some_and(|r| !r.send_retry.is_empty());
        if !waiting {
            return false;
        }
        self.with_send_retry(|retry, hook| retry.on_written(conn, hook, now))
    }

    fn linger_until(&mut self, now: Instant, linger: Duration) -> Instant {
        *self.rare().linger.get_or_insert(now + linger)
    }

    /// Frees everything the connection held; the handles see it as gone (the socket may
    /// still be flushing its last bytes).
    fn finish(&mut self) {
        self.link.end();
        // Dropped without its `Closed` event (the runtime shut down), the connection drops the
        // callers of its CALLs with it: each learns `Disconnected` (they may have been written).
        if let Some(rare) = &mut self.rare {
            rare.send_retry.end();
        }
        if let Some(session) = &self.session {
            let cp = session.charge_point();
            let identity = cp.identity();
            self.shared.registry.remove(identity, cp);
            let presence = self.shared.registry.presence();
            let claim = self.rare.as_mut().and_then(|r| r.claim.take());
            if let (Some(presence), Some(ticket)) = (presence, claim) {
                presence.disconnect(identity.as_str(), ticket);
            }
        }
    }

    /// `on_close` started, for a charge point that was connected.
    fn on_end(&mut self) {
        if let (Some(session), Some(closed)) = (
            self.session.take(),
            self.rare.as_mut().and_then(|r| r.closed.take()),
        ) {
            let handler = self.shared.handler.clone();
            tokio::spawn(async move { handler.on_close(session, *closed).await });
        }
    }

    /// Frees the rarely used state once nothing in it is in use.
    #[inline]
    fn on_idle(&mut self) {
        if self.rare.as_ref().is_some_and(|rare| rare.is_unused()) {
            self.rare = None;
        }
    }
}

impl<H: Handler> Drop for Serve<H> {
    fn drop(&mut self) {
        self.shared.discharge(&self.link);
    }
}
