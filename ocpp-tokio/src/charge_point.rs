//! The handle of one charge point's connection: calls, SEND, close, run-time settings.

use std::any::Any;
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::Waker;
use std::time::{Duration, Instant};

use ocpp_messages::action::ActionRequest;
use ocpp_messages::{Request, Response};
use ocpp_proto::{ChargePointIdentity, CloseCode, ConnectionConfig, OcppVersion};
use tokio::sync::oneshot;

use ocpp_proto::CallFailure;

use crate::error::SendError;
use crate::typed::{ResponseOf, TypedCall};

use crate::handoff::handing;

/// Where a CALL's outcome goes: to a caller waiting on a channel ([`ChargePoint::call_raw`]),
/// or to a function the connection runs ([`ChargePoint::call_raw_then`]). The server's driver
/// holds the core's `Connection<CallReply>`: each CALL of ours carries its `CallReply`, handed
/// back by the core with that outcome (so the driver keeps no table of waiters).
#[derive(Debug)]
pub(crate) enum CallReply {
    Waiting(oneshot::Sender<Result<Response, CallFailure>>),
    Then(OnOutcome),
}

impl CallReply {
    /// Hands over the outcome (a caller that stopped waiting does not hear of it).
    pub(crate) fn send(self, outcome: Result<Response, CallFailure>) {
        match self {
            CallReply::Waiting(reply) => {
                let _ = reply.send(outcome);
            }
            CallReply::Then(mut then) => then.run(outcome),
        }
    }
}

/// The function of [`ChargePoint::call_raw_then`]. Run exactly once: with the outcome, or
/// when dropped without one (the connection's task dropped with its runtime), with
/// [`CallFailure::Disconnected`], the answer a waiting caller gets then.
pub(crate) struct OnOutcome(Option<OutcomeFn>);

/// What [`ChargePoint::call_raw_then`] is given, boxed.
type OutcomeFn = Box<dyn FnOnce(Result<Response, CallFailure>) + Send>;

impl OnOutcome {
    fn run(&mut self, outcome: Result<Response, CallFailure>) {
        if let Some(then) = self.0.take() {
            then(outcome);
        }
    }
}

impl Drop for OnOutcome {
    fn drop(&mut self) {
        if self.0.is_none() {
            return;
        }
        // Possibly while a panic unwinds (a handler's, in the connection's task): a second
        // panic here would abort the process, so the function's own is contained.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.run(Err(CallFailure::Disconnected));
        }));
    }
}

impl fmt::Debug for OnOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OnOutcome")
    }
}

/// A command from a handle to the connection's task.
#[derive(Debug)]
pub(crate) enum LinkCommand {
    Call {
        request: Request,
        reply: CallReply,
        /// Not written after this ([`ChargePoint::call_raw_with_deadline`]).
        deadline: Option<Instant>,
    },
    Send {
        request: Request,
        reply: oneshot::Sender<Result<(), SendError>>,
    },
    Close {
        code: CloseCode,
        reason: String,
    },
    Settings(ConnectionSettings),
    /// Server shutdown past its grace period: drop the socket now.
    Abort,
}

impl LinkCommand {
    /// Applies to `conn` what both sides do alike: a close, new settings. Each side applies
    /// CALLs, SENDs and an abort its own way, before it comes here (the CALL is the hot path:
    /// it is matched first, and moved once).
    pub(crate) fn apply_common<C>(self, conn: &mut ocpp_proto::Connection<C>, now: Instant) {
        match self {
            LinkCommand::Close { code, reason } => conn.close(now, code, &reason),
            LinkCommand::Settings(settings) => {
                // One connection's keep-alive and timeouts (ocpp-rpc #80, ocpp-go #44/#103).
                let config = settings.apply((**conn.config()).clone());
                conn.set_config(now, Arc::new(config));
            }
            LinkCommand::Call { .. } | LinkCommand::Send { .. } | LinkCommand::Abort => {}
        }
    }
}

/// One connection's keep-alive and timeouts, changeable while it runs (ocpp-rpc #80,
/// ocpp-go #44/#103): the server's [`ConnectionConfig`] gives every connection its start values;
/// [`ChargePoint::set_settings`] changes them for one charge point (through the core's
/// `Connection::set_config`).
///
/// ```no_run
/// # fn example(cp: ocpp_tokio::ChargePoint) {
/// use std::time::Duration;
/// // This charger misbehaves with server pings and drops idle links after 110 s.
/// let settings = cp.settings().ping_interval(None).idle_timeout(Some(Duration::from_secs(100)));
/// cp.set_settings(settings);
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionSettings {
    ping_interval: Option<Duration>,
    pong_timeout: Duration,
    idle_timeout: Option<Duration>,
    call_timeout: Duration,
}

macro_rules! setting {
    ($(#[$doc:meta])* $name:ident, $get:ident, $ty:ty) => {
        $(#[$doc])*
        pub fn $name(mut self, value: $ty) -> Self {
            self.$name = value;
            self
        }

        #[doc = concat!("See [`ConnectionSettings::", stringify!($name), "`].")]
        pub fn $get(&self) -> $ty {
            self.$name
        }
    };
}

impl ConnectionSettings {
    /// The values `config` gives a connection.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ocpp_tokio::registry::ConnectionSettings;
    /// use ocpp_tokio::ConnectionConfig;
    /// let config = ConnectionConfig::default().ping_interval(None);
    /// assert_eq!(ConnectionSettings::from_config(&config).get_ping_interval(), None);
    /// ```
    pub fn from_config(config: &ConnectionConfig) -> Self {
        ConnectionSettings {
            ping_interval: config.get_ping_interval(),
            pong_timeout: config.get_pong_timeout(),
            idle_timeout: config.get_idle_timeout(),
            call_timeout: config.get_call_timeout(),
        }
    }

    /// `config` with these values.
    pub(crate) fn apply(self, config: ConnectionConfig) -> ConnectionConfig {
        config
            .ping_interval(self.ping_interval)
            .pong_timeout(self.pong_timeout)
            .idle_timeout(self.idle_timeout)
            .call_timeout(self.call_timeout)
    }

    setting!(
        /// Keep-alive pings after this long without input (OCPP `WebSocketPingInterval`);
        /// `None`: no pings for this charge point.
        ping_interval, get_ping_interval, Option<Duration>
    );
    setting!(
        /// How long a pong may take before the connection is dropped.
        pong_timeout, get_pong_timeout, Duration
    );
    setting!(
        /// Close (1001) after this long without input; `None`: never.
        idle_timeout, get_idle_timeout, Option<Duration>
    );
    setting!(
        /// How long each of our CALLs may wait for its answer once sent (a CALL in flight when
        /// this changes keeps its deadline).
        call_timeout, get_call_timeout, Duration
    );
}

/// What a connection's task and its handles share: the mailbox and, once connected, the
/// application's state for the connection.
pub(crate) struct TaskLink {
    mailbox: Mutex<Mailbox>,
    pub(crate) state: OnceLock<Arc<dyn Any + Send + Sync>>,
    /// CALLs and SENDs that may wait (`u32`: beside `idle` in one word).
    capacity: u32,
    /// The mailbox is empty and the task's waker registered: set by `pop` when it found
    /// nothing, cleared by every `push` (both under the lock). The task reads it without the
    /// lock on every turn: a push it misses wakes it.
    idle: AtomicBool,
    /// The negotiated OCPP version, once the connection is open (a [`ChargePoint`] is made):
    /// its place in [`OcppVersion::ALL`] plus one; 0 before. Kept here, not in each handle,
    /// so that the registry holds a charge point in one pointer (beside `idle`, in the same
    /// word).
    version: AtomicU8,
}

#[derive(Default)]
struct Mailbox {
    commands: VecDeque<LinkCommand>,
    waker: Option<Waker>,
    /// How many of `commands` are CALLs and SENDs (the bounded kind; at most the link's
    /// `capacity`, a `u32`).
    bounded: u32,
    /// The task is gone: commands are refused.
    closed: bool,
    /// Once connected: the connection's configuration, the server's own `Arc` until
    /// [`ChargePoint::set_settings`] gives this connection one of its own (so the link holds
    /// a pointer, not the settings).
    config: Option<Arc<ConnectionConfig>>,
}

/// A link as a key of the server's tables (the registry's, the live tasks'): the same
/// connection when the same link, compared and hashed by its address.
pub(crate) struct LinkKey(pub(crate) Arc<TaskLink>);

impl PartialEq for LinkKey {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for LinkKey {}

impl std::hash::Hash for LinkKey {
    fn hash<S: std::hash::Hasher>(&self, state: &mut S) {
        std::ptr::hash(Arc::as_ptr(&self.0), state);
    }
}

impl TaskLink {
    pub(crate) fn new(capacity: usize) -> Arc<TaskLink> {
        Arc::new(TaskLink {
            state: OnceLock::new(),
            mailbox: Mutex::new(Mailbox::default()),
            capacity: u32::try_from(capacity).unwrap_or(u32::MAX),
            idle: AtomicBool::new(false),
            version: AtomicU8::new(0),
        })
    }

    /// The negotiated version (set once, when the connection's [`ChargePoint`] is made; the
    /// oldest version before, which no handle sees: a handle exists only after).
    fn version(&self) -> OcppVersion {
        let code = usize::from(self.version.load(Ordering::Relaxed));
        OcppVersion::ALL
            .get(code.wrapping_sub(1))
            .copied()
            .unwrap_or(OcppVersion::V1_6)
    }

    fn set_version(&self, version: OcppVersion) {
        let code = OcppVersion::ALL
            .iter()
            .position(|v| *v == version)
            .map_or(0, |i| i + 1);
        self.version
            .store(u8::try_from(code).unwrap_or(0), Ordering::Relaxed);
    }

    fn lock(&self) -> MutexGuard<'_, Mailbox> {
        // A panic while the lock was held leaves the queue usable.
        self.mailbox.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a command and wakes the task; hands it back with `false` if the task is gone,
    /// with `true` if it is a CALL or SEND and as many wait as the capacity allows (closes,
    /// settings and aborts always get in).
    pub(crate) fn push(&self, command: LinkCommand) -> Result<(), (LinkCommand, bool)> {
        let bounded = matches!(command, LinkCommand::Call { .. } | LinkCommand::Send { .. });
        let mut mailbox = self.lock();
        if let Err(full) = self.admit(&mut mailbox, bounded) {
            return Err((command, full));
        }
        self.enqueue(mailbox, command);
        Ok(())
    }

    /// [`TaskLink::push`] for a CALL: when it is refused, its `reply` comes back (with `true` if
    /// the mailbox was full), so that the caller can hand the refusal to it.
    pub(crate) fn push_call(
        &self,
        request: Request,
        reply: CallReply,
        deadline: Option<Instant>,
    ) -> Result<(), (CallReply, bool)> {
        let mut mailbox = self.lock();
        if let Err(full) = self.admit(&mut mailbox, true) {
            return Err((reply, full));
        }
        let command = LinkCommand::Call {
            request,
            reply,
            deadline,
        };
        self.enqueue(mailbox, command);
        Ok(())
    }

    /// Whether a command may wait in the mailbox (a `bounded` one is counted); `Err(true)`
    /// when the bounded kind is at capacity, `Err(false)` when the task is gone.
    fn admit(&self, mailbox: &mut Mailbox, bounded: bool) -> Result<(), bool> {
        if mailbox.closed {
            return Err(false);
        }
        if bounded {
            if mailbox.bounded >= self.capacity {
                return Err(true);
            }
            mailbox.bounded += 1;
        }
        Ok(())
    }

    /// Queues an admitted command and wakes the task.
    fn enqueue(&self, mut mailbox: MutexGuard<'_, Mailbox>, command: LinkCommand) {
        mailbox.commands.push_back(command);
        self.idle.store(false, Ordering::Release);
        if let Some(waker) = mailbox.waker.take() {
            waker.wake();
        }
    }

    /// The task: the next command, or registers `waker` to be woken by the next push.
    ///
    /// `waker` must be the one the task gave last time (a task's waker, or a future's under
    /// a combinator that keeps one per future): an empty mailbox with a waker registered is
    /// answered without the lock, on the driver's every turn.
    pub(crate) fn pop(&self, waker: &Waker) -> Option<LinkCommand> {
        if self.idle.load(Ordering::Acquire) {
            return None;
        }
        let mut mailbox = self.lock();
        let command = mailbox.commands.pop_front();
        if matches!(
            command,
            Some(LinkCommand::Call { .. } | LinkCommand::Send { .. })
        ) {
            mailbox.bounded = mailbox.bounded.saturating_sub(1);
        }
        if command.is_none() {
            if mailbox.commands.capacity() > 0 {
                mailbox.commands = VecDeque::new();
            }
            match &mailbox.waker {
                Some(w) if w.will_wake(waker) => {}
                _ => mailbox.waker = Some(waker.clone()),
            }
            if !mailbox.closed {
                self.idle.store(true, Ordering::Release);
            }
        }
        command
    }

    /// The task ends: refuses later commands and returns those still queued.
    pub(crate) fn close(&self) -> VecDeque<LinkCommand> {
        let mut mailbox = self.lock();
        mailbox.closed = true;
        self.idle.store(false, Ordering::Release);
        mailbox.waker = None;
        mailbox.bounded = 0;
        std::mem::take(&mut mailbox.commands)
    }

    /// The connection is over: [`TaskLink::close`], and each CALL and SEND still queued ends
    /// `NotConnected` (both sides' drivers end their links so).
    pub(crate) fn end(&self) {
        for command in self.close() {
            match command {
                LinkCommand::Call { reply, .. } => reply.send(Err(CallFailure::NotConnected)),
                LinkCommand::Send { reply, .. } => {
                    let _ = reply.send(Err(SendError::NotConnected));
                }
                _ => {}
            }
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// The connection is open with `config` (its settings, for [`ChargePoint::settings`]).
    pub(crate) fn init_config(&self, config: Arc<ConnectionConfig>) {
        self.lock().config = Some(config);
    }

    fn settings(&self) -> ConnectionSettings {
        match &self.lock().config {
            Some(config) => ConnectionSettings::from_config(config),
            None => ConnectionSettings::from_config(&ConnectionConfig::default()),
        }
    }

    fn set_settings(&self, settings: ConnectionSettings) -> bool {
        let mut mailbox = self.lock();
        if mailbox.closed {
            return false;
        }
        // The same change the task makes to the connection's own configuration
        // (`LinkCommand::apply_common`): in mailbox order, so the two stay alike.
        let config = mailbox.config.as_deref().cloned().unwrap_or_default();
        mailbox.config = Some(Arc::new(settings.apply(config)));
        drop(mailbox);
        self.push(LinkCommand::Settings(settings)).is_ok()
    }
}

/// A connected charge point: cheap to clone, safe to keep after it disconnects (calls then
/// fail with [`CallFailure::NotConnected`]). A handle always refers to one connection, made
/// once the connection is open (so its identity and version are known): when the charge point
/// reconnects, the new connection has a new handle, and the old one never reaches it.
///
/// ```no_run
/// # async fn example(cp: ocpp_tokio::ChargePoint) {
/// use ocpp_tokio::v1_6;
/// let request = v1_6::RemoteStartTransactionRequest::new("TAG1").with_connector_id(1);
/// match cp.call(request).await {
///     Ok(response) => println!("{}: {:?}", cp.identity(), response.status),
///     Err(failure) if failure.may_have_reached_peer() => println!("{}: {failure}", cp.identity()),
///     Err(failure) => println!("{}: not sent ({failure}); safe to retry", cp.identity()),
/// }
/// # }
/// ```
#[derive(Clone)]
pub struct ChargePoint {
    link: Arc<TaskLink>,
    identity: ChargePointIdentity,
}

impl fmt::Debug for ChargePoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChargePoint")
            .field("identity", &self.identity)
            .field("version", &self.version())
            .field("connected", &self.is_connected())
            .finish()
    }
}

impl PartialEq for ChargePoint {
    /// The same connection (not merely the same identity).
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.link, &other.link)
    }
}

impl Eq for ChargePoint {}

impl ChargePoint {
    /// The handle of an open connection.
    pub(crate) fn new(
        link: Arc<TaskLink>,
        identity: ChargePointIdentity,
        version: OcppVersion,
    ) -> Self {
        link.set_version(version);
        ChargePoint { link, identity }
    }

    /// The handle of `link`, already made once with [`ChargePoint::new`] (the registry keeps
    /// the link alone and gives it back its identity, the table's key).
    pub(crate) fn of_link(link: Arc<TaskLink>, identity: ChargePointIdentity) -> Self {
        ChargePoint { link, identity }
    }

    /// Its link, as the registry keeps it.
    pub(crate) fn link(&self) -> &Arc<TaskLink> {
        &self.link
    }

    /// The identity (last segment of the URL path, percent-decoded).
    pub fn identity(&self) -> &ChargePointIdentity {
        &self.identity
    }

    /// The negotiated OCPP version.
    pub fn version(&self) -> OcppVersion {
        self.link.version()
    }

    /// The application's state for this connection (what [`Handler::on_upgrade`] or the
    /// function given to [`Router::new`] made), if it is of type `S`: e.g. for an HTTP API that
    /// lists what the connected charge points reported.
    ///
    /// [`Handler::on_upgrade`]: crate::Handler::on_upgrade
    /// [`Router::new`]: crate::Router::new
    ///
    /// ```
    /// # fn example(charge_points: ocpp_tokio::ChargePoints) {
    /// use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
    ///
    /// struct ConnectionState {
    ///     statuses: AtomicU32,
    /// }
    ///
    /// for cp in charge_points.iter() {
    ///     if let Some(station) = cp.state::<ConnectionState>() {
    ///         println!("{}: {} statuses", cp.identity(), station.statuses.load(Relaxed));
    ///     }
    /// }
    /// # }
    /// ```
    pub fn state<S: Send + Sync + 'static>(&self) -> Option<Arc<S>> {
        let state = Arc::clone(self.link.state.get()?);
        state.downcast::<S>().ok()
    }

    /// Whether this connection's task still runs (it may be closing).
    pub fn is_connected(&self) -> bool {
        !self.link.is_closed()
    }

    /// Sends a CALL and waits for its typed answer: the response type is the action's
    /// (`v1_6::ResetRequest` gives `v1_6::ResetResponse`).
    ///
    /// # Errors
    /// Exactly what happened, as a [`CallFailure`] (which says whether the CALL may have
    /// reached the charge point).
    pub async fn call<R>(&self, request: R) -> Result<ResponseOf<R>, CallFailure>
    where
        R: ActionRequest + TypedCall,
    {
        let request = request.into_request(self.version())?;
        let response = self.call_raw(request).await?;
        R::from_response(response)
    }

    /// Sends a CALL of any action and version and waits for its answer, untyped.
    ///
    /// # Errors
    /// Exactly what happened, as a [`CallFailure`].
    pub async fn call_raw(&self, request: Request) -> Result<Response, CallFailure> {
        self.call_before(request, None).await
    }

    /// [`ChargePoint::call_raw`] with a deadline that holds wherever the CALL waits (the core's
    /// rule, [`Connection::call_with_deadline`](ocpp_proto::Connection::call_with_deadline)):
    /// still queued behind another CALL at `deadline`, it ends
    /// [`CallFailure::DeadlinePassed`] and is never written later; written, its answer is due
    /// by `deadline` (or the call timeout, if sooner). A caller that stops waiting at
    /// `deadline` knows the CALL will not reach the charge point afterwards.
    ///
    /// ```no_run
    /// # async fn example(cp: ocpp_tokio::ChargePoint, request: ocpp_tokio::ocpp::Request) {
    /// use std::time::{Duration, Instant};
    /// let deadline = Instant::now() + Duration::from_secs(10);
    /// match cp.call_raw_with_deadline(request, deadline).await {
    ///     Ok(response) => println!("{}", response.action()),
    ///     Err(failure) => println!("{failure} (may have reached it: {})", failure.may_have_reached_peer()),
    /// }
    /// # }
    /// ```
    ///
    /// # Errors
    /// Exactly what happened, as a [`CallFailure`].
    pub async fn call_raw_with_deadline(
        &self,
        request: Request,
        deadline: Instant,
    ) -> Result<Response, CallFailure> {
        self.call_before(request, Some(deadline)).await
    }

    async fn call_before(
        &self,
        request: Request,
        deadline: Option<Instant>,
    ) -> Result<Response, CallFailure> {
        let (reply, answer) = oneshot::channel();
        if let Err((_, failure)) = self.queue_call(request, CallReply::Waiting(reply), deadline) {
            return Err(failure);
        }
        // The task always replies; a task dropped with the runtime may have sent the CALL.
        answer.await.unwrap_or(Err(CallFailure::Disconnected))
    }

    /// Hands a CALL to the connection (driving it here when its shard is idle, [`handing`]);
    /// when the connection refuses it, `reply` comes back with why.
    fn queue_call(
        &self,
        request: Request,
        reply: CallReply,
        deadline: Option<Instant>,
    ) -> Result<(), (CallReply, CallFailure)> {
        handing(|| self.link.push_call(request, reply, deadline)).map_err(|(reply, full)| {
            let failure = if full {
                CallFailure::QueueFull
            } else {
                CallFailure::NotConnected
            };
            (reply, failure)
        })
    }

    /// Sends a CALL of any action and version and hands its outcome to `on_outcome` instead of
    /// waiting for it: nothing waits, so nothing is woken when the answer comes. For a
    /// central system that sends many CALLs from one task (a push to every charge point, a
    /// poll of each one's status), this costs neither a task nor a channel per CALL.
    ///
    /// `on_outcome` runs exactly once, with what [`ChargePoint::call_raw`] would return:
    /// here and now when the connection refuses the CALL (its queue is full, it is over);
    /// otherwise where the connection is driven, when the answer, the error or the timeout
    /// comes. It runs in the middle of the connection's work: keep it short, never block
    /// in it (spawn a task for slow work), and do not panic (a panic there ends the
    /// connection, as a handler's panic does).
    ///
    /// ```no_run
    /// # fn example(cp: ocpp_tokio::ChargePoint) {
    /// use ocpp_tokio::ocpp::v1_6;
    /// let request = v1_6::Request::from(v1_6::ClearCacheRequest {});
    /// cp.call_raw_then(request.into(), |outcome| match outcome {
    ///     Ok(response) => println!("answered: {}", response.action()),
    ///     Err(failure) => println!("{failure} (may have reached it: {})", failure.may_have_reached_peer()),
    /// });
    /// # }
    /// ```
    pub fn call_raw_then(
        &self,
        request: Request,
        on_outcome: impl FnOnce(Result<Response, CallFailure>) + Send + 'static,
    ) {
        let reply = CallReply::Then(OnOutcome(Some(Box::new(on_outcome))));
        if let Err((reply, failure)) = self.queue_call(request, reply, None) {
            reply.send(Err(failure));
        }
    }

    /// Sends a SEND (OCPP 2.1): never answered. Returns once it is written to the
    /// connection's output (retried after the next write while the output is full).
    ///
    /// # Errors
    /// [`SendError`].
    pub async fn send(&self, request: impl Into<Request>) -> Result<(), SendError> {
        let (reply, sent) = oneshot::channel();
        let request = request.into();
        match handing(|| self.link.push(LinkCommand::Send { request, reply })) {
            Ok(()) => {}
            Err((_, true)) => return Err(SendError::QueueFull),
            Err((_, false)) => return Err(SendError::NotConnected),
        }
        sent.await.unwrap_or(Err(SendError::NotConnected))
    }

    /// Starts the closing handshake with `code` and `reason`; returns at once (the end comes
    /// as [`Handler::on_close`](crate::Handler::on_close)). CALLs in flight end as
    /// [`CallFailure::Disconnected`], queued ones as [`CallFailure::ClosedBeforeSent`].
    pub fn close(&self, code: CloseCode, reason: &str) {
        let reason = reason.to_owned();
        let _ = self.link.push(LinkCommand::Close { code, reason });
    }

    /// This connection's keep-alive and timeouts.
    pub fn settings(&self) -> ConnectionSettings {
        self.link.settings()
    }

    /// Changes this connection's keep-alive and timeouts (see [`ConnectionSettings`]), from now on;
    /// returns false if the connection is over.
    pub fn set_settings(&self, settings: ConnectionSettings) -> bool {
        self.link.set_settings(settings)
    }
}

#[cfg(test)]
mod tests;
