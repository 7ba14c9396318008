//! A charging station: connect to a central system, boot, answer its CALLs with the same
//! [`Router`](crate::Router) as a server, call it, and never lose a transaction message.
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
//! - **TriggerMessage for a BootNotification**: once the application accepts it, the station
//!   boots again (reason `Triggered`, after the boot in flight, if any), and that boot's
//!   answer is the registration's. A 2.x station already Accepted answers such a trigger
//!   `Rejected` itself (F06.FR.17); the application does not see it.
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
//! [`Session::charge_point`](crate::Session::charge_point) (`call`, `send`, `close`: a SEND
//! refused for a full output is written after the next write, in order, as on a server); to
//! reach the [`Station`] itself (to [`queue`](Station::queue) a transaction message,
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

mod app;
mod auth_cache;
mod builder;
pub mod device_model;
mod dial;
mod driver;
mod error;
pub mod local_auth;
mod network;
mod queue;
mod wire;

/// The offline queue's store: [`ocpp_station_store::offline`], re-exported.
pub use ocpp_station_store::offline as store;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ocpp_messages::{Request, Response};
use ocpp_proto::{CallFailure, CallOutcome, ChargePointIdentity, OcppVersion};
use tokio::sync::{mpsc, oneshot, watch};

pub use device_model::{DeviceModelError, DeviceModelExt, DeviceModelStore};
pub use local_auth::{LocalAuthError, LocalAuthExt, LocalAuthStore};
pub use ocpp_proto::station::{
    BootReason, Evse, IdToken, IdTokenType, NetworkProfile, NetworkProfiles, OpenTransaction,
    ProfileRejected, Reading, RegistrationStatus, RetryBackOff, SampledValue, Start, StationInfo,
    StationStopReason, TransactionError, TransactionRef, Transactions,
};
pub use ocpp_proto::station::{StationUrl, UrlError};
use store::TransactionOp;
pub use store::{
    FileStore, MemoryStore, OfflineStore, OfflineStoreError, QueueError, StoredMessage,
};

pub(crate) use app::App;
pub use builder::StationBuilder;
pub use error::{NetworkProfileError, StationError};
use network::{NetworkChange, NetworkEdit};
pub use ocpp_proto::station::{Cause, PermanentFailure, Status, Stopped};

use crate::typed::{ResponseOf, TypedCall};

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
pub(crate) enum StationCommand {
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
        op: TransactionOp,
        reply: oneshot::Sender<Result<Queued, QueueError>>,
    },
    Close,
    /// Close the connection and connect again at once; the next boot gives this reason.
    Reboot(BootReason),
    HeartbeatInterval(Duration),
    BackOff(RetryBackOff),
    Network(NetworkChange),
}

/// What every handle shares.
struct StationShared {
    commands: mpsc::UnboundedSender<StationCommand>,
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
    shared: Arc<StationShared>,
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
    /// Its deadline is the call timeout ([`ConnectionConfig::call_timeout`](ocpp_proto::ConnectionConfig::call_timeout)) from now, for the
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
        let call = |reply| StationCommand::Call { request, reply };
        self.ask(call, Err(CallFailure::NotConnected)).await
    }

    /// Hands the task the command `command` makes of a reply channel, and waits for the reply;
    /// `gone` when the task is not there to reply (the station stopped).
    async fn ask<T>(
        &self,
        command: impl FnOnce(oneshot::Sender<T>) -> StationCommand,
        gone: T,
    ) -> T {
        let (reply, answer) = oneshot::channel();
        if self.shared.commands.send(command(reply)).is_err() {
            return gone;
        }
        answer.await.unwrap_or(gone)
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
        let queue = |reply| StationCommand::Queue {
            request,
            transaction_of,
            reply,
        };
        self.ask(queue, Err(QueueError::Stopped)).await
    }

    /// Starts a transaction on `evse` for `id_token`, the meter at `meter_wh` (Wh), now: the
    /// 1.6 StartTransaction or the 2.x TransactionEvent `Started` goes through the offline
    /// queue, and returns once the message and the transactions' new state are in the store, in
    /// one record (with [`FileStore`], on disk). See [`Station::start_transaction_with`] for a
    /// remote start or a reservation.
    ///
    /// ```no_run
    /// # async fn example(station: ocpp_tokio::station::Station) -> Result<(), ocpp_tokio::station::QueueError> {
    /// use ocpp_tokio::station::{Evse, IdToken, StationStopReason};
    /// station.start_transaction(Evse::new(1).with_connector(1), IdToken::new("04A1B2", "ISO14443"), 1_000).await?;
    /// station.meter(1, 1_500).await?;
    /// println!("transaction {:?}", station.transaction_id(1));
    /// station.stop_transaction(1, 2_000, StationStopReason::Local).await?;
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
        self.transaction(TransactionOp::Start(start)).await
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
        self.transaction(TransactionOp::Meter { evse, reading })
            .await
    }

    /// Ends the transaction on `evse`, the meter at `meter_wh`, now, for `reason`: 1.6
    /// StopTransaction, 2.x TransactionEvent `Ended`; returns once in the store, with the new
    /// state.
    ///
    /// ```no_run
    /// # async fn example(station: ocpp_tokio::station::Station) -> Result<(), ocpp_tokio::station::QueueError> {
    /// use ocpp_tokio::station::StationStopReason;
    /// station.stop_transaction(1, 9_000, StationStopReason::Remote).await?;
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
        reason: StationStopReason,
    ) -> Result<Queued, QueueError> {
        self.stop_transaction_with(evse, Reading::new(meter_wh), reason)
            .await
    }

    /// [`Station::stop_transaction`] with other sampled values beside the energy register
    /// (2.x: in the `Ended` event; 1.6: StopTransaction's `transactionData`).
    ///
    /// ```no_run
    /// # async fn example(station: ocpp_tokio::station::Station) -> Result<(), ocpp_tokio::station::QueueError> {
    /// use ocpp_tokio::station::{Reading, SampledValue, StationStopReason};
    /// let reading = Reading::new(9_000).with_sampled_value(SampledValue::soc_percent(80));
    /// station.stop_transaction_with(1, reading, StationStopReason::EVDisconnected).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Station::stop_transaction`].
    pub async fn stop_transaction_with(
        &self,
        evse: i32,
        reading: Reading,
        reason: StationStopReason,
    ) -> Result<Queued, QueueError> {
        self.transaction(TransactionOp::Stop {
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
        self.transaction(TransactionOp::PowerLoss { evse }).await
    }

    async fn transaction(&self, op: TransactionOp) -> Result<Queued, QueueError> {
        let transaction = |reply| StationCommand::Transaction { op, reply };
        self.ask(transaction, Err(QueueError::Stopped)).await
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
        let _ = self.shared.commands.send(StationCommand::Reboot(reason));
    }

    /// Sets the heartbeat interval (the central system changed `HeartbeatInterval`: 1.6
    /// ChangeConfiguration, 2.x SetVariables; or the station's own setting at start, offline
    /// too); zero stops heartbeats. It holds over reconnections; an accepted boot whose answer
    /// gives an interval other than 0 replaces it.
    pub fn set_heartbeat_interval(&self, interval: Duration) {
        let _ = self
            .shared
            .commands
            .send(StationCommand::HeartbeatInterval(interval));
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
            .send(StationCommand::Network(NetworkChange { change, reply }));
    }

    async fn change_network(&self, change: Box<NetworkEdit>) -> Result<(), NetworkProfileError> {
        let network = |reply| StationCommand::Network(NetworkChange { change, reply });
        self.ask(network, Err(NetworkProfileError::Stopped)).await
    }

    /// Every change of [`Station::network_profiles`]: each attempt's central system, an
    /// accepted connection, a SetNetworkProfile.
    pub fn watch_network_profiles(&self) -> watch::Receiver<NetworkProfiles> {
        self.shared.profiles.clone()
    }

    /// Changes the reconnect back-off (2.0.1 `RetryBackOff*` variables set by the central
    /// system); it applies from the next wait.
    pub fn set_back_off(&self, back_off: RetryBackOff) {
        let _ = self.shared.commands.send(StationCommand::BackOff(back_off));
    }

    /// Stops the station: its connection closes (1000) and its task ends; queued messages
    /// stay in the store.
    pub fn close(&self) {
        let _ = self.shared.commands.send(StationCommand::Close);
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
