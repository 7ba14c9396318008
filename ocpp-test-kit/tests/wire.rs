//! `WireChargePoint` against `MockCsms` on loopback: the upgrade and a boot, CALLs both ways,
//! the close; and its errors: an upgrade that ends, a wait that the end cuts short, what the
//! core refuses.

use ocpp_proto::{
    v1_6, CallFailure, CloseCode, CloseReason, DecodeOptions, ErrorCode, Event, MessageId,
    RefusalReason, Request, Response,
};
use ocpp_test_kit::{MockCsms, TestKitError, WireChargePoint};
use ocpp_tokio::OcppVersion;
use serde_json::json;

#[tokio::test]
async fn boots_and_answers_the_central_systems_calls_in_both_versions() {
    for version in [OcppVersion::V1_6, OcppVersion::V2_0_1] {
        let csms = MockCsms::builder()
            .versions([version])
            .start()
            .await
            .unwrap();
        let mut cp = WireChargePoint::connect(csms.local_addr(), "CP1", version)
            .await
            .unwrap();
        assert_eq!(cp.connection().version(), Some(version));
        assert_eq!(cp.boot().await.unwrap(), "Accepted");
        assert_eq!(csms.calls("BootNotification").len(), 1);
        let (answer, ()) = tokio::join!(csms.call("CP1", "ClearCache", json!({})), async {
            let (id, request) = cp.wait_for_call().await.unwrap();
            assert_eq!(request.action(), "ClearCache");
            let accepted = r#"{"status":"Accepted"}"#;
            let options = DecodeOptions::strict();
            let response = Response::decode(version, "ClearCache", accepted, &options).unwrap();
            cp.call_result(&id, response).await.unwrap();
        });
        assert_eq!(answer.unwrap()["status"], "Accepted");
    }
}

#[tokio::test]
async fn a_callerror_reaches_the_central_system() {
    let csms = MockCsms::builder()
        .versions([OcppVersion::V1_6])
        .start()
        .await
        .unwrap();
    let mut cp = WireChargePoint::connect(csms.local_addr(), "CP1", OcppVersion::V1_6)
        .await
        .unwrap();
    let (answer, ()) = tokio::join!(csms.call("CP1", "ClearCache", json!({})), async {
        let (id, _) = cp.wait_for_call().await.unwrap();
        cp.call_error(&id, ErrorCode::NotSupported, "no")
            .await
            .unwrap();
    });
    match answer {
        Err(TestKitError::Call(CallFailure::ErrorResponse {
            code, description, ..
        })) => assert_eq!(
            (code, description.as_str()),
            (ErrorCode::NotSupported, "no")
        ),
        other => panic!("{other:?}"),
    }
    // An answer to a CALL nobody waits for is the core's to refuse.
    let unknown: MessageId = "no-such-call".parse().unwrap();
    let late = cp.call_error(&unknown, ErrorCode::GenericError, "late");
    assert!(matches!(late.await, Err(TestKitError::Refused(_))));
}

#[tokio::test]
async fn calls_of_the_charge_point_and_the_close() {
    let csms = MockCsms::builder()
        .versions([OcppVersion::V1_6])
        .start()
        .await
        .unwrap();
    let mut cp = WireChargePoint::connect(csms.local_addr(), "CP1", OcppVersion::V1_6)
        .await
        .unwrap();
    let beat = || Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}));
    assert!(matches!(
        cp.call(beat()).await.unwrap(),
        Ok(Response::V1_6(_))
    ));
    // A SEND is 2.1's: refused on 1.6, nothing written.
    assert!(matches!(
        cp.send(beat()).await,
        Err(TestKitError::Refused(_))
    ));
    cp.close(CloseCode::NORMAL, "bye").await.unwrap();
    let closed = cp.wait_for_close().await.unwrap();
    assert!(
        matches!(closed.reason, CloseReason::LocalClose { .. }),
        "{closed:?}"
    );
    // Closed: a CALL is not sent.
    assert_eq!(
        cp.call(beat()).await.unwrap(),
        Err(CallFailure::from(RefusalReason::NotOpen))
    );
}

#[tokio::test]
async fn the_end_cuts_a_wait_short() {
    let csms = MockCsms::builder()
        .versions([OcppVersion::V2_0_1])
        .start()
        .await
        .unwrap();
    let mut cp = WireChargePoint::connect(csms.local_addr(), "CP1", OcppVersion::V2_0_1)
        .await
        .unwrap();
    // The charge point reads while the central system stops (it waits for the close's answer).
    let ((), waited) = tokio::join!(csms.stop(), cp.wait_for_call());
    match waited {
        Err(TestKitError::Closed { closed, .. }) => {
            assert!(
                matches!(
                    closed.reason,
                    CloseReason::PeerClosed {
                        code: Some(CloseCode::GOING_AWAY),
                        ..
                    }
                ),
                "{closed:?}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_upgrade_that_ends_is_an_error() {
    // A peer that accepts the socket and drops it at once.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let dropper = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        drop(socket);
    });
    let connected = WireChargePoint::connect(addr, "CP1", OcppVersion::V1_6).await;
    assert!(
        matches!(connected, Err(TestKitError::Closed { .. })),
        "{connected:?}"
    );
    dropper.await.unwrap();
    // On any stream: the first event tells how the upgrade went.
    let (client, server) = tokio::io::duplex(4096);
    drop(server);
    let mut cp =
        WireChargePoint::over(client, "in-memory", "CP1", OcppVersion::V1_6, None).unwrap();
    assert!(matches!(cp.next_event().await.unwrap(), Event::Closed(_)));
}

#[test]
fn an_identity_the_core_cannot_use_is_refused() {
    let (client, _server) = tokio::io::duplex(64);
    let made = WireChargePoint::over(client, "in-memory", "", OcppVersion::V1_6, None);
    assert!(matches!(made, Err(TestKitError::Refused(_))), "{made:?}");
}
