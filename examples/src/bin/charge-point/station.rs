//! What one simulated charge point does, as a Sans-IO state machine of its own.
//!
//! [`Station`] sits on top of an `ocpp_server_core::Connection`: it is told of the connection's
//! events (`on_connected`, `on_event`, `on_closed`), puts CALLs and answers on it, and keeps
//! deadlines of its own (heartbeat, boot retry, meter values, the end of a session) that the
//! I/O loop merges with the connection's: [`Station::poll_timeout`] and
//! [`Station::handle_timeout`], the same shape as the connection. It never touches a socket
//! or reads the clock (except the wall clock for OCPP timestamps), so the loop that runs it
//! could as well be mio's or a test's.
//!
//! It lives across connections: a transaction goes on while the link is down, and its
//! messages wait in an offline queue until the next accepted boot.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::version::OcppVersion;
use ocpp_server_core::{
    CallFailure, CallOutcome, CloseReason, Closed, Connection, Event, MessageId, Request,
};
use tracing::{debug, info, warn};

use super::backoff::Reconnect;
use super::cli::Options;
use super::settings::{Changed, Settings};
use super::stats::Stats;
use ocpp_examples::charge_point_payload::{
    self as payload, Answer, BootReason, Command, ConnectorState, Outgoing, Reading, Reply,
    StopReason, TriggerKind, TxRef,
};

/// The simulated charging power.
const POWER_W: f64 = 11_000.0;
/// How long to wait before another BootNotification when the CSMS gave no interval, or the
/// last one failed.
const BOOT_RETRY_FALLBACK: Duration = Duration::from_secs(10);
/// The heartbeat interval until the CSMS says otherwise.
const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(60);
/// The most messages kept while offline.
const MAX_OFFLINE: usize = 1000;
/// The offline queue is flushed while fewer CALLs than this wait in the connection's queue
/// (it holds at most `ConnectionConfig::max_queued_calls`); the rest follows as answers come.
const FLUSH_QUEUE_LIMIT: usize = 16;

/// Where the charge point stands with the CSMS on the current connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Registration {
    /// BootNotification sent, no answer yet.
    Booting,
    /// Pending or Rejected (or failed): another BootNotification at this time.
    RetryAt(Instant),
    /// Accepted: everything may be sent.
    Accepted,
}

/// The state of the current connection (none while disconnected).
#[derive(Debug)]
struct Link {
    version: OcppVersion,
    registration: Registration,
    next_heartbeat: Option<Instant>,
    /// Our transaction CALLs in flight, by id: re-sent after a reconnect if unanswered.
    tx_calls: HashMap<MessageId<'static>, Outgoing>,
}

/// A transaction in progress.
#[derive(Debug)]
struct Transaction {
    tx: TxRef,
    next_meter: Instant,
    /// When a played session ends by itself.
    stop_at: Option<Instant>,
}

/// One simulated charge point.
#[derive(Debug)]
pub(crate) struct Station {
    identity: String,
    id_tag: String,
    session_length: Duration,
    stats: Rc<RefCell<Stats>>,
    pub(crate) settings: Settings,
    /// The reconnect back-off schedule.
    pub(crate) reconnect: Reconnect,
    link: Option<Link>,
    boot_reason: BootReason,
    ever_booted: bool,
    /// A session is to be played (`--session`) once the first boot is accepted.
    session_pending: bool,
    /// Authorize of the played session sent; its answer starts the transaction.
    authorizing: bool,
    transaction: Option<Transaction>,
    transactions_started: u32,
    /// 1.6: the CSMS's transactionId for each of our local ids.
    csms_ids: Vec<(String, i32)>,
    energy_wh: i64,
    energy_at: Instant,
    offline: VecDeque<Outgoing>,
    /// 1.6: a StartTransaction awaits its answer; later transaction messages wait in the
    /// offline queue until its transactionId is known.
    awaiting_start_answer: bool,
    /// The last sequence number of bench DataTransfer messages.
    bench_seq: Option<u64>,
    /// A Reset was accepted: close once the transaction has ended and calls are answered.
    reset_requested: bool,
    /// The connection was closed for a reset: reconnect at once.
    rebooting: bool,
}

impl Station {
    pub(crate) fn new(
        now: Instant,
        identity: String,
        options: &Options,
        stats: Rc<RefCell<Stats>>,
    ) -> Self {
        Station {
            identity,
            id_tag: options.id_tag.clone(),
            session_length: options.session_length,
            stats,
            settings: Settings {
                heartbeat_interval: DEFAULT_HEARTBEAT,
                meter_interval: options.meter_interval,
                back_off: options.back_off,
                connectors: options.connectors,
            },
            reconnect: Reconnect::new(options.back_off),
            link: None,
            boot_reason: BootReason::PowerUp,
            ever_booted: false,
            session_pending: options.session,
            authorizing: false,
            transaction: None,
            transactions_started: 0,
            csms_ids: Vec::new(),
            energy_wh: 0,
            energy_at: now,
            offline: VecDeque::new(),
            awaiting_start_answer: false,
            bench_seq: None,
            reset_requested: false,
            rebooting: false,
        }
    }

    // ---- the connection's events ----

    /// The WebSocket opened: boot.
    pub(crate) fn on_connected(
        &mut self,
        now: Instant,
        conn: &mut Connection,
        version: OcppVersion,
    ) {
        info!(identity = %self.identity, %version, "connected");
        {
            let mut stats = self.stats.borrow_mut();
            stats.connections += 1;
            stats.connected_now += 1;
        }
        self.reconnect.policy = self.settings.back_off;
        self.reconnect.reset();
        self.link = Some(Link {
            version,
            registration: Registration::Booting,
            next_heartbeat: None,
            tx_calls: HashMap::new(),
        });
        self.send_boot(now, conn);
    }

    /// Any event but `Connected` and `Closed`.
    pub(crate) fn on_event(&mut self, now: Instant, conn: &mut Connection, event: Event) {
        match event {
            Event::Call { id, request } => self.on_command(now, conn, &id, &request),
            Event::CallCompleted {
                id,
                action,
                outcome,
            } => self.on_completed(now, conn, &id, action, outcome),
            Event::Send { .. } | Event::UnmatchedResponse { .. } => {}
            other => debug!(identity = %self.identity, ?other, "event"),
        }
    }

    /// The connection ended. Returns whether to reconnect at once (a reset) rather than after
    /// the back-off.
    pub(crate) fn on_closed(&mut self, closed: &Closed) -> bool {
        let was_open = self.link.is_some();
        let mut link = self.link.take();
        {
            let mut stats = self.stats.borrow_mut();
            if was_open {
                stats.connected_now = stats.connected_now.saturating_sub(1);
            }
            if matches!(closed.reason, CloseReason::UpgradeRefused { .. }) {
                stats.refused += 1;
            }
        }
        // Transaction messages that got no answer go out again after the next boot, first.
        if let Some(link) = link.as_mut() {
            for call in closed.unanswered_outgoing.iter().rev() {
                if let Some(message) = link.tx_calls.remove(&call.id) {
                    self.offline.push_front(message);
                }
            }
        }
        self.offline.truncate(MAX_OFFLINE);
        self.authorizing = false;
        self.awaiting_start_answer = false;
        let rebooting = std::mem::take(&mut self.rebooting);
        match &closed.reason {
            CloseReason::UpgradeRefused {
                status,
                description,
            } => {
                warn!(identity = %self.identity, ?status, %description, "upgrade refused");
            }
            reason if rebooting => info!(identity = %self.identity, ?reason, "closed for reset"),
            reason => warn!(identity = %self.identity, ?reason, "connection lost"),
        }
        rebooting
    }

    /// Whether the station wants the connection closed now (an accepted Reset whose
    /// transaction has ended and whose messages are answered).
    pub(crate) fn wants_close(&self, conn: &Connection) -> bool {
        self.reset_requested
            && self.transaction.is_none()
            && !conn.has_call_in_flight()
            && conn.queued_calls() == 0
            && conn.is_open()
    }

    /// The connection is being closed for the reset: the next boot says so.
    pub(crate) fn closing_for_reset(&mut self) {
        self.reset_requested = false;
        self.rebooting = true;
        self.boot_reason = BootReason::RemoteReset;
    }

    // ---- timers ----

    /// The station's next deadline.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        let mut consider = |t: Option<Instant>| {
            if let Some(t) = t {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        };
        if let Some(link) = &self.link {
            consider(link.next_heartbeat);
            if let Registration::RetryAt(at) = link.registration {
                consider(Some(at));
            }
        }
        if let Some(tx) = &self.transaction {
            consider(Some(tx.next_meter));
            consider(tx.stop_at);
        }
        next
    }

    /// Fires the deadlines that passed. `conn` is `None` while disconnected: transaction
    /// messages then wait in the offline queue.
    pub(crate) fn handle_timeout(&mut self, now: Instant, mut conn: Option<&mut Connection>) {
        if let (Some(link), Some(c)) = (self.link.as_mut(), conn.as_deref_mut()) {
            if link.next_heartbeat.is_some_and(|t| t <= now) {
                link.next_heartbeat = Some(now + self.settings.heartbeat_interval);
                self.send(now, Some(c), Outgoing::Heartbeat);
            }
        }
        if let (Some(link), Some(c)) = (self.link.as_ref(), conn.as_deref_mut()) {
            if matches!(link.registration, Registration::RetryAt(at) if at <= now) {
                self.send_boot(now, c);
            }
        }
        let Some(tx) = self.transaction.as_mut() else {
            return;
        };
        if tx.stop_at.is_some_and(|t| t <= now) {
            self.end_transaction(now, conn, StopReason::Local);
            return;
        }
        if tx.next_meter <= now {
            tx.next_meter = now + self.settings.meter_interval;
            let message = Outgoing::TxUpdated {
                tx: self.next_tx_ref(),
                reading: self.read_meter(now),
                triggered: false,
            };
            self.send(now, conn, message);
        }
    }

    // ---- sending ----

    fn send_boot(&mut self, now: Instant, conn: &mut Connection) {
        if let Some(link) = self.link.as_mut() {
            link.registration = Registration::Booting;
        }
        let message = Outgoing::Boot {
            identity: self.identity.clone(),
            reason: self.boot_reason,
        };
        self.send(now, Some(conn), message);
    }

    /// Puts `message` on the connection if the registration allows it; transaction messages
    /// that cannot go now wait in the offline queue, anything else is dropped.
    fn send(&mut self, now: Instant, conn: Option<&mut Connection>, message: Outgoing) {
        let is_tx = matches!(
            message,
            Outgoing::TxStarted { .. } | Outgoing::TxUpdated { .. } | Outgoing::TxEnded { .. }
        );
        let allowed = match &self.link {
            Some(link) => {
                link.registration == Registration::Accepted
                    || matches!(message, Outgoing::Boot { .. })
            }
            None => false,
        };
        let (Some(conn), true) = (conn, allowed) else {
            if is_tx && self.offline.len() < MAX_OFFLINE {
                self.offline.push_back(message);
            }
            return;
        };
        let message = self.with_csms_id(message);
        let Some(link) = self.link.as_mut() else {
            return;
        };
        let v16 = link.version == OcppVersion::V1_6;
        if v16 && self.awaiting_start_answer {
            if let Outgoing::TxUpdated { tx, .. } | Outgoing::TxEnded { tx, .. } = &message {
                if tx.csms_id.is_none() && self.offline.len() < MAX_OFFLINE {
                    self.offline.push_back(message);
                    return;
                }
            }
        }
        let request = match payload::request(link.version, &message) {
            Ok(request) => request,
            Err(error) => {
                warn!(identity = %self.identity, %error, "payload not built");
                return;
            }
        };
        match conn.call(now, request) {
            Ok(id) => {
                self.stats.borrow_mut().calls_sent += 1;
                debug!(identity = %self.identity, %id, ?message, "call");
                if v16 && matches!(message, Outgoing::TxStarted { .. }) {
                    self.awaiting_start_answer = true;
                }
                if is_tx {
                    link.tx_calls.insert(id, message);
                }
            }
            Err(refused) => {
                warn!(identity = %self.identity, reason = %refused.reason, "call refused");
                if is_tx && self.offline.len() < MAX_OFFLINE {
                    self.offline.push_back(message);
                }
            }
        }
    }

    /// 1.6: fills in the CSMS's transactionId if it arrived after the message was made.
    fn with_csms_id(&self, mut message: Outgoing) -> Outgoing {
        if let Outgoing::TxUpdated { tx, .. } | Outgoing::TxEnded { tx, .. } = &mut message {
            if tx.csms_id.is_none() {
                tx.csms_id = self.csms_id_of(&tx.local_id);
            }
        }
        message
    }

    /// Sends what waited offline, in order, once the registration is accepted: a bounded
    /// number at a time (the rest follows as answers come), and in 1.6 not past a
    /// StartTransaction whose transactionId is still unknown.
    fn flush_offline(&mut self, now: Instant, conn: &mut Connection) {
        let accepted = self
            .link
            .as_ref()
            .is_some_and(|l| l.registration == Registration::Accepted);
        // Each message is taken once: one that goes back to the queue ends this round.
        for _ in 0..self.offline.len() {
            if !accepted || self.awaiting_start_answer || conn.queued_calls() >= FLUSH_QUEUE_LIMIT {
                break;
            }
            let Some(message) = self.offline.pop_front() else {
                break;
            };
            let before = self.offline.len();
            self.send(now, Some(conn), message);
            if self.offline.len() > before {
                // It went back (to the end): keep its place at the front, and stop here.
                if let Some(message) = self.offline.pop_back() {
                    self.offline.push_front(message);
                }
                break;
            }
        }
    }

    fn csms_id_of(&self, local_id: &str) -> Option<i32> {
        self.csms_ids
            .iter()
            .find(|(id, _)| id == local_id)
            .map(|(_, n)| *n)
    }

    fn send_statuses(&mut self, now: Instant, conn: &mut Connection, only: Option<u32>) {
        let v16 = self.link.as_ref().map(|l| l.version) == Some(OcppVersion::V1_6);
        // 1.6: connector 0 is the charge point itself; 2.x EVSEs count from 1.
        let first = if v16 { 0 } else { 1 };
        for connector in first..=self.settings.connectors {
            if only.is_some_and(|c| c != connector) {
                continue;
            }
            let state = match &self.transaction {
                Some(t) if t.tx.connector == connector => ConnectorState::Charging,
                _ => ConnectorState::Available,
            };
            self.send(now, Some(conn), Outgoing::Status { connector, state });
        }
    }

    fn read_meter(&mut self, now: Instant) -> Reading {
        let charging = self.transaction.is_some();
        let elapsed = now.saturating_duration_since(self.energy_at);
        if charging {
            self.energy_wh += (POWER_W * elapsed.as_secs_f64() / 3600.0).round() as i64;
        }
        self.energy_at = now;
        Reading {
            energy_wh: self.energy_wh,
            power_w: if charging { POWER_W } else { 0.0 },
        }
    }

    /// The transaction's reference for its next message (2.x: the next seqNo).
    fn next_tx_ref(&mut self) -> TxRef {
        match self.transaction.as_mut() {
            Some(t) => {
                let tx = t.tx.clone();
                t.tx.seq_no += 1;
                tx
            }
            None => TxRef {
                connector: 1,
                id_tag: self.id_tag.clone(),
                local_id: String::new(),
                csms_id: None,
                seq_no: 0,
                remote_start_id: None,
            },
        }
    }

    // ---- transactions ----

    fn begin_transaction(
        &mut self,
        now: Instant,
        conn: Option<&mut Connection>,
        connector: u32,
        id_tag: String,
        remote_start_id: Option<i32>,
        remote: bool,
    ) {
        let Some(conn) = conn else { return };
        let _ = self.read_meter(now);
        self.transactions_started += 1;
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        // 2.x: at most 36 characters.
        let prefix: String = self.identity.chars().take(16).collect();
        let local_id = format!("{prefix}-{unix}-{}", self.transactions_started);
        info!(identity = %self.identity, %local_id, %id_tag, connector, "transaction starts");
        if self.link.as_ref().map(|l| l.version) == Some(OcppVersion::V1_6) {
            let status = Outgoing::Status {
                connector,
                state: ConnectorState::Preparing,
            };
            self.send(now, Some(conn), status);
        }
        self.transaction = Some(Transaction {
            tx: TxRef {
                connector,
                id_tag,
                local_id,
                csms_id: None,
                seq_no: 0,
                remote_start_id,
            },
            next_meter: now + self.settings.meter_interval,
            stop_at: (!remote).then(|| now + self.session_length),
        });
        let reading = self.read_meter(now);
        let tx = self.next_tx_ref();
        self.send(
            now,
            Some(conn),
            Outgoing::TxStarted {
                tx,
                reading,
                remote,
            },
        );
        let status = Outgoing::Status {
            connector,
            state: ConnectorState::Charging,
        };
        self.send(now, Some(conn), status);
    }

    fn end_transaction(
        &mut self,
        now: Instant,
        mut conn: Option<&mut Connection>,
        reason: StopReason,
    ) {
        if self.transaction.is_none() {
            return;
        }
        let reading = self.read_meter(now);
        let tx = self.next_tx_ref();
        self.transaction = None;
        self.stats.borrow_mut().transactions += 1;
        info!(identity = %self.identity, local_id = %tx.local_id, ?reason, energy_wh = reading.energy_wh, "transaction ends");
        let connector = tx.connector;
        self.send(
            now,
            conn.as_deref_mut(),
            Outgoing::TxEnded {
                tx,
                reading,
                reason,
            },
        );
        let v16 = self.link.as_ref().map(|l| l.version) == Some(OcppVersion::V1_6);
        if let Some(conn) = conn {
            if v16 {
                let finishing = Outgoing::Status {
                    connector,
                    state: ConnectorState::Finishing,
                };
                self.send(now, Some(conn), finishing);
            }
            let available = Outgoing::Status {
                connector,
                state: ConnectorState::Available,
            };
            self.send(now, Some(conn), available);
        }
    }

    // ---- answers to our CALLs ----

    fn on_completed(
        &mut self,
        now: Instant,
        conn: &mut Connection,
        id: &str,
        action: &str,
        outcome: CallOutcome,
    ) {
        let sent = self.link.as_mut().and_then(|link| link.tx_calls.remove(id));
        if action == "StartTransaction" {
            self.awaiting_start_answer = false;
        }
        self.on_answer(now, conn, id, sent, action, outcome);
        self.flush_offline(now, conn);
    }

    fn on_answer(
        &mut self,
        now: Instant,
        conn: &mut Connection,
        id: &str,
        sent: Option<Outgoing>,
        action: &str,
        outcome: CallOutcome,
    ) {
        let response = match outcome {
            Ok(response) => {
                self.stats.borrow_mut().calls_answered += 1;
                response
            }
            Err(CallFailure::Timeout) => {
                self.stats.borrow_mut().call_timeouts += 1;
                warn!(identity = %self.identity, %id, action, "no answer in time");
                self.on_failed(now, action);
                return;
            }
            other => {
                self.stats.borrow_mut().call_errors += 1;
                warn!(identity = %self.identity, %id, action, outcome = ?other, "call failed");
                self.on_failed(now, action);
                return;
            }
        };
        debug!(identity = %self.identity, %id, action, "answered");
        match payload::read_answer(&response) {
            Answer::Boot {
                accepted,
                interval_s,
            } => self.on_boot_answer(now, conn, &response, accepted, interval_s),
            Answer::IdTag {
                accepted,
                transaction_id,
            } => {
                if let Some(n) = transaction_id {
                    let local_id = match sent {
                        Some(Outgoing::TxStarted { tx, .. }) => tx.local_id,
                        _ => return,
                    };
                    self.on_transaction_id(now, conn, &local_id, n, accepted == Some(true));
                } else if action == "Authorize" && self.authorizing {
                    self.authorizing = false;
                    if accepted == Some(true) && self.transaction.is_none() {
                        let id_tag = self.id_tag.clone();
                        self.begin_transaction(now, Some(conn), 1, id_tag, None, false);
                    } else {
                        warn!(identity = %self.identity, "session not authorized");
                    }
                } else if action == "TransactionEvent" && accepted == Some(false) {
                    warn!(identity = %self.identity, "id token not accepted: ending the transaction");
                    self.end_transaction(now, Some(conn), StopReason::DeAuthorized);
                }
            }
            Answer::Other => {}
        }
    }

    fn on_failed(&mut self, now: Instant, action: &str) {
        if action == "BootNotification" {
            if let Some(link) = self.link.as_mut() {
                link.registration = Registration::RetryAt(now + BOOT_RETRY_FALLBACK);
            }
        }
        if action == "Authorize" {
            self.authorizing = false;
        }
    }

    fn on_boot_answer(
        &mut self,
        now: Instant,
        conn: &mut Connection,
        response: &ocpp_server_core::Response,
        accepted: bool,
        interval_s: i64,
    ) {
        let interval = u64::try_from(interval_s)
            .ok()
            .filter(|&s| s > 0)
            .map(Duration::from_secs);
        let Some(link) = self.link.as_mut() else {
            return;
        };
        if !accepted {
            let wait = interval.unwrap_or(BOOT_RETRY_FALLBACK);
            link.registration = Registration::RetryAt(now + wait);
            info!(identity = %self.identity, ?response, ?wait, "boot not accepted; retrying");
            return;
        }
        link.registration = Registration::Accepted;
        if let Some(interval) = interval {
            self.settings.heartbeat_interval = interval;
        }
        link.next_heartbeat = Some(now + self.settings.heartbeat_interval);
        self.boot_reason = BootReason::PowerUp;
        {
            let mut stats = self.stats.borrow_mut();
            stats.boots += 1;
            if !self.ever_booted {
                stats.booted_stations += 1;
            }
        }
        self.ever_booted = true;
        info!(identity = %self.identity, heartbeat = ?self.settings.heartbeat_interval, "booted");
        self.send_statuses(now, conn, None);
        self.flush_offline(now, conn);
        if self.session_pending && self.transaction.is_none() {
            self.session_pending = false;
            self.authorizing = true;
            let id_tag = self.id_tag.clone();
            self.send(now, Some(conn), Outgoing::Authorize { id_tag });
        }
    }

    /// 1.6: StartTransaction's answer.
    fn on_transaction_id(
        &mut self,
        now: Instant,
        conn: &mut Connection,
        local_id: &str,
        id: i32,
        accepted: bool,
    ) {
        self.csms_ids.push((local_id.to_owned(), id));
        if self.csms_ids.len() > 16 {
            self.csms_ids.remove(0);
        }
        let Some(t) = self
            .transaction
            .as_mut()
            .filter(|t| t.tx.local_id == local_id)
        else {
            return;
        };
        t.tx.csms_id = Some(id);
        if !accepted {
            warn!(identity = %self.identity, "id tag not accepted: ending the transaction");
            self.end_transaction(now, Some(conn), StopReason::DeAuthorized);
        }
    }

    // ---- commands of the CSMS ----

    fn on_command(
        &mut self,
        now: Instant,
        conn: &mut Connection,
        id: &MessageId<'_>,
        request: &Request,
    ) {
        self.stats.borrow_mut().commands += 1;
        let Some(version) = self.link.as_ref().map(|l| l.version) else {
            return;
        };
        let action = request.action();
        let command = payload::read_command(request);
        info!(identity = %self.identity, %id, action, "command");
        let (reply, then) = match self.decide(now, version, command) {
            Some(decision) => decision,
            None => {
                let description = format!("{action} is not supported by this simulator");
                if let Err(e) = conn.answer(
                    now,
                    id,
                    ocpp_server_core::Answer::error(ErrorCode::NotSupported, &description),
                ) {
                    warn!(identity = %self.identity, reason = %e, "CALLERROR not sent");
                }
                return;
            }
        };
        match payload::response(version, action, &reply) {
            Ok(response) => {
                if let Err(e) = conn.answer(now, id, ocpp_server_core::Answer::Result(response)) {
                    warn!(identity = %self.identity, error = %e, "response not sent");
                }
            }
            Err(error) => {
                warn!(identity = %self.identity, %error, "response not built");
                let _ = conn.answer(
                    now,
                    id,
                    ocpp_server_core::Answer::error(ErrorCode::InternalError, ""),
                );
                return;
            }
        }
        self.follow_up(now, conn, then);
    }

    /// The reply to a command, and what to do after answering (`None`: not supported).
    fn decide(
        &mut self,
        now: Instant,
        version: OcppVersion,
        command: Command,
    ) -> Option<(Reply, FollowUp)> {
        let v16 = version == OcppVersion::V1_6;
        Some(match command {
            Command::RemoteStart {
                id_tag,
                connector,
                remote_start_id,
            } => {
                let connector = connector.unwrap_or(1);
                let ok = self.transaction.is_none()
                    && (1..=self.settings.connectors).contains(&connector)
                    && !self.reset_requested;
                let reply = Reply::StartStop {
                    accepted: ok,
                    transaction_id: self
                        .transaction
                        .as_ref()
                        .map(|t| t.tx.local_id.clone())
                        .filter(|_| !v16),
                };
                let then = if ok {
                    FollowUp::Start {
                        connector,
                        id_tag,
                        remote_start_id,
                    }
                } else {
                    FollowUp::Nothing
                };
                (reply, then)
            }
            Command::RemoteStop { transaction_id } => {
                let ours = self.transaction.as_ref().is_some_and(|t| {
                    if v16 {
                        t.tx.csms_id.map(|n| n.to_string()).as_deref()
                            == Some(transaction_id.as_str())
                    } else {
                        t.tx.local_id == transaction_id
                    }
                });
                let reply = Reply::StartStop {
                    accepted: ours,
                    transaction_id: None,
                };
                (
                    reply,
                    if ours {
                        FollowUp::Stop
                    } else {
                        FollowUp::Nothing
                    },
                )
            }
            Command::Reset { hard } => {
                info!(identity = %self.identity, hard, "reset accepted");
                (Reply::Reset { accepted: true }, FollowUp::Reset { hard })
            }
            Command::Trigger { message, connector } => {
                let booted = self
                    .link
                    .as_ref()
                    .is_some_and(|l| l.registration == Registration::Accepted);
                let (accepted, implemented) = match message {
                    TriggerKind::Unsupported => (false, false),
                    // 2.x (F06.FR.17): no BootNotification on request once accepted.
                    TriggerKind::Boot => (v16 || !booted, true),
                    TriggerKind::TransactionEvent => (!v16 && self.transaction.is_some(), !v16),
                    _ => (true, true),
                };
                let then = if accepted {
                    FollowUp::Trigger(message, connector)
                } else {
                    FollowUp::Nothing
                };
                (
                    Reply::Trigger {
                        accepted,
                        implemented,
                    },
                    then,
                )
            }
            Command::ChangeConfiguration { key, value } if v16 => {
                let mut changed = Changed::default();
                let status = self.settings.set_v16(&key, &value, &mut changed);
                self.apply(now, changed);
                (Reply::ChangeConfiguration(status), FollowUp::Nothing)
            }
            Command::GetConfiguration { keys } if v16 => {
                let (known, unknown) = match keys.filter(|k| !k.is_empty()) {
                    None => (self.settings.all_v16(), Vec::new()),
                    Some(keys) => {
                        let mut known = Vec::new();
                        let mut unknown = Vec::new();
                        for key in keys {
                            match self.settings.get_v16(&key) {
                                Some((value, ro)) => known.push((key, value, ro)),
                                None => unknown.push(key),
                            }
                        }
                        (known, unknown)
                    }
                };
                (
                    Reply::GetConfiguration { known, unknown },
                    FollowUp::Nothing,
                )
            }
            Command::SetVariables(items) if !v16 => {
                let mut changed = Changed::default();
                let results = items
                    .into_iter()
                    .map(|(c, v, value)| {
                        let status = self.settings.set_v2(&c, &v, &value, &mut changed);
                        (c, v, status)
                    })
                    .collect();
                self.apply(now, changed);
                (Reply::SetVariables(results), FollowUp::Nothing)
            }
            Command::GetVariables(items) if !v16 => {
                let results = items
                    .into_iter()
                    .map(|(c, v)| {
                        let value = self.settings.get_v2(&c, &v);
                        (c, v, value)
                    })
                    .collect();
                (Reply::GetVariables(results), FollowUp::Nothing)
            }
            Command::DataTransfer {
                vendor_id,
                message_id,
                data,
            } => {
                if vendor_id == "bench" && message_id.as_deref() == Some("ts") {
                    self.record_bench(data.as_deref());
                }
                (Reply::DataTransfer, FollowUp::Nothing)
            }
            Command::ChangeConfiguration { .. }
            | Command::GetConfiguration { .. }
            | Command::SetVariables(_)
            | Command::GetVariables(_)
            | Command::Other(_) => return None,
        })
    }

    fn follow_up(&mut self, now: Instant, conn: &mut Connection, then: FollowUp) {
        match then {
            FollowUp::Nothing => {}
            FollowUp::Start {
                connector,
                id_tag,
                remote_start_id,
            } => self.begin_transaction(now, Some(conn), connector, id_tag, remote_start_id, true),
            FollowUp::Stop => self.end_transaction(now, Some(conn), StopReason::Remote),
            FollowUp::Reset { hard } => {
                self.reset_requested = true;
                self.end_transaction(now, Some(conn), StopReason::Reset { hard });
            }
            FollowUp::Trigger(kind, connector) => match kind {
                TriggerKind::Boot => {
                    self.boot_reason = BootReason::Triggered;
                    self.send_boot(now, conn);
                }
                TriggerKind::Heartbeat => self.send(now, Some(conn), Outgoing::Heartbeat),
                TriggerKind::Status => self.send_statuses(now, conn, connector),
                TriggerKind::Meter | TriggerKind::TransactionEvent => {
                    let v16 = self.link.as_ref().map(|l| l.version) == Some(OcppVersion::V1_6);
                    let message = if self.transaction.is_some()
                        && (v16 || kind == TriggerKind::TransactionEvent)
                    {
                        Outgoing::TxUpdated {
                            tx: self.next_tx_ref(),
                            reading: self.read_meter(now),
                            triggered: true,
                        }
                    } else {
                        Outgoing::Meter {
                            connector: connector.unwrap_or(1),
                            reading: self.read_meter(now),
                        }
                    };
                    self.send(now, Some(conn), message);
                }
                TriggerKind::Unsupported => {}
            },
        }
    }

    /// Reschedules running timers after a configuration change.
    fn apply(&mut self, now: Instant, changed: Changed) {
        if changed.heartbeat {
            if let Some(link) = self.link.as_mut().filter(|l| l.next_heartbeat.is_some()) {
                link.next_heartbeat = Some(now + self.settings.heartbeat_interval);
            }
        }
        if changed.meter {
            if let Some(t) = self.transaction.as_mut() {
                t.next_meter = now + self.settings.meter_interval;
            }
        }
        self.reconnect.policy = self.settings.back_off;
    }

    /// A bench DataTransfer: data `"<seq>:<unix_nanos>"`; latency is the wall clock now minus
    /// the timestamp; a sequence number that skips counts the missing ones as gaps.
    fn record_bench(&mut self, data: Option<&str>) {
        let Some((seq, nanos)) = data.and_then(parse_bench) else {
            debug!(identity = %self.identity, ?data, "bench DataTransfer without <seq>:<nanos>");
            return;
        };
        let now_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let latency_us = u64::try_from(now_ns.saturating_sub(nanos) / 1000).unwrap_or(u64::MAX);
        let mut stats = self.stats.borrow_mut();
        stats.record_latency_us(latency_us);
        if let Some(last) = self.bench_seq {
            if seq > last + 1 {
                stats.sequence_gaps += seq - last - 1;
            }
        }
        self.bench_seq = Some(seq);
    }
}

/// What a command leads to once answered.
#[derive(Debug)]
enum FollowUp {
    Nothing,
    Start {
        connector: u32,
        id_tag: String,
        remote_start_id: Option<i32>,
    },
    Stop,
    Reset {
        hard: bool,
    },
    Trigger(TriggerKind, Option<u32>),
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
