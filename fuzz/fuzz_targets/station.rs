#![no_main]
//! Drives a station across its connections (`ocpp_proto::station::Lifecycle` with the core's
//! client `Connection`, as `ocpp-proto`'s `station_loop` example and ocpp-tokio's station
//! drive them) against a central system that sends anything: arbitrary frames, answers of
//! any shape to the station's CALLs, CALLs of its own, closes, silence; with the
//! application's CALLs, reboots, stops and heartbeat intervals, and attempts that fail.
//!
//! The first byte picks the version the central system speaks, whether the station answers
//! SetNetworkProfile itself and whether the application keeps the profiles; the rest is a
//! script. Each attempt opens as a central system that accepts the upgrade would open it (a
//! 101 with the right accept key); everything after is the script's.
//!
//! The application reads the central system's CALLs as `ocpp_model::Command`s and answers
//! them with an `Outcome` of the script's choosing (`Command::answer`).
//!
//! Invariants: no panic; every application CALL the lifecycle holds ends exactly once (its
//! outcome, its close, its deadline, or drained when a connection ended); nothing is handed
//! out after `Transmit::Close` on the same connection; once `Next::Stop`, nothing more; a
//! command read and made again is the request made from it; an answer made of an outcome
//! reads back as that outcome.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use ocpp_frame::handshake::SecWebSocketKey;
use ocpp_frame::{CloseCode, Encoder, Role};
use ocpp_model::{Command, Outcome};
use ocpp_proto::station::{
    BootReason, Cause, Lifecycle, NetworkProfiles, Next, RetryBackOff, StationInfo, Transmit,
};
use ocpp_proto::{
    Answer, ChargePointIdentity, ConnectTarget, Connection, ConnectionConfig, DecodeOptions, Event,
    MessageId, OcppVersion, Request, Response,
};

const KEY: [u8; 16] = [7; 16];

/// Who waits for one of the station's CALLs.
#[derive(Debug)]
enum Caller {
    /// The registration's own BootNotification or Heartbeat.
    Own,
    /// The application's CALL, by its number.
    App(u32),
}

struct Harness {
    station: Lifecycle<u32>,
    version: OcppVersion,
    keeps: bool,
    now: Instant,
    conn: Option<Connection<Caller>>,
    /// The station's CALLs on the wire, newest last (to answer them).
    sent: Vec<MessageId<'static>>,
    /// The central system's CALLs not answered yet.
    incoming: Vec<(MessageId<'static>, Request)>,
    /// Application CALLs made and not ended yet; those ended.
    waiting: HashSet<u32>,
    ended: HashSet<u32>,
    next_call: u32,
    /// `Transmit::Close` was handed out on the current connection.
    closing: bool,
    stopped: bool,
    draw: u64,
}

impl Harness {
    fn end(&mut self, call: u32) {
        assert!(
            self.waiting.remove(&call),
            "CALL {call} ended twice or never began"
        );
        assert!(self.ended.insert(call));
    }

    /// An attempt: the lifecycle picks the central system, the harness opens it.
    fn open(&mut self, fail: Option<u8>) {
        if self.stopped || self.conn.is_some() {
            return;
        }
        self.station.begin_attempt();
        self.closing = false;
        if let Some(how) = fail {
            self.draw = self.draw.wrapping_mul(6364136223846793005).wrapping_add(1);
            let cause = match how % 4 {
                0 => Cause::Connect(std::io::ErrorKind::ConnectionRefused),
                1 => Cause::Tls,
                2 => Cause::HandshakeTimeout,
                _ => Cause::NoCommonVersion,
            };
            let next = self.station.on_connect_failed(self.now, cause, self.draw);
            self.after(next);
            return;
        }
        let Ok(identity) = ChargePointIdentity::new("CP1".into(), false) else {
            return;
        };
        let target = ConnectTarget::new("csms.example", "/ocpp", identity);
        let config = ConnectionConfig::default()
            .versions(vec![self.version])
            .max_queued_calls(4);
        let Ok(mut conn) =
            Connection::connect_with_callers(self.now, Arc::new(config), &target, KEY, 42)
        else {
            return;
        };
        let request = conn.pending_transmit().len();
        conn.advance_transmit(request);
        let accept = SecWebSocketKey::from_bytes(KEY).accept();
        let subprotocol = match self.version {
            OcppVersion::V1_6 => "ocpp1.6",
            OcppVersion::V2_0_1 => "ocpp2.0.1",
            _ => "ocpp2.1",
        };
        let response = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: {}\r\nSec-WebSocket-Protocol: {subprotocol}\r\n\r\n",
            String::from_utf8_lossy(accept.as_bytes())
        );
        conn.handle_data(self.now, response.as_bytes());
        self.conn = Some(conn);
    }

    /// What comes after a connection or an attempt: a stop is final.
    fn after(&mut self, next: Next) {
        assert!(!self.stopped, "a step after the station stopped");
        if let Next::Stop(_) = next {
            self.stopped = true;
            self.station.on_stopped();
        }
    }

    /// The application's answer to the central system's oldest CALL: a command (read in the
    /// model's vocabulary, `Command::from_request`) answered with `outcome`, a TriggerMessage
    /// the model does not read accepted or not, anything else NotSupported.
    fn answer_incoming(&mut self, accept: bool, outcome: Outcome) {
        let Some(conn) = &mut self.conn else { return };
        if self.incoming.is_empty() {
            return;
        }
        let (id, request) = self.incoming.remove(0);
        let version = request.version();
        if let Some(command) = Command::from_request(&request) {
            // What was read says the same request again, once made (the first making may
            // normalise what the version's schema allows two ways).
            if let Ok(made) = command.to_request(version) {
                let again = Command::from_request(&made).expect("a made request reads");
                let remade = again.to_request(version).expect("a read request is made");
                assert_eq!(wire(&remade), wire(&made), "{command:?}");
            }
            let answer = match command.answer(version, outcome) {
                Ok(response) => {
                    let read = command.outcome(&response).expect("an answer reads back");
                    assert_eq!(read.outcome, outcome, "{command:?}");
                    Answer::Result(response)
                }
                Err(_) => Answer::not_supported(request.action()),
            };
            self.station.on_answered(self.now, &answer);
            let _ = conn.answer(self.now, &id, answer);
            return;
        }
        let status = if accept { "Accepted" } else { "Rejected" };
        let answer = match request.action() {
            "TriggerMessage" => Response::decode(
                request.version(),
                "TriggerMessage",
                &format!(r#"{{"status":"{status}"}}"#),
                &DecodeOptions::strict(),
            )
            .map_or_else(|_| Answer::not_supported("TriggerMessage"), Answer::Result),
            action => Answer::not_supported(action),
        };
        self.station.on_answered(self.now, &answer);
        let _ = conn.answer(self.now, &id, answer);
    }

    /// Every event, as a driver hands them on; then what the lifecycle says is due.
    fn pump(&mut self) {
        while let Some(event) = self.conn.as_mut().and_then(Connection::poll_event) {
            match event {
                Event::Connected { version } => self.station.on_connected(self.now, version),
                Event::Call { id, request } => {
                    let keeps = self.keeps;
                    let keep = |_: &NetworkProfiles| match keeps {
                        true => Ok(()),
                        false => Err("not kept".to_owned()),
                    };
                    match self.station.on_incoming(&request, keep) {
                        Some(answer) => {
                            if let Some(conn) = &mut self.conn {
                                let _ = conn.answer(self.now, &id, answer);
                            }
                        }
                        None => self.incoming.push((id, request)),
                    }
                }
                Event::CallCompleted {
                    id,
                    action,
                    outcome,
                    caller,
                } => {
                    self.sent.retain(|sent| *sent != id);
                    self.station.on_call_completed(self.now, action, &outcome);
                    if let Caller::App(call) = caller {
                        self.end(call);
                    }
                }
                Event::Closed(closed) => {
                    self.conn = None;
                    self.sent.clear();
                    self.incoming.clear();
                    let mut settled = Vec::new();
                    let closed = closed.settle_callers(|_, caller| {
                        if let Caller::App(call) = caller {
                            settled.push(call);
                        }
                    });
                    settled.into_iter().for_each(|call| self.end(call));
                    self.draw = self.draw.wrapping_mul(6364136223846793005).wrapping_add(1);
                    let next = self.station.on_closed(self.now, &closed.reason, self.draw);
                    let drained: Vec<u32> = self.station.drain_held().map(|h| h.caller).collect();
                    drained.into_iter().for_each(|call| self.end(call));
                    self.after(next);
                    return;
                }
                _ => {}
            }
        }
        let Some(conn) = &mut self.conn else { return };
        let mut ended = Vec::new();
        while let Some(transmit) = self.station.poll_transmit(self.now) {
            assert!(!self.closing, "{transmit:?} after Transmit::Close");
            match transmit {
                Transmit::Own(request) => {
                    let action = request.action();
                    match conn.call_for(self.now, request, Caller::Own, None) {
                        Ok(id) => {
                            self.sent.push(id);
                            self.station.on_call_sent(self.now, action);
                        }
                        Err(_) => self.station.on_own_call_refused(self.now, action),
                    }
                }
                Transmit::Held(held) => {
                    let action = held.request.action();
                    let (call, deadline) = (held.caller, Some(held.deadline));
                    match conn.call_for(self.now, held.request, Caller::App(call), deadline) {
                        Ok(id) => {
                            self.sent.push(id);
                            self.station.on_call_sent(self.now, action);
                        }
                        Err(_) => ended.push(call),
                    }
                }
                Transmit::Expired(held) => ended.push(held.caller),
                Transmit::Close(reason) => {
                    self.closing = true;
                    conn.close(self.now, CloseCode::NORMAL, reason);
                }
            }
        }
        ended.into_iter().for_each(|call| self.end(call));
        // The close's own events come with the next turn's pump.
    }
}

/// A request as it goes on the wire, to compare two.
fn wire(request: &Request) -> String {
    format!(
        "{} {}",
        request.action(),
        serde_json::to_string(request).unwrap_or_default()
    )
}

/// A CALL of the application's (a StatusNotification on 1.6, where the registration holds it
/// until Accepted; a Heartbeat on 2.x), of the station's version.
fn app_call(version: OcppVersion) -> Option<Request> {
    let (action, payload) = match version {
        OcppVersion::V1_6 => (
            "StatusNotification",
            r#"{"connectorId":1,"errorCode":"NoError","status":"Available"}"#,
        ),
        _ => ("Heartbeat", "{}"),
    };
    Request::decode(version, action, payload, &DecodeOptions::strict()).ok()
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, mut script)) = data.split_first() else {
        return;
    };
    let version =
        [OcppVersion::V1_6, OcppVersion::V2_0_1, OcppVersion::V2_1][usize::from(mode % 3)];
    let info = StationInfo::new("ACME", "Fuzz");
    let profiles = NetworkProfiles::from_urls(["ws://csms.example/ocpp", "ws://b.example/ocpp"]);
    let mut station = Lifecycle::new(info, RetryBackOff::default(), profiles);
    if mode & 0x10 != 0 {
        station.answer_set_network_profile(mode & 0x20 != 0);
    }
    station.set_boot_retries(2, Duration::from_secs(5));
    let mut h = Harness {
        station,
        version,
        keeps: mode & 0x40 != 0,
        now: Instant::now(),
        conn: None,
        sent: Vec::new(),
        incoming: Vec::new(),
        waiting: HashSet::new(),
        ended: HashSet::new(),
        next_call: 0,
        closing: false,
        stopped: false,
        draw: u64::from(mode),
    };
    let server = Encoder::new(Role::Server);
    h.open(None);
    h.pump();

    while let Some((&op, rest)) = script.split_first() {
        script = rest;
        if h.stopped {
            break;
        }
        // A text of up to 255 bytes from the script.
        let mut text = || {
            let n = usize::from(script.first().copied().unwrap_or(0)).min(script.len());
            let (chunk, rest) = script.split_at(n);
            script = rest;
            String::from_utf8_lossy(chunk.get(1..).unwrap_or_default()).into_owned()
        };
        // The low four bits pick the step; the high four are its parameter.
        match op & 0x0F {
            // A frame of the central system's around arbitrary text.
            0 | 1 | 10 | 11 => {
                let text = text();
                let mut wire = Vec::new();
                if let (Some(conn), Ok(())) =
                    (&mut h.conn, server.encode_text(&text, None, &mut wire))
                {
                    conn.handle_data(h.now, &wire);
                }
            }
            // The answer to the station's newest CALL: a CALLRESULT with an arbitrary
            // payload, or a CALLERROR.
            2 | 12 => {
                let payload = text();
                if let (Some(conn), Some(id)) = (&mut h.conn, h.sent.last()) {
                    let message = match op & 0x10 {
                        0 => format!("[3,\"{}\",{payload}]", id.as_str()),
                        _ => format!(
                            "[4,\"{}\",\"InternalError\",\"{payload}\",{{}}]",
                            id.as_str()
                        ),
                    };
                    let mut wire = Vec::new();
                    if server.encode_text(&message, None, &mut wire).is_ok() {
                        conn.handle_data(h.now, &wire);
                    }
                }
            }
            // An accepted boot, as a central system would answer it.
            3 => {
                if let (Some(conn), Some(id)) = (&mut h.conn, h.sent.first()) {
                    let interval = u32::from(op >> 4) * 7;
                    let message = format!(
                        "[3,\"{}\",{{\"currentTime\":\"2026-12-07T00:00:00Z\",\
                         \"interval\":{interval},\"status\":\"Accepted\"}}]",
                        id.as_str()
                    );
                    let mut wire = Vec::new();
                    if server.encode_text(&message, None, &mut wire).is_ok() {
                        conn.handle_data(h.now, &wire);
                    }
                }
            }
            // Raw bytes from the central system.
            4 => {
                let raw = text();
                if let Some(conn) = &mut h.conn {
                    conn.handle_data(h.now, raw.as_bytes());
                }
            }
            // Time passes: the connection's and the station's deadlines.
            5 | 13 => {
                h.now += Duration::from_millis(u64::from(op >> 4) * 1_500);
                if let Some(conn) = &mut h.conn {
                    conn.handle_timeout(h.now);
                }
                h.station.handle_timeout(h.now);
            }
            // The application: a CALL, its answer to the central system, a reboot, a stop,
            // a heartbeat interval.
            6 | 14 => match (op >> 4) % 5 {
                0 | 1 => {
                    let Some(request) = app_call(h.version) else {
                        continue;
                    };
                    let call = h.next_call;
                    h.next_call += 1;
                    h.waiting.insert(call);
                    let deadline = h.now + Duration::from_secs(u64::from(op >> 5) * 10 + 1);
                    h.station.hold(request, call, deadline);
                }
                2 => {
                    let outcomes = Outcome::ALL;
                    // The outcome is the next byte's pick.
                    let pick = script.first().copied().unwrap_or(0);
                    script = script.get(1..).unwrap_or_default();
                    let outcome = outcomes[usize::from(pick) % outcomes.len()];
                    h.answer_incoming(op & 0x80 != 0, outcome);
                }
                3 => h.station.reboot(BootReason::RemoteReset),
                _ if op & 0x80 != 0 => h.station.stop(),
                _ => {
                    let seconds = u64::from(op >> 4);
                    h.station
                        .set_heartbeat_interval(h.now, Duration::from_secs(seconds));
                }
            },
            // The wire: what the station wrote leaves, or the central system ends it.
            7 | 15 => {
                if let Some(conn) = &mut h.conn {
                    let n = conn.pending_transmit().len();
                    conn.advance_transmit(n);
                }
            }
            8 => {
                if let Some(conn) = &mut h.conn {
                    match op & 0x10 {
                        0 => conn.handle_eof(h.now),
                        _ => {
                            let mut wire = Vec::new();
                            let close = Some((CloseCode::NORMAL, "bye"));
                            let _ = server.encode_close(close, None, &mut wire);
                            conn.handle_data(h.now, &wire);
                        }
                    }
                }
            }
            // A new attempt once the last one ended: it opens, or fails.
            _ => h.open((op & 0x10 != 0).then_some(op >> 5)),
        }
        h.pump();
    }
    // Whatever is left ends with the station: a connection still open, the held CALLs.
    if let Some(conn) = &mut h.conn {
        conn.handle_eof(h.now);
        h.pump();
    }
    let drained: Vec<u32> = h.station.drain_held().map(|held| held.caller).collect();
    drained.into_iter().for_each(|call| h.end(call));
    assert!(h.waiting.is_empty(), "CALLs never ended: {:?}", h.waiting);
});
