//! The station's task: connect, have the shared [`Driver`] drive one `Connection` at a time
//! on the socket (with the station's side of it, [`StationSide`]), boot and heartbeat by the
//! core's [`Registration`], deliver the offline queue, reconnect after the back-off. The
//! rules are the core's; this file owns the task across connections and what each step of a
//! connection means for the station.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ocpp_proto::station::{
    answer_set_network_profile, boot_request, connection_boot_reason, heartbeat_request,
    is_transaction_message, requested_by_trigger, trigger_accepted, BootAnswer, BootReason, Due,
    NetworkProfiles, Reconnect, Registration, RegistrationStatus, Release, StationInfo,
};
use ocpp_proto::{
    Answer, CallFailure, CallOutcome, CloseCode, Closed, Connection, ConnectionConfig, Event,
    MessageId,
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

/// How one connection ended.
pub(super) enum Ended {
    /// Reconnect after the back-off.
    Lost(Cause),
    /// [`Station::close`](super::Station::close).
    Closed,
    /// Retrying cannot help.
    Failed(PermanentFailure),
    /// [`Station::reboot`](super::Station::reboot): connect again at once.
    Reboot,
}

/// Who waits for one of our CALLs. The station holds the core's `Connection<CallWaiter>`: each
/// CALL of ours carries who waits for its outcome, handed back by the core with it (the driver
/// keeps no table of waiters).
pub(super) enum CallWaiter {
    Boot,
    Heartbeat,
    /// The application's CALL; a BootNotification (e.g. one a TriggerMessage asked for) also
    /// tells the registration its answer.
    Call {
        reply: CallReply,
        boot: bool,
    },
    Queued(u64),
}

/// The state of an open connection.
pub(super) struct Online {
    pub(super) registration: Registration,
    pub(super) link: Arc<TaskLink>,
    pub(super) app: Arc<dyn AppSession>,
    /// The central system's SENDs, handled one after the other in the order they came (as
    /// the server handles a charge point's, `Router::on_send`), polled by the driver.
    pub(super) sends: VecDeque<BoxFuture<()>>,
}

/// An answer from a handler: the CALL's id, the answer, and the action a TriggerMessage asked
/// for (to let it out while Pending once the trigger is Accepted).
pub(super) type HandlerAnswer = (MessageId<'static>, Answer, Option<&'static str>);

/// A handler's answer on its way ([`Wire::answer`]): the CALL's id, the action a
/// TriggerMessage asked for, the answer.
pub(super) type PendingAnswer = (MessageId<'static>, Option<&'static str>, BoxFuture<Answer>);

/// The station's task.
pub(crate) struct Task {
    pub(crate) url: StationUrl,
    pub(crate) password: Option<Vec<u8>>,
    /// The TLS configuration for `wss://` central systems (the server name is the current
    /// URL's).
    pub(crate) tls: Option<Arc<rustls::ClientConfig>>,
    /// The central systems, and which one the next attempt goes to.
    pub(crate) profiles: NetworkProfiles,
    /// Where [`Station::network_profiles`](super::Station::network_profiles) reads them.
    pub(crate) profiles_watch: watch::Sender<NetworkProfiles>,
    /// Whether the station answers SetNetworkProfile itself, and the application's
    /// persistence of the profiles.
    pub(crate) set_network_profile: Option<Option<Arc<ProfilesHook>>>,
    pub(crate) info: StationInfo,
    pub(crate) app: Arc<dyn App>,
    pub(crate) config: Arc<ConnectionConfig>,
    /// The settings before a profile's `messageTimeout` and `ocppVersion` apply.
    pub(crate) base_config: Arc<ConnectionConfig>,
    pub(crate) reconnect: Reconnect,
    pub(crate) queue: Queue,
    pub(crate) commands: mpsc::UnboundedReceiver<StationCommand>,
    pub(crate) status: watch::Sender<Status>,
    pub(crate) retry_refusals: bool,
    pub(crate) rng: fastrand::Rng,
    pub(crate) booted_before: bool,
    /// What [`Station::heartbeat_interval`](super::Station::heartbeat_interval) reads.
    pub(crate) heartbeat_ms: Arc<AtomicU64>,
    /// The reason the next BootNotification gives, if not the default.
    pub(crate) boot_reason: Option<BootReason>,
    /// How many BootNotifications may fail in a row on a connection, and the wait after one.
    pub(crate) boot_retries: (u32, Duration),
    /// [`StationBuilder::on_message`](super::StationBuilder::on_message).
    pub(crate) hook: Option<Hook>,
}

impl Task {
    /// Connects, runs, reconnects, until closed or a permanent failure.
    pub(crate) async fn run(mut self) -> Result<(), PermanentFailure> {
        let result = loop {
            let attempt = self.reconnect.begin_attempt();
            self.publish(Status::Connecting { attempt });
            let target = self.next_target();
            let opened = match target {
                Ok(()) => self.open().await,
                Err(failed) => Err(failed),
            };
            let ended = match opened {
                Ok(Some(Stream::Plain(tcp))) => self.drive(tcp).await,
                Ok(Some(Stream::Tls(tls))) => self.drive(*tls).await,
                Ok(None) => Ended::Closed,
                Err((cause, error)) => {
                    tracing::info!(identity = %self.url.identity(), %error, "connect failed");
                    Ended::Lost(cause)
                }
            };
            let cause = match ended {
                Ended::Closed => break Ok(()),
                Ended::Failed(failure) => break Err(failure),
                Ended::Reboot => {
                    self.reconnect.on_restart(Instant::now());
                    self.profiles.on_restart();
                    self.publish_profiles();
                    continue;
                }
                Ended::Lost(cause) => cause,
            };
            self.profiles.on_lost(Instant::now());
            self.publish_profiles();
            let wait = self.reconnect.on_lost(Instant::now(), self.rng.f64());
            tracing::info!(identity = %self.url.identity(), wait_ms = wait.as_millis() as u64, %cause, "reconnecting after back-off");
            self.publish(Status::Waiting { wait, cause });
            if self.offline_while(tokio::time::sleep(wait)).await.is_none() {
                break Ok(());
            }
        };
        self.publish(Status::Stopped);
        // Whoever still waits learns it now; queued messages stay in the store.
        self.commands.close();
        while let Ok(command) = self.commands.try_recv() {
            self.offline_command(command);
        }
        self.queue.stop();
        result
    }

    /// A new status, published only if it differs from the current one (so that a watcher
    /// sees every attempt once).
    pub(super) fn publish(&self, status: Status) {
        self.status.send_if_modified(|current| {
            let changed = *current != status;
            *current = status;
            changed
        });
    }

    /// A change of the profiles by the application, kept by the hook first.
    pub(super) fn change_profiles(&mut self, change: super::network::NetworkChange) {
        let super::network::NetworkChange { change, reply } = change;
        let mut changed = self.profiles.clone();
        let result = change(&mut changed)
            .map_err(super::NetworkProfileError::Rejected)
            .and_then(
                |()| match self.set_network_profile.as_ref().and_then(Option::as_ref) {
                    Some(hook) => hook(&changed).map_err(super::NetworkProfileError::NotKept),
                    None => Ok(()),
                },
            );
        if result.is_ok() {
            self.profiles = changed;
            self.publish_profiles();
        }
        let _ = reply.send(result);
    }

    /// The profiles, for [`Station::network_profiles`](super::Station::network_profiles).
    pub(super) fn publish_profiles(&self) {
        self.profiles_watch.send_if_modified(|current| {
            let changed = *current != self.profiles;
            if changed {
                current.clone_from(&self.profiles);
            }
            changed
        });
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

    /// A command while no connection is open (and, connected, one a connection does not
    /// change): transaction messages are queued, other CALLs are not sent.
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
            StationCommand::Reboot(reason) => self.boot_reason = Some(reason),
            StationCommand::BackOff(back_off) => self.reconnect.set_policy(back_off),
            StationCommand::Network(change) => self.change_profiles(change),
            StationCommand::HeartbeatInterval(interval) => self.publish_heartbeat(interval),
            StationCommand::Close => {}
        }
    }

    /// The heartbeat interval in force, for
    /// [`Station::heartbeat_interval`](super::Station::heartbeat_interval): a registration's,
    /// or one set while no connection is registered (the next one starts from it).
    pub(super) fn publish_heartbeat(&self, interval: Duration) {
        let ms = u64::try_from(interval.as_millis()).unwrap_or(u64::MAX);
        self.heartbeat_ms.store(ms, Ordering::Relaxed);
    }

    /// One WebSocket connection, from the upgrade request to its end, driven by the shared
    /// [`Driver`] with the station's side ([`StationSide`]); then what its end means.
    pub(super) async fn drive<S: AsyncRead + AsyncWrite + Unpin + 'static>(
        &mut self,
        stream: S,
    ) -> Ended {
        let now = Instant::now();
        let Some(conn) = self.dial(now) else {
            return Ended::Lost(Cause::Other);
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
            None => Ended::Lost(Cause::Other),
        }
    }

    /// The message hook, if set, naming the station.
    pub(super) fn message_hook(&self) -> Option<ConnectionHook<'_>> {
        Some(ConnectionHook {
            hook: self.hook.as_ref()?,
            identity: self.url.identity().as_str(),
        })
    }

    /// One event of the connection but its end (which the side keeps for [`Self::ended`]).
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
                let mut registration = Registration::new(now, version);
                let (attempts, interval) = self.boot_retries;
                registration.set_boot_retries(attempts, interval);
                // The interval in force goes on over a new connection: its boot's answer
                // replaces it, unless that says 0 (the station keeps its own).
                let in_force = self.heartbeat_ms.load(Ordering::Relaxed);
                registration.set_heartbeat_interval(now, Duration::from_millis(in_force));
                wire.online = Some(Online {
                    registration,
                    link,
                    app,
                    sends: VecDeque::new(),
                });
                self.publish(Status::Registering {
                    version,
                    registration: None,
                    boot_failures: 0,
                });
            }
            Event::Call { id, request } => {
                if let Some(hook) = self.message_hook() {
                    hook.see(&id, Traffic::CallIn(&request));
                }
                let Some(on) = &wire.online else { return };
                // What the registration answers itself (a refusal, SecurityError; F06.FR.17)
                // is answered here.
                if let Some(answer) = on.registration.own_answer(&request) {
                    let _ = put_answer(conn, self.message_hook(), now, &id, answer);
                    return;
                }
                if request.action() == "SetNetworkProfile" {
                    if let Some(hook) = &self.set_network_profile {
                        let keep = |profiles: &NetworkProfiles| {
                            let kept = hook.as_deref().map_or(Ok(()), |hook| hook(profiles));
                            if let Err(error) = &kept {
                                tracing::warn!(%error, "SetNetworkProfile: the profiles were not kept");
                            }
                            kept
                        };
                        let answer = answer_set_network_profile(
                            &mut self.profiles,
                            &request,
                            self.tls.is_some(),
                            keep,
                        );
                        self.publish_profiles();
                        let _ = put_answer(conn, self.message_hook(), now, &id, answer);
                        return;
                    }
                }
                let trigger = requested_by_trigger(&request);
                let answer = on.app.on_call(IncomingCall::new(id.clone(), request));
                wire.answer = Some((id, trigger, answer));
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
                outcome,
                caller,
                ..
            } => {
                if let Some(hook) = self.message_hook() {
                    hook.see(&id, Traffic::OutcomeIn(&outcome));
                }
                self.completed(now, wire.online.as_mut(), caller, outcome);
            }
            _ => {}
        }
    }

    /// A handler's answer, through the core's answer rule; an accepted TriggerMessage is the
    /// registration's to honour (its message let out while Pending, a BootNotification due).
    pub(super) fn on_answer(
        &mut self,
        wire: &mut Wire,
        conn: &mut Connection<CallWaiter>,
        (id, answer, trigger): HandlerAnswer,
    ) {
        let now = Instant::now();
        let accepted_trigger = trigger.filter(|_| trigger_accepted(&answer));
        if let Err(error) = put_answer(conn, self.message_hook(), now, &id, answer) {
            tracing::warn!(identity = %self.url.identity(), "answer: {error}");
        } else if let (Some(action), Some(on)) = (accepted_trigger, &mut wire.online) {
            on.registration.on_trigger_accepted(now, action);
        }
    }

    /// A command of a [`Station`](super::Station) handle while connected.
    pub(super) fn on_command(
        &mut self,
        wire: &mut Wire,
        conn: &mut Connection<CallWaiter>,
        command: Option<StationCommand>,
    ) {
        let now = Instant::now();
        match command {
            None | Some(StationCommand::Close) => {
                wire.closing = true;
                conn.close(now, CloseCode::NORMAL, "station stopping");
            }
            Some(StationCommand::Call { request, reply }) => {
                let reply = CallReply::Waiting(reply);
                wire.call(conn, request, reply, None, &mut self.queue)
            }
            Some(StationCommand::Reboot(reason)) => {
                self.boot_reason = Some(reason);
                wire.rebooting = true;
                conn.close(now, CloseCode::NORMAL, "reboot");
            }
            Some(StationCommand::HeartbeatInterval(interval)) => match &mut wire.online {
                Some(on) => {
                    on.registration.set_heartbeat_interval(now, interval);
                    self.publish_heartbeat(on.registration.heartbeat_interval());
                }
                None => self.publish_heartbeat(interval),
            },
            // The others mean the same connected or not.
            Some(command) => self.offline_command(command),
        }
    }

    /// Step 2: puts on the connection what is due and allowed now, in this order: the
    /// registration's boot (triggered or not) or heartbeat, the application's
    /// held CALLs the registration allows, and the offline queue's head once Accepted.
    /// Whether anything was done.
    pub(super) fn send_due(
        &mut self,
        wire: &mut Wire,
        conn: &mut Connection<CallWaiter>,
        now: Instant,
    ) -> bool {
        let Some(on) = &mut wire.online else {
            return false;
        };
        if on.registration.boot_given_up() {
            // The central system did not answer the boots: give the connection up, reconnect
            // after the back-off (which grows: the connection was never established).
            if wire.given_up.is_none() {
                let attempts = on.registration.boot_failures();
                tracing::warn!(identity = %self.url.identity(), attempts, "BootNotification unanswered: closing");
                wire.given_up = Some(Cause::BootUnanswered { attempts });
                conn.close(now, CloseCode::NORMAL, "BootNotification unanswered");
                return true;
            }
            return false;
        }
        let mut progressed = false;
        let version = on.registration.version();
        let due = match on.registration.handle_timeout(now) {
            Some(Due::Boot) => {
                let reason = connection_boot_reason(self.boot_reason, self.booted_before);
                boot_request(version, &self.info, reason).map(|r| (r, CallWaiter::Boot))
            }
            Some(Due::TriggeredBoot) => boot_request(version, &self.info, BootReason::Triggered)
                .map(|r| (r, CallWaiter::Boot)),
            Some(Due::Heartbeat) => heartbeat_request(version).map(|r| (r, CallWaiter::Heartbeat)),
            None => None,
        };
        if let Some((request, waiting)) = due {
            progressed = true;
            let action = request.action();
            match put_call(conn, self.message_hook(), now, request, waiting, None) {
                Ok(_) => on.registration.on_call_sent(now, action),
                Err(refused) => {
                    tracing::debug!(reason = ?refused.reason, "{action} not sent");
                    if matches!(refused.message.1, CallWaiter::Boot) {
                        on.registration.on_boot_failed(now);
                        self.publish_boot_failed(on);
                    }
                }
            }
        }
        // The held CALLs that are done (the core's rule): past their deadline, never sent;
        // allowed, onto the connection with the same deadline (in the core's queue and in
        // flight).
        wire.held
            .release(now, &mut on.registration, |release| match release {
                Release::Expired(held) => {
                    progressed = true;
                    held.caller.send(Err(CallFailure::DeadlinePassed));
                    false
                }
                Release::Send(held) => {
                    progressed = true;
                    let boot = held.request.action() == "BootNotification";
                    let waiting = CallWaiter::Call {
                        reply: held.caller,
                        boot,
                    };
                    let deadline = Some(held.deadline);
                    let hook = self.message_hook();
                    match put_call(conn, hook, now, held.request, waiting, deadline) {
                        Ok(_) => true,
                        Err(refused) => {
                            if let (_, CallWaiter::Call { reply, .. }) = refused.message {
                                reply.send(Err(CallFailure::from(refused.reason)));
                            }
                            false
                        }
                    }
                }
            });
        if !on.registration.is_accepted() {
            return progressed;
        }
        if let Some((seq, request)) = self.queue.next(now, version) {
            progressed = true;
            let action = request.action();
            let waiting = CallWaiter::Queued(seq);
            match put_call(conn, self.message_hook(), now, request, waiting, None) {
                Ok(_) => on.registration.on_call_sent(now, action),
                Err(_) => self.queue.unsent(seq),
            }
        }
        progressed
    }

    /// The station's next deadline beside the connection's: the registration's, the queue's
    /// retry (which matters only once its head may go), a held CALL's (which
    /// [`Self::send_due`] ends once online), the return to the first central system.
    pub(super) fn deadline(&self, wire: &Wire) -> Option<Instant> {
        let registration = wire.online.as_ref().map(|on| &on.registration);
        [
            registration.and_then(Registration::poll_timeout),
            registration
                .filter(|r| r.is_accepted())
                .and_then(|_| self.queue.poll_timeout()),
            registration.and_then(|_| wire.held.poll_timeout()),
            self.profiles
                .poll_timeout()
                .filter(|_| !wire.rebooting && !wire.closing),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// A BootNotification failed: the count, in the status.
    pub(super) fn publish_boot_failed(&self, on: &Online) {
        self.publish(Status::Registering {
            version: on.registration.version(),
            registration: on.registration.status(),
            boot_failures: on.registration.boot_failures(),
        });
    }

    /// One of our CALLs came to `outcome`.
    pub(super) fn completed(
        &mut self,
        now: Instant,
        online: Option<&mut Online>,
        waiting: CallWaiter,
        outcome: CallOutcome,
    ) {
        match waiting {
            CallWaiter::Boot => {
                let Some(on) = online else { return };
                match outcome.as_ref().ok().and_then(BootAnswer::from_response) {
                    Some(answer) => {
                        on.registration.on_boot_answer(now, &answer);
                        self.publish_heartbeat(on.registration.heartbeat_interval());
                        let version = on.registration.version();
                        let status = if answer.status == RegistrationStatus::Accepted {
                            self.booted_before = true;
                            self.boot_reason = None;
                            self.reconnect.on_accepted(now);
                            self.profiles.on_accepted(now);
                            self.publish_profiles();
                            self.queue.set_transaction_version(version);
                            Status::Accepted { version }
                        } else {
                            Status::Registering {
                                version,
                                registration: Some(answer.status),
                                boot_failures: 0,
                            }
                        };
                        tracing::info!(identity = %self.url.identity(), status = ?answer.status, interval_s = answer.interval_s, "boot answered");
                        self.publish(status);
                    }
                    None => {
                        tracing::info!(identity = %self.url.identity(), ?outcome, "boot failed");
                        on.registration.on_boot_failed(now);
                        if !on.registration.is_accepted() {
                            self.publish_boot_failed(on);
                        }
                    }
                }
            }
            CallWaiter::Heartbeat => {}
            CallWaiter::Call { reply, boot } => {
                if boot {
                    self.completed(now, online, CallWaiter::Boot, outcome.clone());
                }
                reply.send(outcome);
            }
            CallWaiter::Queued(seq) => self.queue.on_outcome(now, seq, outcome),
        }
    }

    /// What a close means for the station: every CALL left over ends as the core says (sent:
    /// it may have run; held or queued in the core: it was not sent); then reconnect, stop,
    /// or give up.
    pub(super) fn ended(&mut self, mut wire: Wire, closed: Closed<CallWaiter>) -> Ended {
        let now = Instant::now();
        // The registration ends with the connection: a boot left in flight is not counted.
        let closed = closed.settle_callers(|call, waiting| {
            self.completed(now, None, waiting, Err(call.failure()));
        });
        for held in wire.held.drain() {
            held.caller.send(Err(CallFailure::ClosedBeforeSent));
        }
        wire.send_retry.end();
        if let Some(on) = wire.online.take() {
            on.link.end();
            tokio::spawn(on.app.on_close(closed.clone()));
        }
        tracing::info!(identity = %self.url.identity(), reason = ?closed.reason, "connection ended");
        if wire.closing {
            return Ended::Closed;
        }
        if wire.rebooting {
            return Ended::Reboot;
        }
        let failure = PermanentFailure::of(&closed.reason);
        match failure {
            Some(failure) if !self.retry_refusals => Ended::Failed(failure),
            _ => Ended::Lost(wire.given_up.unwrap_or(Cause::of(&closed.reason))),
        }
    }
}
