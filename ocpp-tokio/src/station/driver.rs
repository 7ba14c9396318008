//! The station's task: connect, have the shared [`Driver`] drive one `Connection` at a time
//! on the socket (with the station's side of it, [`StationSide`]), deliver the offline queue,
//! reconnect after the back-off. What each step means for the station (which central system,
//! the boot, the heartbeat, the order of what is sent, what an end means, the status) is the
//! core's [`Lifecycle`]; this file moves its decisions to the socket, the application and the
//! handles.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ocpp_proto::station::{is_transaction_message, Lifecycle, NetworkProfiles, Next, Transmit};
use ocpp_proto::{
    Answer, CallFailure, CloseCode, Closed, Connection, ConnectionConfig, Event, MessageId,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch};

use super::network::ProfilesHook;
use super::queue::Queue;
use super::{app::*, dial::*, wire::*};
use super::{App, Cause, PermanentFailure, StationCommand, StationUrl, Status};
use crate::charge_point::{CallReply, TaskLink};
use crate::driver::{Driver, TaskTimer};
use crate::hook::{put_answer, put_call, ConnectionHook, Hook, Traffic};
use crate::{BoxFuture, ChargePoint, IncomingCall};

/// The most a TCP connect (and TLS handshake) may take.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// CALLs and SENDs a session's handle may have waiting for the task.
pub(super) const MAILBOX: usize = 64;

/// Who waits for one of our CALLs. The station holds the core's `Connection<CallWaiter>`: each
/// CALL of ours carries who waits for its outcome, handed back by the core with it (the driver
/// keeps no table of waiters). Every outcome also goes to the [`Lifecycle`] (a
/// BootNotification's is its own, whoever sent it).
pub(super) enum CallWaiter {
    /// The registration's own BootNotification or Heartbeat.
    Own,
    /// The application's CALL.
    Call(CallReply),
    /// The offline queue's message.
    Queued(u64),
}

/// The state of an open connection.
pub(super) struct Online {
    pub(super) link: Arc<TaskLink>,
    pub(super) app: Arc<dyn AppSession>,
    /// The central system's SENDs, handled one after the other in the order they came (as
    /// the server handles a charge point's, `Router::on_send`), polled by the driver.
    pub(super) sends: VecDeque<BoxFuture<()>>,
}

/// A handler's answer on its way ([`Wire::answer`]): the CALL's id, the answer.
pub(super) type PendingAnswer = (MessageId<'static>, BoxFuture<Answer>);

/// The station's task.
pub(crate) struct Task {
    pub(crate) url: StationUrl,
    pub(crate) password: Option<Vec<u8>>,
    /// The TLS configuration for `wss://` central systems (the server name is the current
    /// URL's).
    pub(crate) tls: Option<Arc<rustls::ClientConfig>>,
    /// The station across its connections: central systems, back-off, registration, held
    /// CALLs, status.
    pub(crate) lifecycle: Lifecycle<CallReply>,
    /// Where [`Station::network_profiles`](super::Station::network_profiles) reads them.
    pub(crate) profiles_watch: watch::Sender<NetworkProfiles>,
    /// The application's persistence of the profiles, called before a change is accepted
    /// (SetNetworkProfile's, when the lifecycle answers it, or the application's own).
    pub(crate) profiles_hook: Option<Arc<ProfilesHook>>,
    pub(crate) app: Arc<dyn App>,
    pub(crate) config: Arc<ConnectionConfig>,
    /// The settings before a profile's `messageTimeout` and `ocppVersion` apply.
    pub(crate) base_config: Arc<ConnectionConfig>,
    pub(crate) queue: Queue,
    pub(crate) commands: mpsc::UnboundedReceiver<StationCommand>,
    pub(crate) status: watch::Sender<Status>,
    pub(crate) rng: fastrand::Rng,
    /// What [`Station::heartbeat_interval`](super::Station::heartbeat_interval) reads.
    pub(crate) heartbeat_ms: Arc<AtomicU64>,
    /// [`StationBuilder::on_message`](super::StationBuilder::on_message).
    pub(crate) hook: Option<Hook>,
}

impl Task {
    /// Connects, runs, reconnects, until closed or a permanent failure.
    pub(crate) async fn run(mut self) -> Result<(), PermanentFailure> {
        let result = loop {
            let attempt = self.lifecycle.begin_attempt();
            self.publish();
            let opened = match self.next_target(attempt) {
                Ok(()) => self.open().await,
                Err(failed) => Err(failed),
            };
            let next = match opened {
                Ok(Some(Stream::Plain(tcp))) => self.drive(tcp).await,
                Ok(Some(Stream::Tls(tls))) => self.drive(*tls).await,
                Ok(None) => Next::Stop(Ok(())),
                Err((cause, error)) => {
                    tracing::info!(identity = %self.url.identity(), %error, "connect failed");
                    self.connect_failed(cause)
                }
            };
            self.publish();
            match next {
                Next::Stop(result) => break result,
                Next::ReconnectNow => {}
                Next::Reconnect(wait) => {
                    tracing::info!(identity = %self.url.identity(), wait_ms = wait.as_millis() as u64, status = ?self.lifecycle.status(), "reconnecting after back-off");
                    if self.offline_while(tokio::time::sleep(wait)).await.is_none() {
                        break Ok(());
                    }
                }
            }
        };
        self.lifecycle.on_stopped();
        self.publish();
        // Whoever still waits learns it now; queued messages stay in the store.
        self.commands.close();
        while let Ok(command) = self.commands.try_recv() {
            self.offline_command(command);
        }
        self.queue.stop();
        result
    }

    /// What the application sees of the lifecycle: its status (published only if it differs
    /// from the current one, so that a watcher sees every attempt once), the heartbeat
    /// interval in force, the profiles.
    pub(super) fn publish(&self) {
        let status = self.lifecycle.status();
        self.status.send_if_modified(|current| {
            let changed = *current != status;
            *current = status;
            changed
        });
        let interval = self.lifecycle.heartbeat_interval();
        let ms = u64::try_from(interval.as_millis()).unwrap_or(u64::MAX);
        self.heartbeat_ms.store(ms, Ordering::Relaxed);
        let profiles = self.lifecycle.profiles();
        self.profiles_watch.send_if_modified(|current| {
            let changed = current != profiles;
            if changed {
                current.clone_from(profiles);
            }
            changed
        });
    }

    /// The attempt failed before its WebSocket was open: the lifecycle's wait, with a draw of
    /// the task's random numbers.
    fn connect_failed(&mut self, cause: Cause) -> Next {
        let draw = self.rng.u64(..);
        self.lifecycle
            .on_connect_failed(Instant::now(), cause, draw)
    }

    /// A change of the profiles by the application, kept by the hook first.
    pub(super) fn change_profiles(&mut self, change: super::network::NetworkChange) {
        let super::network::NetworkChange { change, reply } = change;
        let mut changed = self.lifecycle.profiles().clone();
        let result = change(&mut changed)
            .map_err(super::NetworkProfileError::Rejected)
            .and_then(|()| match &self.profiles_hook {
                Some(hook) => hook(&changed).map_err(super::NetworkProfileError::NotKept),
                None => Ok(()),
            });
        if result.is_ok() {
            *self.lifecycle.profiles_mut() = changed;
            self.publish();
        }
        let _ = reply.send(result);
    }

    /// Runs `work` (a connect, the back-off's wait) while no connection is open, taking the
    /// handles' commands meanwhile; `None` if the station was closed first.
    pub(super) async fn offline_while<F: Future>(&mut self, work: F) -> Option<F::Output> {
        tokio::pin!(work);
        loop {
            tokio::select! {
                done = &mut work => return Some(done),
                command = self.commands.recv() => match command {
                    None | Some(StationCommand::Close) => return None,
                    Some(command) => self.offline_command(command),
                },
            }
        }
    }

    /// A command while no connection is open, and, connected, any but a CALL or a close:
    /// transaction messages are queued, other CALLs are not sent; a reboot, the back-off,
    /// the heartbeat interval go to the lifecycle (a reboot closes the connection through
    /// it, if there is one).
    pub(super) fn offline_command(&mut self, command: StationCommand) {
        match command {
            StationCommand::Call { request, reply } if is_transaction_message(&request) => {
                self.queue.push_call(&request, CallReply::Waiting(reply))
            }
            StationCommand::Call { reply, .. } => {
                let _ = reply.send(Err(CallFailure::NotConnected));
            }
            StationCommand::Queue {
                request,
                transaction_of,
                reply,
            } => {
                let _ = reply.send(self.queue.push(&request, transaction_of));
            }
            StationCommand::Transaction { op, reply } => {
                let _ = reply.send(self.queue.transaction(op, ocpp_messages::DateTime::now()));
            }
            StationCommand::Reboot(reason) => self.lifecycle.reboot(reason),
            StationCommand::BackOff(back_off) => self.lifecycle.set_back_off(back_off),
            StationCommand::Network(change) => self.change_profiles(change),
            StationCommand::HeartbeatInterval(interval) => {
                self.lifecycle
                    .set_heartbeat_interval(Instant::now(), interval);
                self.publish();
            }
            StationCommand::Close => {}
        }
    }

    /// One WebSocket connection, from the upgrade request to its end, driven by the shared
    /// [`Driver`] with the station's side ([`StationSide`]); then what its end means.
    pub(super) async fn drive<S: AsyncRead + AsyncWrite + Unpin + 'static>(
        &mut self,
        stream: S,
    ) -> Next {
        let now = Instant::now();
        let Some(conn) = self.dial(now) else {
            return self.connect_failed(Cause::Other);
        };
        let mut wire = Wire::new();
        let side = StationSide {
            task: self,
            wire: &mut wire,
        };
        Driver::with_side(stream, conn, TaskTimer::new(now), side).await;
        match wire.closed.take() {
            Some(closed) => self.ended(wire, *closed),
            // Not reached: the driver ends once the core closed, after its `Closed` event.
            None => self.connect_failed(Cause::Other),
        }
    }

    /// The message hook, if set, naming the station.
    pub(super) fn message_hook(&self) -> Option<ConnectionHook<'_>> {
        Some(ConnectionHook {
            hook: self.hook.as_ref()?,
            identity: self.url.identity().as_str(),
        })
    }

    /// One event of the connection but its end (which the side keeps for [`Self::ended`]);
    /// the side publishes what it changed.
    pub(super) fn on_event(
        &mut self,
        wire: &mut Wire,
        conn: &mut Connection<CallWaiter>,
        now: Instant,
        event: Event<CallWaiter>,
    ) {
        match event {
            Event::Connected { version } => {
                let link = TaskLink::new(MAILBOX);
                link.init_config(conn.config().clone());
                let cp = ChargePoint::new(link.clone(), self.url.identity().clone(), version);
                let app = self.app.session(cp);
                tokio::spawn(app.on_connect());
                self.lifecycle.on_connected(now, version);
                wire.online = Some(Online {
                    link,
                    app,
                    sends: VecDeque::new(),
                });
            }
            Event::Call { id, request } => {
                if let Some(hook) = self.message_hook() {
                    hook.see(&id, Traffic::CallIn(&request));
                }
                let Some(on) = &wire.online else { return };
                // What the station answers itself (a refusal, SecurityError, F06.FR.17; a
                // SetNetworkProfile, kept by the application's hook first) is answered here.
                let keep = |profiles: &NetworkProfiles| {
                    let kept = self
                        .profiles_hook
                        .as_deref()
                        .map_or(Ok(()), |hook| hook(profiles));
                    if let Err(error) = &kept {
                        tracing::warn!(%error, "SetNetworkProfile: the profiles were not kept");
                    }
                    kept
                };
                if let Some(answer) = self.lifecycle.on_incoming(&request, keep) {
                    let _ = put_answer(conn, self.message_hook(), now, &id, answer);
                    return;
                }
                let answer = on.app.on_call(IncomingCall::new(id.clone(), request));
                wire.answer = Some((id, answer));
            }
            Event::Send { id, request } => {
                if let Some(hook) = self.message_hook() {
                    hook.see(&id, Traffic::SendIn(&request));
                }
                if let Some(on) = &mut wire.online {
                    let send = on.app.on_send(IncomingCall::new(id, request));
                    on.sends.push_back(send);
                }
            }
            Event::CallCompleted {
                id,
                action,
                outcome,
                caller,
            } => {
                if let Some(hook) = self.message_hook() {
                    hook.see(&id, Traffic::OutcomeIn(&outcome));
                }
                let accepted = self.lifecycle.on_call_completed(now, action, &outcome);
                if action == "BootNotification" {
                    let status = self.lifecycle.status();
                    tracing::info!(identity = %self.url.identity(), ?status, "boot answered");
                }
                if let Some(version) = conn.version().filter(|_| accepted) {
                    self.queue.set_transaction_version(version);
                }
                self.completed(now, caller, outcome);
            }
            _ => {}
        }
    }

    /// A handler's answer: the lifecycle hears it (an accepted TriggerMessage is the
    /// registration's to honour), then it goes out through the core's answer rule.
    pub(super) fn on_answer(
        &mut self,
        conn: &mut Connection<CallWaiter>,
        id: MessageId<'static>,
        answer: Answer,
    ) {
        let now = Instant::now();
        self.lifecycle.on_answered(now, &answer);
        if let Err(error) = put_answer(conn, self.message_hook(), now, &id, answer) {
            tracing::warn!(identity = %self.url.identity(), "answer: {error}");
        }
    }

    /// A command of a [`Station`](super::Station) handle while connected.
    pub(super) fn on_command(
        &mut self,
        conn: &mut Connection<CallWaiter>,
        command: Option<StationCommand>,
    ) {
        match command {
            None | Some(StationCommand::Close) => self.lifecycle.stop(),
            Some(StationCommand::Call { request, reply }) => {
                self.call(conn, request, CallReply::Waiting(reply), None)
            }
            // The others mean the same connected or not.
            Some(command) => self.offline_command(command),
        }
    }

    /// An application's CALL: a transaction message joins the queue; any other waits in the
    /// lifecycle until the registration allows it (also during the handshake), or the
    /// connection ends. Its deadline (by default `call_timeout` from now) covers it held,
    /// queued and in flight (a held CALL past it ends [`CallFailure::DeadlinePassed`], never
    /// sent).
    pub(super) fn call(
        &mut self,
        conn: &Connection<CallWaiter>,
        request: ocpp_messages::Request,
        reply: CallReply,
        deadline: Option<Instant>,
    ) {
        if is_transaction_message(&request) {
            self.queue.push_call(&request, reply);
        } else {
            let call_timeout = conn.config().get_call_timeout();
            let deadline = deadline.unwrap_or_else(|| Instant::now() + call_timeout);
            self.lifecycle.hold(request, reply, deadline);
        }
    }

    /// Step 2: puts on the connection what the lifecycle says is due, in its order (the
    /// registration's own CALL, the held CALLs it allows, or a close), then the offline
    /// queue's head once allowed. Whether anything was done.
    pub(super) fn send_due(&mut self, conn: &mut Connection<CallWaiter>, now: Instant) -> bool {
        let mut progressed = false;
        while let Some(transmit) = self.lifecycle.poll_transmit(now) {
            progressed = true;
            match transmit {
                Transmit::Own(request) => {
                    let action = request.action();
                    let hook = self.message_hook();
                    match put_call(conn, hook, now, request, CallWaiter::Own, None) {
                        Ok(_) => self.lifecycle.on_call_sent(now, action),
                        Err(refused) => {
                            tracing::debug!(reason = ?refused.reason, "{action} not sent");
                            self.lifecycle.on_own_call_refused(now, action);
                        }
                    }
                }
                Transmit::Held(held) => {
                    let action = held.request.action();
                    let waiting = CallWaiter::Call(held.caller);
                    let deadline = Some(held.deadline);
                    let hook = self.message_hook();
                    match put_call(conn, hook, now, held.request, waiting, deadline) {
                        Ok(_) => self.lifecycle.on_call_sent(now, action),
                        Err(refused) => {
                            if let (_, CallWaiter::Call(reply)) = refused.message {
                                reply.send(Err(CallFailure::from(refused.reason)));
                            }
                        }
                    }
                }
                Transmit::Expired(held) => held.caller.send(Err(CallFailure::DeadlinePassed)),
                Transmit::Close(reason) => {
                    tracing::info!(identity = %self.url.identity(), reason, "closing");
                    conn.close(now, CloseCode::NORMAL, reason);
                }
            }
        }
        if self.lifecycle.may_send_queued() {
            let version = conn.version();
            if let Some((seq, request)) = version.and_then(|v| self.queue.next(now, v)) {
                progressed = true;
                let action = request.action();
                let waiting = CallWaiter::Queued(seq);
                match put_call(conn, self.message_hook(), now, request, waiting, None) {
                    Ok(_) => self.lifecycle.on_call_sent(now, action),
                    Err(_) => self.queue.unsent(seq),
                }
            }
        }
        if progressed {
            self.publish();
        }
        progressed
    }

    /// The station's next deadline beside the connection's: the lifecycle's, and the queue's
    /// retry (which matters only once its head may go).
    pub(super) fn deadline(&self) -> Option<Instant> {
        let queue = self.queue.poll_timeout();
        let queue = queue.filter(|_| self.lifecycle.may_send_queued());
        self.lifecycle.poll_timeout().into_iter().chain(queue).min()
    }

    /// One of our CALLs came to `outcome`: its waiter learns it.
    pub(super) fn completed(
        &mut self,
        now: Instant,
        waiting: CallWaiter,
        outcome: ocpp_proto::CallOutcome,
    ) {
        match waiting {
            CallWaiter::Own => {}
            CallWaiter::Call(reply) => reply.send(outcome),
            CallWaiter::Queued(seq) => self.queue.on_outcome(now, seq, outcome),
        }
    }

    /// What a close means for the station (the lifecycle says what is next): every CALL left
    /// over ends as the core says (sent: it may have run; held or queued in the core: it was
    /// not sent).
    pub(super) fn ended(&mut self, mut wire: Wire, closed: Closed<CallWaiter>) -> Next {
        let now = Instant::now();
        let draw = self.rng.u64(..);
        // The registration ends with the connection: a boot left in flight is not counted.
        let next = self.lifecycle.on_closed(now, &closed.reason, draw);
        let closed = closed.settle_callers(|call, waiting| {
            self.completed(now, waiting, Err(call.failure()));
        });
        for held in self.lifecycle.drain_held() {
            held.caller.send(Err(CallFailure::ClosedBeforeSent));
        }
        wire.send_retry.end();
        if let Some(on) = wire.online.take() {
            on.link.end();
            tokio::spawn(on.app.on_close(closed.clone()));
        }
        tracing::info!(identity = %self.url.identity(), reason = ?closed.reason, ?next, "connection ended");
        next
    }
}
