//! Properties over random scripts of two peers in simulated time: nothing accepted is lost, and
//! how the bytes are split never changes what happens.

mod common;

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use common::*;
use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::v1_6;
use ocpp_proto::{Answer, ConnectionConfig, Event, MessageId, Request};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Step {
    CpCall,
    CsmsCall,
    CpAnswer {
        error: bool,
    },
    CsmsAnswer {
        error: bool,
    },
    Advance(u8),
    /// The link to the CSMS stalls (bytes wait) or resumes.
    ToggleCsmsLink,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => Just(Step::CpCall),
        2 => Just(Step::CsmsCall),
        2 => any::<bool>().prop_map(|error| Step::CpAnswer { error }),
        3 => any::<bool>().prop_map(|error| Step::CsmsAnswer { error }),
        2 => (0u8..40).prop_map(Step::Advance),
        1 => Just(Step::ToggleCsmsLink),
    ]
}

/// What one side saw and did, for the invariants.
#[derive(Debug, Default)]
struct Ledger {
    /// CALLs this side sent (ids from `call`), and how many outcomes each got.
    sent: BTreeMap<MessageId<'static>, u32>,
    /// CALLs this side received (from events), and how many answers it gave.
    received: BTreeMap<MessageId<'static>, u32>,
    /// Received CALLs not answered yet, oldest first.
    to_answer: VecDeque<MessageId<'static>>,
    events: Vec<String>,
    closed: bool,
}

impl Ledger {
    fn absorb(&mut self, events: Vec<Event>) {
        for event in events {
            self.events.push(format!("{event:?}"));
            match event {
                Event::Call { id, .. } => {
                    assert!(
                        self.received.insert(id.clone(), 0).is_none(),
                        "CALL {id} delivered twice"
                    );
                    self.to_answer.push_back(id);
                }
                Event::CallCompleted { id, .. } => {
                    *self
                        .sent
                        .get_mut(&id)
                        .expect("outcome for a CALL never sent") += 1;
                }
                Event::Closed(closed) => {
                    assert!(!self.closed, "two Closed events");
                    self.closed = true;
                    // Held CALLs (the peer sent another before ours was answered) are reported
                    // here without ever reaching the application.
                    for id in closed.unanswered_incoming {
                        *self.received.entry(id).or_insert(0) += 1;
                    }
                    for call in closed.unanswered_outgoing {
                        *self
                            .sent
                            .get_mut(&call.id)
                            .expect("unknown unanswered call") += 1;
                    }
                    self.to_answer.clear();
                }
                _ => {}
            }
        }
    }

    fn check(&self) {
        assert!(self.closed);
        for (id, n) in &self.sent {
            assert_eq!(*n, 1, "our CALL {id} ended {n} times");
        }
        for (id, n) in &self.received {
            assert_eq!(*n, 1, "their CALL {id} was answered or reported {n} times");
        }
    }
}

fn reset() -> Request {
    Request::from(v1_6::Request::from(v1_6::ResetRequest {
        r#type: v1_6::ResetType::Hard,
    }))
}

fn reset_ok() -> ocpp_proto::Response {
    ocpp_proto::Response::from(v1_6::Response::from(v1_6::ResetResponse {
        status: v1_6::ResetStatus::Accepted,
    }))
}

/// Runs a script; returns both ledgers.
fn run(steps: &[Step], chunk: usize) -> (Ledger, Ledger) {
    let config = ConnectionConfig::default()
        .versions(vec![ocpp_messages::version::OcppVersion::V1_6])
        .ping_interval(Some(Duration::from_secs(25)))
        .pong_timeout(Duration::from_secs(60))
        .call_timeout(Duration::from_secs(30))
        .max_queued_calls(3);
    let mut pair = Pair::connected(config.clone(), config);
    pair.chunk = chunk;
    let (mut csms, mut cp) = (Ledger::default(), Ledger::default());
    for step in steps {
        let now = pair.now;
        match step {
            Step::CpCall => {
                if let Ok(id) = pair.cp.call(now, heartbeat()) {
                    cp.sent.insert(id, 0);
                }
            }
            Step::CsmsCall => {
                if let Ok(id) = pair.csms.call(now, reset()) {
                    csms.sent.insert(id, 0);
                }
            }
            Step::CsmsAnswer { error } => {
                if let Some(id) = csms.to_answer.front().cloned() {
                    let ok = if *error {
                        pair.csms
                            .answer(now, &id, Answer::error(ErrorCode::NotSupported, ""))
                            .is_ok()
                    } else {
                        pair.csms
                            .answer(now, &id, Answer::Result(heartbeat_response()))
                            .is_ok()
                    };
                    if ok {
                        csms.to_answer.pop_front();
                        *csms.received.get_mut(&id).unwrap() += 1;
                    }
                }
            }
            Step::CpAnswer { error } => {
                if let Some(id) = cp.to_answer.front().cloned() {
                    let ok = if *error {
                        pair.cp
                            .answer(now, &id, Answer::error(ErrorCode::InternalError, ""))
                            .is_ok()
                    } else {
                        pair.cp.answer(now, &id, Answer::Result(reset_ok())).is_ok()
                    };
                    if ok {
                        cp.to_answer.pop_front();
                        *cp.received.get_mut(&id).unwrap() += 1;
                    }
                }
            }
            Step::Advance(secs) => pair.advance(Duration::from_secs(u64::from(*secs))),
            Step::ToggleCsmsLink => pair.deliver_to_csms = !pair.deliver_to_csms,
        }
        pair.drive();
        csms.absorb(pair.take_csms_events());
        cp.absorb(pair.take_cp_events());
    }
    // The end: the CSMS closes; whatever is still open ends within the close timeout.
    pair.deliver_to_csms = true;
    pair.csms.close(pair.now, ocpp_frame::CloseCode::NORMAL, "");
    pair.drive();
    pair.advance(Duration::from_secs(10));
    if !pair.cp.is_closed() {
        pair.cp.handle_eof(pair.now);
    }
    pair.drive();
    csms.absorb(pair.take_csms_events());
    cp.absorb(pair.take_cp_events());
    (csms, cp)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn nothing_accepted_is_lost(steps in proptest::collection::vec(step(), 0..40)) {
        let (csms, cp) = run(&steps, 0);
        csms.check();
        cp.check();
    }

    #[test]
    fn splits_do_not_change_events(steps in proptest::collection::vec(step(), 0..30),
                                   chunk in 1usize..40) {
        let (csms_whole, cp_whole) = run(&steps, 0);
        let (csms_split, cp_split) = run(&steps, chunk);
        prop_assert_eq!(csms_whole.events, csms_split.events);
        prop_assert_eq!(cp_whole.events, cp_split.events);
    }
}
