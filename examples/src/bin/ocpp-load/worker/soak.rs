//! The `soak` scenario's charge points: sessions, notifications, answers to the server's
//! commands, and churn (clean closes, abrupt drops, reconnects with back-off and jitter, and
//! duplicates that connect with the identity of a connected charge point).
//!
//! Every CALL is counted both ways so that the coordinator can reconcile the run with the
//! server's `/metrics`: ours sent = answered (result or error) + timed out + unanswered when a
//! connection ended, split by who ended it (`ours`: a close or drop we made; `takeover`: the
//! server replaced the connection by a newer one of the same identity, close code 1008;
//! `other`: anything else, which must not happen); the server's CALLs received = answered +
//! unanswered when the connection ended.

use std::net::Shutdown;
use std::time::{Duration, Instant};

use ocpp_frame::CloseCode;
use ocpp_proto::{CallOutcome, CloseReason, Closed};

use super::{
    payload, CallAnswer, ConnectorStage, Kind, LoadPhase, MeterSnapshot, Outgoing, Sent, Worker,
};
use ocpp_examples::charge_point_payload::TxRef;
use ocpp_proto::station::StationStopReason;

mod commands;

/// Mean pause of a duplicate between two of its connections (exponential).
const DUPLICATE_PAUSE: Duration = Duration::from_secs(30);
/// How long a duplicate stays, at most, once booted (uniform from a fifth of it).
const DUPLICATE_STAY: Duration = Duration::from_secs(30);
/// At the end, how long our CALLs in flight get to be answered before every connection is
/// closed, and how long the closes get.
const END_ANSWER_GRACE: Duration = Duration::from_secs(5);
const END_CLOSE_GRACE: Duration = Duration::from_secs(15);
/// Energy added per MeterValues, in Wh.
const WH_PER_METER: i64 = 250;

/// What a command makes the charge point do once it is answered.
#[derive(Debug, Clone, Copy)]
enum Then {
    Start,
    Heartbeat,
    Status,
    Meter,
}

/// Who is ending the current connection, when we are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Closer {
    /// A close handshake (churn, or a Reset command).
    Clean,
    /// The socket shut without a close frame.
    Drop,
    /// A duplicate leaving.
    DuplicateEnd,
    /// The end of the run.
    End,
}

/// Where a charging session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Stage {
    #[default]
    Idle,
    Authorizing,
    Starting,
    Charging {
        meters_left: u32,
    },
    Stopping,
}

/// One charge point's soak state.
#[derive(Debug, Default)]
pub(super) struct SoakCp {
    pub(super) closer: Option<Closer>,
    /// A Reset was accepted: the next churn is a clean close.
    reset: bool,
    heartbeat_at: Option<Instant>,
    churn_at: Option<Instant>,
    session_at: Option<Instant>,
    stage: Stage,
    tx: Option<TxRef>,
    transactions: u32,
    meter_wh: i64,
    /// A duplicate: the local index of the charge point whose identity it uses now.
    pub(super) alias: Option<usize>,
    /// When its last booted connection was lost (for the reconnect time).
    lost_at: Option<Instant>,
}

impl SoakCp {
    /// The soak deadlines of a booted charge point.
    pub(super) fn timers(&self) -> impl Iterator<Item = Instant> + '_ {
        [self.heartbeat_at, self.churn_at, self.session_at]
            .into_iter()
            .flatten()
    }

    fn state(&self) -> ConnectorStage {
        match self.stage {
            Stage::Idle => ConnectorStage::Available,
            Stage::Authorizing | Stage::Starting => ConnectorStage::Preparing,
            Stage::Charging { .. } => ConnectorStage::Charging,
            Stage::Stopping => ConnectorStage::Finishing,
        }
    }

    fn reading(&self) -> MeterSnapshot {
        MeterSnapshot {
            energy_wh: self.meter_wh,
            power_w: 7_400.0,
        }
    }
}

impl Worker {
    /// A random duration with an exponential distribution of mean `mean`.
    fn exponential(&mut self, mean: Duration) -> Duration {
        let u = self.rng.f64();
        mean.mul_f64((-(1.0 - u).ln()).min(20.0))
    }

    fn is_duplicate(&self, local: usize) -> bool {
        local >= self.primaries
    }

    /// The soak phase starts: timers for the booted charge points, retries for the others,
    /// and the duplicates' first connections.
    pub(super) fn soak_begin(&mut self, now: Instant) {
        for local in 0..self.cps.len() {
            if self.is_duplicate(local) {
                let first = DUPLICATE_PAUSE.mul_f64(self.rng.f64());
                self.cps[local].retry_at = Some(now + first);
            } else if self.cps[local].booted {
                self.soak_schedule(local, now, true);
            } else if self.cps[local].link.is_none() {
                let jitter = self.options.retry_random.mul_f64(self.rng.f64());
                self.cps[local].retry_at = Some(now + self.options.retry_min + jitter);
            }
            self.cps[local].scheduled = None;
            self.reschedule(local);
        }
    }

    /// Heartbeat, churn and session timers of a charge point that has just booted (`spread`:
    /// the first Heartbeat anywhere within its period, so the swarm does not beat in step).
    fn soak_schedule(&mut self, local: usize, now: Instant, spread: bool) {
        let heartbeat = self.options.heartbeat();
        let first_beat = heartbeat.map(|p| {
            if spread {
                now + p.mul_f64(self.rng.f64())
            } else {
                now + p
            }
        });
        let churn = if self.is_duplicate(local) {
            let stay = DUPLICATE_STAY.mul_f64(0.2 + 0.8 * self.rng.f64());
            Some(now + stay)
        } else {
            let mean = self.options.soak.churn();
            mean.map(|mean| now + self.exponential(mean))
        };
        let pause = self.options.soak.pause();
        let meter = self.options.meter().unwrap_or(Duration::from_secs(30));
        let stage = self.cps[local].soak.stage;
        let session = match stage {
            _ if self.is_duplicate(local) => None,
            Stage::Idle => Some(now + pause.mul_f64(self.rng.f64())),
            Stage::Charging { .. } => Some(now + meter),
            Stage::Stopping => {
                // The StopTransaction was not answered on the last connection: again.
                self.soak_send_stop(local, now);
                None
            }
            Stage::Authorizing | Stage::Starting => {
                self.cps[local].soak.stage = Stage::Idle;
                Some(now + pause.mul_f64(self.rng.f64()))
            }
        };
        let soak = &mut self.cps[local].soak;
        soak.heartbeat_at = first_beat;
        soak.churn_at = churn;
        soak.session_at = session;
    }

    /// The duration is over: no new CALLs from now on.
    pub(super) fn soak_end(&mut self, now: Instant) {
        for local in 0..self.cps.len() {
            let cp = &mut self.cps[local];
            cp.retry_at = None;
            cp.soak.heartbeat_at = None;
            cp.soak.churn_at = None;
            cp.soak.session_at = None;
            self.reschedule(local);
        }
        self.phase = LoadPhase::SoakEnding {
            close_at: now + END_ANSWER_GRACE,
            closed: false,
            deadline: now + END_ANSWER_GRACE + END_CLOSE_GRACE,
        };
    }

    /// The end of the soak: once our CALLs are answered, close everything; `true` once all
    /// connections are gone (or the grace is over: those left are counted).
    pub(super) fn soak_ending(&mut self, now: Instant) -> bool {
        let LoadPhase::SoakEnding {
            close_at,
            closed,
            deadline,
        } = self.phase
        else {
            return false;
        };
        if !closed {
            // Our CALLs in flight or queued, per connection (the core keeps them).
            let pending = |link: &super::ChargePointSocket| {
                usize::from(link.conn.has_call_in_flight()) + link.conn.queued_calls()
            };
            let links = || self.cps.iter().filter_map(|cp| cp.link.as_ref());
            if links().any(|link| pending(link) > 0) && now < close_at {
                return false;
            }
            let in_flight: usize = links().map(pending).sum();
            self.stats.add("calls_in_flight_at_end", in_flight as u64);
            for local in 0..self.cps.len() {
                if self.cps[local].link.is_none() {
                    continue;
                }
                if self.cps[local].booted {
                    self.soak_close(local, Closer::End, now);
                } else {
                    self.soak_drop(local, Closer::End, now);
                }
                self.after(local);
            }
            self.phase = LoadPhase::SoakEnding {
                close_at,
                closed: true,
                deadline,
            };
            return false;
        }
        let open = self.cps.iter().filter(|cp| cp.link.is_some()).count();
        if open > 0 && now < deadline {
            return false;
        }
        self.stats.add("open_after_end", open as u64);
        true
    }

    /// Starts a close handshake.
    fn soak_close(&mut self, local: usize, closer: Closer, now: Instant) {
        let cp = &mut self.cps[local];
        let Some(link) = cp.link.as_mut() else {
            return;
        };
        cp.soak.closer = Some(closer);
        link.conn.close(now, CloseCode::NORMAL, "soak");
    }

    /// Shuts the socket without a close frame and forgets the connection.
    fn soak_drop(&mut self, local: usize, closer: Closer, now: Instant) {
        let cp = &mut self.cps[local];
        let Some(link) = cp.link.as_mut() else {
            return;
        };
        cp.soak.closer = Some(closer);
        let _ = link.stream.shutdown(Shutdown::Both);
        link.conn.handle_eof(now);
        self.drain(local, None);
        if self.cps[local].link.is_some() {
            self.link_lost(local, now);
        }
    }

    /// A duplicate's turn: take the identity of a connected charge point of this worker.
    /// `false` (and a later retry) when none is connected.
    pub(super) fn soak_pick_alias(&mut self, local: usize) -> bool {
        if !matches!(self.phase, LoadPhase::Soak { .. }) || self.primaries == 0 {
            return false;
        }
        for _ in 0..16 {
            let candidate = self.rng.usize(..self.primaries);
            let cp = &self.cps[candidate];
            if cp.booted && cp.link.is_some() {
                self.cps[local].soak.alias = Some(candidate);
                self.stats.add("duplicate_connects", 1);
                return true;
            }
        }
        self.cps[local].retry_at = Some(Instant::now() + Duration::from_secs(5));
        false
    }

    /// A connection of ours ended (the `Closed` event): counts what it left unanswered, by
    /// who ended it.
    pub(super) fn soak_closed(&mut self, local: usize, closed: &Closed<Sent>) {
        let cp = &mut self.cps[local];
        let closer = cp.soak.closer.take();
        let cause = match closer {
            Some(_) => "ours",
            None => match &closed.reason {
                CloseReason::PeerClosed {
                    code: Some(code), ..
                } if *code == CloseCode::POLICY_VIOLATION => "takeover",
                _ => "other",
            },
        };
        let booted = cp.booted;
        let name = match closer {
            Some(Closer::Clean) => "closes_clean",
            Some(Closer::Drop) => "closes_dropped",
            Some(Closer::DuplicateEnd) => "closes_duplicate_end",
            Some(Closer::End) => "closes_at_end",
            None if cause == "takeover" => "closes_takeover",
            None if !booted => "closes_before_boot",
            None => "closes_other",
        };
        self.stats.add(name, 1);
        if cause == "other" {
            let reason = format!("{:?}", closed.reason);
            let word: String = reason
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect();
            self.stats.add(&format!("closed_by_server_{word}"), 1);
            tracing::info!(local, booted, ?closed.reason, "closed, not by us");
        }
        self.stats.add(
            &format!("calls_unanswered_{cause}"),
            closed.unanswered_outgoing.len() as u64,
        );
        self.stats.add(
            "srv_calls_unanswered_at_close",
            closed.unanswered_incoming.len() as u64,
        );
    }

    /// The connection is gone (soak phase): back-off and jitter for a charge point, a pause
    /// for a duplicate.
    pub(super) fn soak_link_lost(&mut self, local: usize, was_booted: bool, now: Instant) {
        let duplicate = self.is_duplicate(local);
        let pause = self.exponential(DUPLICATE_PAUSE);
        let jitter = self.options.retry_random.mul_f64(self.rng.f64());
        let soak_options = &self.options.soak;
        let cp = &mut self.cps[local];
        cp.soak.heartbeat_at = None;
        cp.soak.churn_at = None;
        cp.soak.session_at = None;
        if was_booted {
            cp.soak.lost_at = Some(now);
        }
        match cp.soak.stage {
            Stage::Authorizing => cp.soak.stage = Stage::Idle,
            Stage::Starting => {
                // The server may have started it: it stays open there (counted).
                cp.soak.stage = Stage::Idle;
                cp.soak.tx = None;
                self.stats.add("starts_unanswered", 1);
            }
            _ => {}
        }
        if duplicate {
            cp.soak.alias = None;
            cp.retry_at = Some(now + pause);
            return;
        }
        let exponent = cp.attempts.saturating_sub(1).min(16);
        let backoff = self
            .options
            .retry_min
            .saturating_mul(1 << exponent)
            .min(soak_options.retry_max);
        if exponent > 0 {
            self.stats.add("retries_backed_off", 1);
        }
        cp.retry_at = Some(now + backoff + jitter);
    }

    /// A CALL of ours ended (soak phase, and boots of the soak phase).
    pub(super) fn soak_completed(
        &mut self,
        local: usize,
        kind: Kind,
        outcome: &CallOutcome,
        started: Instant,
        now: Instant,
    ) {
        let latency =
            u64::try_from(now.saturating_duration_since(started).as_nanos()).unwrap_or(u64::MAX);
        let response = match outcome {
            Ok(response) => {
                self.stats.record("request", latency);
                self.stats.record(kind.name(), latency);
                Some(response)
            }
            _ => {
                tracing::debug!(local, ?outcome, kind = kind.name(), "CALL failed");
                None
            }
        };
        let answer = response.map(payload::read_answer);
        let soak_phase = matches!(self.phase, LoadPhase::Soak { .. });
        match kind {
            Kind::Boot => {
                if !matches!(answer, Some(CallAnswer::Boot { accepted: true, .. })) {
                    self.stats.add("boot_rejected", 1);
                    self.soak_close(local, Closer::Clean, now);
                    return;
                }
                let cp = &mut self.cps[local];
                cp.booted = true;
                cp.attempts = 0;
                self.stats.add("boots", 1);
                if let Some(lost) = cp.soak.lost_at.take() {
                    self.stats.add("reconnected", 1);
                    let back = u64::try_from(now.saturating_duration_since(lost).as_nanos())
                        .unwrap_or(u64::MAX);
                    self.stats.record("back_after_loss", back);
                }
                if soak_phase {
                    self.soak_schedule(local, now, false);
                }
            }
            Kind::Authorize if self.cps[local].soak.stage == Stage::Authorizing => {
                let accepted = matches!(
                    answer,
                    Some(CallAnswer::IdTag {
                        accepted: Some(true),
                        ..
                    })
                );
                if accepted && soak_phase {
                    self.soak_send_start(local, false, now);
                } else {
                    self.soak_session_over(local, now);
                }
            }
            Kind::Start if self.cps[local].soak.stage == Stage::Starting => {
                let transaction_id = match answer {
                    Some(CallAnswer::IdTag {
                        accepted: Some(true),
                        transaction_id,
                    }) => transaction_id,
                    _ => None,
                };
                let meter = self.options.meter().unwrap_or(Duration::from_secs(30));
                let length = self.exponential(self.options.soak.session());
                let cp = &mut self.cps[local];
                match (transaction_id, &mut cp.soak.tx) {
                    (Some(id), Some(tx)) => {
                        tx.csms_id = Some(id);
                        let meters = (length.as_secs_f64() / meter.as_secs_f64()).round();
                        cp.soak.stage = Stage::Charging {
                            meters_left: (meters as u32).max(1),
                        };
                        cp.soak.session_at = Some(now + meter);
                        self.stats.add("sessions_started", 1);
                        self.soak_status(local, now);
                    }
                    _ => self.soak_session_over(local, now),
                }
            }
            Kind::Stop if self.cps[local].soak.stage == Stage::Stopping => {
                if response.is_some() {
                    self.stats.add("sessions_completed", 1);
                } else {
                    self.stats.add("stops_failed", 1);
                }
                self.cps[local].soak.stage = Stage::Idle;
                self.cps[local].soak.tx = None;
                self.soak_status(local, now);
                self.soak_session_over(local, now);
            }
            _ => {}
        }
    }

    /// Back to Available; the next session after a pause.
    fn soak_session_over(&mut self, local: usize, now: Instant) {
        let was = self.cps[local].soak.stage;
        self.cps[local].soak.stage = Stage::Idle;
        self.cps[local].soak.tx = None;
        if was != Stage::Idle {
            self.soak_status(local, now);
        }
        if matches!(self.phase, LoadPhase::Soak { .. }) {
            let pause = self.exponential(self.options.soak.pause());
            self.cps[local].soak.session_at = Some(now + pause);
        }
    }

    fn soak_send(&mut self, local: usize, kind: Kind, message: &Outgoing, now: Instant) {
        let request = payload::request(self.options.version, message);
        if let Err(e) = &request {
            tracing::warn!(local, "payload: {e}");
        }
        self.call(local, kind, request.ok(), now);
    }

    fn soak_status(&mut self, local: usize, now: Instant) {
        let state = self.cps[local].soak.state();
        self.soak_send(
            local,
            Kind::Status,
            &Outgoing::Status {
                connector: 1,
                state,
            },
            now,
        );
    }

    /// The id tag of a charge point's sessions.
    fn soak_id_tag(&self, local: usize) -> String {
        format!("SOAK{:06}", self.first + local)
    }

    fn soak_send_start(&mut self, local: usize, remote: bool, now: Instant) {
        let id_tag = self.soak_id_tag(local);
        let identity = self.identity(local);
        let cp = &mut self.cps[local];
        cp.soak.transactions += 1;
        let tx = TxRef {
            connector: 1,
            id_tag,
            local_id: format!("{identity}-{}", cp.soak.transactions),
            csms_id: None,
            seq_no: 0,
            remote_start_id: None,
        };
        cp.soak.tx = Some(tx.clone());
        cp.soak.stage = Stage::Starting;
        cp.soak.session_at = None;
        let reading = cp.soak.reading();
        self.soak_send(
            local,
            Kind::Start,
            &Outgoing::TxStarted {
                tx,
                reading,
                remote,
            },
            now,
        );
        if let Some(tx) = &mut self.cps[local].soak.tx {
            tx.seq_no += 1;
        }
    }

    fn soak_send_meter(&mut self, local: usize, triggered: bool, now: Instant) {
        let cp = &mut self.cps[local];
        cp.soak.meter_wh += WH_PER_METER;
        let reading = cp.soak.reading();
        let message = match &mut cp.soak.tx {
            Some(tx) if tx.csms_id.is_some() => {
                let message = Outgoing::TxUpdated {
                    tx: tx.clone(),
                    reading,
                    triggered,
                };
                tx.seq_no += 1;
                message
            }
            _ => Outgoing::Meter {
                connector: 1,
                reading,
            },
        };
        self.soak_send(local, Kind::Meter, &message, now);
    }

    fn soak_send_stop(&mut self, local: usize, now: Instant) {
        let cp = &mut self.cps[local];
        let reading = cp.soak.reading();
        let Some(tx) = cp.soak.tx.clone() else {
            cp.soak.stage = Stage::Idle;
            return;
        };
        if let Some(tx) = &mut cp.soak.tx {
            tx.seq_no += 1;
        }
        cp.soak.stage = Stage::Stopping;
        self.soak_send(
            local,
            Kind::Stop,
            &Outgoing::TxEnded {
                tx,
                reading,
                reason: StationStopReason::Local,
            },
            now,
        );
    }

    /// A soak deadline of a booted charge point passed.
    pub(super) fn soak_timer(&mut self, local: usize, now: Instant) {
        let soak = &self.cps[local].soak;
        let (beat, churn, session) = (
            soak.heartbeat_at.is_some_and(|at| at <= now),
            soak.churn_at.is_some_and(|at| at <= now),
            soak.session_at.is_some_and(|at| at <= now),
        );
        if churn {
            self.cps[local].soak.churn_at = None;
            if self.is_duplicate(local) {
                self.soak_close(local, Closer::DuplicateEnd, now);
            } else if !std::mem::take(&mut self.cps[local].soak.reset)
                && self.rng.f64() < self.options.soak.drop_share
            {
                self.soak_drop(local, Closer::Drop, now);
            } else {
                self.soak_close(local, Closer::Clean, now);
            }
            return;
        }
        if beat {
            let period = self.options.heartbeat();
            self.cps[local].soak.heartbeat_at = period.map(|p| now + p);
            let request = self.prebuilt.request(Kind::Heartbeat);
            self.call(local, Kind::Heartbeat, request, now);
        }
        if session {
            self.cps[local].soak.session_at = None;
            match self.cps[local].soak.stage {
                Stage::Idle => {
                    self.cps[local].soak.stage = Stage::Authorizing;
                    self.soak_status(local, now);
                    let id_tag = self.soak_id_tag(local);
                    self.soak_send(local, Kind::Authorize, &Outgoing::Authorize { id_tag }, now);
                }
                Stage::Charging { meters_left } if meters_left > 0 => {
                    self.cps[local].soak.stage = Stage::Charging {
                        meters_left: meters_left - 1,
                    };
                    self.soak_send_meter(local, false, now);
                    let meter = self.options.meter().unwrap_or(Duration::from_secs(30));
                    self.cps[local].soak.session_at = Some(now + meter);
                }
                Stage::Charging { .. } => self.soak_send_stop(local, now),
                _ => {}
            }
        }
    }
}
