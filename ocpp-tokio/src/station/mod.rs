//! A charging station: connect to a central system, boot, answer its CALLs with the same
//! [`Router`] as a server, call it, and never lose a transaction message.
//!
//! [`Station::builder`] takes the URL (its last segment is the station's identity) and gives a
//! [`StationBuilder`]: the versions offered, security profile 1 to 3 (a password, a TLS
//! configuration with or without a client certificate), what the station says at boot
//! ([`StationInfo`]), the router, the reconnect back-off and the [offline store](store).
//! [`StationBuilder::connect`] starts the station's task and hands back a [`Station`], a
//! cheap handle to call the central system with.
//!
//! What the task does, as the specifications say (the rules themselves are
//! [`ocpp_proto::station`]'s, shared by every driver):
//!
//! - **Boot** on every connection: BootNotification until Accepted; on Pending or Rejected,
//!   again after the interval the central system gave; a BootNotification that fails (no
//!   answer in time, CALLERROR) again after [`StationBuilder::boot_retries`]'s interval, and
//!   after its attempts the connection is given up ([`Cause::BootUnanswered`]). Meanwhile only
//!   what the version allows
//!   goes out (a message the central system asked for with TriggerMessage while Pending) and
//!   comes in (while Pending, not RemoteStart/RemoteStop or RequestStart/RequestStop; while
//!   Rejected, nothing: CALLERROR SecurityError). Calls made meanwhile wait for Accepted, at
//!   most their call timeout (then `DeadlinePassed`: never sent).
//! - **Heartbeat** at the interval the central system gave (2.x: skipped while other
//!   messages keep the connection alive).
//! - **Reconnect** after any loss (close, reset, refused or failed handshake, TLS failure)
//!   with the back-off of OCPP 2.0.1 Part 4 §5.3 ([`RetryBackOff`]), the same schedule on 1.6.
//!   Only an established connection (accepted, then up for
//!   [`StationBuilder::established_after`]) starts the schedule again: one that a central
//!   system closes at once makes every wait longer. [`Status::Waiting`] says why ([`Cause`]);
//!   a refusal that retrying cannot cure (401, 403, no version in common) ends the station
//!   with a [`PermanentFailure`] instead (unless [`StationBuilder::retry_refusals`]).
//! - **The offline queue**: transaction messages (1.6 Start/StopTransaction and MeterValues
//!   of a transaction; 2.x TransactionEvent), whether sent with [`Station::call`] or
//!   [`Station::queue`], go through one queue in a store ([`MemoryStore`], or [`FileStore`]
//!   that survives the process being killed): delivered in order after an Accepted boot, each
//!   until it is answered, the same content again when an answer was lost with the
//!   connection; a CALLERROR or no answer in time counts as an attempt, and after
//!   [`StationBuilder::transaction_retries`] the message is given up and its caller told.
//!
//! - **Transactions**: [`Station::start_transaction`], [`Station::meter`] and
//!   [`Station::stop_transaction`] keep each EVSE's transaction (its id: 2.x made by the
//!   station, 1.6 the one the central system's answer gives, [`Station::transaction_id`]; its
//!   2.x `seqNo`; its readings in Wh) in [`Transactions`], and put each message into the
//!   offline queue in one store record with the state that made it. A transaction the store
//!   holds open when the station starts is ended with `PowerLoss` and its last reading
//!   ([`Station::restarted_transactions`]), unless [`StationBuilder::resume_transactions`]
//!   keeps it; [`Station::watch_transactions`] publishes every change.
//!
//! - **Several central systems** (issue 34): [`StationBuilder::network_profiles`] (2.x
//!   network connection profiles in configuration slots, `NetworkConfigurationPriority`,
//!   `NetworkProfileConnectionAttempts`) or [`StationBuilder::fallback_urls`] (a 1.6 list):
//!   each attempt goes to the central system [`NetworkProfiles`] chooses (the back-off still
//!   applies between attempts); [`Station::current_csms`] says which; SetNetworkProfile is
//!   answered by the station (B09) and kept through [`StationBuilder::on_network_profiles`].
//!
//! Everything else a station does (its connectors, when a transaction starts and stops, what
//! it answers) is the application's: a router and the station's state.
//!
//! A handler reaches the central system of its connection through
//! [`Session::charge_point`](crate::Session::charge_point) (`call`, `close`); to reach the
//! [`Station`] itself (to [`queue`](Station::queue) a transaction message,
//! [`reboot`](Station::reboot) after a Reset, change the back-off), put a
//! [`OnceLock`](std::sync::OnceLock) in the station's state and set it once
//! [`StationBuilder::connect`] returned (the state then holds a handle: the station runs
//! until [`Station::close`]):
//!
//! ```no_run
//! use std::sync::{Arc, OnceLock};
//! use ocpp_tokio::station::{BootReason, Station};
//! use ocpp_tokio::{v1_6, Reply, Router, Session};
//!
//! #[derive(Default)]
//! struct Charger {
//!     station: OnceLock<Station>,
//! }
//!
//! async fn reset(s: Session<Charger>, _: v1_6::ResetRequest) -> Reply<v1_6::ResetResponse> {
//!     if let Some(station) = s.station.get() {
//!         let station = station.clone();
//!         tokio::spawn(async move {
//!             // After the answer has gone out.
//!             tokio::time::sleep(std::time::Duration::from_millis(100)).await;
//!             station.reboot(BootReason::RemoteReset);
//!         });
//!     }
//!     Ok(v1_6::ResetResponse::new(v1_6::ResetStatus::Accepted))
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let charger = Arc::new(Charger::default());
//! let station = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")?
//!     .handler_shared(Router::for_station().on(reset), charger.clone())
//!     .connect()?;
//! let _ = charger.station.set(station.clone());
//! # Ok(()) }
//! ```
//!
//! ```no_run
//! use ocpp_tokio::station::{Station, StationInfo};
//! use ocpp_tokio::{v2_0_1, OcppVersion, Reply, Router, Session};
//!
//! async fn start(_: Session<()>, _: v2_0_1::RequestStartTransactionRequest)
//!     -> Reply<v2_0_1::RequestStartTransactionResponse> {
//!     Ok(v2_0_1::RequestStartTransactionResponse::new(v2_0_1::RequestStartStopStatusEnum::Accepted))
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let station = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")?
//!     .versions([OcppVersion::V2_0_1])
//!     .info(StationInfo::new("ACME", "One"))
//!     .router(Router::<()>::default().on(start))
//!     .connect()?;
//! station.accepted().await?;
//! let status = v2_0_1::StatusNotificationRequest::new(
//!     ocpp_tokio::DateTime::now(), v2_0_1::ConnectorStatusEnum::Available, 1, 1);
//! station.call(status).await?;
//! station.stopped().await?;
//! # Ok(()) }
//! ```

mod auth_cache;
pub mod device_model;
mod driver;
pub mod local_auth;
mod network;
mod queue;
mod url;

/// The offline queue's store: [`ocpp_station_store::offline`], re-exported.
pub use ocpp_station_store::offline as store;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ocpp_messages::{Request, Response};
use ocpp_proto::{
    CallFailure, CallOutcome, ChargePointIdentity, CloseCode, CloseReason, ConnectionConfig,
    OcppVersion,
};
use tokio::sync::{mpsc, oneshot, watch};

pub use device_model::{DeviceModelError, DeviceModelExt, DeviceModelStore};
pub use local_auth::{LocalAuthError, LocalAuthExt, LocalAuthStore};
pub use ocpp_proto::station::{
    BootReason, Evse, IdToken, NetworkProfile, NetworkProfiles, OpenTransaction, ProfileRejected,
    Reading, RegistrationStatus, RetryBackOff, SampledValue, Start, StationInfo, StopReason,
    TransactionError, TransactionRef, Transactions,
};
pub use store::{FileStore, MemoryStore, OfflineStore, StoreError, StoredMessage};
pub use url::{StationUrl, UrlError};

use crate::typed::{ResponseOf, TypedCall};
use crate::{Handler, Router};

/// Where the station stands with the central system.
///
/// Every change is published once ([`Station::watch_status`]): a status is never reported twice
/// in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status {
    /// Connecting: TCP, TLS and the WebSocket upgrade (`attempt` counts from 1 since the last
    /// established connection: one whose BootNotification was accepted and that lasted
    /// [`StationBuilder::established_after`]).
    Connecting {
        /// The attempt.
        attempt: u32,
    },
    /// Connected; the BootNotification is not answered Accepted (yet): `registration` is the
    /// last answer (`None` before the first), `boot_failures` how many BootNotifications of
    /// this connection failed in a row (no answer in time, a CALLERROR). After
    /// [`StationBuilder::boot_retries`] failures the station gives the connection up and waits
    /// ([`Status::Waiting`] with [`Cause::BootUnanswered`]).
    Registering {
        /// The negotiated version.
        version: OcppVersion,
        /// The last BootNotification answer.
        registration: Option<RegistrationStatus>,
        /// BootNotifications of this connection that failed in a row.
        boot_failures: u32,
    },
    /// Connected and Accepted: everything may be sent.
    Accepted {
        /// The negotiated version.
        version: OcppVersion,
    },
    /// Not connected: the next attempt after the back-off, `wait` from when it was chosen;
    /// `cause` says why the last attempt or connection ended.
    Waiting {
        /// The back-off chosen.
        wait: Duration,
        /// Why the station is not connected.
        cause: Cause,
    },
    /// The station stopped ([`Station::close`] or a [`PermanentFailure`]).
    Stopped,
}

/// Why an attempt failed or a connection ended ([`Status::Waiting`]).
///
/// ```
/// use ocpp_tokio::station::{Cause, Status};
///
/// fn explain(status: Status) -> String {
///     match status {
///         Status::Waiting { wait, cause: Cause::UpgradeRefused { status: Some(404) } } => {
///             format!("unknown to the central system; again in {wait:?}")
///         }
///         Status::Waiting { wait, cause } => format!("{cause}; again in {wait:?}"),
///         other => format!("{other:?}"),
///     }
/// }
/// # let _ = explain;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Cause {
    /// TCP or TLS failed, or did not finish in time (`TimedOut`).
    #[error("connect failed: {0}")]
    Connect(std::io::ErrorKind),
    /// The TLS handshake failed (certificate, protocol).
    #[error("the TLS handshake failed")]
    Tls,
    /// The central system refused the upgrade (or answered it wrongly): its HTTP status, if
    /// any.
    #[error("the upgrade was refused (HTTP {status:?})")]
    UpgradeRefused {
        /// The HTTP status other than 101, when there was one.
        status: Option<u16>,
    },
    /// The WebSocket handshake did not finish in time.
    #[error("the WebSocket handshake timed out")]
    HandshakeTimeout,
    /// The central system speaks none of the versions offered.
    #[error("no OCPP version in common")]
    NoCommonVersion,
    /// The central system closed the connection, with this close code (`None`: no code).
    #[error("the central system closed the connection ({code:?})")]
    PeerClosed {
        /// The code of its close frame.
        code: Option<CloseCode>,
    },
    /// The station closed the connection with this code (e.g. the application, through
    /// [`Session::charge_point`](crate::Session::charge_point)).
    #[error("the station closed the connection ({code:?})")]
    LocalClose {
        /// The code sent.
        code: CloseCode,
    },
    /// The stream ended without a closing handshake (reset, 1006).
    #[error("the connection was lost")]
    ConnectionLost,
    /// No pong, or nothing at all, arrived in time.
    #[error("the central system stopped answering (keep-alive)")]
    KeepAliveTimeout,
    /// The central system broke RFC 6455 or OCPP-J.
    #[error("the central system broke the protocol")]
    ProtocolViolation,
    /// The central system stopped reading.
    #[error("the central system stopped reading")]
    SlowPeer,
    /// The BootNotification failed this many times in a row (no answer in time, CALLERROR):
    /// the station gave the connection up ([`StationBuilder::boot_retries`]).
    #[error("BootNotification failed {attempts} times in a row")]
    BootUnanswered {
        /// The BootNotifications sent on that connection.
        attempts: u32,
    },
    /// Anything else (e.g. the upgrade request could not be built).
    #[error("the connection failed")]
    Other,
}

impl Cause {
    /// The cause of a connection's end, by the core's [`CloseReason`].
    fn of(reason: &CloseReason) -> Cause {
        match reason {
            CloseReason::UpgradeRefused { status, .. } => Cause::UpgradeRefused { status: *status },
            CloseReason::HandshakeTimeout => Cause::HandshakeTimeout,
            CloseReason::NoCommonVersion => Cause::NoCommonVersion,
            CloseReason::PeerClosed { code, .. } => Cause::PeerClosed { code: *code },
            CloseReason::LocalClose { code } => Cause::LocalClose { code: *code },
            CloseReason::ProtocolError(_) | CloseReason::OcppViolation { .. } => {
                Cause::ProtocolViolation
            }
            CloseReason::PongTimeout | CloseReason::IdleTimeout => Cause::KeepAliveTimeout,
            CloseReason::Eof => Cause::ConnectionLost,
            CloseReason::SlowPeer => Cause::SlowPeer,
            _ => Cause::Other,
        }
    }
}

/// A refusal that retrying cannot cure: the station stops instead of reconnecting forever.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PermanentFailure {
    /// HTTP 401: the password (security profile 1 or 2) is wrong, or missing.
    #[error("the central system refused the credentials (HTTP 401)")]
    Unauthorized,
    /// HTTP 403: the station is not allowed (e.g. its certificate, security profile 3).
    #[error("the central system refused the station (HTTP 403)")]
    Forbidden,
    /// The central system speaks none of the versions offered.
    #[error("the central system speaks none of the OCPP versions offered")]
    NoCommonVersion,
}

/// [`Station::accepted`]: the station stopped before it was accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the station stopped{}", .failure.as_ref().map(|f| format!(": {f}")).unwrap_or_default())]
pub struct Stopped {
    /// Why, unless [`Station::close`] stopped it.
    pub failure: Option<PermanentFailure>,
}

/// Why [`Station::builder`] or [`StationBuilder::connect`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StationError {
    /// The URL.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// `wss://` without [`StationBuilder::tls`], or a server name TLS cannot use.
    #[error("TLS: {0}")]
    Tls(String),
    /// The offline store could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No versions to offer.
    #[error("no OCPP version to offer")]
    NoVersion,
}

/// Why [`Station::queue`] did not take a message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// Only transaction messages go through the offline queue (1.6 Start/StopTransaction and
    /// MeterValues with a transactionId; 2.x TransactionEvent): use [`Station::call`].
    #[error("not a transaction message: {0}")]
    NotATransactionMessage(&'static str),
    /// [`Station::queue_in`] with a message that carries no 1.6 transactionId.
    #[error("only a 1.6 StopTransaction or MeterValues can take a transaction's id")]
    NotForATransaction,
    /// [`Station::queue_in`] with a StartTransaction this station no longer knows (given up,
    /// or of an earlier run).
    #[error("StartTransaction {0} is not known")]
    UnknownTransaction(u64),
    /// The message did not serialise.
    #[error("encode: {0}")]
    Encode(String),
    /// The station's transactions refused the change (e.g. a transaction is open on the EVSE
    /// already, or none is): nothing was queued.
    #[error(transparent)]
    Transaction(#[from] TransactionError),
    /// The store refused it: the message was not accepted.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The station stopped.
    #[error("the station stopped")]
    Stopped,
}

/// A transaction message the offline queue accepted (it is in the store): its place, and its
/// outcome once delivered.
#[derive(Debug)]
pub struct Queued {
    seq: u64,
    outcome: oneshot::Receiver<CallOutcome>,
}

impl Queued {
    /// Its place in the queue; for 1.6, what [`Station::queue_in`] takes to give a later
    /// message this StartTransaction's transactionId.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Waits for its delivery: the central system's answer, or why it was given up. A station
    /// that stops first gives [`CallFailure::NotConnected`]: the message stays in the store
    /// and goes after the next start.
    pub async fn outcome(self) -> CallOutcome {
        self.outcome.await.unwrap_or(Err(CallFailure::NotConnected))
    }
}

/// What a handle asks of the station's task.
pub(crate) enum Command {
    Call {
        request: Request,
        reply: oneshot::Sender<CallOutcome>,
    },
    Queue {
        request: Request,
        transaction_of: Option<u64>,
        reply: oneshot::Sender<Result<Queued, QueueError>>,
    },
    Transaction {
        op: queue::TransactionOp,
        reply: oneshot::Sender<Result<Queued, QueueError>>,
    },
    Close,
    /// Close the connection and connect again at once; the next boot gives this reason.
    Reboot(BootReason),
    HeartbeatInterval(Duration),
    BackOff(RetryBackOff),
    Network(NetworkChange),
}

/// A change of the station's network profiles ([`Station::set_network_priority`]).
pub(crate) struct NetworkChange {
    change: Box<NetworkEdit>,
    reply: oneshot::Sender<Result<(), NetworkProfileError>>,
}

/// What [`NetworkChange`] does to the profiles.
type NetworkEdit = dyn FnOnce(&mut NetworkProfiles) -> Result<(), ProfileRejected> + Send;

/// Why [`Station::set_network_priority`] or [`Station::set_network_profile`] changed nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NetworkProfileError {
    /// The rules refused it (B09, A05.FR.04).
    #[error(transparent)]
    Rejected(ProfileRejected),
    /// The [`StationBuilder::on_network_profiles`] hook failed to keep it.
    #[error("the network profiles were not kept: {0}")]
    NotKept(String),
    /// The station stopped.
    #[error("the station stopped")]
    Stopped,
}

/// What every handle shares.
struct Shared {
    commands: mpsc::UnboundedSender<Command>,
    status: watch::Receiver<Status>,
    stopped: watch::Receiver<Option<Result<(), PermanentFailure>>>,
    identity: ChargePointIdentity,
    /// The current heartbeat interval in milliseconds (the task writes it).
    heartbeat_ms: Arc<AtomicU64>,
    /// The station's transactions, as the store has them (the task writes it).
    transactions: watch::Receiver<Transactions>,
    /// The central systems, and the current one (the task writes it).
    profiles: watch::Receiver<NetworkProfiles>,
    /// The transactions open when the station started (an earlier run's).
    restarted: Vec<OpenTransaction>,
}

/// A running charging station: cheap to clone; its task runs until [`Station::close`] or a
/// [`PermanentFailure`] (dropping every handle does not stop it).
///
/// ```no_run
/// # async fn example(station: ocpp_tokio::station::Station) {
/// use ocpp_tokio::v1_6;
/// let authorize = v1_6::AuthorizeRequest::new("TAG1");
/// match station.call(authorize).await {
///     Ok(answer) => println!("{:?}", answer.id_tag_info.status),
///     Err(failure) => println!("{failure} (may have reached it: {})", failure.may_have_reached_peer()),
/// }
/// # }
/// ```
#[derive(Clone)]
pub struct Station {
    shared: Arc<Shared>,
}

impl fmt::Debug for Station {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Station")
            .field("identity", &self.shared.identity)
            .field("status", &self.status())
            .finish()
    }
}

impl Station {
    /// A station connecting to `url`: `ws://` or `wss://host[:port]/path/IDENTITY`.
    ///
    /// # Errors
    /// [`StationError::Url`] when the URL is not one.
    ///
    /// ```
    /// use ocpp_tokio::station::Station;
    /// let builder = Station::builder("ws://127.0.0.1:9000/ocpp/CP001").unwrap();
    /// # let _ = builder;
    /// assert!(Station::builder("http://127.0.0.1:9000/ocpp/CP001").is_err());
    /// ```
    pub fn builder(url: &str) -> Result<StationBuilder, StationError> {
        Ok(StationBuilder::new(StationUrl::parse(url)?))
    }

    /// A station connecting to an already parsed URL (e.g. one process simulating many
    /// stations: [`StationUrl::with_identity`]).
    ///
    /// ```
    /// use ocpp_tokio::station::{Station, StationUrl};
    /// use ocpp_tokio::ocpp::ChargePointIdentity;
    ///
    /// let url = StationUrl::parse("ws://127.0.0.1:9000/ocpp/CP001").unwrap();
    /// let second = ChargePointIdentity::new("CP002".into(), true).unwrap();
    /// let builder = Station::builder_for(url.with_identity(second));
    /// # let _ = builder;
    /// ```
    pub fn builder_for(url: StationUrl) -> StationBuilder {
        StationBuilder::new(url)
    }

    /// The station's identity.
    pub fn identity(&self) -> &ChargePointIdentity {
        &self.shared.identity
    }

    /// Where it stands now.
    pub fn status(&self) -> Status {
        *self.shared.status.borrow()
    }

    /// The heartbeat interval in force: the one the last accepted BootNotification's answer
    /// gave, or [`Station::set_heartbeat_interval`]'s since (60 s before any; zero: none), e.g.
    /// for a GetConfiguration or GetVariables of `HeartbeatInterval`. It goes on over a new
    /// connection until that connection's boot answer gives another (an interval of 0 there
    /// keeps it).
    pub fn heartbeat_interval(&self) -> Duration {
        Duration::from_millis(self.shared.heartbeat_ms.load(Ordering::Relaxed))
    }

    /// Every change of [`Station::status`].
    pub fn watch_status(&self) -> watch::Receiver<Status> {
        self.shared.status.clone()
    }

    /// Waits until the central system has Accepted the station's BootNotification on the
    /// current connection; the negotiated version.
    ///
    /// # Errors
    /// [`Stopped`] if the station stops first.
    pub async fn accepted(&self) -> Result<OcppVersion, Stopped> {
        let mut status = self.shared.status.clone();
        loop {
            if let Status::Accepted { version } = *status.borrow_and_update() {
                return Ok(version);
            }
            if matches!(*status.borrow(), Status::Stopped) || status.changed().await.is_err() {
                return Err(Stopped {
                    failure: self.stopped().await.err(),
                });
            }
        }
    }

    /// Calls the central system: the action's typed response, or a [`CallFailure`] that says
    /// whether the CALL may have reached it.
    ///
    /// A transaction message goes through the offline queue (as [`Station::queue`]) and this
    /// waits for its delivery, across reconnections. Any other CALL fails with
    /// [`CallFailure::NotConnected`] while the station is disconnected, and waits for the
    /// registration to be Accepted while it is connected (OCPP allows nothing else before).
    /// Its deadline is the call timeout ([`ConnectionConfig::call_timeout`]) from now, for the
    /// wait and the answer together, by the core's deadline rule
    /// ([`Connection::call_with_deadline`](ocpp_proto::Connection::call_with_deadline)):
    /// a CALL still waiting then ends [`CallFailure::DeadlinePassed`] and is never sent later.
    ///
    /// # Errors
    /// [`CallFailure`]: e.g. `NotConnected`, `DeadlinePassed` (not sent: safe to retry),
    /// `WrongVersion` (a payload of another version than the connection's), `Timeout`,
    /// `ErrorResponse`.
    pub async fn call<R: TypedCall>(&self, request: R) -> Result<ResponseOf<R>, CallFailure> {
        let response = self.call_raw(request.into_any_request()).await?;
        R::from_response(response)
    }

    /// [`Station::call`] with an untyped [`Request`].
    ///
    /// # Errors
    /// As [`Station::call`].
    pub async fn call_raw(&self, request: Request) -> Result<Response, CallFailure> {
        let (reply, outcome) = oneshot::channel();
        if self
            .shared
            .commands
            .send(Command::Call { request, reply })
            .is_err()
        {
            return Err(CallFailure::NotConnected);
        }
        outcome.await.unwrap_or(Err(CallFailure::NotConnected))
    }

    /// Puts a transaction message in the offline queue and returns once the store has it
    /// (with [`FileStore`], once it is on disk): from then on it is delivered, in order, even
    /// if the process is killed and started again. [`Queued::outcome`] waits for the answer.
    ///
    /// # Errors
    /// [`QueueError`]: not a transaction message, the store failed, the station stopped.
    pub async fn queue(&self, request: impl Into<Request>) -> Result<Queued, QueueError> {
        self.queue_with(request.into(), None).await
    }

    /// OCPP 1.6: queues a StopTransaction or MeterValues of the transaction that the queued
    /// StartTransaction `start` ([`Queued::seq`]) begins: its `transactionId` is replaced by the
    /// one the central system gives that StartTransaction (the station does not know it while
    /// offline).
    ///
    /// # Errors
    /// As [`Station::queue`], and [`QueueError::UnknownTransaction`],
    /// [`QueueError::NotForATransaction`].
    pub async fn queue_in(
        &self,
        start: u64,
        request: impl Into<Request>,
    ) -> Result<Queued, QueueError> {
        self.queue_with(request.into(), Some(start)).await
    }

    async fn queue_with(
        &self,
        request: Request,
        transaction_of: Option<u64>,
    ) -> Result<Queued, QueueError> {
        use ocpp_proto::station::{is_transaction_message, with_transaction_id};
        match transaction_of {
            None if !is_transaction_message(&request) => {
                return Err(QueueError::NotATransactionMessage(request.action()));
            }
            Some(_) if with_transaction_id(&request, 0).is_none() => {
                return Err(QueueError::NotForATransaction);
            }
            _ => {}
        }
        let (reply, queued) = oneshot::channel();
        let command = Command::Queue {
            request,
            transaction_of,
            reply,
        };
        if self.shared.commands.send(command).is_err() {
            return Err(QueueError::Stopped);
        }
        queued.await.unwrap_or(Err(QueueError::Stopped))
    }

    /// Starts a transaction on `evse` for `id_token`, the meter at `meter_wh` (Wh), now: the
    /// 1.6 StartTransaction or the 2.x TransactionEvent `Started` goes through the offline
    /// queue, and returns once the message and the transactions' new state are in the store, in
    /// one record (with [`FileStore`], on disk). See [`Station::start_transaction_with`] for a
    /// remote start or a reservation.
    ///
    /// ```no_run
    /// # async fn example(station: ocpp_tokio::station::Station) -> Result<(), ocpp_tokio::station::QueueError> {
    /// use ocpp_tokio::station::{Evse, IdToken, StopReason};
    /// station.start_transaction(Evse::new(1).with_connector(1), IdToken::new("04A1B2", "ISO14443"), 1_000).await?;
    /// station.meter(1, 1_500).await?;
    /// println!("transaction {:?}", station.transaction_id(1));
    /// station.stop_transaction(1, 2_000, StopReason::Local).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`QueueError::Transaction`] (a transaction is open on the EVSE already), the store's
    /// failure, the station stopped: nothing changed.
    pub async fn start_transaction(
        &self,
        evse: Evse,
        id_token: IdToken,
        meter_wh: i64,
    ) -> Result<Queued, QueueError> {
        let start = Start::new(evse, id_token, meter_wh, ocpp_messages::DateTime::now());
        self.start_transaction_with(start).await
    }

    /// [`Station::start_transaction`] with every detail (its time, a 2.x `remoteStartId`, a
    /// reservation).
    ///
    /// ```no_run
    /// # async fn example(station: ocpp_tokio::station::Station) -> Result<(), ocpp_tokio::station::QueueError> {
    /// use ocpp_tokio::station::{Evse, IdToken, Start};
    /// let start = Start::new(Evse::new(1), IdToken::new("TAG", "Central"), 0, ocpp_tokio::DateTime::now())
    ///     .with_remote_start_id(42);
    /// station.start_transaction_with(start).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Station::start_transaction`].
    pub async fn start_transaction_with(&self, start: Start) -> Result<Queued, QueueError> {
        self.transaction(queue::TransactionOp::Start(start)).await
    }

    /// A periodic meter reading (Wh) of the transaction on `evse`, now: 1.6 MeterValues with
    /// its transactionId (filled in once the central system gave it), 2.x TransactionEvent
    /// `Updated` with the next `seqNo`; returns once in the store, with the new state.
    ///
    /// ```no_run
    /// # async fn example(station: ocpp_tokio::station::Station) -> Result<(), ocpp_tokio::station::QueueError> {
    /// station.meter(1, 7_250).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`QueueError::Transaction`] (no transaction open on the EVSE), the store's failure, the
    /// station stopped: nothing changed.
    pub async fn meter(&self, evse: i32, meter_wh: i64) -> Result<Queued, QueueError> {
        self.meter_reading(evse, Reading::new(meter_wh)).await
    }

    /// [`Station::meter`] with other sampled values beside the energy register (power,
    /// current, state of charge..., exact [`Decimal`](crate::Decimal)s), in one meter value
    /// journaled with the transaction's state; a [`Reading::triggered`] one answers a
    /// TriggerMessage (2.x trigger `Trigger`).
    ///
    /// ```no_run
    /// # async fn example(station: ocpp_tokio::station::Station) -> Result<(), ocpp_tokio::station::QueueError> {
    /// use ocpp_tokio::station::{Reading, SampledValue};
    /// let reading = Reading::new(7_250)
    ///     .with_sampled_value(SampledValue::power_w(11_000))
    ///     .with_sampled_value(SampledValue::soc_percent(57));
    /// station.meter_reading(1, reading).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Station::meter`]; [`TransactionError::UnknownValue`] inside
    /// [`QueueError::Transaction`] for a measurand, unit, phase or location the version does
    /// not know.
    pub async fn meter_reading(&self, evse: i32, reading: Reading) -> Result<Queued, QueueError> {
        self.transaction(queue::TransactionOp::Meter { evse, reading })
            .await
    }

    /// Ends the transaction on `evse`, the meter at `meter_wh`, now, for `reason`: 1.6
    /// StopTransaction, 2.x TransactionEvent `Ended`; returns once in the store, with the new
    /// state.
    ///
    /// ```no_run
    /// # async fn example(station: ocpp_tokio::station::Station) -> Result<(), ocpp_tokio::station::QueueError> {
    /// use ocpp_tokio::station::StopReason;
    /// station.stop_transaction(1, 9_000, StopReason::Remote).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Station::meter`]; [`QueueError::UnknownTransaction`] for a 1.6 transaction whose
    /// StartTransaction was given up (it ends all the same, with nothing sent).
    pub async fn stop_transaction(
        &self,
        evse: i32,
        meter_wh: i64,
        reason: StopReason,
    ) -> Result<Queued, QueueError> {
        self.stop_transaction_with(evse, Reading::new(meter_wh), reason)
            .await
    }

    /// [`Station::stop_transaction`] with other sampled values beside the energy register
    /// (2.x: in the `Ended` event; 1.6: StopTransaction's `transactionData`).
    ///
    /// ```no_run
    /// # async fn example(station: ocpp_tokio::station::Station) -> Result<(), ocpp_tokio::station::QueueError> {
    /// use ocpp_tokio::station::{Reading, SampledValue, StopReason};
    /// let reading = Reading::new(9_000).with_sampled_value(SampledValue::soc_percent(80));
    /// station.stop_transaction_with(1, reading, StopReason::EVDisconnected).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Station::stop_transaction`].
    pub async fn stop_transaction_with(
        &self,
        evse: i32,
        reading: Reading,
        reason: StopReason,
    ) -> Result<Queued, QueueError> {
        self.transaction(queue::TransactionOp::Stop {
            evse,
            reading,
            reason,
        })
        .await
    }

    /// Ends the transaction on `evse` as after a power loss (`PowerLoss`, the last meter
    /// reading known; 2.x trigger `AbnormalCondition`): for a transaction found open at start
    /// that [`StationBuilder::resume_transactions`] kept but the application cannot go on with.
    ///
    /// ```no_run
    /// # async fn example(station: ocpp_tokio::station::Station) -> Result<(), ocpp_tokio::station::QueueError> {
    /// for open in station.restarted_transactions() {
    ///     station.end_after_power_loss(open.evse.id).await?;
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Station::stop_transaction`].
    pub async fn end_after_power_loss(&self, evse: i32) -> Result<Queued, QueueError> {
        self.transaction(queue::TransactionOp::PowerLoss { evse })
            .await
    }

    async fn transaction(&self, op: queue::TransactionOp) -> Result<Queued, QueueError> {
        let (reply, queued) = oneshot::channel();
        if self
            .shared
            .commands
            .send(Command::Transaction { op, reply })
            .is_err()
        {
            return Err(QueueError::Stopped);
        }
        queued.await.unwrap_or(Err(QueueError::Stopped))
    }

    /// The transactionId of the transaction open on `evse`: 2.x the one the station made; 1.6
    /// the one the central system gave its StartTransaction (`None` until it answered, also
    /// when the StartTransaction waited in the store across a restart). The id of a 1.6
    /// transaction that ended before its StartTransaction was answered (e.g. with `PowerLoss`
    /// at a restart) is in [`Transactions::ended`] once known.
    ///
    /// ```no_run
    /// # fn example(station: ocpp_tokio::station::Station) {
    /// if let Some(id) = station.transaction_id(1) {
    ///     println!("charging under {id}");
    /// }
    /// # }
    /// ```
    pub fn transaction_id(&self, evse: i32) -> Option<String> {
        self.shared.transactions.borrow().transaction_id(evse)
    }

    /// The station's transactions now (a copy): what is open on each EVSE, ids, `seqNo`s,
    /// the last meter readings.
    pub fn transactions(&self) -> Transactions {
        self.shared.transactions.borrow().clone()
    }

    /// Every change of [`Station::transactions`]: a start, a reading, a stop, and (1.6) the
    /// transactionId a StartTransaction's answer gave.
    ///
    /// ```no_run
    /// # async fn example(station: ocpp_tokio::station::Station) {
    /// let mut transactions = station.watch_transactions();
    /// while transactions.changed().await.is_ok() {
    ///     let id = transactions.borrow_and_update().transaction_id(1);
    ///     println!("EVSE 1: {id:?}");
    /// }
    /// # }
    /// ```
    pub fn watch_transactions(&self) -> watch::Receiver<Transactions> {
        self.shared.transactions.clone()
    }

    /// The transactions the store held open when the station started (the process was
    /// killed, or lost power, during them). Unless [`StationBuilder::resume_transactions`]
    /// kept them, each was ended at start as after a power loss (its `PowerLoss` message is
    /// queued); those kept are still open in [`Station::transactions`].
    pub fn restarted_transactions(&self) -> &[OpenTransaction] {
        &self.shared.restarted
    }

    /// Reboots the station's link: the connection closes (1000) and the station connects again
    /// at once, without the back-off, and boots with `reason` (e.g. after an accepted Reset:
    /// [`BootReason::RemoteReset`]). Queued messages go on after the new boot.
    pub fn reboot(&self, reason: BootReason) {
        let _ = self.shared.commands.send(Command::Reboot(reason));
    }

    /// Sets the heartbeat interval (the central system changed `HeartbeatInterval`: 1.6
    /// ChangeConfiguration, 2.x SetVariables; or the station's own setting at start, offline
    /// too); zero stops heartbeats. It holds over reconnections; an accepted boot whose answer
    /// gives an interval other than 0 replaces it.
    pub fn set_heartbeat_interval(&self, interval: Duration) {
        let _ = self
            .shared
            .commands
            .send(Command::HeartbeatInterval(interval));
    }

    /// The central system of the current connection or attempt: its profile (slot, URL,
    /// security profile), from [`StationBuilder::network_profiles`] or
    /// [`StationBuilder::fallback_urls`] (slot 0 is the builder's URL unless the profiles say
    /// otherwise). `None` only before the first attempt.
    ///
    /// ```no_run
    /// # fn example(station: ocpp_tokio::station::Station) {
    /// if let Some(csms) = station.current_csms() {
    ///     println!("slot {}: {} (connected: {})", csms.slot, csms.csms_url, station.network_profiles().is_connected());
    /// }
    /// # }
    /// ```
    pub fn current_csms(&self) -> Option<NetworkProfile> {
        self.shared.profiles.borrow().current().cloned()
    }

    /// The station's network profiles now (a copy): slots, priority, the current one, where
    /// the station stands in trying them (JSON-serialisable, to keep across restarts).
    pub fn network_profiles(&self) -> NetworkProfiles {
        self.shared.profiles.borrow().clone()
    }

    /// Sets `OCPPCommCtrlr.NetworkConfigurationPriority` (e.g. from the application's
    /// SetVariables handler, B10's migration to a new CSMS): from the next reboot or lost
    /// connection on, attempts follow it (B10.FR.04). The
    /// [`on_network_profiles`](StationBuilder::on_network_profiles) hook keeps it first.
    ///
    /// ```no_run
    /// # async fn example(station: ocpp_tokio::station::Station) {
    /// use ocpp_tokio::station::BootReason;
    /// if station.set_network_priority(&[1, 0]).await.is_ok() {
    ///     station.reboot(BootReason::RemoteReset); // connect to slot 1 now
    /// }
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`NetworkProfileError`]: a slot out of range or repeated, a profile below the active
    /// security profile (A05.FR.04), the hook failed, the station stopped.
    pub async fn set_network_priority(&self, priority: &[i32]) -> Result<(), NetworkProfileError> {
        let priority = priority.to_vec();
        self.change_network(Box::new(move |profiles| profiles.set_priority(&priority)))
            .await
    }

    /// Stores a profile in its slot as a SetNetworkProfile would (B09: validated, no security
    /// downgrade), e.g. for a local configuration tool; also sets
    /// `NetworkProfileConnectionAttempts` with `attempts`.
    ///
    /// ```no_run
    /// # async fn example(station: ocpp_tokio::station::Station) -> Result<(), ocpp_tokio::station::NetworkProfileError> {
    /// use ocpp_tokio::station::NetworkProfile;
    /// station.set_network_profile(NetworkProfile::new(2, "ws://other.example.com/ocpp"), None).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Station::set_network_priority`].
    pub async fn set_network_profile(
        &self,
        profile: NetworkProfile,
        attempts: Option<u32>,
    ) -> Result<(), NetworkProfileError> {
        self.change_network(Box::new(move |profiles| {
            profiles.set_profile(profile)?;
            if let Some(attempts) = attempts {
                profiles.set_attempts(attempts);
            }
            Ok(())
        }))
        .await
    }

    /// [`Station::set_network_priority`] without waiting for the outcome (from a synchronous
    /// listener); a refusal is logged.
    pub(crate) fn set_network_priority_detached(&self, priority: Vec<i32>) {
        self.change_network_detached(Box::new(move |profiles| {
            profiles.set_priority(&priority).inspect_err(|rejected| {
                tracing::warn!(?priority, %rejected, "NetworkConfigurationPriority not used");
            })
        }));
    }

    /// Sets `NetworkProfileConnectionAttempts` without waiting.
    pub(crate) fn set_network_attempts_detached(&self, attempts: u32) {
        self.change_network_detached(Box::new(move |profiles| {
            profiles.set_attempts(attempts);
            Ok(())
        }));
    }

    fn change_network_detached(&self, change: Box<NetworkEdit>) {
        let (reply, _) = oneshot::channel();
        let _ = self
            .shared
            .commands
            .send(Command::Network(NetworkChange { change, reply }));
    }

    async fn change_network(&self, change: Box<NetworkEdit>) -> Result<(), NetworkProfileError> {
        let (reply, done) = oneshot::channel();
        let command = Command::Network(NetworkChange { change, reply });
        if self.shared.commands.send(command).is_err() {
            return Err(NetworkProfileError::Stopped);
        }
        done.await.unwrap_or(Err(NetworkProfileError::Stopped))
    }

    /// Every change of [`Station::network_profiles`]: each attempt's central system, an
    /// accepted connection, a SetNetworkProfile.
    pub fn watch_network_profiles(&self) -> watch::Receiver<NetworkProfiles> {
        self.shared.profiles.clone()
    }

    /// Changes the reconnect back-off (2.0.1 `RetryBackOff*` variables set by the central
    /// system); it applies from the next wait.
    pub fn set_back_off(&self, back_off: RetryBackOff) {
        let _ = self.shared.commands.send(Command::BackOff(back_off));
    }

    /// Stops the station: its connection closes (1000) and its task ends; queued messages
    /// stay in the store.
    pub fn close(&self) {
        let _ = self.shared.commands.send(Command::Close);
    }

    /// Waits until the station stopped: `Ok` after [`Station::close`], the
    /// [`PermanentFailure`] otherwise.
    ///
    /// # Errors
    /// The [`PermanentFailure`] that stopped it.
    pub async fn stopped(&self) -> Result<(), PermanentFailure> {
        let mut stopped = self.shared.stopped.clone();
        loop {
            if let Some(result) = stopped.borrow_and_update().clone() {
                return result;
            }
            if stopped.changed().await.is_err() {
                return Ok(());
            }
        }
    }
}

/// The application behind a station: its handler and state, type-erased for the task.
pub(crate) trait App: Send + Sync + 'static {
    /// The session of one connection.
    fn session(&self, cp: crate::ChargePoint) -> Arc<dyn driver::AppSession>;
}

/// Configures a [`Station`]: from [`Station::builder`].
pub struct StationBuilder {
    url: StationUrl,
    versions: Vec<OcppVersion>,
    password: Option<Vec<u8>>,
    tls: Option<Arc<rustls::ClientConfig>>,
    info: StationInfo,
    app: Option<Arc<dyn App>>,
    back_off: RetryBackOff,
    store: Option<Box<dyn OfflineStore>>,
    config: ConnectionConfig,
    retry_refusals: bool,
    seed: Option<u64>,
    transaction_attempts: u32,
    transaction_retry_interval: Duration,
    boot_attempts: u32,
    boot_retry_interval: Duration,
    established_after: Duration,
    resume: Option<Box<ResumeRule>>,
    profiles: Option<NetworkProfiles>,
    set_network_profile: Option<Option<Arc<network::ProfilesHook>>>,
    hook: Option<crate::hook::Hook>,
    local_auth: Option<LocalAuthStore>,
}

/// Which transaction found open at start the application goes on with
/// ([`StationBuilder::resume_transactions`]).
type ResumeRule = dyn Fn(&OpenTransaction) -> bool + Send;

impl fmt::Debug for StationBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StationBuilder")
            .field("url", &self.url)
            .field("versions", &self.versions)
            .field("tls", &self.tls.is_some())
            .field("info", &self.info)
            .field("back_off", &self.back_off)
            .finish_non_exhaustive()
    }
}

impl StationBuilder {
    fn new(url: StationUrl) -> Self {
        StationBuilder {
            url,
            versions: vec![OcppVersion::V2_1, OcppVersion::V2_0_1, OcppVersion::V1_6],
            password: None,
            tls: None,
            info: StationInfo::new("ocpp-tokio", "station"),
            app: None,
            back_off: RetryBackOff::default(),
            store: None,
            config: ConnectionConfig::default(),
            retry_refusals: false,
            seed: None,
            transaction_attempts: 3,
            transaction_retry_interval: Duration::from_secs(10),
            boot_attempts: ocpp_proto::station::DEFAULT_BOOT_ATTEMPTS,
            boot_retry_interval: ocpp_proto::station::BOOT_RETRY_FALLBACK,
            established_after: ocpp_proto::station::MIN_ESTABLISHED_LIFETIME,
            resume: None,
            profiles: None,
            set_network_profile: None,
            hook: None,
            local_auth: None,
        }
    }

    /// The station feeds `store`'s authorization cache by itself: every answer of the
    /// central system on a token (1.6 Authorize, StartTransaction, StopTransaction
    /// `idTagInfo`; 2.x Authorize, TransactionEvent `idTokenInfo`) is learnt as the version's
    /// rules say ([`LocalAuthStore::learn`]: only with the cache on, `AuthorizationCacheEnabled`
    /// in 1.6, `AuthCacheCtrlr.Enabled` in 2.x, and not for a token of the local list), so
    /// that [`LocalAuthStore::authorize_locally`] decides on it offline.
    ///
    /// ```no_run
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// use ocpp_tokio::model::local_auth::Settings;
    /// use ocpp_tokio::model::IdToken;
    /// use ocpp_tokio::station::{LocalAuthExt, LocalAuthStore, Station};
    /// use ocpp_tokio::v1_6;
    ///
    /// let local_auth = LocalAuthStore::open("/var/lib/charger", Settings::default())?;
    /// let station = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")?
    ///     .handler(local_auth.routes(ocpp_tokio::Router::for_station()), ())
    ///     .local_auth(local_auth.clone())
    ///     .connect()?;
    /// station.call(v1_6::AuthorizeRequest::new("04A2B3C4")).await?;
    /// // Later, offline: the answer decides.
    /// let decision = local_auth.authorize_locally(&IdToken::from_id_tag("04A2B3C4"), false);
    /// # let _ = decision;
    /// # Ok(()) }
    /// ```
    pub fn local_auth(mut self, store: LocalAuthStore) -> Self {
        self.local_auth = Some(store);
        self
    }

    /// One function for every OCPP message of the station, in and out, as the server's
    /// [`ServerBuilder::on_message`](crate::ServerBuilder::on_message) sees them (directions
    /// from the station's side: `CallOut` is the station's CALL, `CallIn` the central
    /// system's): the station's own BootNotifications, Heartbeats and queued transaction
    /// messages included. It runs on the station's task: keep it short.
    ///
    /// ```
    /// use ocpp_tokio::hook::Message;
    /// use ocpp_tokio::station::Station;
    ///
    /// let builder = Station::builder("ws://127.0.0.1:9000/ocpp/CP001").unwrap()
    ///     .on_message(|event| {
    ///         if let Message::CallOut(request) = event.message {
    ///             println!("{} -> {}", event.identity, request.action());
    ///         }
    ///     });
    /// # let _ = builder;
    /// ```
    pub fn on_message(
        mut self,
        hook: impl Fn(&crate::hook::MessageEvent<'_>) + Send + Sync + 'static,
    ) -> Self {
        self.hook = Some(Arc::new(hook));
        self
    }

    /// Several central systems, OCPP 2.x style: network connection profiles in configuration
    /// slots, tried in `NetworkConfigurationPriority` order with
    /// `NetworkProfileConnectionAttempts` attempts on each (B10; the rules are
    /// [`NetworkProfiles`]'s). Each profile's `ocppCsmsUrl` is given without the identity: the
    /// station appends the identity of the builder's URL (whose own central system is then
    /// used only if a profile names it). The reconnect back-off still applies between every
    /// two attempts. The station answers SetNetworkProfile itself (B09), storing the profile
    /// and calling [`StationBuilder::on_network_profiles`]'s hook; the credentials
    /// ([`password`](Self::password), [`tls`](Self::tls)) are the same for every profile.
    ///
    /// ```
    /// use ocpp_tokio::station::{NetworkProfile, NetworkProfiles, Station};
    ///
    /// let profiles = NetworkProfiles::new([
    ///     NetworkProfile::new(0, "ws://primary.example.com/ocpp").with_security_profile(1),
    ///     NetworkProfile::new(1, "ws://backup.example.com/ocpp").with_security_profile(1),
    /// ])
    /// .with_attempts(3);
    /// let builder = Station::builder("ws://primary.example.com/ocpp/CP001")
    ///     .unwrap()
    ///     .password("secret-secret-16")
    ///     .network_profiles(profiles);
    /// # let _ = builder;
    /// ```
    pub fn network_profiles(mut self, profiles: NetworkProfiles) -> Self {
        self.profiles = Some(profiles);
        if self.set_network_profile.is_none() {
            self.set_network_profile = Some(None);
        }
        self
    }

    /// Several central systems, the simple (OCPP 1.6) way: the builder's URL first, then
    /// these (each without the identity), `attempts` tries on each before the next, back to
    /// the first after a full cycle or after a connection was lost; with `return_after`, a
    /// connection to any but the first is left after that time so that the first is tried
    /// again. (1.6 has no standard mechanism; this is the policy of [`NetworkProfiles`] with
    /// [`NetworkProfiles::with_return_after`].)
    ///
    /// ```
    /// use std::time::Duration;
    /// use ocpp_tokio::station::Station;
    ///
    /// let builder = Station::builder("ws://primary.example.com/ocpp/CP001")
    ///     .unwrap()
    ///     .fallback_urls(["ws://backup.example.com/ocpp"], 3, Some(Duration::from_secs(3600)));
    /// # let _ = builder;
    /// ```
    pub fn fallback_urls<U: Into<String>>(
        mut self,
        urls: impl IntoIterator<Item = U>,
        attempts: u32,
        return_after: Option<Duration>,
    ) -> Self {
        let first = network::base_of(&self.url);
        let mut profiles = NetworkProfiles::from_urls(
            std::iter::once(first).chain(urls.into_iter().map(Into::into)),
        )
        .with_attempts(attempts);
        if let Some(after) = return_after {
            profiles = profiles.with_return_after(after);
        }
        self.profiles = Some(profiles);
        self
    }

    /// Keeps the network profiles when a SetNetworkProfile changes them (and makes the
    /// station answer SetNetworkProfile itself, also without
    /// [`network_profiles`](Self::network_profiles)): `hook` gets the new profiles before the
    /// change is accepted (e.g. writes them as JSON); its error answers Failed (B09.FR.03)
    /// and leaves the profiles as they were.
    ///
    /// ```
    /// use ocpp_tokio::station::Station;
    ///
    /// let builder = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")
    ///     .unwrap()
    ///     .on_network_profiles(|profiles| {
    ///         let json = serde_json::to_string(profiles).map_err(|e| e.to_string())?;
    ///         std::fs::write("/tmp/profiles.json", json).map_err(|e| e.to_string())
    ///     });
    /// # let _ = builder;
    /// ```
    pub fn on_network_profiles(
        mut self,
        hook: impl Fn(&NetworkProfiles) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.set_network_profile = Some(Some(Arc::new(hook)));
        self
    }

    /// Which transactions found open in the store at start go on (`true`) rather than being
    /// ended as after a power loss (the default for every one: a station that went down
    /// during a transaction ends it with stopped reason `PowerLoss` and the last meter reading
    /// it knew, OCPP 1.6 `Reason` and 2.x `ReasonEnumType`). A transaction that goes on
    /// continues its `seqNo`s with the next [`Station::meter`].
    ///
    /// ```
    /// use ocpp_tokio::station::Station;
    ///
    /// // A station whose energy meter and contactor kept the session through the restart.
    /// let builder = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")
    ///     .unwrap()
    ///     .resume_transactions(|open| open.evse.id == 1);
    /// # let _ = builder;
    /// ```
    pub fn resume_transactions(
        mut self,
        rule: impl Fn(&OpenTransaction) -> bool + Send + 'static,
    ) -> Self {
        self.resume = Some(Box::new(rule));
        self
    }

    /// The versions offered, in order of preference (default: 2.1, 2.0.1, 1.6).
    pub fn versions(mut self, versions: impl IntoIterator<Item = OcppVersion>) -> Self {
        self.versions = versions.into_iter().collect();
        self
    }

    /// Security profile 1 (or 2 with [`StationBuilder::tls`]): `Authorization: Basic` with the
    /// identity and this password (the AuthorizationKey; binary allowed on 1.6).
    pub fn password(mut self, password: impl AsRef<[u8]>) -> Self {
        self.password = Some(password.as_ref().to_vec());
        self
    }

    /// `wss://`: the TLS configuration, with the central system's CA (profile 2) and the
    /// station's client certificate (profile 3: `with_client_auth_cert`).
    pub fn tls(mut self, config: Arc<rustls::ClientConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    /// What the BootNotification says (vendor, model, serial number, firmware).
    pub fn info(mut self, info: StationInfo) -> Self {
        self.info = info;
        self
    }

    /// The router that answers the central system's CALLs; its state `S` is made once, with
    /// `S::default()`, and lives as long as the station (across its connections).
    pub fn router<S: Default + Send + Sync + 'static>(self, router: Router<S>) -> Self {
        self.handler(router, S::default())
    }

    /// Any [`Handler`] (a [`Router`] among them) with the station's state: every connection's
    /// [`Session`](crate::Session) derefs to this one state. (`Handler::on_upgrade` is a
    /// server's and is not called.)
    pub fn handler<H: Handler>(self, handler: H, state: H::State) -> Self {
        self.handler_shared(handler, Arc::new(state))
    }

    /// [`StationBuilder::handler`] with a state the application keeps a handle to (e.g. to put
    /// the [`Station`] in it once connected: see the [module](self) documentation).
    ///
    /// ```
    /// use std::sync::{Arc, OnceLock};
    /// use ocpp_tokio::station::Station;
    /// use ocpp_tokio::Router;
    ///
    /// #[derive(Default)]
    /// struct Charger {
    ///     station: OnceLock<Station>,
    /// }
    ///
    /// let charger = Arc::new(Charger::default());
    /// let builder = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")
    ///     .unwrap()
    ///     .handler_shared(Router::for_station(), charger.clone());
    /// # let _ = builder;
    /// ```
    pub fn handler_shared<H: Handler>(mut self, handler: H, state: Arc<H::State>) -> Self {
        self.app = Some(Arc::new(driver::Bound {
            handler: Arc::new(handler),
            state,
        }));
        self
    }

    /// The reconnect back-off (OCPP 2.0.1 `RetryBackOffWaitMinimum`,
    /// `RetryBackOffRandomRange`, `RetryBackOffRepeatTimes`; the same schedule on 1.6).
    pub fn back_off(mut self, back_off: RetryBackOff) -> Self {
        self.back_off = back_off;
        self
    }

    /// Where transaction messages wait (default: a [`MemoryStore`], lost with the process; a
    /// [`FileStore`] survives it).
    pub fn store(mut self, store: impl OfflineStore) -> Self {
        self.store = Some(Box::new(store));
        self
    }

    /// How often a transaction message is tried when the central system answers it with a
    /// CALLERROR, or not at all within the call timeout on a connection that stays up, and the
    /// wait before the next try (multiplied by the tries so far): 1.6
    /// `TransactionMessageAttempts` and `TransactionMessageRetryInterval`, 2.x
    /// `OCPPCommCtrlr.MessageAttempts` and `MessageAttemptInterval` (default 3 and 10 s). After
    /// the last try the message is given up: its caller gets the last failure
    /// ([`CallFailure::ErrorResponse`], [`CallFailure::Timeout`]) and the next one goes. A
    /// connection lost with the message in flight does not count: it goes again after the next
    /// accepted boot.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ocpp_tokio::station::Station;
    ///
    /// let builder = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")
    ///     .unwrap()
    ///     .transaction_retries(5, Duration::from_secs(20));
    /// # let _ = builder;
    /// ```
    pub fn transaction_retries(mut self, attempts: u32, interval: Duration) -> Self {
        self.transaction_attempts = attempts;
        self.transaction_retry_interval = interval;
        self
    }

    /// How many BootNotifications may fail in a row on one connection (no answer within the
    /// call timeout, a CALLERROR), and the wait before the next one after a failure (default
    /// 3 and 30 s). After the last the station closes the connection and reconnects after the
    /// back-off; [`Status::Waiting`] says [`Cause::BootUnanswered`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use ocpp_tokio::station::Station;
    ///
    /// let builder = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")
    ///     .unwrap()
    ///     .boot_retries(5, Duration::from_secs(60));
    /// # let _ = builder;
    /// ```
    pub fn boot_retries(mut self, attempts: u32, interval: Duration) -> Self {
        self.boot_attempts = attempts.max(1);
        self.boot_retry_interval = interval;
        self
    }

    /// How long a connection must stay up after its BootNotification was accepted to count as
    /// established (default 10 s): only an established connection starts the back-off and
    /// the attempt count again. A central system that accepts the WebSocket (or even the boot)
    /// and closes at once makes every wait longer, up to the back-off's bound.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ocpp_tokio::station::Station;
    ///
    /// let builder = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")
    ///     .unwrap()
    ///     .established_after(Duration::from_secs(30));
    /// # let _ = builder;
    /// ```
    pub fn established_after(mut self, lifetime: Duration) -> Self {
        self.established_after = lifetime;
        self
    }

    /// Keep reconnecting (with the back-off) after a 401, a 403 or no version in common,
    /// instead of stopping with a [`PermanentFailure`].
    pub fn retry_refusals(mut self, retry: bool) -> Self {
        self.retry_refusals = retry;
        self
    }

    /// Seeds the station's random numbers (the back-off's random part, WebSocket keys), for a
    /// simulation that must replay the same waits; by default they come from the system.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The connection's settings: timeouts, keep-alive pings, limits, compression (its
    /// versions are those of [`StationBuilder::versions`]).
    pub fn config(mut self, config: ConnectionConfig) -> Self {
        self.config = config;
        self
    }

    /// Starts the station's task on the current tokio runtime (it connects at once).
    ///
    /// # Errors
    /// [`StationError`]: no versions, `wss://` without TLS configuration, an offline store
    /// that cannot be read.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn connect(mut self) -> Result<Station, StationError> {
        if self.versions.is_empty() {
            return Err(StationError::NoVersion);
        }
        let mut profiles = self.profiles.take().unwrap_or_else(|| {
            NetworkProfiles::new([NetworkProfile::new(0, network::base_of(&self.url))])
        });
        if profiles.active_security_profile() == 0 {
            let active =
                network::security_profile_of(&self.url, self.password.is_some(), self.tls.as_ref());
            // The configured profiles may start lower than the builder's URL implies: the
            // lowest of them is the floor then.
            let lowest = profiles.profiles().iter().map(|p| p.security_profile).min();
            profiles =
                profiles.with_active_security_profile(lowest.map_or(active, |l| l.min(active)));
        }
        if self.tls.is_none() {
            if let Some(wss) = profiles
                .profiles()
                .iter()
                .find(|p| p.csms_url.starts_with("wss://"))
            {
                return Err(StationError::Tls(format!(
                    "{}: wss:// needs StationBuilder::tls (the central system's CA)",
                    wss.csms_url
                )));
            }
        }
        for profile in profiles.profiles() {
            network::url_for(profile, self.url.identity())?;
        }
        // Starting is a reboot: the first entry of the priority list first (B10.FR.04), even
        // with profiles kept from an earlier run.
        profiles.on_restart();
        let tls = match (self.url.tls(), self.tls) {
            (false, config) => config,
            (true, None) => {
                return Err(StationError::Tls(
                    "wss:// needs StationBuilder::tls (the central system's CA)".into(),
                ))
            }
            (true, Some(config)) => {
                let name =
                    rustls::pki_types::ServerName::try_from(self.url.server_name().to_owned())
                        .map_err(|e| {
                            StationError::Tls(format!("{}: {e}", self.url.server_name()))
                        })?;
                let _ = name;
                Some(config)
            }
        };
        let store = self.store.unwrap_or_else(|| Box::new(MemoryStore::new()));
        let first_version = self.versions[0];
        let prefix = transaction_id_prefix(self.url.identity().as_str());
        let (mut queue, restart) = queue::Queue::open(
            store,
            self.transaction_attempts,
            self.transaction_retry_interval,
            || Transactions::new(first_version, &prefix),
        )?;
        // A transaction open when the station went down ends as after a power loss, unless
        // the application goes on with it.
        for open in &restart.open {
            if self.resume.as_ref().is_some_and(|resume| resume(open)) {
                continue;
            }
            let op = queue::TransactionOp::PowerLoss { evse: open.evse.id };
            match queue.transaction(op, ocpp_messages::DateTime::now()) {
                Ok(_) => {}
                Err(QueueError::Store(error)) => return Err(StationError::Store(error)),
                Err(error) => {
                    tracing::warn!(evse = open.evse.id, %error, "transaction open at start not ended");
                }
            }
        }
        let transactions = queue.watch_transactions();
        let app = self.app.unwrap_or_else(|| {
            Arc::new(driver::Bound {
                handler: Arc::new(Router::<()>::default()),
                state: Arc::new(()),
            })
        });
        let (commands, receiver) = mpsc::unbounded_channel();
        let (status_tx, status) = watch::channel(Status::Connecting { attempt: 1 });
        let (stopped_tx, stopped) = watch::channel(None);
        let identity = self.url.identity().clone();
        let heartbeat_ms = Arc::new(AtomicU64::new(
            ocpp_proto::station::DEFAULT_HEARTBEAT_INTERVAL.as_millis() as u64,
        ));
        let (profiles_watch, profiles_rx) = watch::channel(profiles.clone());
        let mut reconnect = ocpp_proto::station::Reconnect::new(self.back_off);
        reconnect.set_min_lifetime(self.established_after);
        let config = Arc::new(self.config.versions(self.versions));
        let task = driver::Task {
            base_config: config.clone(),
            config,
            url: self.url,
            password: self.password,
            tls,
            profiles,
            profiles_watch,
            set_network_profile: self.set_network_profile,
            info: self.info,
            app,
            reconnect,
            boot_retries: (self.boot_attempts, self.boot_retry_interval),
            queue,
            commands: receiver,
            status: status_tx,
            retry_refusals: self.retry_refusals,
            rng: self
                .seed
                .map_or_else(fastrand::Rng::new, fastrand::Rng::with_seed),
            heartbeat_ms: heartbeat_ms.clone(),
            booted_before: false,
            boot_reason: None,
            hook: match (self.hook, self.local_auth) {
                (hook, None) => hook,
                (None, Some(store)) => {
                    let feeder = auth_cache::CacheFeeder::new(store);
                    Some(Arc::new(move |event: &crate::hook::MessageEvent<'_>| {
                        feeder.on_message(event)
                    }))
                }
                (Some(hook), Some(store)) => {
                    let feeder = auth_cache::CacheFeeder::new(store);
                    Some(Arc::new(move |event: &crate::hook::MessageEvent<'_>| {
                        feeder.on_message(event);
                        hook(event);
                    }))
                }
            },
        };
        tokio::spawn(async move {
            let result = task.run().await;
            let _ = stopped_tx.send(Some(result));
        });
        Ok(Station {
            shared: Arc::new(Shared {
                commands,
                status,
                stopped,
                identity,
                heartbeat_ms,
                transactions,
                profiles: profiles_rx,
                restarted: restart.open,
            }),
        })
    }
}

/// What the 2.x transactionIds of a station start with when it has no state yet: its identity
/// (at most 14 bytes of it) and the second the state was made, so that ids stay unique even
/// if the state is lost (a [`MemoryStore`]).
fn transaction_id_prefix(identity: &str) -> String {
    let mut end = identity.len().min(14);
    while !identity.is_char_boundary(end) {
        end -= 1;
    }
    let mut secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut stamp = Vec::new();
    while secs > 0 || stamp.is_empty() {
        stamp.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[(secs % 36) as usize]);
        secs /= 36;
    }
    stamp.reverse();
    format!("{}-{}-", &identity[..end], String::from_utf8_lossy(&stamp))
}
