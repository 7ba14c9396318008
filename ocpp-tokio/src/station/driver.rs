//! The station's task: connect, drive one `Connection` at a time on the socket, boot and
//! heartbeat by the core's [`Registration`], deliver the offline queue, reconnect after the
//! back-off. The rules are the core's; this file owns sockets, tasks and time.

use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use ocpp_messages::{Request, Response};
use ocpp_proto::station::{
    boot_request, heartbeat_request, is_transaction_message, triggered_action, BootAnswer,
    BootReason, Due, NetworkProfiles, Reconnect, Registration, RegistrationStatus, StationInfo,
};
use ocpp_proto::{
    Answer, CallFailure, CallOutcome, CloseCode, CloseReason, Closed, ConnectTarget,
    ConnectionConfig, Event, MessageId,
};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch};

use super::network::{self, ProfilesHook};
use super::queue::Queue;
use super::{App, Cause, Command, PermanentFailure, Queued, StationUrl, Status};
use crate::charge_point::{CallReply, Command as LinkCommand, Link};
use crate::error::SendError;
use crate::hook::{Hook, Message, MessageEvent};
use crate::{ChargePoint, Handler, IncomingCall, Session};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Bytes read per `read`. The buffer lives as long as the connection (an async fn keeps it
/// across awaits), so it is small: 99 % of OCPP messages fit in 2 kB (OCPP-J 2.1 §5.2), a
/// larger one takes several reads. Measured on the simulator, 2,000 stations: 28.5 KiB of
/// RSS per station with 2 KiB, 34.6 with 8 KiB.
const READ_CHUNK: usize = 2 * 1024;
/// The most a TCP connect (and TLS handshake) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// CALLs and SENDs a session's handle may have waiting for the task.
const MAILBOX: usize = 64;

/// One connection's application session (type-erased [`Session`] and handler).
pub(crate) trait AppSession: Send + Sync {
    fn on_connect(&self) -> BoxFuture<()>;
    fn on_call(&self, call: IncomingCall) -> BoxFuture<Answer>;
    fn on_send(&self, send: IncomingCall) -> BoxFuture<()>;
    fn on_close(&self, closed: Closed) -> BoxFuture<()>;
}

/// A handler and the station's state.
pub(crate) struct Bound<H: Handler> {
    pub(crate) handler: Arc<H>,
    pub(crate) state: Arc<H::State>,
}

struct BoundSession<H: Handler> {
    handler: Arc<H>,
    session: Session<H::State>,
}

impl<H: Handler> App for Bound<H> {
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

/// How one connection ended.
enum Ended {
    /// Reconnect after the back-off.
    Lost(Cause),
    /// [`Station::close`](super::Station::close).
    Closed,
    /// Retrying cannot help.
    Failed(PermanentFailure),
    /// [`Station::reboot`](super::Station::reboot): connect again at once.
    Reboot,
}

/// The core's connection as the station holds it: each CALL of ours carries who waits for
/// its outcome, handed back by the core with it (the driver keeps no table of waiters).
type Connection = ocpp_proto::Connection<Outgoing>;

/// Who waits for one of our CALLs.
enum Outgoing {
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
struct Online {
    registration: Registration,
    link: Arc<Link>,
    app: Arc<dyn AppSession>,
    /// The central system's SENDs, handled one after the other in the order they came (as
    /// the server handles a charge point's, `Router::on_send`), by one task per connection.
    sends: mpsc::UnboundedSender<BoxFuture<()>>,
}

/// The task that runs a connection's SEND handlers in order; it ends once the connection's
/// sender is dropped and the SENDs already received are handled.
fn spawn_sends() -> mpsc::UnboundedSender<BoxFuture<()>> {
    let (sends, mut queue) = mpsc::unbounded_channel::<BoxFuture<()>>();
    tokio::spawn(async move {
        while let Some(send) = queue.recv().await {
            send.await;
        }
    });
    sends
}

/// An answer from a handler: the CALL's id, the answer, and the action a TriggerMessage asked
/// for (to let it out while Pending once the trigger is Accepted).
type HandlerAnswer = (MessageId<'static>, Answer, Option<&'static str>);

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
    pub(crate) commands: mpsc::UnboundedReceiver<Command>,
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
            if !self.wait_offline(Instant::now() + wait).await {
                break Ok(());
            }
        };
        self.publish(Status::Stopped);
        // Whoever still waits learns it now; queued messages stay in the store.
        self.commands.close();
        while let Ok(command) = self.commands.try_recv() {
            self.offline_command(command);
        }
        result
    }

    /// A new status, published only if it differs from the current one (so that a watcher
    /// sees every attempt once).
    fn publish(&self, status: Status) {
        self.status.send_if_modified(|current| {
            let changed = *current != status;
            *current = status;
            changed
        });
    }

    /// The central system of the next attempt, by the core's [`NetworkProfiles`]: the URL
    /// connected to from now on (unchanged when there is no profile at all).
    fn next_target(&mut self) -> Result<(), (Cause, io::Error)> {
        let Some(attempt) = self.profiles.begin_attempt() else {
            return Ok(());
        };
        self.publish_profiles();
        self.config = network::config_for(&self.base_config, &attempt.profile);
        let url = network::url_for(&attempt.profile, self.url.identity()).map_err(|e| {
            (
                Cause::Other,
                io::Error::new(io::ErrorKind::InvalidInput, e.to_string()),
            )
        })?;
        if url != self.url {
            tracing::info!(identity = %self.url.identity(), slot = attempt.profile.slot, url = %attempt.profile.csms_url, fallback = attempt.fallback, "central system");
        }
        self.url = url;
        Ok(())
    }

    /// A change of the profiles by the application, kept by the hook first.
    fn change_profiles(&mut self, change: super::NetworkChange) {
        let super::NetworkChange { change, reply } = change;
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
    fn publish_profiles(&self) {
        self.profiles_watch.send_if_modified(|current| {
            let changed = *current != self.profiles;
            if changed {
                current.clone_from(&self.profiles);
            }
            changed
        });
    }

    /// TCP, then TLS: the stream (`None`: closed meanwhile), or why not.
    async fn open(&mut self) -> Result<Option<Stream>, (Cause, io::Error)> {
        let authority = self.url.authority().to_owned();
        let tls = match (self.url.tls(), &self.tls) {
            (false, _) => None,
            (true, None) => {
                let error = io::Error::new(io::ErrorKind::InvalidInput, "wss:// without TLS");
                return Err((Cause::Tls, error));
            }
            (true, Some(config)) => {
                let name = ServerName::try_from(self.url.server_name().to_owned())
                    .map_err(|e| (Cause::Tls, io::Error::new(io::ErrorKind::InvalidInput, e)))?;
                Some((config.clone(), name))
            }
        };
        let connect = async move {
            let tcp = TcpStream::connect(authority)
                .await
                .map_err(|e| (Cause::Connect(e.kind()), e))?;
            let _ = tcp.set_nodelay(true);
            let Some((config, name)) = tls else {
                return Ok(Stream::Plain(tcp));
            };
            let connector = tokio_rustls::TlsConnector::from(config);
            let tls = connector
                .connect(name, tcp)
                .await
                .map_err(|e| (Cause::Tls, e))?;
            Ok(Stream::Tls(Box::new(tls)))
        };
        let connect = tokio::time::timeout(CONNECT_TIMEOUT, connect);
        tokio::pin!(connect);
        loop {
            tokio::select! {
                result = &mut connect => {
                    return match result {
                        Ok(Ok(stream)) => Ok(Some(stream)),
                        Ok(Err(failed)) => Err(failed),
                        Err(_) => Err((
                            Cause::Connect(io::ErrorKind::TimedOut),
                            io::Error::new(io::ErrorKind::TimedOut, "connect timed out"),
                        )),
                    };
                }
                command = self.commands.recv() => match command {
                    None | Some(Command::Close) => return Ok(None),
                    Some(command) => self.offline_command(command),
                },
            }
        }
    }

    /// Waits until `until` while disconnected, taking commands; `false` if closed.
    async fn wait_offline(&mut self, until: Instant) -> bool {
        let sleep = tokio::time::sleep_until(until.into());
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                _ = &mut sleep => return true,
                command = self.commands.recv() => match command {
                    None | Some(Command::Close) => return false,
                    Some(command) => self.offline_command(command),
                },
            }
        }
    }

    /// A command while no connection is open: transaction messages are queued, other CALLs
    /// are not sent.
    fn offline_command(&mut self, command: Command) {
        match command {
            Command::Call { request, reply } if is_transaction_message(&request) => {
                queue_call(&mut self.queue, request, CallReply::Waiting(reply))
            }
            Command::Call { reply, .. } => {
                let _ = reply.send(Err(CallFailure::NotConnected));
            }
            Command::Queue {
                request,
                transaction_of,
                reply,
            } => self.queue_message(&request, transaction_of, reply),
            Command::Transaction { op, reply } => self.transaction(op, reply),
            Command::Reboot(reason) => self.boot_reason = Some(reason),
            Command::BackOff(back_off) => self.reconnect.set_policy(back_off),
            Command::Network(change) => self.change_profiles(change),
            Command::HeartbeatInterval(interval) => self.remember_heartbeat(interval),
            Command::Close => {}
        }
    }

    /// The heartbeat interval set while no connection is registered: the next one starts
    /// from it ([`Station::heartbeat_interval`](super::Station::heartbeat_interval) reads it).
    fn remember_heartbeat(&self, interval: Duration) {
        let ms = u64::try_from(interval.as_millis()).unwrap_or(u64::MAX);
        self.heartbeat_ms.store(ms, Ordering::Relaxed);
    }

    fn queue_message(
        &mut self,
        request: &Request,
        transaction_of: Option<u64>,
        reply: oneshot::Sender<Result<Queued, super::QueueError>>,
    ) {
        let result = self
            .queue
            .push(request, transaction_of)
            .map(|(seq, outcome)| Queued { seq, outcome });
        let _ = reply.send(result);
    }

    /// A change of the station's transactions: its message and state in the store.
    fn transaction(
        &mut self,
        op: super::queue::TransactionOp,
        reply: oneshot::Sender<Result<Queued, super::QueueError>>,
    ) {
        let result = self
            .queue
            .transaction(op, ocpp_messages::DateTime::now())
            .map(|(seq, outcome)| Queued { seq, outcome });
        let _ = reply.send(result);
    }

    /// One WebSocket connection, from the upgrade request to its end: the core's drain
    /// contract (1. every event, 2. what is due goes on the connection, 3. write, read, sleep
    /// until the next deadline), with the handlers' answers and the handles' commands beside it.
    async fn drive<S: AsyncRead + AsyncWrite + Unpin>(&mut self, stream: S) -> Ended {
        let Some(mut wire) = self.dial(Instant::now()) else {
            return Ended::Lost(Cause::Other);
        };
        let (mut reader, mut writer) = tokio::io::split(stream);
        let mut buf = vec![0u8; READ_CHUNK];
        let (answers_tx, mut answers) = mpsc::unbounded_channel::<HandlerAnswer>();
        let sleep = tokio::time::sleep_until(Instant::now().into());
        tokio::pin!(sleep);
        loop {
            let now = Instant::now();
            // 1. Everything the connection has to say.
            while let Some(event) = wire.conn.poll_event() {
                let Event::Closed(closed) = event else {
                    self.on_event(&mut wire, now, event, &answers_tx);
                    continue;
                };
                // The close frame, if any, goes out before the socket is dropped.
                if !wire.conn.pending_transmit().is_empty() {
                    let last = writer.write_all(wire.conn.pending_transmit());
                    let linger = wire.conn.config().get_linger();
                    let _ = tokio::time::timeout(linger, last).await;
                }
                let _ = writer.shutdown().await;
                return self.ended(wire, *closed);
            }
            // 2. What is due: boot, heartbeat, held CALLs, the queue's head.
            self.send_due(&mut wire, now);
            // 3. Write what the socket takes, read, wait for the next deadline or command.
            let deadline = self.deadline(&wire);
            if let Some(deadline) = deadline {
                sleep.as_mut().reset(deadline.into());
            }
            let link = wire.online.as_ref().map(|on| on.link.clone());
            let has_output = !wire.conn.pending_transmit().is_empty();
            tokio::select! {
                // Answers first: a CALL a handler caused goes out after the handler's answer.
                biased;
                Some(answer) = answers.recv() => self.on_answer(&mut wire, answer),
                written = writer.write(wire.conn.pending_transmit()), if has_output => match written {
                    Ok(0) | Err(_) => wire.conn.handle_eof(Instant::now()),
                    Ok(n) => {
                        wire.conn.advance_transmit(n);
                        if wire.conn.pending_transmit().is_empty() && writer.flush().await.is_err() {
                            wire.conn.handle_eof(Instant::now());
                        }
                    }
                },
                read = reader.read(&mut buf), if wire.conn.wants_read() => match read {
                    Ok(0) | Err(_) => wire.conn.handle_eof(Instant::now()),
                    Ok(n) => wire.conn.handle_data(Instant::now(), &buf[..n]),
                },
                () = &mut sleep, if deadline.is_some() => {
                    let now = Instant::now();
                    if wire.conn.poll_timeout().is_some_and(|t| t <= now) {
                        wire.conn.handle_timeout(now);
                    }
                    if !wire.rebooting && !wire.closing && self.profiles.handle_timeout(now) {
                        // Back to the higher-priority central systems (the 1.6 policy).
                        tracing::info!(identity = %self.url.identity(), "returning to the first central system");
                        wire.rebooting = true;
                        wire.conn.close(now, CloseCode::NORMAL, "returning to the first central system");
                    }
                }
                command = self.commands.recv(), if !wire.closing => self.on_command(&mut wire, command),
                command = next_link_command(link.as_deref()), if link.is_some() => {
                    on_link_command(&mut wire, command, &mut self.queue);
                }
            }
        }
    }

    /// The upgrade request of a new connection (`None`: it could not be built).
    fn dial(&mut self, now: Instant) -> Option<Wire> {
        let mut target = ConnectTarget::new(
            self.url.authority(),
            self.url.endpoint(),
            self.url.identity().clone(),
        );
        if let Some(password) = &self.password {
            target = target.with_password(password);
        }
        let mut key = [0u8; 16];
        self.rng.fill(&mut key);
        let seed = self.rng.u64(..);
        match Connection::connect_with_callers(now, self.config.clone(), &target, key, seed) {
            Ok(conn) => Some(Wire::new(conn)),
            Err(error) => {
                tracing::warn!(identity = %self.url.identity(), %error, "upgrade request not built");
                None
            }
        }
    }

    /// One event of the connection but its end.
    fn hook(&self, id: &MessageId<'static>, message: Message<'_>) {
        if let Some(hook) = &self.hook {
            hook(&MessageEvent {
                identity: self.url.identity().as_str(),
                id,
                message,
            });
        }
    }

    /// A CALL onto the connection for `waiting` (with a deadline, if any); the hook sees it
    /// once it went. Refused, `waiting` comes back with the request.
    fn put_call(
        &self,
        conn: &mut Connection,
        now: Instant,
        request: Request,
        waiting: Outgoing,
        deadline: Option<Instant>,
    ) -> Result<MessageId<'static>, ocpp_proto::Refused<(Request, Outgoing)>> {
        let hooked = self.hook.as_ref().map(|_| request.clone());
        let sent = conn.call_for(now, request, waiting, deadline);
        if let (Ok(id), Some(request)) = (&sent, &hooked) {
            self.hook(id, Message::CallOut(request));
        }
        sent
    }

    /// An answer through the core's answer rule; the hook sees what went out.
    fn put_answer(
        &self,
        wire: &mut Wire,
        now: Instant,
        id: &MessageId<'static>,
        answer: Answer,
    ) -> Result<(), ocpp_proto::AnswerError> {
        let hooked = self.hook.as_ref().map(|_| answer.clone());
        let result = wire.conn.answer(now, id, answer);
        let Some(answer) = hooked else {
            return result;
        };
        let mut replaced = String::new();
        let Some(message) = Message::answered(&result, &answer, &mut replaced) else {
            return result;
        };
        self.hook(id, message);
        result
    }

    fn on_event(
        &mut self,
        wire: &mut Wire,
        now: Instant,
        event: Event<Outgoing>,
        answers: &mpsc::UnboundedSender<HandlerAnswer>,
    ) {
        match event {
            Event::Connected { version } => {
                let link = Link::new(MAILBOX);
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
                    sends: spawn_sends(),
                });
                self.publish(Status::Registering {
                    version,
                    registration: None,
                    boot_failures: 0,
                });
            }
            Event::Call { id, request } => {
                if self.hook.is_some() {
                    self.hook(&id, Message::CallIn(&request));
                }
                let Some(on) = &wire.online else { return };
                // What the registration does not allow is refused here (SecurityError).
                if let Err(refusal) = on.registration.check_incoming(request.action()) {
                    let _ = self.put_answer(wire, now, &id, Answer::Error(refusal));
                    return;
                }
                if request.action() == "SetNetworkProfile" {
                    if let Some(hook) = &self.set_network_profile {
                        let answer = network::set_network_profile(
                            &mut self.profiles,
                            hook.as_deref(),
                            &request,
                            self.tls.is_some(),
                        );
                        self.publish_profiles();
                        let _ = self.put_answer(wire, now, &id, answer);
                        return;
                    }
                }
                let trigger = requested_by_trigger(&request);
                let answer = on.app.on_call(IncomingCall::new(id.clone(), request));
                let answers = answers.clone();
                tokio::spawn(async move {
                    let _ = answers.send((id, answer.await, trigger));
                });
            }
            Event::Send { id, request } => {
                if self.hook.is_some() {
                    self.hook(&id, Message::SendIn(&request));
                }
                if let Some(on) = &wire.online {
                    let _ = on
                        .sends
                        .send(on.app.on_send(IncomingCall::new(id, request)));
                }
            }
            Event::CallCompleted {
                id,
                outcome,
                caller,
                ..
            } => {
                if self.hook.is_some() {
                    self.hook(&id, Message::OutcomeIn(&outcome));
                }
                self.completed(now, wire.online.as_mut(), caller, outcome);
            }
            _ => {}
        }
    }

    /// A handler's answer, through the core's answer rule; an accepted TriggerMessage lets
    /// its message out while Pending (and a triggered BootNotification goes now).
    fn on_answer(&mut self, wire: &mut Wire, (id, answer, trigger): HandlerAnswer) {
        let accepted_trigger = trigger.filter(|_| answer_accepted(&answer));
        if let Err(error) = self.put_answer(wire, Instant::now(), &id, answer) {
            tracing::warn!(identity = %self.url.identity(), "answer: {error}");
        } else if let (Some(action), Some(on)) = (accepted_trigger, &mut wire.online) {
            on.registration.on_trigger_accepted(action);
            wire.boot_now |= action == "BootNotification";
        }
    }

    /// A command of a [`Station`](super::Station) handle while connected.
    fn on_command(&mut self, wire: &mut Wire, command: Option<Command>) {
        let now = Instant::now();
        match command {
            None | Some(Command::Close) => {
                wire.closing = true;
                wire.conn.close(now, CloseCode::NORMAL, "station stopping");
            }
            Some(Command::Call { request, reply }) => {
                wire.call(request, CallReply::Waiting(reply), None, &mut self.queue)
            }
            Some(Command::Queue {
                request,
                transaction_of,
                reply,
            }) => self.queue_message(&request, transaction_of, reply),
            Some(Command::Transaction { op, reply }) => self.transaction(op, reply),
            Some(Command::Reboot(reason)) => {
                self.boot_reason = Some(reason);
                wire.rebooting = true;
                wire.conn.close(now, CloseCode::NORMAL, "reboot");
            }
            Some(Command::HeartbeatInterval(interval)) => match &mut wire.online {
                Some(on) => {
                    on.registration.set_heartbeat_interval(now, interval);
                    self.publish_heartbeat(on);
                }
                None => self.remember_heartbeat(interval),
            },
            Some(Command::BackOff(back_off)) => self.reconnect.set_policy(back_off),
            Some(Command::Network(change)) => self.change_profiles(change),
        }
    }

    /// Step 2: puts on the connection what is due and allowed now, in this order: a boot a
    /// TriggerMessage asked for, the registration's boot or heartbeat, the application's
    /// held CALLs the registration allows, and the offline queue's head once Accepted.
    fn send_due(&mut self, wire: &mut Wire, now: Instant) {
        let Some(on) = &mut wire.online else { return };
        if on.registration.boot_given_up() {
            // The central system did not answer the boots: give the connection up, reconnect
            // after the back-off (which grows: the connection was never established).
            if wire.given_up.is_none() {
                let attempts = on.registration.boot_failures();
                tracing::warn!(identity = %self.url.identity(), attempts, "BootNotification unanswered: closing");
                wire.given_up = Some(Cause::BootUnanswered { attempts });
                wire.conn
                    .close(now, CloseCode::NORMAL, "BootNotification unanswered");
            }
            return;
        }
        let version = on.registration.version();
        if std::mem::take(&mut wire.boot_now) {
            if let Some(request) = boot_request(version, &self.info, BootReason::Triggered) {
                if self
                    .put_call(&mut wire.conn, now, request, Outgoing::Boot, None)
                    .is_ok()
                {
                    on.registration.on_call_sent(now, "BootNotification");
                }
            }
        }
        let due = match on.registration.handle_timeout(now) {
            Some(Due::Boot) => {
                let reason = self.boot_reason.unwrap_or(if self.booted_before {
                    BootReason::Reconnect
                } else {
                    BootReason::PowerUp
                });
                boot_request(version, &self.info, reason).map(|r| (r, Outgoing::Boot))
            }
            Some(Due::Heartbeat) => heartbeat_request(version).map(|r| (r, Outgoing::Heartbeat)),
            None => None,
        };
        if let Some((request, waiting)) = due {
            let action = request.action();
            match self.put_call(&mut wire.conn, now, request, waiting, None) {
                Ok(_) => on.registration.on_call_sent(now, action),
                Err(refused) => {
                    tracing::debug!(reason = ?refused.reason, "{action} not sent");
                    if matches!(refused.message.1, Outgoing::Boot) {
                        on.registration.on_boot_failed(now);
                        self.publish_boot_failed(on);
                    }
                }
            }
        }
        for held in std::mem::take(&mut wire.held) {
            let Held {
                request,
                reply,
                deadline,
            } = held;
            if deadline <= now {
                // Held past its deadline (the registration never allowed it): never sent.
                reply.send(Err(CallFailure::DeadlinePassed));
                continue;
            }
            if !on.registration.may_send(request.action()) {
                wire.held.push_back(Held {
                    request,
                    reply,
                    deadline,
                });
                continue;
            }
            let action = request.action();
            // The same deadline holds in the core's queue and in flight.
            let boot = action == "BootNotification";
            let waiting = Outgoing::Call { reply, boot };
            match self.put_call(&mut wire.conn, now, request, waiting, Some(deadline)) {
                Ok(_) => on.registration.on_call_sent(now, action),
                Err(refused) => {
                    if let (_, Outgoing::Call { reply, .. }) = refused.message {
                        reply.send(Err(CallFailure::from(refused.reason)));
                    }
                }
            }
        }
        if !on.registration.is_accepted() {
            return;
        }
        if let Some((seq, request)) = self.queue.next(now, version) {
            let action = request.action();
            match self.put_call(&mut wire.conn, now, request, Outgoing::Queued(seq), None) {
                Ok(_) => on.registration.on_call_sent(now, action),
                Err(_) => self.queue.unsent(seq),
            }
        }
    }

    /// The next deadline: the connection's, the registration's, the queue's retry (which
    /// matters only once its head may go).
    fn deadline(&self, wire: &Wire) -> Option<Instant> {
        let registration = wire.online.as_ref().map(|on| &on.registration);
        [
            wire.conn.poll_timeout(),
            registration.and_then(Registration::poll_timeout),
            registration
                .filter(|r| r.is_accepted())
                .and_then(|_| self.queue.poll_timeout()),
            wire.held.iter().map(|held| held.deadline).min(),
            self.profiles
                .poll_timeout()
                .filter(|_| !wire.rebooting && !wire.closing),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// A BootNotification failed: the count, in the status.
    fn publish_boot_failed(&self, on: &Online) {
        self.publish(Status::Registering {
            version: on.registration.version(),
            registration: on.registration.status(),
            boot_failures: on.registration.boot_failures(),
        });
    }

    fn publish_heartbeat(&self, on: &Online) {
        let ms = on.registration.heartbeat_interval().as_millis();
        self.heartbeat_ms
            .store(u64::try_from(ms).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// One of our CALLs came to `outcome`.
    fn completed(
        &mut self,
        now: Instant,
        online: Option<&mut Online>,
        waiting: Outgoing,
        outcome: CallOutcome,
    ) {
        match waiting {
            Outgoing::Boot => {
                let Some(on) = online else { return };
                match outcome.as_ref().ok().and_then(BootAnswer::from_response) {
                    Some(answer) => {
                        on.registration.on_boot_answer(now, &answer);
                        self.publish_heartbeat(on);
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
                        tracing::info!(identity = %self.url.identity(), status = ?answer.status, interval_s = answer.interval.as_secs(), "boot answered");
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
            Outgoing::Heartbeat => {}
            Outgoing::Call { reply, boot } => {
                if boot {
                    self.completed(now, online, Outgoing::Boot, outcome.clone());
                }
                reply.send(outcome);
            }
            Outgoing::Queued(seq) => self.queue.on_outcome(now, seq, outcome),
        }
    }

    /// What a close means for the station: every CALL left over ends as the core says (sent:
    /// it may have run; held or queued in the core: it was not sent); then reconnect, stop,
    /// or give up.
    fn ended(&mut self, mut wire: Wire, closed: Closed<Outgoing>) -> Ended {
        let now = Instant::now();
        // The registration ends with the connection: a boot left in flight is not counted.
        let closed = closed.settle_callers(|call, waiting| {
            self.completed(now, None, waiting, Err(call.failure()));
        });
        for held in wire.held.drain(..) {
            held.reply.send(Err(CallFailure::ClosedBeforeSent));
        }
        if let Some(on) = wire.online.take() {
            for command in on.link.close() {
                if let LinkCommand::Call { reply, .. } = command {
                    reply.send(Err(CallFailure::NotConnected));
                }
            }
            tokio::spawn(on.app.on_close(closed.clone()));
        }
        tracing::info!(identity = %self.url.identity(), reason = ?closed.reason, "connection ended");
        if wire.closing {
            return Ended::Closed;
        }
        if wire.rebooting {
            return Ended::Reboot;
        }
        let failure = match &closed.reason {
            CloseReason::UpgradeRefused {
                status: Some(401), ..
            } => Some(PermanentFailure::Unauthorized),
            CloseReason::UpgradeRefused {
                status: Some(403), ..
            } => Some(PermanentFailure::Forbidden),
            CloseReason::NoCommonVersion => Some(PermanentFailure::NoCommonVersion),
            _ => None,
        };
        match failure {
            Some(failure) if !self.retry_refusals => Ended::Failed(failure),
            _ => Ended::Lost(wire.given_up.unwrap_or(Cause::of(&closed.reason))),
        }
    }
}

/// One connection of the station and what waits on it.
struct Wire {
    conn: Connection,
    /// Once the WebSocket is open.
    online: Option<Online>,
    /// The application's CALLs the registration does not allow yet.
    held: VecDeque<Held>,
    /// [`Station::close`](super::Station::close) closed it.
    closing: bool,
    /// [`Station::reboot`](super::Station::reboot) closed it.
    rebooting: bool,
    /// A TriggerMessage(BootNotification) was accepted: boot now.
    boot_now: bool,
    /// The station closed it for this reason (the boot went unanswered).
    given_up: Option<Cause>,
}

impl Wire {
    fn new(conn: Connection) -> Self {
        Wire {
            conn,
            online: None,
            held: VecDeque::new(),
            closing: false,
            rebooting: false,
            boot_now: false,
            given_up: None,
        }
    }

    /// An application's CALL: a transaction message joins the queue; any other waits here
    /// until the registration allows it (also during the handshake), or the connection ends.
    /// Its deadline (by default the call timeout from now) covers it held, queued and in
    /// flight (a held CALL past it ends [`CallFailure::DeadlinePassed`], never sent).
    fn call(
        &mut self,
        request: Request,
        reply: CallReply,
        deadline: Option<Instant>,
        queue: &mut Queue,
    ) {
        if is_transaction_message(&request) {
            queue_call(queue, request, reply);
        } else {
            let deadline =
                deadline.unwrap_or_else(|| Instant::now() + self.conn.config().get_call_timeout());
            self.held.push_back(Held {
                request,
                reply,
                deadline,
            });
        }
    }
}

/// An application's CALL that waits for the registration to allow it.
struct Held {
    request: Request,
    reply: CallReply,
    /// Not sent after this; answered by then.
    deadline: Instant,
}

/// A command of the session's handle ([`Session::charge_point`](crate::Session::charge_point)):
/// its CALLs go the way of [`Station::call`](super::Station::call)'s.
fn on_link_command(wire: &mut Wire, command: LinkCommand, queue: &mut Queue) {
    let now = Instant::now();
    match command {
        LinkCommand::Call {
            request,
            reply,
            deadline,
        } => wire.call(request, reply, deadline, queue),
        LinkCommand::Send { request, reply } => {
            let result = wire
                .conn
                .send(now, request)
                .map(|_| ())
                .map_err(|refused| SendError::from(refused.reason));
            let _ = reply.send(result);
        }
        LinkCommand::Close { code, reason } => wire.conn.close(now, code, &reason),
        LinkCommand::Settings(settings) => {
            let config = settings.apply((**wire.conn.config()).clone());
            wire.conn.set_config(now, Arc::new(config));
        }
        LinkCommand::Abort => wire.conn.handle_eof(now),
    }
}

/// A transaction message through [`Station::call`](super::Station::call): queued, and the
/// caller gets its outcome once delivered.
fn queue_call(queue: &mut Queue, request: Request, reply: CallReply) {
    match queue.push(&request, None) {
        Ok((_, outcome)) => {
            tokio::spawn(async move {
                let outcome = outcome.await.unwrap_or(Err(CallFailure::NotConnected));
                reply.send(outcome);
            });
        }
        Err(error) => {
            reply.send(Err(CallFailure::InvalidRequest {
                description: format!("not queued: {error}"),
            }));
        }
    }
}

/// A plain or TLS stream.
enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

/// The next command of a session's handle.
async fn next_link_command(link: Option<&Link>) -> LinkCommand {
    match link {
        Some(link) => {
            poll_fn(|cx| match link.pop(cx.waker()) {
                Some(command) => Poll::Ready(command),
                None => Poll::Pending,
            })
            .await
        }
        None => std::future::pending().await,
    }
}

/// A TriggerMessage's requested message, as the action it makes the station send.
fn requested_by_trigger(request: &Request) -> Option<&'static str> {
    if request.action() != "TriggerMessage" {
        return None;
    }
    let payload = serde_json::to_value(request).ok()?;
    let requested = payload.get("requestedMessage")?.as_str()?;
    triggered_action(request.version(), requested)
}

/// Whether an answer says `"status": "Accepted"`.
fn answer_accepted(answer: &Answer) -> bool {
    let Answer::Result(response) = answer else {
        return false;
    };
    let response: &Response = response;
    serde_json::to_value(response)
        .ok()
        .and_then(|v| {
            v.get("status")
                .and_then(|s| s.as_str())
                .map(|s| s == "Accepted")
        })
        .unwrap_or(false)
}
