//! The station's task: connect, drive one `Connection` at a time on the socket, boot and
//! heartbeat by the core's [`Registration`], deliver the offline queue, reconnect after the
//! back-off. The rules are the core's; this file owns sockets, tasks and time.

use std::collections::{HashMap, VecDeque};
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use ocpp_messages::{Request, Response};
use ocpp_server_core::station::{
    boot_request, heartbeat_request, is_transaction_message, triggered_action, BootAnswer,
    BootReason, Due, Reconnect, Registration, RegistrationStatus, StationInfo,
};
use ocpp_server_core::{
    Answer, CallFailure, CallOutcome, CloseCode, CloseReason, Closed, ConnectTarget, Connection,
    ConnectionConfig, Event, MessageId,
};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch};

use super::queue::Queue;
use super::{App, Command, PermanentFailure, Queued, StationUrl, Status};
use crate::charge_point::{Command as LinkCommand, Link};
use crate::{ChargePoint, Handler, IncomingCall, Session};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Bytes read per `read`.
const READ_CHUNK: usize = 8 * 1024;
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
    Lost,
    /// [`Station::close`](super::Station::close).
    Closed,
    /// Retrying cannot help.
    Failed(PermanentFailure),
    /// [`Station::reboot`](super::Station::reboot): connect again at once.
    Reboot,
}

/// Who waits for one of our CALLs.
enum Outgoing {
    Boot,
    Heartbeat,
    /// The application's CALL; a BootNotification (e.g. one a TriggerMessage asked for) also
    /// tells the registration its answer.
    Call {
        reply: oneshot::Sender<CallOutcome>,
        boot: bool,
    },
    Queued(u64),
}

/// The state of an open connection.
struct Online {
    registration: Registration,
    link: Arc<Link>,
    app: Arc<dyn AppSession>,
}

/// An answer from a handler: the CALL's id, the answer, and the action a TriggerMessage asked
/// for (to let it out while Pending once the trigger is Accepted).
type HandlerAnswer = (MessageId<'static>, Answer, Option<&'static str>);

/// The station's task.
pub(crate) struct Task {
    pub(crate) url: StationUrl,
    pub(crate) password: Option<Vec<u8>>,
    pub(crate) tls: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
    pub(crate) info: StationInfo,
    pub(crate) app: Arc<dyn App>,
    pub(crate) config: Arc<ConnectionConfig>,
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
}

impl Task {
    /// Connects, runs, reconnects, until closed or a permanent failure.
    pub(crate) async fn run(mut self) -> Result<(), PermanentFailure> {
        let result = loop {
            let attempt = self.reconnect.failures() + 1;
            let _ = self.status.send(Status::Connecting { attempt });
            let ended = match self.open().await {
                Ok(Some(Stream::Plain(tcp))) => self.drive(tcp).await,
                Ok(Some(Stream::Tls(tls))) => self.drive(*tls).await,
                Ok(None) => Ended::Closed,
                Err(error) => {
                    tracing::info!(identity = %self.url.identity(), %error, "connect failed");
                    Ended::Lost
                }
            };
            match ended {
                Ended::Closed => break Ok(()),
                Ended::Failed(failure) => break Err(failure),
                Ended::Reboot => continue,
                Ended::Lost => {}
            }
            let wait = self.reconnect.next_delay(self.rng.f64());
            tracing::info!(identity = %self.url.identity(), wait_ms = wait.as_millis() as u64, "reconnecting after back-off");
            let _ = self.status.send(Status::Waiting { wait });
            if !self.wait_offline(Instant::now() + wait).await {
                break Ok(());
            }
        };
        let _ = self.status.send(Status::Stopped);
        // Whoever still waits learns it now; queued messages stay in the store.
        self.commands.close();
        while let Ok(command) = self.commands.try_recv() {
            self.offline_command(command);
        }
        result
    }

    /// TCP, then TLS: the stream (`None`: closed meanwhile).
    async fn open(&mut self) -> io::Result<Option<Stream>> {
        let authority = self.url.authority().to_owned();
        let tls = self.tls.clone();
        let connect = async move {
            let tcp = TcpStream::connect(authority).await?;
            let _ = tcp.set_nodelay(true);
            let Some((config, name)) = tls else {
                return Ok(Stream::Plain(tcp));
            };
            let connector = tokio_rustls::TlsConnector::from(config);
            let tls = connector.connect(name, tcp).await?;
            Ok(Stream::Tls(Box::new(tls)))
        };
        let connect = tokio::time::timeout(CONNECT_TIMEOUT, connect);
        tokio::pin!(connect);
        loop {
            tokio::select! {
                result = &mut connect => {
                    return match result {
                        Ok(Ok(stream)) => Ok(Some(stream)),
                        Ok(Err(error)) => Err(error),
                        Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "connect timed out")),
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
                self.queue_call(request, reply)
            }
            Command::Call { reply, .. } => {
                let _ = reply.send(Err(CallFailure::NotConnected));
            }
            Command::Queue {
                request,
                transaction_of,
                reply,
            } => self.queue_message(&request, transaction_of, reply),
            Command::Reboot(reason) => self.boot_reason = Some(reason),
            Command::BackOff(back_off) => self.reconnect.set_policy(back_off),
            Command::Close | Command::HeartbeatInterval(_) => {}
        }
    }

    /// A transaction message through [`Station::call`](super::Station::call): queued, and the
    /// caller gets its outcome.
    fn queue_call(&mut self, request: Request, reply: oneshot::Sender<CallOutcome>) {
        match self.queue.push(&request, None) {
            Ok((_, outcome)) => {
                tokio::spawn(async move {
                    let outcome = outcome.await.unwrap_or(Err(CallFailure::NotConnected));
                    let _ = reply.send(outcome);
                });
            }
            Err(error) => {
                let _ = reply.send(Err(CallFailure::InvalidRequest {
                    description: format!("not queued: {error}"),
                }));
            }
        }
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

    /// One WebSocket connection, from the upgrade request to its end.
    async fn drive<S: AsyncRead + AsyncWrite + Unpin>(&mut self, stream: S) -> Ended {
        let now = Instant::now();
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
        let mut conn = match Connection::connect(
            now,
            self.config.clone(),
            &target,
            key,
            self.rng.u64(..),
        ) {
            Ok(conn) => conn,
            Err(error) => {
                tracing::warn!(identity = %self.url.identity(), %error, "upgrade request not built");
                return Ended::Lost;
            }
        };
        let (mut reader, mut writer) = tokio::io::split(stream);
        let mut buf = vec![0u8; READ_CHUNK];
        let (answers_tx, mut answers) = mpsc::unbounded_channel::<HandlerAnswer>();
        let mut online: Option<Online> = None;
        let mut outgoing: HashMap<MessageId<'static>, Outgoing> = HashMap::new();
        let mut held: VecDeque<(Request, oneshot::Sender<CallOutcome>)> = VecDeque::new();
        let mut closing = false;
        let mut rebooting = false;
        // A TriggerMessage(BootNotification) was accepted: boot now.
        let mut boot_now = false;
        let sleep = tokio::time::sleep_until(now.into());
        tokio::pin!(sleep);
        loop {
            let now = Instant::now();
            // 1. Everything the connection has to say.
            while let Some(event) = conn.poll_event() {
                match event {
                    Event::Connected { version } => {
                        self.reconnect.reset();
                        let link = Link::new(MAILBOX);
                        let cp =
                            ChargePoint::new(link.clone(), self.url.identity().clone(), version);
                        let app = self.app.session(cp);
                        tokio::spawn(app.on_connect());
                        online = Some(Online {
                            registration: Registration::new(now, version),
                            link,
                            app,
                        });
                        let _ = self.status.send(Status::Registering {
                            version,
                            registration: None,
                        });
                    }
                    Event::Call { id, request } => {
                        let Some(on) = &online else { continue };
                        if let Err(refusal) = on.registration.check_incoming(request.action()) {
                            let _ = conn.answer(now, &id, Answer::Error(refusal));
                            continue;
                        }
                        let trigger = requested_by_trigger(&request);
                        let answer = on.app.on_call(IncomingCall::new(id.clone(), request));
                        let tx = answers_tx.clone();
                        tokio::spawn(async move {
                            let _ = tx.send((id, answer.await, trigger));
                        });
                    }
                    Event::Send { id, request } => {
                        if let Some(on) = &online {
                            tokio::spawn(on.app.on_send(IncomingCall::new(id, request)));
                        }
                    }
                    Event::CallCompleted { id, outcome, .. } => {
                        if let Some(waiting) = outgoing.remove(&id) {
                            self.completed(now, online.as_mut(), waiting, outcome);
                        }
                    }
                    Event::Closed(closed) => {
                        for call in &closed.unanswered_outgoing {
                            if let Some(waiting) = outgoing.remove(&call.id) {
                                self.completed(now, online.as_mut(), waiting, Err(call.failure()));
                            }
                        }
                        for (_, reply) in held.drain(..) {
                            let _ = reply.send(Err(CallFailure::ClosedBeforeSent));
                        }
                        // The close frame, if any, goes out before the socket is dropped.
                        if !conn.pending_transmit().is_empty() {
                            let _ = tokio::time::timeout(
                                Duration::from_secs(1),
                                writer.write_all(conn.pending_transmit()),
                            )
                            .await;
                        }
                        let _ = writer.shutdown().await;
                        return self.ended(*closed, online.take(), closing, rebooting);
                    }
                    _ => {}
                }
            }
            // 2. What is due: boot, heartbeat; then held CALLs and the queue's head.
            if let Some(on) = &mut online {
                if std::mem::take(&mut boot_now) {
                    let reason = BootReason::Triggered;
                    if let Some(request) =
                        boot_request(on.registration.version(), &self.info, reason)
                    {
                        if let Ok(id) = conn.call(now, request) {
                            on.registration.on_call_sent(now, "BootNotification");
                            outgoing.insert(id, Outgoing::Boot);
                        }
                    }
                }
                if let Some(due) = on.registration.handle_timeout(now) {
                    let (request, waiting) = match due {
                        Due::Boot => {
                            let reason = self.boot_reason.unwrap_or(if self.booted_before {
                                BootReason::Reconnect
                            } else {
                                BootReason::PowerUp
                            });
                            (
                                boot_request(on.registration.version(), &self.info, reason),
                                Outgoing::Boot,
                            )
                        }
                        Due::Heartbeat => (
                            heartbeat_request(on.registration.version()),
                            Outgoing::Heartbeat,
                        ),
                    };
                    let Some(request) = request else { continue };
                    let action = request.action();
                    match conn.call(now, request) {
                        Ok(id) => {
                            on.registration.on_call_sent(now, action);
                            outgoing.insert(id, waiting);
                        }
                        Err(refused) => {
                            tracing::debug!(reason = ?refused.reason, "{action} not sent");
                            if matches!(waiting, Outgoing::Boot) {
                                on.registration.on_boot_failed(now);
                            }
                        }
                    }
                }
                let mut still_held = VecDeque::new();
                while let Some((request, reply)) = held.pop_front() {
                    if !on.registration.may_send(request.action()) {
                        still_held.push_back((request, reply));
                        continue;
                    }
                    let action = request.action();
                    match conn.call(now, request) {
                        Ok(id) => {
                            on.registration.on_call_sent(now, action);
                            let boot = action == "BootNotification";
                            outgoing.insert(id, Outgoing::Call { reply, boot });
                        }
                        Err(refused) => {
                            let _ = reply.send(Err(CallFailure::from(refused.reason)));
                        }
                    }
                }
                held = still_held;
                if on.registration.is_accepted() {
                    if let Some((seq, request)) = self.queue.next(now, on.registration.version()) {
                        let action = request.action();
                        match conn.call(now, request) {
                            Ok(id) => {
                                on.registration.on_call_sent(now, action);
                                outgoing.insert(id, Outgoing::Queued(seq));
                            }
                            Err(_) => self.queue.unsent(seq),
                        }
                    }
                }
            }
            // 3. Write what the socket takes, read, wait for the next deadline or command.
            let deadline = [
                conn.poll_timeout(),
                online
                    .as_ref()
                    .and_then(|on| on.registration.poll_timeout()),
                // The queue's retry matters only once its head may go.
                online
                    .as_ref()
                    .filter(|on| on.registration.is_accepted())
                    .and_then(|_| self.queue.poll_timeout()),
            ]
            .into_iter()
            .flatten()
            .min();
            if let Some(deadline) = deadline {
                sleep.as_mut().reset(deadline.into());
            }
            let link = online.as_ref().map(|on| on.link.clone());
            let has_output = !conn.pending_transmit().is_empty();
            tokio::select! {
                // Answers first: a CALL a handler caused goes out after the handler's answer.
                biased;
                Some((id, answer, trigger)) = answers.recv() => {
                    let now = Instant::now();
                    let accepted_trigger = trigger.filter(|_| answer_accepted(&answer));
                    if let Err(error) = conn.answer(now, &id, answer) {
                        tracing::warn!(identity = %self.url.identity(), "answer: {error}");
                    } else if let (Some(action), Some(on)) = (accepted_trigger, &mut online) {
                        on.registration.on_trigger_accepted(action);
                        boot_now |= action == "BootNotification";
                    }
                }
                written = writer.write(conn.pending_transmit()), if has_output => match written {
                    Ok(0) | Err(_) => conn.handle_eof(Instant::now()),
                    Ok(n) => {
                        conn.advance_transmit(n);
                        if conn.pending_transmit().is_empty() && writer.flush().await.is_err() {
                            conn.handle_eof(Instant::now());
                        }
                    }
                },
                read = reader.read(&mut buf), if conn.wants_read() => match read {
                    Ok(0) | Err(_) => conn.handle_eof(Instant::now()),
                    Ok(n) => conn.handle_data(Instant::now(), &buf[..n]),
                },
                () = &mut sleep, if deadline.is_some() => {
                    let now = Instant::now();
                    if conn.poll_timeout().is_some_and(|t| t <= now) {
                        conn.handle_timeout(now);
                    }
                }
                command = self.commands.recv(), if !closing => match command {
                    None | Some(Command::Close) => {
                        closing = true;
                        conn.close(Instant::now(), CloseCode::NORMAL, "station stopping");
                    }
                    Some(Command::Call { request, reply }) if is_transaction_message(&request) => {
                        self.queue_call(request, reply);
                    }
                    // Held until Accepted (also during the handshake); dropped if the
                    // connection ends first.
                    Some(Command::Call { request, reply }) => held.push_back((request, reply)),
                    Some(Command::Queue { request, transaction_of, reply }) => {
                        self.queue_message(&request, transaction_of, reply);
                    }
                    Some(Command::Reboot(reason)) => {
                        self.boot_reason = Some(reason);
                        rebooting = true;
                        conn.close(Instant::now(), CloseCode::NORMAL, "reboot");
                    }
                    Some(Command::HeartbeatInterval(interval)) => {
                        if let Some(on) = &mut online {
                            on.registration.set_heartbeat_interval(Instant::now(), interval);
                            self.publish_heartbeat(on);
                        }
                    }
                    Some(Command::BackOff(back_off)) => self.reconnect.set_policy(back_off),
                },
                command = next_link_command(link.as_deref()), if link.is_some() => match command {
                    LinkCommand::Call { request, reply } if is_transaction_message(&request) => {
                        self.queue_call(request, reply);
                    }
                    LinkCommand::Call { request, reply } => held.push_back((request, reply)),
                    LinkCommand::Send { request, reply } => {
                        let result = conn.send(Instant::now(), request).map(|_| ()).map_err(|refused| {
                            match refused.reason {
                                ocpp_server_core::RefusalReason::NotOpen => crate::error::SendError::NotConnected,
                                ocpp_server_core::RefusalReason::Backpressure => crate::error::SendError::QueueFull,
                                _ => crate::error::SendError::NeedsV21,
                            }
                        });
                        let _ = reply.send(result);
                    }
                    LinkCommand::Close { code, reason } => conn.close(Instant::now(), code, &reason),
                    LinkCommand::Settings(settings) => {
                        let config = settings.apply((**conn.config()).clone());
                        conn.set_config(Instant::now(), Arc::new(config));
                    }
                    LinkCommand::Abort => conn.handle_eof(Instant::now()),
                },
            }
        }
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
                            Status::Accepted { version }
                        } else {
                            Status::Registering {
                                version,
                                registration: Some(answer.status),
                            }
                        };
                        tracing::info!(identity = %self.url.identity(), status = ?answer.status, interval_s = answer.interval.as_secs(), "boot answered");
                        let _ = self.status.send(status);
                    }
                    None => {
                        tracing::info!(identity = %self.url.identity(), ?outcome, "boot failed");
                        on.registration.on_boot_failed(now);
                    }
                }
            }
            Outgoing::Heartbeat => {}
            Outgoing::Call { reply, boot } => {
                if boot {
                    self.completed(now, online, Outgoing::Boot, outcome.clone());
                }
                let _ = reply.send(outcome);
            }
            Outgoing::Queued(seq) => self.queue.on_outcome(now, seq, outcome),
        }
    }

    /// What a close means for the station.
    fn ended(
        &mut self,
        closed: Closed,
        online: Option<Online>,
        closing: bool,
        rebooting: bool,
    ) -> Ended {
        if let Some(on) = online {
            for command in on.link.close() {
                if let LinkCommand::Call { reply, .. } = command {
                    let _ = reply.send(Err(CallFailure::NotConnected));
                }
            }
            tokio::spawn(on.app.on_close(closed.clone()));
        }
        tracing::info!(identity = %self.url.identity(), reason = ?closed.reason, "connection ended");
        if closing {
            return Ended::Closed;
        }
        if rebooting {
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
            _ => Ended::Lost,
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
