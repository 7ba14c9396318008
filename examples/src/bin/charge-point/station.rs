//! What one simulated charge point does, on top of an [`ocpp_tokio::station::Station`].
//!
//! The client owns the protocol side: the connection (TLS, Basic auth, versions), the boot,
//! heartbeats, the reconnect back-off and the offline queue of transaction messages. What is
//! left here is the station itself:
//!
//! - [`router`]: a [`Router`] over [`Sim`] (the simulated station's state behind a mutex)
//!   that answers the CSMS's commands; what a command leads to once answered (a transaction
//!   starts or stops, a triggered message, a reset) goes to the station's sender.
//! - [`run`]: one task per charge point that reports the connectors after each accepted
//!   boot, plays the `--session` (Authorize, start, meter values, stop) and keeps its timers,
//!   across connections (a transaction goes on while the link is down).
//! - a sender task that puts the station's messages out in order: a transaction's start,
//!   readings and stop through the library's transactions ([`Station::start_transaction_with`],
//!   [`Station::meter_reading`], [`Station::stop_transaction_with`]: its id, 2.x `seqNo`, 1.6
//!   transactionId learnt from the CSMS and the offline queue are the library's, journaled
//!   together), anything else with [`Station::call_raw`].

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use ocpp_examples::charge_point_payload::{self as payload, ConnectorStage, Outgoing};
use ocpp_messages::version::OcppVersion;
use ocpp_model::{Command, Outcome};
use ocpp_proto::{CallFailure, CallOutcome, Closed, Response};
use ocpp_tokio::station::{
    BootReason, Evse, IdToken, QueueError, Queued, Reading, SampledValue, Start, Station,
    StationStopReason, Status,
};
use ocpp_tokio::{Answer, ErrorCode, IncomingCall, Reply, Router, Session};
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

use super::cli::Options;
use super::settings::Settings;
use super::stats::Stats;

mod commands;

/// The simulated charging power.
const POWER_W: i64 = 11_000;
/// The heartbeat interval until the first accepted boot.
const DEFAULT_HEARTBEAT: Duration = ocpp_proto::station::DEFAULT_HEARTBEAT_INTERVAL;
/// How long a reset waits for the queued transaction messages before the reboot.
const RESET_DRAIN: Duration = Duration::from_secs(10);
/// A deadline far enough away to mean "none".
const FAR: Duration = Duration::from_secs(24 * 3600);

/// One simulated charge point: the router's state, shared with its tasks.
pub(crate) struct Sim {
    identity: String,
    id_tag: String,
    session_length: Duration,
    stats: Arc<Mutex<Stats>>,
    /// The client's handle, set once it is started.
    station: OnceLock<Station>,
    /// Messages for the sender, in order.
    out: mpsc::UnboundedSender<Item>,
    /// Wakes the station's task when a command changed its timers.
    wake: Notify,
    state: Mutex<State>,
}

/// The simulated station's state.
struct State {
    settings: Settings,
    /// The version of the current (or last) connection.
    version: OcppVersion,
    transaction: Option<Transaction>,
    /// How many transactions started (which one a late answer is about).
    transactions_started: u64,
    /// The energy register, in mWh (integral: W × ms / 3600).
    energy_mwh: i64,
    energy_at: Instant,
    /// The last sequence number of bench DataTransfer messages.
    bench_seq: Option<u64>,
    /// A Reset was accepted: no new transaction until the reboot.
    reset_requested: bool,
}

/// A transaction in progress: which connector, and its timers (its id, `seqNo` and readings
/// are the library's: [`Station::transactions`]).
struct Transaction {
    /// The connector (1.6 connectorId; 2.x the EVSE, connector 1 on it).
    connector: u32,
    /// Its number among [`State::transactions_started`].
    number: u64,
    next_meter: Instant,
    /// When a played session ends by itself.
    stop_at: Option<Instant>,
}

/// What the sender does, in order.
enum Item {
    Send(Outgoing),
    /// A transaction starts (the number of the simulator's transaction).
    Start(Start, u64),
    /// A reading of the transaction on the connector (the simulator's transaction's number).
    Meter(u32, Reading, u64),
    /// The transaction on the connector ends.
    Stop(u32, Reading, StationStopReason),
    /// An accepted Reset: the queued messages delivered, close and boot again.
    Reboot,
}

impl Sim {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn stats(&self) -> MutexGuard<'_, Stats> {
        self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn send(&self, items: impl IntoIterator<Item = Item>) {
        for item in items {
            let _ = self.out.send(item);
        }
    }

    /// Counts the outcome of one of our CALLs (one that never left is not counted).
    fn count(&self, action: &str, outcome: &CallOutcome) {
        let mut stats = self.stats();
        match outcome {
            Ok(_) => {
                stats.calls_sent += 1;
                stats.calls_answered += 1;
            }
            Err(CallFailure::Timeout) => {
                stats.calls_sent += 1;
                stats.call_timeouts += 1;
                warn!(identity = %self.identity, action, "no answer in time");
            }
            Err(failure) if failure.may_have_reached_peer() => {
                stats.calls_sent += 1;
                stats.call_errors += 1;
                warn!(identity = %self.identity, action, %failure, "call failed");
            }
            Err(failure) => debug!(identity = %self.identity, action, %failure, "not sent"),
        }
    }

    // ---- transactions ----

    /// Starts a transaction: its messages (`remote`: RemoteStart or RequestStartTransaction;
    /// otherwise a played session, which ends by itself).
    fn begin(
        &self,
        st: &mut State,
        now: Instant,
        connector: u32,
        id_tag: String,
        remote_start_id: Option<i32>,
        remote: bool,
    ) -> Vec<Item> {
        let _ = read_meter(st, now);
        st.transactions_started += 1;
        info!(identity = %self.identity, %id_tag, connector, "transaction starts");
        let mut messages = Vec::new();
        if st.version == OcppVersion::V1_6 {
            messages.push(Item::Send(Outgoing::Status {
                connector,
                state: ConnectorStage::Preparing,
            }));
        }
        let number = st.transactions_started;
        st.transaction = Some(Transaction {
            connector,
            number,
            next_meter: now + st.settings.meter_interval,
            stop_at: (!remote).then(|| now + self.session_length),
        });
        let reading = read_meter(st, now);
        let evse = Evse::new(evse_id(connector)).with_connector(1);
        let mut start = Start::new(
            evse,
            IdToken::from_id_tag(id_tag),
            reading.energy_wh,
            ocpp_tokio::DateTime::now(),
        );
        for value in reading.sampled {
            start = start.with_sampled_value(value);
        }
        if let Some(id) = remote_start_id {
            start = start.with_remote_start_id(id);
        }
        messages.push(Item::Start(start, number));
        messages.push(Item::Send(Outgoing::Status {
            connector,
            state: ConnectorStage::Charging,
        }));
        messages
    }

    /// Ends the transaction, if any: its messages.
    fn end_transaction(
        &self,
        st: &mut State,
        now: Instant,
        reason: StationStopReason,
    ) -> Vec<Item> {
        if st.transaction.is_none() {
            return Vec::new();
        }
        let reading = read_meter(st, now);
        let Some(t) = st.transaction.take() else {
            return Vec::new();
        };
        self.stats().transactions += 1;
        info!(identity = %self.identity, id = ?self.transaction_id(&t), ?reason, energy_wh = reading.energy_wh, "transaction ends");
        let connector = t.connector;
        let mut messages = vec![Item::Stop(connector, reading, reason)];
        if st.version == OcppVersion::V1_6 {
            messages.push(Item::Send(Outgoing::Status {
                connector,
                state: ConnectorStage::Finishing,
            }));
        }
        messages.push(Item::Send(Outgoing::Status {
            connector,
            state: ConnectorStage::Available,
        }));
        messages
    }

    /// The answer to a start or a reading of the simulator's transaction `number` (1.6: the
    /// library took the transactionId from it): an id tag not accepted ends the transaction.
    fn on_transaction_answer(&self, number: u64, start: bool, response: &Response) {
        let payload::CallAnswer::IdTag { accepted, .. } = payload::read_answer(response) else {
            return;
        };
        let now = Instant::now();
        let mut st = self.lock();
        if st.transaction.as_ref().map(|t| t.number) != Some(number) {
            return;
        }
        let refused = if start && st.version == OcppVersion::V1_6 {
            accepted != Some(true)
        } else {
            accepted == Some(false)
        };
        if refused {
            warn!(identity = %self.identity, "id tag not accepted: ending the transaction");
            let messages = self.end_transaction(&mut st, now, StationStopReason::DeAuthorized);
            self.send(messages);
        }
    }

    /// The session's and the transaction's timers; their next deadline.
    fn on_timers(&self, now: Instant) -> Instant {
        let mut st = self.lock();
        let (stop, meter) = st.transaction.as_ref().map_or((false, false), |t| {
            (t.stop_at.is_some_and(|at| at <= now), t.next_meter <= now)
        });
        if stop {
            let messages = self.end_transaction(&mut st, now, StationStopReason::Local);
            self.send(messages);
        } else if meter {
            let interval = st.settings.meter_interval;
            let reading = read_meter(&mut st, now);
            if let Some(t) = st.transaction.as_mut() {
                t.next_meter = now + interval;
                self.send([Item::Meter(t.connector, reading, t.number)]);
            }
        }
        st.transaction.as_ref().map_or(now + FAR, |t| {
            t.stop_at.map_or(t.next_meter, |s| s.min(t.next_meter))
        })
    }
}

/// The StatusNotifications of every connector (1.6 with connector 0, the charge point), or of
/// `only`.
fn statuses(st: &State, only: Option<u32>) -> Vec<Item> {
    let first = if st.version == OcppVersion::V1_6 {
        0
    } else {
        1
    };
    (first..=st.settings.connectors)
        .filter(|c| only.is_none() || only == Some(*c))
        .map(|connector| {
            Item::Send(Outgoing::Status {
                connector,
                state: match &st.transaction {
                    Some(t) if t.connector == connector => ConnectorStage::Charging,
                    _ => ConnectorStage::Available,
                },
            })
        })
        .collect()
}

/// The meter now: the energy register (integral, in whole Wh) and the power while charging.
fn read_meter(st: &mut State, now: Instant) -> Reading {
    let charging = st.transaction.is_some();
    let elapsed_ms = now.saturating_duration_since(st.energy_at).as_millis();
    if charging {
        let added = i128::from(POWER_W) * i128::try_from(elapsed_ms).unwrap_or(i128::MAX) / 3600;
        st.energy_mwh = st
            .energy_mwh
            .saturating_add(i64::try_from(added).unwrap_or(i64::MAX));
    }
    st.energy_at = now;
    Reading::new(st.energy_mwh / 1000).with_sampled_value(SampledValue::power_w(if charging {
        POWER_W
    } else {
        0
    }))
}

/// A reading as the payload module writes a MeterValues outside a transaction.
fn payload_reading(reading: &Reading) -> payload::MeterSnapshot {
    let power = reading
        .sampled
        .iter()
        .find(|v| v.measurand == "Power.Active.Import")
        .map_or(0.0, |v| v.value.to_f64());
    payload::MeterSnapshot {
        energy_wh: reading.energy_wh,
        power_w: power,
    }
}

/// The library's EVSE id (1.6 connectorId) of a connector.
fn evse_id(connector: u32) -> i32 {
    i32::try_from(connector).unwrap_or(i32::MAX)
}

// ---- the router ----

/// Answers the CSMS's commands: the model's commands of every version in one handler
/// ([`Router::on_command`]), the rest (configuration keys and variables the model does not
/// name, DataTransfer) read by [`payload::read_command`] in the fallback.
pub(crate) fn router() -> Router<Arc<Sim>> {
    Router::for_station()
        .on_command(command)
        .fallback(other_call)
        .on_connect(connected)
        .on_close(closed)
}

async fn command(session: Session<Arc<Sim>>, command: Command) -> Reply<Outcome> {
    let sim = session.state();
    sim.stats().commands += 1;
    info!(identity = %sim.identity, command = command.name(), "command");
    sim.command(session.version(), command)
}

async fn other_call(session: Session<Arc<Sim>>, call: IncomingCall) -> Answer {
    let sim = session.state();
    sim.stats().commands += 1;
    let (version, action) = (call.version(), call.action());
    info!(identity = %sim.identity, id = %call.id(), action, "command");
    let Some(reply) = sim.decide(version, payload::read_command(call.request())) else {
        let description = format!("{action} is not supported by this simulator");
        return Answer::error(ErrorCode::NotSupported, description);
    };
    match payload::response(version, action, &reply) {
        Ok(response) => Answer::Result(response),
        Err(error) => {
            warn!(identity = %sim.identity, %error, "response not built");
            Answer::error(ErrorCode::InternalError, "")
        }
    }
}

async fn connected(session: Session<Arc<Sim>>) {
    let sim = session.state();
    info!(identity = %sim.identity, version = %session.version(), "connected");
    {
        let mut stats = sim.stats();
        stats.connections += 1;
        stats.connected_now += 1;
    }
    sim.lock().version = session.version();
}

async fn closed(session: Session<Arc<Sim>>, closed: Closed) {
    let sim = session.state();
    let mut stats = sim.stats();
    stats.connected_now = stats.connected_now.saturating_sub(1);
    info!(identity = %sim.identity, reason = ?closed.reason, "connection ended");
}

// ---- the station's tasks ----

/// Starts the client for `identity` at `url` and simulates the station until `stop`.
pub(crate) async fn run(
    options: Arc<Options>,
    identity: String,
    url: String,
    tls: Option<Arc<rustls::ClientConfig>>,
    stats: Arc<Mutex<Stats>>,
    mut stop: watch::Receiver<bool>,
    seed: u64,
) {
    let (out, items) = mpsc::unbounded_channel();
    let sim = Arc::new(Sim {
        identity: identity.clone(),
        id_tag: options.id_tag.clone(),
        session_length: options.session_length,
        stats,
        station: OnceLock::new(),
        out,
        wake: Notify::new(),
        state: Mutex::new(State {
            settings: Settings {
                heartbeat_interval: DEFAULT_HEARTBEAT,
                meter_interval: options.meter_interval,
                back_off: options.back_off(),
                connectors: options.connectors,
            },
            version: options.versions[0],
            transaction: None,
            transactions_started: 0,
            energy_mwh: 0,
            energy_at: Instant::now(),
            bench_seq: None,
            reset_requested: false,
        }),
    });
    let station = match build(&options, &identity, &url, tls, sim.clone(), seed) {
        Ok(station) => station,
        Err(error) => {
            warn!(%identity, %error, "station not started");
            return;
        }
    };
    let _ = sim.station.set(station.clone());
    let sender = tokio::spawn(send_loop(sim.clone(), station.clone(), items));
    let mut status = station.watch_status();
    let mut last: Option<Status> = None;
    let mut session_pending = options.session;
    let mut ever_booted = false;
    let mut deadline = Instant::now() + FAR;
    loop {
        let current = *status.borrow_and_update();
        if last != Some(current) {
            on_status(&sim, last, current, &mut ever_booted);
            if matches!(current, Status::Accepted { .. }) && session_pending {
                session_pending = false;
                tokio::spawn(play_session(sim.clone(), station.clone()));
            }
            last = Some(current);
        }
        if current == Status::Stopped {
            break;
        }
        tokio::select! {
            changed = status.changed() => if changed.is_err() { break },
            () = sim.wake.notified() => deadline = sim.on_timers(Instant::now()),
            () = tokio::time::sleep_until(deadline.into()) => {
                deadline = sim.on_timers(Instant::now());
            }
            _ = stop.wait_for(|s| *s) => {
                info!(%identity, "closing");
                station.close();
                break;
            }
        }
    }
    if let Err(failure) = station.stopped().await {
        warn!(%identity, %failure, "the station stopped");
    }
    sender.abort();
}

fn build(
    options: &Options,
    identity: &str,
    url: &str,
    tls: Option<Arc<rustls::ClientConfig>>,
    sim: Arc<Sim>,
    seed: u64,
) -> Result<Station, ocpp_tokio::station::StationError> {
    let info = ocpp_tokio::station::StationInfo::new("OcppWs", "SimCP")
        .with_serial_number(identity.chars().take(25).collect::<String>())
        .with_firmware_version(env!("CARGO_PKG_VERSION"));
    // Room for a boot's StatusNotifications (up to 33) waiting behind one another.
    let config = ocpp_tokio::ConnectionConfig::default().max_queued_calls(64);
    let mut builder = Station::builder(url)?
        .versions(options.versions.clone())
        .info(info)
        .back_off(options.back_off())
        .retry_refusals(true)
        .seed(seed)
        .config(config)
        .handler(router(), sim);
    if let Some(password) = &options.password {
        builder = builder.password(password.0.as_bytes());
    }
    if let Some(dir) = &options.state_dir {
        std::fs::create_dir_all(dir).map_err(|source| {
            let path = dir.clone();
            ocpp_tokio::station::StationError::Store(ocpp_tokio::station::OfflineStoreError::Io {
                path,
                source,
            })
        })?;
        // The identity as a file name: what is not alphanumeric (or `-`, `_`) becomes `_`.
        let name: String = identity
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let store = ocpp_tokio::station::FileStore::open(dir.join(format!("{name}.journal")))
            .map_err(ocpp_tokio::station::StationError::Store)?;
        builder = builder.store(store);
    }
    if let Some(tls) = tls {
        builder = builder.tls(tls);
    }
    builder.connect()
}

/// A change of the client's status: the counters; after an accepted boot, the connectors.
fn on_status(sim: &Sim, last: Option<Status>, current: Status, ever_booted: &mut bool) {
    debug!(identity = %sim.identity, ?current, "status");
    match current {
        Status::Connecting { .. } => sim.stats().attempts += 1,
        // An attempt that did not open a connection (refused upgrade, TCP or TLS failure).
        Status::Waiting { .. } if matches!(last, Some(Status::Connecting { .. })) => {
            sim.stats().refused += 1;
        }
        Status::Registering {
            registration: Some(registration),
            ..
        } => {
            info!(identity = %sim.identity, ?registration, "boot not accepted");
            let mut stats = sim.stats();
            stats.calls_sent += 1;
            stats.calls_answered += 1;
        }
        Status::Accepted { version } => {
            {
                let mut stats = sim.stats();
                stats.boots += 1;
                stats.calls_sent += 1;
                stats.calls_answered += 1;
                if !*ever_booted {
                    stats.booted_stations += 1;
                }
            }
            *ever_booted = true;
            info!(identity = %sim.identity, %version, "booted");
            let mut st = sim.lock();
            st.version = version;
            sim.send(statuses(&st, None));
        }
        _ => {}
    }
}

/// `--session`: Authorize, then a transaction that ends by itself after `--session-s`.
async fn play_session(sim: Arc<Sim>, station: Station) {
    let version = sim.lock().version;
    let message = Outgoing::Authorize {
        id_tag: sim.id_tag.clone(),
    };
    let Some(response) = call(&sim, &station, version, &message).await else {
        return;
    };
    let accepted = matches!(
        payload::read_answer(&response),
        payload::CallAnswer::IdTag {
            accepted: Some(true),
            ..
        }
    );
    let mut st = sim.lock();
    if !accepted || st.transaction.is_some() || st.reset_requested {
        warn!(identity = %sim.identity, "session not authorized");
        return;
    }
    let messages = sim.begin(&mut st, Instant::now(), 1, sim.id_tag.clone(), None, false);
    sim.send(messages);
    sim.wake.notify_one();
}

/// A CALL that is not a transaction message: its answer, counted.
async fn call(
    sim: &Sim,
    station: &Station,
    version: OcppVersion,
    message: &Outgoing,
) -> Option<Response> {
    let request = match payload::request(version, message) {
        Ok(request) => request,
        Err(error) => {
            warn!(identity = %sim.identity, %error, "payload not built");
            return None;
        }
    };
    let action = request.action();
    let outcome = station.call_raw(request).await;
    sim.count(action, &outcome);
    outcome.ok()
}

/// Puts the station's messages out, one after the other.
async fn send_loop(sim: Arc<Sim>, station: Station, mut items: mpsc::UnboundedReceiver<Item>) {
    let mut last_queued: Option<JoinHandle<()>> = None;
    while let Some(item) = items.recv().await {
        let v16 = sim.lock().version == OcppVersion::V1_6;
        // 1.6 has a message for each step of a transaction, 2.x one TransactionEvent.
        let action_name = |v16_action| if v16 { v16_action } else { "TransactionEvent" };
        // A transaction's message: into the offline queue with the transactions' new state.
        let (queued, action, answer_of) = match item {
            Item::Reboot => {
                if let Some(last) = last_queued.take() {
                    let _ = tokio::time::timeout(RESET_DRAIN, last).await;
                }
                info!(identity = %sim.identity, "rebooting");
                sim.lock().reset_requested = false;
                station.reboot(BootReason::RemoteReset);
                continue;
            }
            Item::Send(message) => {
                let version = sim.lock().version;
                call(&sim, &station, version, &message).await;
                continue;
            }
            Item::Start(start, number) => (
                station.start_transaction_with(start).await,
                action_name("StartTransaction"),
                Some((number, true)),
            ),
            Item::Meter(connector, reading, number) => (
                station.meter_reading(evse_id(connector), reading).await,
                action_name("MeterValues"),
                Some((number, false)),
            ),
            Item::Stop(connector, reading, reason) => (
                station
                    .stop_transaction_with(evse_id(connector), reading, reason)
                    .await,
                action_name("StopTransaction"),
                None,
            ),
        };
        let queued: Queued = match queued {
            Ok(queued) => queued,
            Err(error @ QueueError::UnknownTransaction(_)) => {
                warn!(identity = %sim.identity, %error, "its StartTransaction was given up");
                continue;
            }
            Err(error) => {
                warn!(identity = %sim.identity, %error, "not queued");
                continue;
            }
        };
        let sim = sim.clone();
        last_queued = Some(tokio::spawn(async move {
            let outcome = queued.outcome().await;
            sim.count(action, &outcome);
            if let (Ok(response), Some((number, start))) = (&outcome, answer_of) {
                sim.on_transaction_answer(number, start, response);
            }
        }));
    }
}
