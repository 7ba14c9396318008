//! A connection's driver: drives an `ocpp_proto::Connection` on a stream, following the
//! core's drain contract (one pass drains everything), and the handler futures beside it. It
//! is a task of its own (its timer a tokio `Sleep`), or one of many on a shard
//! (`crate::shard`, which keeps every timer in one heap).

use std::collections::VecDeque;
use std::future::Future;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use ocpp_proto::{
    Answer, CallFailure, CallOutcome, Closed, Event, MessageId, RefusalReason, Rejection,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::oneshot;

use crate::charge_point::{CallReply, Link, LinkCommand, Settings};
use crate::error::SendError;
use crate::handler::PeerCertificate;
use crate::handler::{Connecting, IncomingCall};
use crate::hook::{Message, MessageEvent};
use crate::presence::PresenceTicket;
use crate::{ChargePoint, Handler, Session};
use ocpp_messages::Request;

/// Bytes read per `read` call: on the thread's stack, never in the connection's memory.
const READ_CHUNK: usize = 8 * 1024;
/// Turns of the loop before the task yields to others.
const TURNS_PER_POLL: usize = 64;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

mod shared;
mod timer;

pub(crate) use shared::ServerShared;
pub(crate) use timer::{TaskTimer, Timer};

/// The core's connection as a driver holds it: each CALL of ours carries where its outcome
/// goes, handed back by the core with that outcome (so the driver keeps no table of waiters).
pub(crate) type Connection = ocpp_proto::Connection<CallReply>;

/// The connection task: a future that ends when the connection is over.
///
/// What every connected charge point needs is inline; what only the upgrade, a SEND, a
/// cluster claim or the end need is in [`Rare`], boxed while in use: an idle connection holds
/// a pointer for it (the task is allocated at its largest state, so every inline byte is a
/// byte per connection).
pub(crate) struct Driver<S, H: Handler, T = TaskTimer> {
    shared: Arc<ServerShared<H>>,
    key: u64,
    stream: S,
    conn: Connection,
    link: Arc<Link>,
    /// The connection's one timer, armed at or before the core's deadline (see [`Timer`]).
    timer: T,
    /// Once connected: the handle and the state, as the handlers get them.
    session: Option<Session<H::State>>,
    /// The handler's answer to the CALL being handled, with the CALL's id (kept in the
    /// future's box: 16 bytes here rather than 40).
    answer: Option<BoxFuture<(MessageId<'static>, Answer)>>,
    rare: Option<Box<Rare<H>>>,
    registered: bool,
    needs_flush: bool,
    stream_failed: bool,
    finished: bool,
}

/// The driver's state that an idle connected charge point does not need (see [`Driver`]).
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
    send_retry: VecDeque<(Request, oneshot::Sender<Result<(), SendError>>)>,
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
    fn new(certificate: Option<PeerCertificate>) -> Self {
        Rare {
            certificate,
            peer: None,
            identity: None,
            upgrade: None,
            state: None,
            sends: VecDeque::new(),
            send_retry: VecDeque::new(),
            claim: None,
            claiming: None,
            closed: None,
            linger: None,
        }
    }

    /// Polls the SEND handlers in order; returns whether one finished.
    fn poll_sends(&mut self, cx: &mut Context<'_>) -> bool {
        let mut progressed = false;
        while let Some(send) = self.sends.front_mut() {
            match send.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    self.sends.pop_front();
                    progressed = true;
                }
                Poll::Pending => break,
            }
        }
        if self.sends.is_empty() && self.sends.capacity() > 0 {
            self.sends = VecDeque::new();
        }
        progressed
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

impl<S, H, T> Driver<S, H, T>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    H: Handler,
    T: Timer,
{
    /// The driver of an accepted stream whose upgrade request comes next; `conn` was created
    /// when the socket was accepted, so its handshake deadline covers TLS. `timer` is a
    /// task's own ([`TaskTimer`]) or the shard's.
    pub(crate) fn new(
        shared: Arc<ServerShared<H>>,
        key: u64,
        link: Arc<Link>,
        stream: S,
        conn: Connection,
        certificate: Option<PeerCertificate>,
        timer: T,
    ) -> Self {
        Driver {
            shared,
            key,
            stream,
            conn,
            link,
            timer,
            session: None,
            answer: None,
            rare: Some(Box::new(Rare::new(certificate))),
            registered: false,
            needs_flush: false,
            stream_failed: false,
            finished: false,
        }
    }

    /// The peer's address, for [`Connecting::peer_addr`].
    pub(crate) fn with_peer(mut self, peer: Option<std::net::SocketAddr>) -> Self {
        if peer.is_some() {
            self.rare().peer = peer;
        }
        self
    }

    /// The rarely used state, made when first needed.
    fn rare(&mut self) -> &mut Rare<H> {
        self.rare.get_or_insert_with(|| Box::new(Rare::new(None)))
    }

    /// Frees the rarely used state once nothing in it is in use.
    fn release_rare(&mut self) {
        if self.rare.as_ref().is_some_and(|rare| rare.is_unused()) {
            self.rare = None;
        }
    }

    /// The charge point's identity, once its upgrade request was read.
    fn identity(&self) -> Option<&ocpp_proto::ChargePointIdentity> {
        match (&self.session, &self.rare) {
            (Some(session), _) => Some(session.charge_point().identity()),
            (None, Some(rare)) => rare.identity.as_ref(),
            (None, None) => None,
        }
    }

    fn hook(&self, id: &MessageId<'static>, message: Message<'_>) {
        if let Some(hook) = &self.shared.hook {
            let identity = self.identity().map_or("", |i| i.as_str());
            hook(&MessageEvent {
                identity,
                id,
                message,
            });
        }
    }

    // ---- commands from handles ----

    /// Applies one command; returns false for `Abort`.
    fn on_command(&mut self, now: Instant, command: LinkCommand) -> bool {
        match command {
            LinkCommand::Call {
                request,
                reply,
                deadline,
            } => {
                let hook_request = self.shared.hook.as_ref().map(|_| request.clone());
                match self.conn.call_for(now, request, reply, deadline) {
                    Ok(id) => {
                        if let Some(request) = &hook_request {
                            self.hook(&id, Message::CallOut(request));
                        }
                    }
                    Err(refused) => {
                        let (_, reply) = refused.message;
                        reply.send(Err(CallFailure::from(refused.reason)));
                    }
                }
            }
            LinkCommand::Send { request, reply } => match &mut self.rare {
                Some(rare) if !rare.send_retry.is_empty() => {
                    rare.send_retry.push_back((request, reply));
                }
                _ => {
                    self.try_send(now, request, reply);
                }
            },
            LinkCommand::Close { code, reason } => self.conn.close(now, code, &reason),
            LinkCommand::Settings(settings) => {
                // One connection's keep-alive and timeouts (ocpp-rpc #80, ocpp-go #44/#103).
                let config = settings.apply((**self.conn.config()).clone());
                self.conn.set_config(now, Arc::new(config));
            }
            LinkCommand::Abort => return false,
        }
        true
    }

    /// Sends a SEND; keeps it for a retry when the output is full (returns true then).
    fn try_send(
        &mut self,
        now: Instant,
        request: Request,
        reply: oneshot::Sender<Result<(), SendError>>,
    ) -> bool {
        let hook_request = self.shared.hook.as_ref().map(|_| request.clone());
        match self.conn.send(now, request) {
            Ok(id) => {
                if let Some(request) = &hook_request {
                    self.hook(&id, Message::SendOut(request));
                }
                let _ = reply.send(Ok(()));
            }
            Err(refused) => match refused.reason {
                RefusalReason::Backpressure => {
                    let retry = (refused.message, reply);
                    self.rare().send_retry.push_front(retry);
                    return true;
                }
                other => {
                    let _ = reply.send(Err(SendError::from(other)));
                }
            },
        }
        false
    }

    fn retry_sends(&mut self, now: Instant) -> bool {
        let mut progressed = false;
        while let Some((request, reply)) = self.rare.as_mut().and_then(|r| r.send_retry.pop_front())
        {
            if self.try_send(now, request, reply) {
                break; // still full
            }
            progressed = true;
        }
        progressed
    }

    // ---- handler futures ----

    fn poll_handlers(&mut self, cx: &mut Context<'_>, now: Instant) -> bool {
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
                let result = self.conn.decide(now, decision);
                if result.is_err() {
                    tracing::debug!("upgrade decision after the handshake ended");
                }
            }
        }
        if let Some(answer) = &mut self.answer {
            if let Poll::Ready((id, answer)) = answer.as_mut().poll(cx) {
                progressed = true;
                self.answer = None;
                self.respond(now, id, answer);
            }
        }
        if let Some(rare) = &mut self.rare {
            progressed |= rare.poll_sends(cx);
        }
        progressed
    }

    /// The handler's answer, through the core's answer rule (which owns what happens when it
    /// cannot be sent as given); the hook sees what went out.
    fn respond(&mut self, now: Instant, id: MessageId<'static>, answer: Answer) {
        let hooked = self.shared.hook.is_some().then(|| answer.clone());
        let result = self.conn.answer(now, &id, answer);
        if let Err(error) = &result {
            tracing::warn!(identity = ?self.identity(), "answer: {error}");
        }
        let Some(answer) = hooked else {
            return;
        };
        let mut replaced = String::new();
        let Some(message) = Message::answered(&result, &answer, &mut replaced) else {
            return;
        };
        self.hook(&id, message);
    }

    // ---- events of the core ----

    /// Takes every event (the drain contract's step 1); returns whether there was one.
    fn drain_events(&mut self, now: Instant) -> bool {
        let mut any = false;
        while let Some(event) = self.conn.poll_event() {
            any = true;
            self.on_event(now, event);
        }
        any
    }

    fn on_event(&mut self, now: Instant, event: Event<CallReply>) {
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
            Event::Connected { version } => self.on_connected(now, version),
            Event::Call { id, request } => {
                if self.shared.hook.is_some() {
                    self.hook(&id, Message::CallIn(&request));
                }
                let Some(session) = self.session.clone() else {
                    let answer = Answer::not_supported(request.action());
                    return self.respond(now, id, answer);
                };
                let handler = self.shared.handler.clone();
                let call = IncomingCall::new(id.clone(), request);
                self.answer = Some(Box::pin(async move {
                    let answer = handler.on_call(&session, call).await;
                    (id, answer)
                }));
            }
            Event::Send { id, request } => {
                if self.shared.hook.is_some() {
                    self.hook(&id, Message::SendIn(&request));
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

    /// Hands the outcome of our CALL `id` to its caller, the one the core kept with it (a
    /// caller that stopped waiting does not hear of it).
    fn complete(&mut self, id: &MessageId<'static>, outcome: CallOutcome, reply: CallReply) {
        if self.shared.hook.is_some() {
            self.hook(id, Message::OutcomeIn(&outcome));
        }
        reply.send(outcome);
    }

    fn on_connected(&mut self, now: Instant, version: ocpp_proto::OcppVersion) {
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
        self.link
            .init_settings(Settings::from_config(self.conn.config()));
        let shared_state: Arc<dyn std::any::Any + Send + Sync> = state.clone();
        let _ = self.link.state.set(shared_state);
        let cp = ChargePoint::new(self.link.clone(), identity.clone(), version);
        let session = Session::new(cp.clone(), state);
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
        self.registered = true;
        if draining {
            let (code, reason) = self.shared.shutdown_close();
            self.conn.close(now, code, reason);
        }
        let handler = self.shared.handler.clone();
        tokio::spawn(async move { handler.on_connect(session).await });
    }

    /// The stream of this connection (a shard tells it what epoll reports).
    pub(crate) fn stream_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// The timer of this connection (a shard reads what was asked of it after each turn).
    pub(crate) fn timer_mut(&mut self) -> &mut T {
        &mut self.timer
    }

    // ---- the stream ----

    /// Whether the output waits for the cluster claim (the charge point has not seen its 101
    /// yet); polls the wait, which ends with the registration or when the connection closed.
    fn holding(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(registered) = self.rare.as_mut().and_then(|r| r.claiming.as_mut()) else {
            return false;
        };
        if Pin::new(registered).poll(cx).is_pending() && !self.conn.is_closed() {
            return true;
        }
        self.rare().claiming = None;
        false
    }

    /// Writes what the core has (step 2 of the drain contract), then flushes.
    fn poll_write(&mut self, cx: &mut Context<'_>, now: Instant) -> bool {
        let mut progressed = false;
        while !self.stream_failed && !self.conn.pending_transmit().is_empty() {
            match Pin::new(&mut self.stream).poll_write(cx, self.conn.pending_transmit()) {
                Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => self.fail_stream(now),
                Poll::Ready(Ok(n)) => {
                    self.conn.advance_transmit(n);
                    self.needs_flush = true;
                    progressed = true;
                }
                Poll::Pending => break,
            }
        }
        if self.needs_flush && !self.stream_failed && self.conn.pending_transmit().is_empty() {
            match Pin::new(&mut self.stream).poll_flush(cx) {
                Poll::Ready(Ok(())) => self.needs_flush = false,
                Poll::Ready(Err(_)) => self.fail_stream(now),
                Poll::Pending => {}
            }
        }
        progressed
    }

    /// Reads once into a stack buffer and hands the bytes to the core.
    fn poll_read(&mut self, cx: &mut Context<'_>, now: Instant) -> bool {
        // Uninitialized: zeroing 8 KiB on every read (three or four per CALL) was 73 % of the
        // instructions per Heartbeat, and wrote a quarter of L1d each time. `ReadBuf` tracks
        // what the stream initialized; only `filled()` is read.
        let mut chunk = [MaybeUninit::<u8>::uninit(); READ_CHUNK];
        let mut buf = ReadBuf::uninit(&mut chunk);
        match Pin::new(&mut self.stream).poll_read(cx, &mut buf) {
            Poll::Ready(Ok(())) if buf.filled().is_empty() => {
                self.conn.handle_eof(now);
                true
            }
            Poll::Ready(Ok(())) => {
                self.conn.handle_data(now, buf.filled());
                true
            }
            Poll::Ready(Err(_)) => {
                self.fail_stream(now);
                true
            }
            Poll::Pending => false,
        }
    }

    fn fail_stream(&mut self, now: Instant) {
        self.stream_failed = true;
        self.conn.handle_eof(now);
    }

    /// The connection is over: handles released, `on_close` started (once).
    fn end(&mut self) {
        if self.finished {
            return;
        }
        self.finish();
        if let (true, Some(session), Some(closed)) = (
            self.registered,
            self.session.take(),
            self.rare.as_mut().and_then(|r| r.closed.take()),
        ) {
            let handler = self.shared.handler.clone();
            tokio::spawn(async move { handler.on_close(session, *closed).await });
        }
    }
}

impl<S, H> Future for Driver<S, H, TaskTimer>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    H: Handler,
{
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.get_mut().turn(cx)
    }
}

impl<S, H, T> Driver<S, H, T>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    H: Handler,
    T: Timer,
{
    /// Drives the connection as far as it goes: ready when it is over. `cx`'s waker is the
    /// connection's own (its task's, or the one its shard made for it) and the same on every
    /// call.
    pub(crate) fn turn(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let this = self;
        for _ in 0..TURNS_PER_POLL {
            let now = Instant::now();
            let mut busy = false;
            while let Some(command) = this.link.pop(cx.waker()) {
                busy = true;
                if !this.on_command(now, command) {
                    // Shutdown past its grace period: the connection ends here.
                    this.conn.handle_eof(now);
                    this.drain_events(now);
                    this.end();
                    return Poll::Ready(());
                }
            }
            // Read, then everything the bytes caused, in this turn: a CALL read is decoded,
            // handed to the handler, answered (a handler that answers at once is ready when
            // first polled) and written before the turn ends. One turn per CALL and a last
            // one to find nothing more (three more turns when each step waited for the next).
            if !this.stream_failed && !this.conn.is_closed() && this.conn.wants_read() {
                busy |= this.poll_read(cx, now);
            }
            busy |= this.drain_events(now);
            if this.poll_handlers(cx, now) {
                busy = true;
                // An upgrade decided (Connected), an answer written: their events.
                this.drain_events(now);
            }
            if !this.holding(cx) && this.poll_write(cx, now) {
                busy = true;
                busy |= this.retry_sends(now);
            }
            if this.conn.is_closed() {
                this.drain_events(now);
                this.end();
                // Step 3: the last bytes (a close frame) get the close timeout to leave: a
                // peer that does not read is gone (the core's rule), the socket dropped.
                let until = this.conn.config().get_linger();
                let linger = *this.rare().linger.get_or_insert(now + until);
                if this.stream_failed || this.conn.pending_transmit().is_empty() || now >= linger {
                    if !this.stream_failed {
                        let _ = Pin::new(&mut this.stream).poll_shutdown(cx);
                    }
                    return Poll::Ready(());
                }
                if this.timer.arm(cx, now, linger) {
                    continue;
                }
                return Poll::Pending;
            }
            if let Some(deadline) = this.conn.poll_timeout() {
                if deadline <= now {
                    this.conn.handle_timeout(now);
                    busy = true;
                } else {
                    busy |= this.timer.arm(cx, now, deadline);
                }
            }
            if !busy {
                this.release_rare();
                return Poll::Pending;
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl<S, H: Handler, T> Driver<S, H, T> {
    // ---- the end ----

    /// Frees everything the connection held; the handles see it as gone (the socket may
    /// still be flushing its last bytes).
    fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        for command in self.link.close() {
            match command {
                LinkCommand::Call { reply, .. } => {
                    reply.send(Err(CallFailure::NotConnected));
                }
                LinkCommand::Send { reply, .. } => {
                    let _ = reply.send(Err(SendError::NotConnected));
                }
                _ => {}
            }
        }
        // Dropped without its `Closed` event (the runtime shut down), the connection drops the
        // callers of its CALLs with it: each learns `Disconnected` (they may have been written).
        let retries = self
            .rare
            .as_mut()
            .map(|r| std::mem::take(&mut r.send_retry));
        for (_, reply) in retries.into_iter().flatten() {
            let _ = reply.send(Err(SendError::NotConnected));
        }
        if let (true, Some(session)) = (self.registered, &self.session) {
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
}

impl<S, H: Handler, T> Drop for Driver<S, H, T> {
    fn drop(&mut self) {
        // Also when dropped without ending (the runtime shut down): the handles learn it.
        self.finish();
        self.shared.discharge(self.key);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A handler that accepts every identity and answers nothing (the default answers).
    pub(crate) struct Nothing;

    impl Handler for Nothing {
        type State = ();

        async fn on_upgrade(&self, _: Connecting) -> Result<(), Rejection> {
            Ok(())
        }
    }

    /// The task of every connection holds a `Driver`, so its size is memory per connection:
    /// 320 bytes on a plain socket (344 while it kept a table of waiting callers), of which
    /// the core's `Connection` is 168 (the rest: the stream 40, the session 40, the answer
    /// slot 16, six pointers and the flags). tokio rounds a task (its header and trailer, about 100 bytes, around the
    /// future) up to a multiple of 128 bytes: 512 today (768 before `Rare`), 384 below 280
    /// bytes. A regression guard; the heap per connection is measured in
    /// `tests/heap_per_connection.rs`.
    #[test]
    fn the_driver_stays_small() {
        let size = std::mem::size_of::<Driver<tokio::net::TcpStream, Nothing>>();
        let core = std::mem::size_of::<Connection>();
        eprintln!("Driver: {size} bytes, of which Connection {core}");
        assert!(size <= core + 176, "{size}");
    }
}
