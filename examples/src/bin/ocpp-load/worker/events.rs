//! What a worker's connections hand it: the CSMS's CALLs, the answers to its own, and the
//! timers that make its next messages.

use std::cmp::Reverse;
use std::time::{Duration, Instant};

use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::version::OcppVersion;
use ocpp_proto::station::{boot_request, BootReason, StationInfo};
use ocpp_proto::{CallFailure, CallOutcome, Event, MessageId, Request};
use ocpp_reference_csms::push::{self, unix_nanos_now};

use ocpp_examples::charge_point_payload::{self as payload, CallAnswer};

use super::{Kind, LoadPhase, Sent, Worker};

impl Worker {
    /// Hands every event of `local`'s connection to the scenario. `stamp`: when the bytes that
    /// caused them arrived (Unix ns).
    pub(super) fn drain(&mut self, local: usize, stamp: Option<u128>) {
        loop {
            let Some(link) = self.cps.get_mut(local).and_then(|cp| cp.link.as_mut()) else {
                return;
            };
            let Some(event) = link.conn.poll_event() else {
                return;
            };
            let now = Instant::now();
            match event {
                Event::Connected { version } => self.send_boot(local, version, now),
                Event::Call { id, request } => self.on_call(local, &id, &request, stamp, now),
                Event::CallCompleted {
                    outcome, caller, ..
                } => self.on_completed(local, caller, outcome, now),
                Event::UnmatchedResponse { .. } => self.stats.add("unmatched_responses", 1),
                Event::Closed(closed) => {
                    if self.accounting {
                        self.soak_closed(local, &closed);
                    }
                    if !closed.unanswered_outgoing.is_empty() {
                        self.stats.add(
                            "unanswered_at_close",
                            closed.unanswered_outgoing.len() as u64,
                        );
                    }
                    tracing::debug!(local, reason = ?closed.reason, "closed");
                    // The link goes once its output is flushed (`after`).
                }
                _ => {}
            }
        }
    }

    pub(super) fn on_call(
        &mut self,
        local: usize,
        id: &MessageId<'_>,
        request: &Request,
        stamp: Option<u128>,
        now: Instant,
    ) {
        if self.accounting {
            self.soak_call(local, id, request, now);
            return;
        }
        let Some(link) = self.cps[local].link.as_mut() else {
            return;
        };
        let Some((seq, sent_ns)) = push::stamp_of(request) else {
            let _ = link.conn.answer(
                now,
                id,
                ocpp_proto::Answer::error(ErrorCode::NotSupported, "load client"),
            );
            self.stats.add("other_calls", 1);
            return;
        };
        let _ = link.conn.answer(
            now,
            id,
            ocpp_proto::Answer::Result(self.prebuilt.data_transfer_answer.clone()),
        );
        let cp = &mut self.cps[local];
        let last = cp.last_seq;
        cp.last_seq = last.max(seq);
        if let LoadPhase::Push { .. } = self.phase {
            let received = stamp.unwrap_or_else(unix_nanos_now);
            let latency = received.saturating_sub(sent_ns);
            self.stats
                .record("push", u64::try_from(latency).unwrap_or(u64::MAX));
            self.stats.add("pushes", 1);
            if last != 0 && seq > last + 1 {
                self.stats.add("push_lost", seq - last - 1);
            } else if last != 0 && seq <= last {
                self.stats.add("push_out_of_order", 1);
            }
        }
    }

    /// The BootNotification of `local`, on connecting and again after a Pending answer.
    fn send_boot(&mut self, local: usize, version: OcppVersion, now: Instant) {
        let identity = self.identity(local);
        let info = StationInfo::new("OcppWs", "SimCP")
            .with_serial_number(identity)
            .with_firmware_version(env!("CARGO_PKG_VERSION"));
        let boot = boot_request(version, &info, BootReason::PowerUp);
        self.call(local, Kind::Boot, boot, now);
    }

    pub(super) fn call(
        &mut self,
        local: usize,
        kind: Kind,
        request: Option<Request>,
        now: Instant,
    ) {
        let Some(request) = request else {
            self.stats.add("build_errors", 1);
            return;
        };
        let measuring = matches!(self.phase, LoadPhase::Heartbeat { .. }) || kind == Kind::Boot;
        let Some(link) = self.cps[local].link.as_mut() else {
            return;
        };
        match link
            .conn
            .call_for(now, request, Sent { kind, at: now }, None)
        {
            Ok(_) => {
                if measuring && kind != Kind::Boot {
                    self.stats.add("requests_sent", 1);
                }
                if self.accounting {
                    self.stats.add("calls_sent", 1);
                }
            }
            Err(_) => self.stats.add("requests_refused", 1),
        }
    }

    pub(super) fn on_completed(
        &mut self,
        local: usize,
        Sent { kind, at: started }: Sent,
        outcome: CallOutcome,
        now: Instant,
    ) {
        if self.accounting {
            self.stats.add(
                match &outcome {
                    Ok(_) => "calls_result",
                    Err(CallFailure::Timeout) => "calls_timeout",
                    _ => "calls_error",
                },
                1,
            );
            if kind != Kind::Boot || !matches!(self.phase, LoadPhase::Connect) {
                self.soak_completed(local, kind, &outcome, started, now);
                return;
            }
        }
        let cp = &mut self.cps[local];
        let answer = match (&outcome, kind) {
            (Ok(response), Kind::Boot) => Some(payload::read_answer(response)),
            _ => None,
        };
        let ok = match &outcome {
            Ok(_) => match kind {
                Kind::Boot => matches!(answer, Some(CallAnswer::Boot { accepted: true, .. })),
                _ => true,
            },
            _ => false,
        };
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        if kind == Kind::Boot {
            if let Some(CallAnswer::Boot {
                pending: true,
                interval_s,
                ..
            }) = answer
            {
                // Boot admission: the same BootNotification again after the interval (the
                // charge point stays connected, not booted).
                self.stats.add("boot_pending", 1);
                let wait = u64::try_from(interval_s)
                    .ok()
                    .filter(|&s| s > 0)
                    .map_or(self.options.retry_min, Duration::from_secs);
                cp.boot_at = Some(now + wait);
                return;
            }
            if !ok {
                tracing::debug!(local, ?outcome, "boot not accepted");
                self.stats.add("boot_rejected", 1);
                if let Some(link) = cp.link.as_mut() {
                    link.conn
                        .close(now, ocpp_frame::CloseCode::NORMAL, "boot rejected");
                }
                return;
            }
            cp.booted = true;
            let since_attempt = now.saturating_duration_since(cp.attempt_started);
            match self.phase {
                LoadPhase::Connect if !cp.settled => {
                    cp.settled = true;
                    self.settled += 1;
                    self.stats.add("connected", 1);
                    self.stats.record("connect", nanos(since_attempt));
                }
                LoadPhase::Reconnect { .. }
                | LoadPhase::Idle { .. }
                | LoadPhase::Heartbeat { .. }
                    if cp.dropped_ns.is_some() =>
                {
                    let dropped = cp.dropped_ns.take().unwrap_or_default();
                    let back = unix_nanos_now();
                    self.rebooted += 1;
                    self.stats.add("rebooted", 1);
                    self.stats.mark("last_back", back);
                    self.stats.record(
                        "reconnect",
                        u64::try_from(back.saturating_sub(dropped)).unwrap_or(u64::MAX),
                    );
                    // Messages due while it was away start again within a period, not all
                    // at once.
                    let periods = [
                        self.options.heartbeat(),
                        self.options.status(),
                        self.options.meter(),
                    ];
                    for (next, period) in cp.next.iter_mut().zip(periods) {
                        if let (Some(at), Some(period)) = (next.as_mut(), period) {
                            if *at <= now {
                                *at = now + period.mul_f64(self.rng.f64());
                            }
                        }
                    }
                }
                LoadPhase::Reconnect { .. } => {}
                _ => self.stats.add("late_boots", 1),
            }
            return;
        }
        if !matches!(self.phase, LoadPhase::Heartbeat { .. }) {
            return;
        }
        if ok {
            self.stats.add("requests_ok", 1);
            let latency = nanos(now.saturating_duration_since(started));
            self.stats.record("request", latency);
            self.stats.record(kind.name(), latency);
        } else {
            tracing::debug!(local, ?outcome, kind = kind.name(), "request failed");
            self.stats.add("requests_failed", 1);
        }
    }

    // -----------------------------------------------------------------------------------------
    // Timers.

    pub(super) fn due(&self, local: usize) -> Option<Instant> {
        let cp = &self.cps[local];
        let mut due = cp.link.as_ref().and_then(|l| l.conn.poll_timeout());
        let mut consider = |at: Option<Instant>| {
            if let Some(at) = at {
                due = Some(due.map_or(at, |d| d.min(at)));
            }
        };
        if cp.link.is_none() {
            consider(cp.retry_at);
        } else if !cp.booted {
            consider(cp.boot_at);
        } else {
            for next in cp.next {
                consider(next);
            }
            for at in cp.soak.timers() {
                consider(Some(at));
            }
        }
        due
    }

    pub(super) fn reschedule(&mut self, local: usize) {
        let due = self.due(local);
        let cp = &mut self.cps[local];
        if due != cp.scheduled {
            cp.scheduled = due;
            if let Some(at) = due {
                self.heap.push(Reverse((at, local)));
            }
        }
    }

    pub(super) fn fire_timers(&mut self) {
        let now = Instant::now();
        while let Some(&Reverse((at, local))) = self.heap.peek() {
            if at > now {
                break;
            }
            self.heap.pop();
            if self.cps[local].scheduled != Some(at) {
                continue; // stale
            }
            self.cps[local].scheduled = None;
            self.on_timer(local, now);
            self.after(local);
        }
    }

    pub(super) fn on_timer(&mut self, local: usize, now: Instant) {
        if self.cps[local].link.is_none() {
            if self.cps[local].retry_at.is_some_and(|at| at <= now) {
                self.cps[local].retry_at = None;
                if local < self.primaries || self.soak_pick_alias(local) {
                    self.start_connect(local, now);
                }
            }
            return;
        }
        if let Some(link) = self.cps[local].link.as_mut() {
            if link.conn.poll_timeout().is_some_and(|at| at <= now) {
                link.conn.handle_timeout(now);
            }
        }
        if !self.cps[local].booted && self.cps[local].boot_at.is_some_and(|at| at <= now) {
            self.cps[local].boot_at = None;
            self.send_boot(local, self.options.version, now);
            return;
        }
        if matches!(self.phase, LoadPhase::Soak { .. }) && self.cps[local].booted {
            self.soak_timer(local, now);
            return;
        }
        let periods = [
            self.options.heartbeat(),
            self.options.status(),
            self.options.meter(),
        ];
        let kinds = [Kind::Heartbeat, Kind::Status, Kind::Meter];
        for slot in 0..3 {
            let (Some(next), Some(period)) = (self.cps[local].next[slot], periods[slot]) else {
                continue;
            };
            if next > now || !self.cps[local].booted {
                continue;
            }
            self.cps[local].next[slot] = Some(next + period);
            let request = self.prebuilt.request(kinds[slot]);
            self.call(local, kinds[slot], request, now);
        }
    }
}
