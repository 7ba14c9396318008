//! The relay of one station pair (OCPP 2.0.1 Part 4 §3.3, the Local Controller), Sans-IO: the
//! texts read from either hop and the time in; the texts to write to each hop, the outcomes of
//! the controller's own CALLs and the next deadline out. No socket, no clock, no task.
//!
//! Texts are forwarded as they came, byte for byte (a signed message keeps its signature);
//! they are parsed only to tell the hooks what they are and to recognise the answers to the
//! controller's own CALLs.
//!
//! The controller's own CALLs take turns with the central system's at the station: one is
//! written only when no CALL of the other is in flight (OCPP-J: one CALL at a time per
//! direction), and a CALL of the central system that arrives while one of ours is in flight
//! waits behind it. So an answer of the station always belongs to exactly one of them, and ids
//! cannot be confused; ours are still prefixed (`lc-1`, `lc-2`...) for the logs.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ocpp_messages::envelope::{self, MessageTypeId};
use ocpp_proto::OcppVersion;

use super::{OwnCallError, RelayedMessage, StationCallDecision};

/// The hook that observes every message.
pub(crate) type Observe = Arc<dyn Fn(&RelayedMessage<'_>) + Send + Sync>;
/// The hook that forwards a station's CALL or answers it here.
pub(crate) type Decide = Arc<dyn Fn(&RelayedMessage<'_>) -> StationCallDecision + Send + Sync>;

/// The hooks of a relay: every message observed; a station's CALL forwarded or answered here.
#[derive(Clone, Default)]
pub(crate) struct Hooks {
    pub(crate) observe: Option<Observe>,
    pub(crate) station_call: Option<Decide>,
}

/// The leg of the relay a message takes: which way it goes between the station, the controller
/// and the central system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Leg {
    /// From the station, relayed to the central system.
    StationToCsms,
    /// From the central system, relayed to the station.
    CsmsToStation,
    /// From the station to the controller: a CALL answered here, or the answer to one of the
    /// controller's own CALLs. Never reaches the central system.
    StationToController,
    /// From the controller to the station: its own CALL, or its answer to a station's CALL.
    ControllerToStation,
}

/// The OCPP-J envelope of a message (OCPP-J §4): its type, id and (CALL, SEND) action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// CALL, CALLRESULT, CALLERROR, CALLRESULTERROR (2.1) or SEND (2.1).
    pub message_type: MessageTypeId,
    /// The message id.
    pub id: &'a str,
    /// The action of a CALL or SEND.
    pub action: Option<&'a str>,
}

/// What the relay hands to its driver.
#[derive(Debug, PartialEq)]
pub(crate) enum Output {
    /// Write this text to the station.
    ToStation(String),
    /// Write this text to the central system.
    ToCsms(String),
    /// One of the controller's own CALLs ended: the station's answer (CALLRESULT or
    /// CALLERROR, as text) or why there is none.
    OwnOutcome {
        id: String,
        outcome: Result<String, OwnCallError>,
    },
}

/// A CALL of the controller's own, written or waiting.
#[derive(Debug)]
struct OwnCall {
    id: String,
    text: String,
    deadline: Instant,
}

/// A CALL for the station waiting for its turn.
#[derive(Debug)]
enum Waiting {
    Csms { id: String, text: String },
    Own(OwnCall),
}

/// The relay of one station pair.
pub(crate) struct Relay {
    identity: String,
    version: OcppVersion,
    hooks: Hooks,
    call_timeout: Duration,
    next_own: u64,
    own_in_flight: Option<OwnCall>,
    /// The central system's CALL in flight at the station, and when we stop waiting for its
    /// answer to let ours go.
    csms_in_flight: Option<(String, Instant)>,
    waiting: VecDeque<Waiting>,
    max_waiting: usize,
    output: VecDeque<Output>,
    closed: bool,
}

/// Reads the envelope of `text`; `None` when it is not OCPP-J (still relayed unchanged).
fn parse(text: &str, version: OcppVersion) -> Option<envelope::RpcMessage<'_>> {
    envelope::parse_str(text, version).ok()
}

fn envelope_of<'a>(message: &'a Option<envelope::RpcMessage<'a>>) -> Option<Envelope<'a>> {
    message.as_ref().map(|m| Envelope {
        message_type: m.message_type(),
        id: m.id().as_str(),
        action: m.action(),
    })
}

/// Whether a message of this type answers a CALL.
fn is_answer(envelope: Option<&Envelope<'_>>) -> bool {
    envelope.is_some_and(|e| {
        matches!(
            e.message_type,
            MessageTypeId::CallResult | MessageTypeId::CallError
        )
    })
}

impl Relay {
    pub(crate) fn new(
        identity: &str,
        version: OcppVersion,
        hooks: Hooks,
        call_timeout: Duration,
        max_waiting: usize,
    ) -> Relay {
        Relay {
            identity: identity.to_owned(),
            version,
            hooks,
            call_timeout,
            next_own: 1,
            own_in_flight: None,
            csms_in_flight: None,
            waiting: VecDeque::new(),
            max_waiting,
            output: VecDeque::new(),
            closed: false,
        }
    }

    fn observe(&self, direction: Leg, text: &str, envelope: Option<Envelope<'_>>) {
        if let Some(observe) = &self.hooks.observe {
            observe(&RelayedMessage {
                identity: &self.identity,
                direction,
                text,
                envelope,
            });
        }
    }

    /// A text message of the station.
    pub(crate) fn handle_station_text(&mut self, now: Instant, text: String) {
        let parsed = parse(&text, self.version);
        let envelope = envelope_of(&parsed);
        let id = envelope.map(|e| e.id);
        // The answer to our own CALL: consumed here.
        if is_answer(envelope.as_ref()) && self.own_in_flight.as_ref().map(|c| c.id.as_str()) == id
        {
            self.observe(Leg::StationToController, &text, envelope);
            if let Some(call) = self.own_in_flight.take() {
                self.output.push_back(Output::OwnOutcome {
                    id: call.id,
                    outcome: Ok(text.clone()),
                });
            }
            drop(parsed);
            self.next_turn(now);
            return;
        }
        // A CALL the hook answers here.
        let is_call = envelope.is_some_and(|e| e.message_type == MessageTypeId::Call);
        if is_call {
            if let Some(decide) = &self.hooks.station_call {
                let message = RelayedMessage {
                    identity: &self.identity,
                    direction: Leg::StationToController,
                    text: &text,
                    envelope,
                };
                if let StationCallDecision::Answer(answer) = decide(&message) {
                    self.observe(Leg::StationToController, &text, envelope);
                    let answer_parsed = parse(&answer, self.version);
                    self.observe(
                        Leg::ControllerToStation,
                        &answer,
                        envelope_of(&answer_parsed),
                    );
                    drop(answer_parsed);
                    self.output.push_back(Output::ToStation(answer));
                    return;
                }
            }
        }
        self.observe(Leg::StationToCsms, &text, envelope);
        let answers_csms = is_answer(envelope.as_ref())
            && self.csms_in_flight.as_ref().map(|c| c.0.as_str()) == id;
        drop(parsed);
        self.output.push_back(Output::ToCsms(text));
        if answers_csms {
            self.csms_in_flight = None;
            self.next_turn(now);
        }
    }

    /// A text message of the central system.
    pub(crate) fn handle_csms_text(&mut self, now: Instant, text: String) {
        let parsed = parse(&text, self.version);
        let envelope = envelope_of(&parsed);
        self.observe(Leg::CsmsToStation, &text, envelope);
        let call_id = envelope
            .filter(|e| e.message_type == MessageTypeId::Call)
            .map(|e| e.id.to_owned());
        drop(parsed);
        match call_id {
            Some(id) if self.own_in_flight.is_some() || !self.waiting.is_empty() => {
                self.waiting.push_back(Waiting::Csms { id, text });
            }
            Some(id) => {
                self.csms_in_flight = Some((id, now + self.call_timeout));
                self.output.push_back(Output::ToStation(text));
            }
            None => self.output.push_back(Output::ToStation(text)),
        }
    }

    /// A CALL of the controller's own: written now, or when the station's turn comes. Returns
    /// its id; its outcome comes as [`Output::OwnOutcome`].
    pub(crate) fn call(
        &mut self,
        now: Instant,
        action: &str,
        payload: &str,
    ) -> Result<String, OwnCallError> {
        if self.closed {
            return Err(OwnCallError::Disconnected);
        }
        let object =
            serde_json::from_str::<serde_json::Value>(payload).is_ok_and(|value| value.is_object());
        let action_ok = !action.is_empty()
            && action
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !object || !action_ok {
            return Err(OwnCallError::InvalidCall);
        }
        if self.waiting.len() >= self.max_waiting {
            return Err(OwnCallError::QueueFull);
        }
        let id = format!("lc-{}", self.next_own);
        self.next_own += 1;
        let text = format!("[2,\"{id}\",\"{action}\",{payload}]");
        let call = OwnCall {
            id: id.clone(),
            text,
            deadline: now + self.call_timeout,
        };
        self.waiting.push_back(Waiting::Own(call));
        self.next_turn(now);
        Ok(id)
    }

    /// Writes the next waiting CALL when no CALL is in flight at the station.
    fn next_turn(&mut self, now: Instant) {
        while self.own_in_flight.is_none() && self.csms_in_flight.is_none() {
            match self.waiting.pop_front() {
                None => return,
                Some(Waiting::Csms { id, text }) => {
                    self.csms_in_flight = Some((id, now + self.call_timeout));
                    self.output.push_back(Output::ToStation(text));
                }
                Some(Waiting::Own(call)) => {
                    let parsed = parse(&call.text, self.version);
                    self.observe(Leg::ControllerToStation, &call.text, envelope_of(&parsed));
                    drop(parsed);
                    self.output.push_back(Output::ToStation(call.text.clone()));
                    self.own_in_flight = Some(call);
                }
            }
        }
    }

    /// The deadline of [`Self::poll_timeout`] passed: our CALLs unanswered in time fail, and a
    /// CALL of the central system the station leaves unanswered stops holding ours back.
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        if self
            .own_in_flight
            .as_ref()
            .is_some_and(|c| c.deadline <= now)
        {
            if let Some(call) = self.own_in_flight.take() {
                self.output.push_back(Output::OwnOutcome {
                    id: call.id,
                    outcome: Err(OwnCallError::Timeout),
                });
            }
        }
        if self.csms_in_flight.as_ref().is_some_and(|c| c.1 <= now) {
            self.csms_in_flight = None;
        }
        let mut kept = VecDeque::with_capacity(self.waiting.len());
        for waiting in self.waiting.drain(..) {
            match waiting {
                Waiting::Own(call) if call.deadline <= now => {
                    self.output.push_back(Output::OwnOutcome {
                        id: call.id,
                        outcome: Err(OwnCallError::Timeout),
                    });
                }
                other => kept.push_back(other),
            }
        }
        self.waiting = kept;
        self.next_turn(now);
    }

    /// The next deadline, if any.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        let own = self.own_in_flight.as_ref().map(|c| c.deadline);
        let csms = self.csms_in_flight.as_ref().map(|c| c.1);
        let waiting = self.waiting.iter().filter_map(|w| match w {
            Waiting::Own(call) => Some(call.deadline),
            Waiting::Csms { .. } => None,
        });
        own.into_iter().chain(csms).chain(waiting).min()
    }

    /// The pair is over: our CALLs end with `Disconnected`, and nothing more is written.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        let own = self.own_in_flight.take().map(Waiting::Own);
        let waiting: Vec<Waiting> = own.into_iter().chain(self.waiting.drain(..)).collect();
        self.output
            .retain(|o| matches!(o, Output::OwnOutcome { .. }));
        for waiting in waiting {
            if let Waiting::Own(call) = waiting {
                self.output.push_back(Output::OwnOutcome {
                    id: call.id,
                    outcome: Err(OwnCallError::Disconnected),
                });
            }
        }
    }

    /// The next thing to do.
    #[must_use]
    pub(crate) fn poll_output(&mut self) -> Option<Output> {
        self.output.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn relay(hooks: Hooks) -> Relay {
        Relay::new("CP1", OcppVersion::V2_0_1, hooks, Duration::from_secs(5), 4)
    }

    fn drain(relay: &mut Relay) -> Vec<Output> {
        std::iter::from_fn(|| relay.poll_output()).collect()
    }

    #[test]
    fn texts_pass_unchanged_both_ways() {
        let mut r = relay(Hooks::default());
        let now = Instant::now();
        let odd = "[2, \"a\" ,\"Heartbeat\",{ }]";
        r.handle_station_text(now, odd.into());
        assert_eq!(drain(&mut r), vec![Output::ToCsms(odd.into())]);
        let answer = "[3,\"a\",{\"currentTime\":\"2025-01-01T00:00:00Z\" }]";
        r.handle_csms_text(now, answer.into());
        assert_eq!(drain(&mut r), vec![Output::ToStation(answer.into())]);
        r.handle_station_text(now, "not json".into());
        assert_eq!(drain(&mut r), vec![Output::ToCsms("not json".into())]);
    }

    #[test]
    fn a_call_answered_here_never_reaches_the_csms() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let hooks = Hooks {
            observe: Some(Arc::new(move |m: &RelayedMessage<'_>| {
                log.lock().unwrap().push((m.direction, m.text.to_owned()));
            })),
            station_call: Some(Arc::new(|m: &RelayedMessage<'_>| {
                match m.envelope.and_then(|e| e.action) {
                    Some("Authorize") => StationCallDecision::Answer(format!(
                        "[3,\"{}\",{{\"idTokenInfo\":{{\"status\":\"Accepted\"}}}}]",
                        m.envelope.map_or("", |e| e.id)
                    )),
                    _ => StationCallDecision::Forward,
                }
            })),
        };
        let mut r = relay(hooks);
        let call = r#"[2,"7","Authorize",{"idToken":{"idToken":"T","type":"ISO14443"}}]"#;
        r.handle_station_text(Instant::now(), call.into());
        let out = drain(&mut r);
        assert_eq!(
            out,
            vec![Output::ToStation(
                r#"[3,"7",{"idTokenInfo":{"status":"Accepted"}}]"#.into()
            )]
        );
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0].0, Leg::StationToController);
        assert_eq!(seen[1].0, Leg::ControllerToStation);
    }

    #[test]
    fn own_calls_take_turns_with_the_csms_and_their_answers_stay_here() {
        let mut r = relay(Hooks::default());
        let now = Instant::now();
        // The CSMS's CALL is in flight: ours waits.
        r.handle_csms_text(now, r#"[2,"c1","Reset",{"type":"Immediate"}]"#.into());
        let id = r.call(now, "ClearCache", "{}").unwrap();
        assert_eq!(id, "lc-1");
        assert_eq!(drain(&mut r).len(), 1);
        // The station answers the CSMS: relayed; then ours goes.
        r.handle_station_text(now, r#"[3,"c1",{"status":"Accepted"}]"#.into());
        assert_eq!(
            drain(&mut r),
            vec![
                Output::ToCsms(r#"[3,"c1",{"status":"Accepted"}]"#.into()),
                Output::ToStation(r#"[2,"lc-1","ClearCache",{}]"#.into()),
            ]
        );
        // A CSMS CALL now waits behind ours.
        r.handle_csms_text(now, r#"[2,"c2","ClearCache",{}]"#.into());
        assert!(drain(&mut r).is_empty());
        // Our answer is consumed; the CSMS's CALL goes.
        r.handle_station_text(now, r#"[3,"lc-1",{"status":"Accepted"}]"#.into());
        assert_eq!(
            drain(&mut r),
            vec![
                Output::OwnOutcome {
                    id: "lc-1".into(),
                    outcome: Ok(r#"[3,"lc-1",{"status":"Accepted"}]"#.into())
                },
                Output::ToStation(r#"[2,"c2","ClearCache",{}]"#.into()),
            ]
        );
    }

    #[test]
    fn own_calls_time_out_and_fail_on_close() {
        let mut r = relay(Hooks::default());
        let now = Instant::now();
        r.call(now, "ClearCache", "{}").unwrap();
        assert_eq!(drain(&mut r).len(), 1);
        let deadline = r.poll_timeout().unwrap();
        r.handle_timeout(deadline);
        assert_eq!(
            drain(&mut r),
            vec![Output::OwnOutcome {
                id: "lc-1".into(),
                outcome: Err(OwnCallError::Timeout)
            }]
        );
        assert_eq!(
            r.call(now, "Bad Action", "{}"),
            Err(OwnCallError::InvalidCall)
        );
        assert_eq!(
            r.call(now, "ClearCache", "[]"),
            Err(OwnCallError::InvalidCall)
        );
        r.call(now, "ClearCache", "{}").unwrap();
        r.close();
        assert_eq!(
            drain(&mut r),
            vec![Output::OwnOutcome {
                id: "lc-2".into(),
                outcome: Err(OwnCallError::Disconnected)
            }]
        );
    }
}
