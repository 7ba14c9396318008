//! Calls both ways: boot and heartbeat at any chunking, one outstanding CALL per direction,
//! crossing CALLs, the call timeout.

use super::*;

#[test]
fn boot_and_heartbeat() {
    for chunk in [0, 1, 3, 7, 64] {
        let mut pair = Pair::new(v16(), v16());
        pair.chunk = chunk;
        pair.drive();
        let events = pair.take_csms_events();
        let [Event::UpgradeRequested(upgrade)] = events.as_slice() else {
            panic!("{events:?}")
        };
        assert_eq!(upgrade.identity.as_str(), "CP-001");
        assert_eq!(upgrade.version, Some(OcppVersion::V1_6));
        assert_eq!(upgrade.offered_subprotocols, vec!["ocpp1.6".to_string()]);
        pair.csms.accept(pair.now).unwrap();
        pair.drive();
        assert_eq!(
            pair.take_cp_events(),
            vec![Event::Connected {
                version: OcppVersion::V1_6
            }]
        );
        pair.take_csms_events();

        let id = pair.cp.call(pair.now, boot_request()).unwrap();
        pair.drive();
        let events = pair.take_csms_events();
        let [Event::Call { id: got, request }] = events.as_slice() else {
            panic!("{events:?}")
        };
        assert_eq!(got, &id);
        assert_eq!(request, &boot_request());
        pair.csms
            .answer(pair.now, &id, Answer::Result(boot_accepted()))
            .unwrap();
        pair.drive();
        assert_eq!(
            pair.take_cp_events(),
            vec![Event::CallCompleted {
                id,
                action: "BootNotification",
                outcome: Ok(boot_accepted()),
                caller: (),
            }]
        );

        let id = pair.cp.call(pair.now, heartbeat()).unwrap();
        pair.drive();
        assert!(matches!(&pair.take_csms_events()[..], [Event::Call { .. }]));
        pair.csms
            .answer(pair.now, &id, Answer::Result(heartbeat_response()))
            .unwrap();
        pair.drive();
        assert!(matches!(
            &pair.take_cp_events()[..],
            [Event::CallCompleted { outcome: Ok(_), .. }]
        ));
    }
}

#[test]
fn one_outstanding_call_per_direction() {
    let mut pair = Pair::connected_v16();
    let a = pair.cp.call(pair.now, heartbeat()).unwrap();
    let b = pair.cp.call(pair.now, boot_request()).unwrap();
    let c = pair.cp.call(pair.now, heartbeat()).unwrap();
    assert_eq!(pair.cp.queued_calls(), 2);
    pair.drive();
    // Only the first is on the wire.
    let events = pair.take_csms_events();
    assert!(matches!(&events[..], [Event::Call { id, .. }] if *id == a));
    for (id, response) in [(&a, heartbeat_response()), (&b, boot_accepted())] {
        pair.csms
            .answer(pair.now, id, Answer::Result(response))
            .unwrap();
        pair.drive();
        let events = pair.take_csms_events();
        assert_eq!(events.len(), 1, "{events:?}");
    }
    pair.csms
        .answer(pair.now, &c, Answer::Result(heartbeat_response()))
        .unwrap();
    pair.drive();
    let completed: Vec<_> = pair
        .take_cp_events()
        .into_iter()
        .map(|e| match e {
            Event::CallCompleted { id, .. } => id,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(completed, vec![a, b, c]);
}

#[test]
fn calls_cross() {
    let mut pair = Pair::connected_v16();
    let from_cp = pair.cp.call(pair.now, heartbeat()).unwrap();
    let reset = ocpp_messages::v1_6::Request::from(ocpp_messages::v1_6::ResetRequest {
        r#type: ocpp_messages::v1_6::ResetType::Soft,
    });
    let from_csms = pair.csms.call(pair.now, reset.into()).unwrap();
    pair.drive();
    assert!(matches!(&pair.take_csms_events()[..], [Event::Call { .. }]));
    assert!(matches!(&pair.take_cp_events()[..], [Event::Call { .. }]));
    pair.csms
        .answer(pair.now, &from_cp, Answer::Result(heartbeat_response()))
        .unwrap();
    let reset_ok = ocpp_messages::v1_6::Response::from(ocpp_messages::v1_6::ResetResponse {
        status: ocpp_messages::v1_6::ResetStatus::Accepted,
    });
    pair.cp
        .answer(pair.now, &from_csms, Answer::Result(reset_ok.into()))
        .unwrap();
    pair.drive();
    assert!(
        matches!(&pair.take_csms_events()[..], [Event::CallCompleted { id, .. }] if *id == from_csms)
    );
    assert!(
        matches!(&pair.take_cp_events()[..], [Event::CallCompleted { id, .. }] if *id == from_cp)
    );
}

#[test]
fn call_timeout_then_next_call_goes_out() {
    let mut pair = Pair::connected_v16();
    pair.deliver_to_csms = false; // the CSMS never hears the call
    let first = pair.cp.call(pair.now, heartbeat()).unwrap();
    let second = pair.cp.call(pair.now, heartbeat()).unwrap();
    pair.drive();
    pair.advance(Duration::from_secs(29));
    assert!(pair.take_cp_events().is_empty());
    pair.advance(Duration::from_secs(1));
    let events = pair.take_cp_events();
    assert_eq!(
        events,
        vec![Event::CallCompleted {
            id: first,
            action: "Heartbeat",
            outcome: Err(CallFailure::Timeout),
            caller: (),
        }]
    );
    assert!(pair.cp.has_call_in_flight(), "the second call was sent");
    pair.advance(Duration::from_secs(30));
    assert!(
        matches!(&pair.take_cp_events()[..], [Event::CallCompleted { id, outcome: Err(CallFailure::Timeout), .. }] if *id == second)
    );
}
