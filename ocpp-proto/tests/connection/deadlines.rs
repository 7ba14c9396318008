//! Call deadlines: a queued CALL past its deadline ends unsent, checked when the line frees,
//! in flight before the call timeout, already passed.

use super::*;

/// The outcomes of the charge point's CALLs in `events`, by id.
fn outcomes(events: Vec<Event>) -> Vec<(MessageId<'static>, Result<(), CallFailure>)> {
    events
        .into_iter()
        .filter_map(|e| match e {
            Event::CallCompleted { id, outcome, .. } => Some((id, outcome.map(|_| ()))),
            _ => None,
        })
        .collect()
}

#[test]
fn a_queued_call_past_its_deadline_ends_unsent_and_is_never_written() {
    let mut pair = Pair::connected_v16();
    let start = pair.now;
    // The first CALL is in flight and the CSMS does not answer it for 10 s; the second waits
    // behind it with a 2 s deadline, the third with a 20 s one, the fourth with none.
    let first = pair.cp.call(pair.now, heartbeat()).unwrap();
    let late = pair
        .cp
        .call_with_deadline(pair.now, heartbeat(), start + Duration::from_secs(2))
        .unwrap();
    let in_time = pair
        .cp
        .call_with_deadline(pair.now, heartbeat(), start + Duration::from_secs(20))
        .unwrap();
    let unbounded = pair.cp.call(pair.now, heartbeat()).unwrap();
    pair.drive();
    assert_eq!(pair.take_csms_events().len(), 1);
    // At its deadline the second ends, unsent (safe to retry), while the first is in flight.
    pair.advance(Duration::from_secs(2));
    let ended = outcomes(pair.take_cp_events());
    assert_eq!(
        ended,
        vec![(late.clone(), Err(CallFailure::DeadlinePassed))]
    );
    assert_eq!(CallFailure::DeadlinePassed.delivery(), Delivery::NotSent);
    assert_eq!(pair.cp.queued_calls(), 2);
    // The first is answered at 10 s: the third and the fourth go out in turn, never the second.
    pair.advance(Duration::from_secs(8));
    pair.csms
        .answer(pair.now, &first, Answer::Result(heartbeat_response()))
        .unwrap();
    pair.drive();
    let calls: Vec<_> = pair
        .take_csms_events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Call { id, .. } => Some(id),
            _ => None,
        })
        .collect();
    assert_eq!(calls, vec![in_time.clone()]);
    for id in [&in_time, &unbounded] {
        pair.csms
            .answer(pair.now, id, Answer::Result(heartbeat_response()))
            .unwrap();
        pair.drive();
    }
    let ended = outcomes(pair.take_cp_events());
    assert_eq!(
        ended,
        vec![(first, Ok(())), (in_time, Ok(())), (unbounded, Ok(()))]
    );
    assert!(!pair
        .take_csms_events()
        .iter()
        .any(|e| matches!(e, Event::Call { id, .. } if *id == late)));
}

#[test]
fn a_deadline_checked_when_the_line_frees_ends_the_call_unsent() {
    // The first CALL is answered exactly when the second's deadline passes: the check right
    // before writing finds it late, even if its timer has not fired yet.
    let mut pair = Pair::connected_v16();
    let start = pair.now;
    let first = pair.cp.call(pair.now, heartbeat()).unwrap();
    let second = pair
        .cp
        .call_with_deadline(pair.now, heartbeat(), start + Duration::from_secs(1))
        .unwrap();
    pair.drive();
    pair.take_csms_events();
    pair.now = start + Duration::from_secs(1);
    pair.csms
        .answer(pair.now, &first, Answer::Result(heartbeat_response()))
        .unwrap();
    pair.drive();
    assert_eq!(
        outcomes(pair.take_cp_events()),
        vec![(first, Ok(())), (second, Err(CallFailure::DeadlinePassed))]
    );
    assert!(pair.take_csms_events().is_empty());
}

#[test]
fn a_call_in_flight_times_out_at_its_deadline_before_the_call_timeout() {
    let mut pair = Pair::connected_v16();
    let start = pair.now;
    let id = pair
        .cp
        .call_with_deadline(pair.now, heartbeat(), start + Duration::from_secs(3))
        .unwrap();
    pair.drive();
    assert_eq!(pair.take_csms_events().len(), 1);
    pair.advance(Duration::from_secs(3));
    // Sent, then no answer by the deadline: it may have run.
    assert_eq!(
        outcomes(pair.take_cp_events()),
        vec![(id, Err(CallFailure::Timeout))]
    );
    assert!(CallFailure::Timeout.may_have_reached_peer());
}

#[test]
fn a_deadline_already_passed_is_refused() {
    let mut pair = Pair::connected_v16();
    let refused = pair
        .cp
        .call_with_deadline(pair.now, heartbeat(), pair.now)
        .unwrap_err();
    assert_eq!(refused.reason, RefusalReason::DeadlinePassed);
    assert_eq!(
        CallFailure::from(refused.reason),
        CallFailure::DeadlinePassed
    );
}
