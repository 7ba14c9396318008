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
//! - a sender task that puts the station's messages out in order: transaction messages
//!   through the client's offline queue (1.6: later messages of a transaction with
//!   [`Station::queue_in`], so that they get the CSMS's transactionId even when the
//!   StartTransaction was queued offline), anything else with [`Station::call_raw`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ocpp_examples::charge_point_payload::{
    self as payload, Command, ConnectorState, Outgoing, Reading, Reply, StopReason, TriggerKind,
    TxRef,
};
use ocpp_messages::version::OcppVersion;
use ocpp_server_core::{CallFailure, CallOutcome, Closed, Response};
use ocpp_tokio::station::{BootReason, QueueError, Station, Status};
use ocpp_tokio::{Answer, ErrorCode, IncomingCall, Router, Session};
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

use super::cli::Options;
use super::settings::{Changed, Settings};
use super::stats::Stats;

/// The simulated charging power.
const POWER_W: f64 = 11_000.0;
/// The heartbeat interval until the first accepted boot.
const DEFAULT_HEARTBEAT: Duration = ocpp_server_core::station::DEFAULT_HEARTBEAT_INTERVAL;
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
    transactions_started: u32,
    energy_wh: i64,
    energy_at: Instant,
    /// The last sequence number of bench DataTransfer messages.
    bench_seq: Option<u64>,
    /// A Reset was accepted: no new transaction until the reboot.
    reset_requested: bool,
}

/// A transaction in progress.
struct Transaction {
    tx: TxRef,
    next_meter: Instant,
    /// When a played session ends by itself.
    stop_at: Option<Instant>,
}

/// What the sender does, in order.
enum Item {
    Send(Outgoing),
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

    fn send_all(&self, messages: Vec<Outgoing>) {
        self.send(messages.into_iter().map(Item::Send));
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

    // ---- the CSMS's commands ----

    /// The reply to a command (`None`: not supported); what follows goes to the sender.
    fn decide(&self, version: OcppVersion, command: Command) -> Option<Reply> {
        let v16 = version == OcppVersion::V1_6;
        let now = Instant::now();
        let mut st = self.lock();
        // The interval in force: the boot's answer's, or the CSMS's change since.
        if let Some(station) = self.station.get() {
            st.settings.heartbeat_interval = station.heartbeat_interval();
        }
        Some(match command {
            Command::RemoteStart {
                id_tag,
                connector,
                remote_start_id,
            } => {
                let connector = connector.unwrap_or(1);
                let running = st.transaction.as_ref().map(|t| t.tx.local_id.clone());
                let ok = running.is_none()
                    && (1..=st.settings.connectors).contains(&connector)
                    && !st.reset_requested;
                if ok {
                    let messages =
                        self.begin(&mut st, now, connector, id_tag, remote_start_id, true);
                    self.send_all(messages);
                    self.wake.notify_one();
                }
                Reply::StartStop {
                    accepted: ok,
                    transaction_id: running.filter(|_| !v16),
                }
            }
            Command::RemoteStop { transaction_id } => {
                let ours = st.transaction.as_ref().is_some_and(|t| {
                    if v16 {
                        t.tx.csms_id.map(|n| n.to_string()).as_deref()
                            == Some(transaction_id.as_str())
                    } else {
                        t.tx.local_id == transaction_id
                    }
                });
                if ours {
                    let messages = self.end_transaction(&mut st, now, StopReason::Remote);
                    self.send_all(messages);
                }
                Reply::StartStop {
                    accepted: ours,
                    transaction_id: None,
                }
            }
            Command::Reset { hard } => {
                info!(identity = %self.identity, hard, "reset accepted");
                st.reset_requested = true;
                let messages = self.end_transaction(&mut st, now, StopReason::Reset { hard });
                self.send_all(messages);
                self.send([Item::Reboot]);
                Reply::Reset { accepted: true }
            }
            Command::Trigger { message, connector } => {
                let accepted_boot = self
                    .station
                    .get()
                    .is_some_and(|s| matches!(s.status(), Status::Accepted { .. }));
                let (accepted, implemented) = match message {
                    TriggerKind::Unsupported => (false, false),
                    // 2.x (F06.FR.17): no BootNotification on request once accepted.
                    TriggerKind::Boot => (v16 || !accepted_boot, true),
                    TriggerKind::TransactionEvent => (!v16 && st.transaction.is_some(), !v16),
                    _ => (true, true),
                };
                if accepted {
                    let messages = self.triggered(&mut st, now, message, connector);
                    self.send_all(messages);
                }
                Reply::Trigger {
                    accepted,
                    implemented,
                }
            }
            Command::ChangeConfiguration { key, value } if v16 => {
                let mut changed = Changed::default();
                let status = st.settings.set_v16(&key, &value, &mut changed);
                self.apply(&mut st, now, changed);
                Reply::ChangeConfiguration(status)
            }
            Command::GetConfiguration { keys } if v16 => {
                let (known, unknown) = match keys.filter(|k| !k.is_empty()) {
                    None => (st.settings.all_v16(), Vec::new()),
                    Some(keys) => {
                        let mut known = Vec::new();
                        let mut unknown = Vec::new();
                        for key in keys {
                            match st.settings.get_v16(&key) {
                                Some((value, ro)) => known.push((key, value, ro)),
                                None => unknown.push(key),
                            }
                        }
                        (known, unknown)
                    }
                };
                Reply::GetConfiguration { known, unknown }
            }
            Command::SetVariables(items) if !v16 => {
                let mut changed = Changed::default();
                let results = items
                    .into_iter()
                    .map(|(c, v, value)| {
                        let status = st.settings.set_v2(&c, &v, &value, &mut changed);
                        (c, v, status)
                    })
                    .collect();
                self.apply(&mut st, now, changed);
                Reply::SetVariables(results)
            }
            Command::GetVariables(items) if !v16 => Reply::GetVariables(
                items
                    .into_iter()
                    .map(|(c, v)| {
                        let value = st.settings.get_v2(&c, &v);
                        (c, v, value)
                    })
                    .collect(),
            ),
            Command::DataTransfer {
                vendor_id,
                message_id,
                data,
            } => {
                if vendor_id == "bench" && message_id.as_deref() == Some("ts") {
                    self.record_bench(&mut st, data.as_deref());
                }
                Reply::DataTransfer
            }
            Command::ChangeConfiguration { .. }
            | Command::GetConfiguration { .. }
            | Command::SetVariables(_)
            | Command::GetVariables(_)
            | Command::Other(_) => return None,
        })
    }

    /// The messages a TriggerMessage asks for.
    fn triggered(
        &self,
        st: &mut State,
        now: Instant,
        kind: TriggerKind,
        connector: Option<u32>,
    ) -> Vec<Outgoing> {
        let v16 = st.version == OcppVersion::V1_6;
        match kind {
            // The client sends the BootNotification a trigger asked for.
            TriggerKind::Boot | TriggerKind::Unsupported => Vec::new(),
            TriggerKind::Heartbeat => vec![Outgoing::Heartbeat],
            TriggerKind::Status => statuses(st, connector),
            TriggerKind::Meter | TriggerKind::TransactionEvent => {
                if st.transaction.is_some() && (v16 || kind == TriggerKind::TransactionEvent) {
                    let reading = read_meter(st, now);
                    vec![Outgoing::TxUpdated {
                        tx: next_tx_ref(st, &self.id_tag),
                        reading,
                        triggered: true,
                    }]
                } else {
                    vec![Outgoing::Meter {
                        connector: connector.unwrap_or(1),
                        reading: read_meter(st, now),
                    }]
                }
            }
        }
    }

    /// Hands changed settings to the client and the timers.
    fn apply(&self, st: &mut State, now: Instant, changed: Changed) {
        if let Some(station) = self.station.get() {
            if changed.heartbeat {
                station.set_heartbeat_interval(st.settings.heartbeat_interval);
            }
            station.set_back_off(st.settings.back_off);
        }
        if changed.meter {
            let interval = st.settings.meter_interval;
            if let Some(t) = st.transaction.as_mut() {
                t.next_meter = now + interval;
            }
            self.wake.notify_one();
        }
    }

    /// A bench DataTransfer: data `"<seq>:<unix_nanos>"`; latency is the wall clock now minus
    /// the timestamp; a sequence number that skips counts the missing ones as gaps.
    fn record_bench(&self, st: &mut State, data: Option<&str>) {
        let Some((seq, nanos)) = data.and_then(parse_bench) else {
            debug!(identity = %self.identity, ?data, "bench DataTransfer without <seq>:<nanos>");
            return;
        };
        let now_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let latency_us = u64::try_from(now_ns.saturating_sub(nanos) / 1000).unwrap_or(u64::MAX);
        let mut stats = self.stats();
        stats.record_latency_us(latency_us);
        if let Some(last) = st.bench_seq {
            if seq > last + 1 {
                stats.sequence_gaps += seq - last - 1;
            }
        }
        st.bench_seq = Some(seq);
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
    ) -> Vec<Outgoing> {
        let _ = read_meter(st, now);
        st.transactions_started += 1;
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        // 2.x: at most 36 characters.
        let prefix: String = self.identity.chars().take(16).collect();
        let local_id = format!("{prefix}-{unix}-{}", st.transactions_started);
        info!(identity = %self.identity, %local_id, %id_tag, connector, "transaction starts");
        let mut messages = Vec::new();
        if st.version == OcppVersion::V1_6 {
            messages.push(Outgoing::Status {
                connector,
                state: ConnectorState::Preparing,
            });
        }
        st.transaction = Some(Transaction {
            tx: TxRef {
                connector,
                id_tag,
                local_id,
                csms_id: None,
                seq_no: 0,
                remote_start_id,
            },
            next_meter: now + st.settings.meter_interval,
            stop_at: (!remote).then(|| now + self.session_length),
        });
        let reading = read_meter(st, now);
        let tx = next_tx_ref(st, &self.id_tag);
        messages.push(Outgoing::TxStarted {
            tx,
            reading,
            remote,
        });
        messages.push(Outgoing::Status {
            connector,
            state: ConnectorState::Charging,
        });
        messages
    }

    /// Ends the transaction, if any: its messages.
    fn end_transaction(&self, st: &mut State, now: Instant, reason: StopReason) -> Vec<Outgoing> {
        if st.transaction.is_none() {
            return Vec::new();
        }
        let reading = read_meter(st, now);
        let tx = next_tx_ref(st, &self.id_tag);
        st.transaction = None;
        self.stats().transactions += 1;
        info!(identity = %self.identity, local_id = %tx.local_id, ?reason, energy_wh = reading.energy_wh, "transaction ends");
        let connector = tx.connector;
        let mut messages = vec![Outgoing::TxEnded {
            tx,
            reading,
            reason,
        }];
        if st.version == OcppVersion::V1_6 {
            messages.push(Outgoing::Status {
                connector,
                state: ConnectorState::Finishing,
            });
        }
        messages.push(Outgoing::Status {
            connector,
            state: ConnectorState::Available,
        });
        messages
    }

    /// The answer to a queued transaction message: 1.6 the CSMS's transactionId; an id tag
    /// not accepted ends the transaction.
    fn on_transaction_answer(&self, message: &Outgoing, response: &Response) {
        let payload::Answer::IdTag {
            accepted,
            transaction_id,
        } = payload::read_answer(response)
        else {
            return;
        };
        let now = Instant::now();
        let mut st = self.lock();
        let (Outgoing::TxStarted { tx, .. } | Outgoing::TxUpdated { tx, .. }) = message else {
            return;
        };
        let Some(t) = st
            .transaction
            .as_mut()
            .filter(|t| t.tx.local_id == tx.local_id)
        else {
            return;
        };
        if let Some(id) = transaction_id {
            t.tx.csms_id = Some(id);
        }
        let refused = match message {
            Outgoing::TxStarted { .. } if st.version == OcppVersion::V1_6 => accepted != Some(true),
            _ => accepted == Some(false),
        };
        if refused {
            warn!(identity = %self.identity, "id tag not accepted: ending the transaction");
            let messages = self.end_transaction(&mut st, now, StopReason::DeAuthorized);
            self.send_all(messages);
        }
    }

    /// The session's and the transaction's timers; their next deadline.
    fn on_timers(&self, now: Instant) -> Instant {
        let mut st = self.lock();
        let (stop, meter) = st.transaction.as_ref().map_or((false, false), |t| {
            (t.stop_at.is_some_and(|at| at <= now), t.next_meter <= now)
        });
        if stop {
            let messages = self.end_transaction(&mut st, now, StopReason::Local);
            self.send_all(messages);
        } else if meter {
            let interval = st.settings.meter_interval;
            if let Some(t) = st.transaction.as_mut() {
                t.next_meter = now + interval;
            }
            let reading = read_meter(&mut st, now);
            let tx = next_tx_ref(&mut st, &self.id_tag);
            self.send_all(vec![Outgoing::TxUpdated {
                tx,
                reading,
                triggered: false,
            }]);
        }
        st.transaction.as_ref().map_or(now + FAR, |t| {
            t.stop_at.map_or(t.next_meter, |s| s.min(t.next_meter))
        })
    }
}

/// The StatusNotifications of every connector (1.6 with connector 0, the charge point), or of
/// `only`.
fn statuses(st: &State, only: Option<u32>) -> Vec<Outgoing> {
    let first = if st.version == OcppVersion::V1_6 {
        0
    } else {
        1
    };
    (first..=st.settings.connectors)
        .filter(|c| only.is_none() || only == Some(*c))
        .map(|connector| Outgoing::Status {
            connector,
            state: match &st.transaction {
                Some(t) if t.tx.connector == connector => ConnectorState::Charging,
                _ => ConnectorState::Available,
            },
        })
        .collect()
}

fn read_meter(st: &mut State, now: Instant) -> Reading {
    let charging = st.transaction.is_some();
    let elapsed = now.saturating_duration_since(st.energy_at);
    if charging {
        st.energy_wh += (POWER_W * elapsed.as_secs_f64() / 3600.0).round() as i64;
    }
    st.energy_at = now;
    Reading {
        energy_wh: st.energy_wh,
        power_w: if charging { POWER_W } else { 0.0 },
    }
}

/// The transaction's reference for its next message (2.x: the next seqNo).
fn next_tx_ref(st: &mut State, id_tag: &str) -> TxRef {
    match st.transaction.as_mut() {
        Some(t) => {
            let tx = t.tx.clone();
            t.tx.seq_no += 1;
            tx
        }
        None => TxRef {
            connector: 1,
            id_tag: id_tag.to_owned(),
            local_id: String::new(),
            csms_id: None,
            seq_no: 0,
            remote_start_id: None,
        },
    }
}

// ---- the router ----

/// Answers the CSMS's commands: one untyped route, since [`payload::read_command`] reads
/// every version's commands into one [`Command`].
pub(crate) fn router() -> Router<Arc<Sim>> {
    Router::for_station()
        .fallback(command)
        .on_connect(connected)
        .on_close(closed)
}

async fn command(session: Session<Arc<Sim>>, call: IncomingCall) -> Answer {
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
                back_off: options.back_off,
                connectors: options.connectors,
            },
            version: options.versions[0],
            transaction: None,
            transactions_started: 0,
            energy_wh: 0,
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
        .back_off(options.back_off)
        .retry_refusals(true)
        .seed(seed)
        .config(config)
        .handler(router(), sim);
    if let Some(password) = &options.password {
        builder = builder.password(password.0.as_bytes());
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
            sim.send_all(statuses(&st, None));
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
        payload::Answer::IdTag {
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
    sim.send_all(messages);
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
    // 1.6: the queue's place of each transaction's StartTransaction, by our local id.
    let mut starts: HashMap<String, u64> = HashMap::new();
    let mut last_queued: Option<JoinHandle<()>> = None;
    while let Some(item) = items.recv().await {
        let message = match item {
            Item::Reboot => {
                if let Some(last) = last_queued.take() {
                    let _ = tokio::time::timeout(RESET_DRAIN, last).await;
                }
                info!(identity = %sim.identity, "rebooting");
                sim.lock().reset_requested = false;
                station.reboot(BootReason::RemoteReset);
                continue;
            }
            Item::Send(message) => message,
        };
        let version = sim.lock().version;
        if !matches!(
            message,
            Outgoing::TxStarted { .. } | Outgoing::TxUpdated { .. } | Outgoing::TxEnded { .. }
        ) {
            call(&sim, &station, version, &message).await;
            continue;
        }
        let v16 = version == OcppVersion::V1_6;
        let mut message = message;
        // 1.6: a later message of a transaction whose id is not known yet takes it from its
        // StartTransaction in the queue.
        let mut start = None;
        if let (true, Outgoing::TxUpdated { tx, .. } | Outgoing::TxEnded { tx, .. }) =
            (v16, &mut message)
        {
            if tx.csms_id.is_none() {
                start = starts.get(&tx.local_id).copied();
                tx.csms_id = Some(0);
            }
        }
        let request = match payload::request(version, &message) {
            Ok(request) => request,
            Err(error) => {
                warn!(identity = %sim.identity, %error, "payload not built");
                continue;
            }
        };
        let queued = match start {
            Some(start) => station.queue_in(start, request).await,
            None => station.queue(request).await,
        };
        let queued = match queued {
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
        if let (true, Outgoing::TxStarted { tx, .. }) = (v16, &message) {
            starts.insert(tx.local_id.clone(), queued.seq());
        }
        let sim = sim.clone();
        last_queued = Some(tokio::spawn(async move {
            let outcome = queued.outcome().await;
            let action = match &message {
                Outgoing::TxStarted { .. } if v16 => "StartTransaction",
                Outgoing::TxUpdated { .. } if v16 => "MeterValues",
                Outgoing::TxEnded { .. } if v16 => "StopTransaction",
                _ => "TransactionEvent",
            };
            sim.count(action, &outcome);
            if let Ok(response) = &outcome {
                sim.on_transaction_answer(&message, response);
            }
        }));
    }
}

/// `"<seq>:<unix_nanos>"`.
fn parse_bench(data: &str) -> Option<(u64, u128)> {
    let (seq, nanos) = data.trim_matches('"').split_once(':')?;
    Some((seq.trim().parse().ok()?, nanos.trim().parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_data() {
        assert_eq!(
            parse_bench("12:1700000000000000000"),
            Some((12, 1_700_000_000_000_000_000))
        );
        assert_eq!(parse_bench("\"3:4\""), Some((3, 4)));
        assert_eq!(parse_bench("x:4"), None);
        assert_eq!(parse_bench("34"), None);
    }
}
