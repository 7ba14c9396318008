//! Who waits for a CALL: the caller given to `Connection::call_for` stays with the CALL and
//! comes back with its end, whichever end it is (a result, a CALLERROR, a timeout, a deadline
//! passed in the queue, a close in flight or queued, a refusal), so a driver keeps no table.

mod common;

use std::time::Duration;

use common::*;
use ocpp_proto::{CallFailure, CloseCode, Event, RefusalReason};

/// The caller of every `CallCompleted` among `events`, in order, with its outcome's kind.
fn completions(events: Vec<Event<&'static str>>) -> Vec<(&'static str, Result<(), CallFailure>)> {
    events
        .into_iter()
        .filter_map(|event| match event {
            Event::CallCompleted {
                caller, outcome, ..
            } => Some((caller, outcome.map(|_| ()))),
            _ => None,
        })
        .collect()
}

#[test]
fn the_caller_comes_back_with_the_answer_and_with_a_timeout() {
    let mut pair = Pair::<&'static str>::connected_v16_with_callers();
    let first = pair
        .cp
        .call_for(pair.now, boot_request(), "boot", None)
        .unwrap();
    let second = pair
        .cp
        .call_for(pair.now, heartbeat(), "beat", None)
        .unwrap();
    pair.drive();
    let events = pair.take_csms_events();
    let [Event::Call { id, .. }] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!(id, &first);
    pair.csms
        .answer(pair.now, id, ocpp_proto::Answer::result(boot_accepted()))
        .unwrap();
    pair.drive();
    assert_eq!(completions(pair.take_cp_events()), vec![("boot", Ok(()))]);
    // The second went out once the first was answered; the CSMS never answers it.
    let events = pair.take_csms_events();
    assert!(matches!(events.as_slice(), [Event::Call { id, .. }] if id == &second));
    pair.advance(Duration::from_secs(120));
    assert_eq!(
        completions(pair.take_cp_events()),
        vec![("beat", Err(CallFailure::Timeout))]
    );
}

#[test]
fn a_queued_caller_whose_deadline_passes_comes_back_unsent() {
    let mut pair = Pair::<&'static str>::connected_v16_with_callers();
    pair.cp
        .call_for(pair.now, boot_request(), "boot", None)
        .unwrap();
    let deadline = pair.now + Duration::from_secs(5);
    pair.cp
        .call_for(pair.now, heartbeat(), "impatient", Some(deadline))
        .unwrap();
    pair.advance(Duration::from_secs(6));
    let ended = completions(pair.take_cp_events());
    assert_eq!(ended, vec![("impatient", Err(CallFailure::DeadlinePassed))]);
}

#[test]
fn a_close_hands_back_every_caller_with_whether_its_call_was_sent() {
    let mut pair = Pair::<&'static str>::connected_v16_with_callers();
    pair.cp
        .call_for(pair.now, boot_request(), "in flight", None)
        .unwrap();
    pair.cp
        .call_for(pair.now, heartbeat(), "queued", None)
        .unwrap();
    pair.drive();
    pair.csms.close(pair.now, CloseCode::NORMAL, "bye");
    pair.drive();
    let events = pair.take_cp_events();
    let closed = events
        .into_iter()
        .find_map(|event| match event {
            Event::Closed(closed) => Some(closed),
            _ => None,
        })
        .expect("closed");
    let callers: Vec<_> = closed
        .unanswered_outgoing
        .iter()
        .map(|call| (call.caller, call.failure()))
        .collect();
    assert_eq!(
        callers,
        vec![
            ("in flight", CallFailure::Disconnected),
            ("queued", CallFailure::ClosedBeforeSent)
        ]
    );
}

#[test]
fn a_refused_call_hands_its_caller_back_at_once() {
    let mut pair = Pair::<&'static str>::connected_v16_with_callers();
    let past = pair.now;
    let refused = pair
        .cp
        .call_for(pair.now, heartbeat(), "late", Some(past))
        .unwrap_err();
    assert_eq!(refused.reason, RefusalReason::DeadlinePassed);
    assert_eq!(refused.message.1, "late");
    pair.cp.close(pair.now, CloseCode::NORMAL, "");
    let refused = pair
        .cp
        .call_for(pair.now, heartbeat(), "closed", None)
        .unwrap_err();
    assert_eq!(
        (refused.reason, refused.message.1),
        (RefusalReason::NotOpen, "closed")
    );
}
