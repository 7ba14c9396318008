//! The server through its public API, on loopback sockets: routing, typed calls, every
//! `CallFailure`, upgrade decisions, duplicate identities, the message hook, graceful shutdown,
//! the answer rule on the untyped handler path.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
// The test charge points speak the core's payload types; the server's API `ocpp_messages`'.
use ocpp_proto::{CallFailure as CoreFailure, Event, Request, Response};
use ocpp_tokio::hook::Message;
use ocpp_tokio::ocpp::{CloseCode, CloseReason, Delivery};
use ocpp_tokio::{v1_6, v2_0_1, CallFailure, ErrorCode, OcppVersion, Server};

fn reset_soft() -> v1_6::ResetRequest {
    serde_json::from_value(serde_json::json!({"type": "Soft"})).unwrap()
}

async fn calls_reach_the_handler_on_1_6_and_2_0_1() {
    let server = TestServer::start(server_config()).await;
    let mut cp16 = TestCp::connect(server.addr, "CP16", OcppVersion::V1_6).await;
    let mut cp201 = TestCp::connect(server.addr, "CP201", OcppVersion::V2_0_1).await;
    assert_eq!(cp16.boot().await, "Accepted");
    assert_eq!(cp201.boot().await, "Accepted");
    let beat = Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}));
    assert!(matches!(cp16.call(beat).await, Ok(Response::V1_6(_))));
    let beat = Request::from(v2_0_1::Request::from(v2_0_1::HeartbeatRequest {
        custom_data: None,
    }));
    assert!(matches!(cp201.call(beat).await, Ok(Response::V2_0_1(_))));
    // A known action the handler does not serve: NotSupported, spelled for the version.
    let data: v1_6::DataTransferRequest =
        serde_json::from_value(serde_json::json!({"vendorId": "ACME"})).unwrap();
    match cp16.call(v1_6::Request::from(data).into()).await {
        Err(CoreFailure::ErrorResponse { code, .. }) => assert_eq!(code, ErrorCode::NotSupported),
        other => panic!("{other:?}"),
    }
    // An unknown action: the core answers NotImplemented without the handler.
    cp16.stream_write(&raw_text_frame(r#"[2,"u1","NoSuchAction",{}]"#))
        .await;
    // (Its CALLERROR is an unmatched response for our client.)
    assert!(matches!(
        cp16.next_event().await,
        Event::UnmatchedResponse { .. }
    ));
    assert_eq!(server.charge_points.len(), 2);
    let mut identities: Vec<String> = server
        .charge_points
        .identities()
        .iter()
        .map(|i| i.as_str().to_owned())
        .collect();
    identities.sort();
    assert_eq!(identities, ["CP16", "CP201"]);
    assert_eq!(
        server.charge_points.get("CP201").unwrap().version(),
        OcppVersion::V2_0_1
    );
    server.stop().await;
}

async fn a_slow_handler_does_not_stop_the_connection() {
    let config = server_config().ping_interval(Some(Duration::from_millis(50)));
    let server = TestServer::start(config).await;
    let mut cp = TestCp::connect(server.addr, "SLOW", OcppVersion::V1_6).await;
    let handle = server.charge_points.get("SLOW").unwrap();
    let authorize: v1_6::AuthorizeRequest =
        serde_json::from_value(serde_json::json!({"idTag": "T"})).unwrap();
    cp.conn
        .call(
            std::time::Instant::now(),
            v1_6::Request::from(authorize).into(),
        )
        .unwrap();
    // While the handler sleeps 300 ms, the server's own CALL goes out and is answered.
    let call = tokio::spawn(async move { handle.call(reset_soft()).await });
    let (id, request) = cp.expect_call().await;
    assert_eq!(request.action(), "Reset");
    let accepted = v1_6::ResetResponse {
        status: v1_6::ResetStatus::Accepted,
    };
    cp.respond(&id, v1_6::Response::from(accepted).into()).await;
    let result = tokio::time::timeout(WAIT, async {
        loop {
            if let Event::CallCompleted { outcome, .. } = cp.next_event().await {
                return outcome;
            }
        }
    });
    let outcome = result.await.unwrap();
    match outcome {
        Err(CoreFailure::ErrorResponse {
            code, description, ..
        }) => {
            assert_eq!(code, ErrorCode::SecurityError);
            assert_eq!(description, "slow and refused");
        }
        other => panic!("{other:?}"),
    }
    let typed = call.await.unwrap().unwrap();
    assert_eq!(typed.status, v1_6::ResetStatus::Accepted);
    server.stop().await;
}

async fn typed_call_results_and_wrong_version() {
    let server = TestServer::start(server_config()).await;
    let mut cp = TestCp::connect(server.addr, "TYPED", OcppVersion::V2_0_1).await;
    let handle = server.charge_points.get("TYPED").unwrap();
    let request = v2_0_1::GetVariablesRequest {
        custom_data: None,
        get_variable_data: vec![serde_json::from_value(serde_json::json!({
            "component": {"name": "OCPPCommCtrlr"}, "variable": {"name": "HeartbeatInterval"}
        }))
        .unwrap()],
    };
    let call = tokio::spawn({
        let handle = handle.clone();
        async move { handle.call(request).await }
    });
    let (id, request) = cp.expect_call().await;
    assert_eq!(request.action(), "GetVariables");
    let response: v2_0_1::GetVariablesResponse = serde_json::from_value(serde_json::json!({
        "getVariableResult": [{
            "attributeStatus": "Accepted", "attributeValue": "120",
            "component": {"name": "OCPPCommCtrlr"}, "variable": {"name": "HeartbeatInterval"}
        }]
    }))
    .unwrap();
    cp.respond(&id, v2_0_1::Response::from(response.clone()).into())
        .await;
    assert_eq!(call.await.unwrap().unwrap(), response);
    // A 1.6 request on a 2.0.1 connection: refused before anything is sent.
    assert_eq!(
        handle.call(reset_soft()).await,
        Err(CallFailure::WrongVersion)
    );
    // Untyped, through the registry.
    let clear = ocpp_tokio::ocpp::Request::from(v2_0_1::ClearCacheRequest::default());
    let charge_points = server.charge_points.clone();
    let call = tokio::spawn(async move { charge_points.call_raw("TYPED", clear).await });
    let (id, _) = cp.expect_call().await;
    let cleared: v2_0_1::ClearCacheResponse =
        serde_json::from_value(serde_json::json!({"status": "Accepted"})).unwrap();
    cp.respond(&id, v2_0_1::Response::from(cleared).into())
        .await;
    assert!(matches!(
        call.await.unwrap(),
        Ok(ocpp_tokio::ocpp::Response::V2_0_1(_))
    ));
    server.stop().await;
}

/// A 1.6 test charge point `identity`, connected, and the server's handle of it.
async fn connected(server: &TestServer, identity: &str) -> (TestCp, ocpp_tokio::ChargePoint) {
    let cp = TestCp::connect(server.addr, identity, OcppVersion::V1_6).await;
    eventually("registered", || {
        server.charge_points.get(identity).is_some()
    })
    .await;
    (cp, server.charge_points.get(identity).unwrap())
}

async fn every_call_error() {
    let config = server_config()
        .max_queued_calls(1)
        .call_timeout(Duration::from_millis(400));
    let server = TestServer::start(config).await;
    let charge_points = server.charge_points.clone();
    let clear = || ocpp_tokio::ocpp::Request::from(v1_6::ClearCacheRequest {});

    // NotConnected: nobody holds the identity (untyped and typed).
    assert_eq!(
        charge_points.call_raw("NOBODY", clear()).await,
        Err(CallFailure::NotConnected)
    );
    assert_eq!(
        charge_points
            .call("NOBODY", v1_6::ClearCacheRequest {})
            .await,
        Err(CallFailure::NotConnected)
    );
    assert_eq!(CallFailure::NotConnected.delivery(), Delivery::NotSent);

    let (mut cp, _) = connected(&server, "ERR").await;

    // CALLERROR with code, description and details (written raw: our client has no details;
    // its own core then still owes that CALL an answer, so each raw case has its own client).
    let (mut raw, handle) = connected(&server, "ERR-DETAILS").await;
    let call = tokio::spawn({
        let handle = handle.clone();
        async move { handle.call(v1_6::ClearCacheRequest {}).await }
    });
    let (id, _) = raw.expect_call().await;
    let error = format!(
        r#"[4,"{}","GenericError","nope",{{"why":"test"}}]"#,
        id.as_str()
    );
    raw.stream_write(&raw_text_frame(&error)).await;
    let result = call.await.unwrap();
    assert_eq!(
        result,
        Err(CallFailure::ErrorResponse {
            code: ErrorCode::GenericError,
            description: "nope".into(),
            details: r#"{"why":"test"}"#.into(),
        })
    );

    // InvalidResponse: a CALLRESULT that is not a ClearCacheResponse.
    let (mut raw, handle) = connected(&server, "ERR-INVALID").await;
    let call = tokio::spawn({
        let handle = handle.clone();
        async move { handle.call(v1_6::ClearCacheRequest {}).await }
    });
    let (id, _) = raw.expect_call().await;
    let bad = format!(r#"[3,"{}",{{"status":"Maybe"}}]"#, id.as_str());
    raw.stream_write(&raw_text_frame(&bad)).await;
    assert!(matches!(
        call.await.unwrap(),
        Err(CallFailure::InvalidResponse { .. })
    ));

    let handle = charge_points.get("ERR").unwrap();
    // Timeout (the config's 400 ms), and QueueFull: one in flight, one queued, the third
    // refused.
    let first = tokio::spawn({
        let handle = handle.clone();
        async move { handle.call(v1_6::ClearCacheRequest {}).await }
    });
    let (late1, _) = cp.expect_call().await;
    let second = tokio::spawn({
        let handle = handle.clone();
        async move { handle.call(v1_6::ClearCacheRequest {}).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        handle.call(v1_6::ClearCacheRequest {}).await,
        Err(CallFailure::QueueFull)
    );
    assert_eq!(first.await.unwrap(), Err(CallFailure::Timeout));
    // Answered too late: the server ignores it (and our client may take the next CALL).
    cp.late_error(&late1).await;
    // The queued one went out after the timeout; let it time out too.
    let (late2, _) = cp.expect_call().await;
    assert_eq!(second.await.unwrap(), Err(CallFailure::Timeout));
    cp.late_error(&late2).await;

    // The per-connection call timeout (shorter than the config's).
    let settings = handle.settings();
    assert_eq!(settings.get_call_timeout(), Duration::from_millis(400));
    assert!(handle.set_settings(settings.call_timeout(Duration::from_millis(100))));
    let started = std::time::Instant::now();
    let call = tokio::spawn({
        let handle = handle.clone();
        async move { handle.call(v1_6::ClearCacheRequest {}).await }
    });
    let (late3, _) = cp.expect_call().await;
    assert_eq!(call.await.unwrap(), Err(CallFailure::Timeout));
    assert!(
        started.elapsed() < Duration::from_millis(390),
        "{:?}",
        started.elapsed()
    );
    cp.late_error(&late3).await;

    // Disconnected: the charge point goes away before answering (the CALL may have run).
    // The call timeout is long here so that a busy machine cannot turn the disconnect
    // into a timeout (the two are different outcomes, and the one under test must win).
    assert!(handle.set_settings(settings.call_timeout(Duration::from_secs(30))));
    let call = tokio::spawn({
        let handle = handle.clone();
        async move { handle.call(v1_6::ClearCacheRequest {}).await }
    });
    let _ = cp.expect_call().await;
    drop(cp);
    let disconnected = call.await.unwrap().unwrap_err();
    assert_eq!(disconnected, CallFailure::Disconnected);
    assert!(disconnected.may_have_reached_peer());

    // NotConnected: a handle kept after the end.
    eventually("the task ends", || !handle.is_connected()).await;
    assert_eq!(
        handle.call(v1_6::ClearCacheRequest {}).await,
        Err(CallFailure::NotConnected)
    );
    assert!(charge_points.get("ERR").is_none());
    server.stop().await;
}

async fn upgrade_decisions_401_and_404() {
    let server = TestServer::start(server_config()).await;
    let mut accepted = Vec::new();
    for (identity, password, status) in [
        ("UNKNOWN1", None, Some(404)),
        ("AUTH1", None, Some(401)),
        ("AUTH1", Some(&b"wrong-password-16"[..]), Some(401)),
        ("AUTH1", Some(PASSWORD), None),
    ] {
        let mut cp = TestCp::start(server.addr, identity, OcppVersion::V1_6, password).await;
        match (cp.next_event().await, status) {
            // Kept open until the registry is checked (dropping it would end the connection).
            (Event::Connected { .. }, None) => accepted.push(cp),
            (Event::Closed(closed), Some(status)) => match closed.reason {
                CloseReason::UpgradeRefused { status: got, .. } => assert_eq!(got, Some(status)),
                other => panic!("{identity}: {other:?}"),
            },
            (other, _) => panic!("{identity}: {other:?}"),
        }
    }
    eventually("AUTH1 registered", || {
        server.charge_points.get("AUTH1").is_some()
    })
    .await;
    server.stop().await;
}

async fn a_duplicate_identity_replaces_the_old_connection() {
    let server = TestServer::start(server_config()).await;
    let mut old = TestCp::connect(server.addr, "DUP", OcppVersion::V1_6).await;
    eventually("registered", || server.charge_points.get("DUP").is_some()).await;
    let old_handle = server.charge_points.get("DUP").unwrap();
    // A CALL of the old connection is pending when the new one arrives.
    let pending = tokio::spawn({
        let handle = old_handle.clone();
        async move { handle.call(v1_6::ClearCacheRequest {}).await }
    });
    let _ = old.expect_call().await;

    let mut new = TestCp::connect(server.addr, "DUP", OcppVersion::V1_6).await;
    let closed = old.expect_closed().await;
    match closed.reason {
        CloseReason::PeerClosed { code, .. } => assert_eq!(code, Some(CloseCode::POLICY_VIOLATION)),
        other => panic!("{other:?}"),
    }
    assert_eq!(pending.await.unwrap(), Err(CallFailure::Disconnected));
    eventually("old task ended", || !old_handle.is_connected()).await;
    assert_eq!(
        old_handle.call(v1_6::ClearCacheRequest {}).await,
        Err(CallFailure::NotConnected)
    );

    let new_handle = server.charge_points.get("DUP").unwrap();
    assert_ne!(new_handle, old_handle);
    assert_eq!(server.charge_points.len(), 1);
    // The new connection is served, and its handle reaches it.
    assert_eq!(new.boot().await, "Accepted");
    let call = tokio::spawn(async move { new_handle.call(v1_6::ClearCacheRequest {}).await });
    let (id, _) = new.expect_call().await;
    let cleared = v1_6::ClearCacheResponse {
        status: v1_6::ClearCacheStatus::Accepted,
    };
    new.respond(&id, v1_6::Response::from(cleared).into()).await;
    assert!(call.await.unwrap().is_ok());
    server.stop().await;
}

async fn the_hook_sees_every_message() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let builder = Server::builder().config(server_config()).on_message({
        let seen = seen.clone();
        move |event| {
            let what = match event.message {
                Message::CallIn(r) => format!("in CALL {}", r.action()),
                Message::ResultOut(r) => format!("out RESULT {}", r.action()),
                Message::ErrorOut { code, .. } => format!("out ERROR {code:?}"),
                Message::CallOut(r) => format!("out CALL {}", r.action()),
                Message::OutcomeIn(Ok(r)) => format!("in RESULT {}", r.action()),
                Message::OutcomeIn(other) => format!("in OUTCOME {other:?}"),
                other => format!("{other:?}"),
            };
            seen.lock()
                .unwrap()
                .push(format!("{}: {what}", event.identity));
        }
    });
    let server = TestServer::start_with(builder).await;
    let mut cp = TestCp::connect(server.addr, "HOOK", OcppVersion::V1_6).await;
    cp.boot().await;
    let handle = server.charge_points.get("HOOK").unwrap();
    let call = tokio::spawn(async move { handle.call(reset_soft()).await });
    let (id, _) = cp.expect_call().await;
    let accepted = v1_6::ResetResponse {
        status: v1_6::ResetStatus::Accepted,
    };
    cp.respond(&id, v1_6::Response::from(accepted).into()).await;
    call.await.unwrap().unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "HOOK: in CALL BootNotification",
            "HOOK: out RESULT BootNotification",
            "HOOK: out CALL Reset",
            "HOOK: in RESULT Reset",
        ]
    );
    server.stop().await;
}

async fn graceful_shutdown_closes_everyone_with_1001() {
    let server = TestServer::start(server_config()).await;
    let mut cps = Vec::new();
    for n in 0..5 {
        cps.push(TestCp::connect(server.addr, &format!("SHUT{n}"), OcppVersion::V2_0_1).await);
    }
    eventually("all registered", || server.charge_points.len() == 5).await;
    let closes = tokio::spawn(async move {
        let mut codes = Vec::new();
        for mut cp in cps {
            let closed = cp.expect_closed().await;
            codes.push(closed.reason);
        }
        codes
    });
    let took = server.stop().await;
    assert!(took < Duration::from_secs(2), "{took:?}");
    for reason in closes.await.unwrap() {
        match reason {
            CloseReason::PeerClosed { code, .. } => assert_eq!(code, Some(CloseCode::GOING_AWAY)),
            other => panic!("{other:?}"),
        }
    }
}

async fn graceful_shutdown_is_bounded_when_a_peer_never_answers() {
    let builder = Server::builder()
        .config(server_config().close_timeout(Duration::from_secs(30)))
        .shutdown_timeout(Duration::from_millis(300));
    let server = TestServer::start_with(builder).await;
    // This charge point connects and then never reads or answers the close.
    let mut silent = TestCp::connect(server.addr, "SILENT", OcppVersion::V1_6).await;
    silent.reading = false;
    let mut polite = TestCp::connect(server.addr, "POLITE", OcppVersion::V1_6).await;
    eventually("both registered", || server.charge_points.len() == 2).await;
    let charge_points = server.charge_points.clone();
    let polite_closed = tokio::spawn(async move { polite.expect_closed().await });
    let took = server.stop().await;
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert!(matches!(
        polite_closed.await.unwrap().reason,
        CloseReason::PeerClosed {
            code: Some(CloseCode::GOING_AWAY),
            ..
        }
    ));
    assert_eq!(charge_points.len(), 0);
    drop(silent);
}

async fn the_per_connection_idle_timeout_closes_with_1001() {
    let server = TestServer::start(server_config()).await;
    let mut cp = TestCp::connect(server.addr, "IDLE", OcppVersion::V1_6).await;
    eventually("registered", || server.charge_points.get("IDLE").is_some()).await;
    let handle = server.charge_points.get("IDLE").unwrap();
    handle.set_settings(
        handle
            .settings()
            .idle_timeout(Some(Duration::from_millis(200))),
    );
    assert_eq!(
        handle.settings().get_idle_timeout(),
        Some(Duration::from_millis(200))
    );
    let closed = cp.expect_closed().await;
    assert!(matches!(
        closed.reason,
        CloseReason::PeerClosed {
            code: Some(CloseCode::GOING_AWAY),
            ..
        }
    ));
    server.stop().await;
}

async fn server_pings_turned_off_for_one_charge_point() {
    // Pings after 100 ms of silence, 100 ms for the pong: a charge point that does not read
    // is dropped within about 200 ms, unless its pings are off (ocpp-rpc #80).
    let config = server_config()
        .ping_interval(Some(Duration::from_millis(100)))
        .pong_timeout(Duration::from_millis(100));
    let server = TestServer::start(config).await;
    let (_quiet, quiet) = connected(&server, "QUIET").await;
    let (_deaf, _) = connected(&server, "DEAF").await;
    assert!(quiet.set_settings(quiet.settings().ping_interval(None)));
    assert_eq!(quiet.settings().get_ping_interval(), None);
    eventually("DEAF dropped", || !server.closes_of("DEAF").is_empty()).await;
    assert_eq!(server.closes_of("DEAF"), [CloseReason::PongTimeout]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(quiet.is_connected(), "{:?}", server.closes_of("QUIET"));
    // And back on: QUIET goes the same way.
    quiet.set_settings(
        quiet
            .settings()
            .ping_interval(Some(Duration::from_millis(100))),
    );
    eventually("QUIET dropped", || !server.closes_of("QUIET").is_empty()).await;
    assert_eq!(server.closes_of("QUIET"), [CloseReason::PongTimeout]);
    server.stop().await;
}

async fn a_send_of_2_1_reaches_on_send_and_is_never_answered() {
    let server = TestServer::start(server_config()).await;
    let mut cp = TestCp::connect(server.addr, "SEND21", OcppVersion::V2_1).await;
    let element = ocpp_tokio::v2_1::StreamDataElement::new(ocpp_tokio::Decimal::new(0, 1), "1.5");
    let stream =
        ocpp_tokio::v2_1::NotifyPeriodicEventStreamRequest::new(vec![element], 7, 0, now_utc());
    let request = Request::from(ocpp_tokio::v2_1::Request::from(stream));
    cp.conn.send(std::time::Instant::now(), request).unwrap();
    cp.flush().await;
    eventually("on_send ran", || {
        !server.handler.sends.lock().unwrap().is_empty()
    })
    .await;
    let sends = server.handler.sends.lock().unwrap().clone();
    assert_eq!(
        sends,
        [(
            "SEND21".to_owned(),
            "NotifyPeriodicEventStream",
            OcppVersion::V2_1
        )]
    );
    // Nothing came back; the connection goes on (a CALL still works).
    let beat = Request::from(ocpp_tokio::v2_1::Request::from(
        ocpp_tokio::v2_1::HeartbeatRequest::default(),
    ));
    assert!(matches!(
        cp.call(beat).await,
        Err(CoreFailure::ErrorResponse { .. }) | Ok(_)
    ));
    // And the server's SEND to a 1.6 charge point is refused as such.
    let _cp16 = TestCp::connect(server.addr, "SEND16", OcppVersion::V1_6).await;
    eventually("registered", || {
        server.charge_points.get("SEND16").is_some()
    })
    .await;
    let handle = server.charge_points.get("SEND16").unwrap();
    let element = ocpp_tokio::v2_1::StreamDataElement::new(ocpp_tokio::Decimal::new(0, 1), "1.5");
    let stream =
        ocpp_tokio::v2_1::NotifyPeriodicEventStreamRequest::new(vec![element], 7, 0, now_utc());
    assert_eq!(
        handle.send(stream).await,
        Err(ocpp_tokio::registry::SendError::NeedsV21)
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_connection_serves_any_stream() {
    let handler = Arc::new(TestHandler::default());
    // A service has no listener (so no address): it serves the streams it is handed.
    let server: ocpp_tokio::server::Service<_> = Server::builder()
        .config(server_config())
        .handler(handler.clone())
        .build();
    let (client, served) = tokio::io::duplex(4096);
    server.serve_connection(served);
    let mut cp = TestCp::over(client, "in-memory", "DUPLEX", OcppVersion::V2_0_1, None);
    assert!(matches!(cp.next_event().await, Event::Connected { .. }));
    assert_eq!(cp.boot().await, "Accepted");
    assert_eq!(server.connections(), 1);
    assert_eq!(server.shutdown().await, 0);
    assert!(matches!(
        cp.expect_closed().await.reason,
        CloseReason::PeerClosed {
            code: Some(CloseCode::GOING_AWAY),
            ..
        }
    ));
    assert_eq!(server.connections(), 0);
}

/// A cluster stand-in: answers ClearCache for `FAR`, of the version it was asked in.
struct FarNode;

impl ocpp_tokio::registry::Remote for FarNode {
    fn call<'a>(
        &'a self,
        identity: &'a str,
        request: ocpp_tokio::ocpp::Request,
    ) -> ocpp_tokio::registry::RemoteCall<'a> {
        Box::pin(async move {
            if identity != "FAR" {
                return Err(CallFailure::NotConnected);
            }
            assert_eq!(request.action(), "ClearCache");
            Ok(v1_6::ClearCacheResponse::new(v1_6::ClearCacheStatus::Rejected).into())
        })
    }
}

async fn the_registry_routes_unknown_identities_to_the_remote() {
    let builder = Server::builder().config(server_config()).remote(FarNode);
    let server = TestServer::start_with(builder).await;
    let typed = server
        .charge_points
        .call("FAR", v1_6::ClearCacheRequest::default())
        .await;
    assert_eq!(typed.unwrap().status, v1_6::ClearCacheStatus::Rejected);
    let raw = server
        .charge_points
        .call_raw(
            "FAR",
            ocpp_tokio::ocpp::Request::from(v1_6::ClearCacheRequest::default()),
        )
        .await;
    assert!(matches!(raw, Ok(ocpp_tokio::ocpp::Response::V1_6(_))));
    // The remote answered 1.6 to a 2.0.1 request: WrongVersion.
    let wrong = server
        .charge_points
        .call("FAR", v2_0_1::ClearCacheRequest::default())
        .await;
    assert_eq!(wrong, Err(CallFailure::WrongVersion));
    let nobody = server
        .charge_points
        .call("NOBODY", v1_6::ClearCacheRequest::default());
    assert_eq!(nobody.await, Err(CallFailure::NotConnected));
    server.stop().await;
}

async fn a_handle_closes_its_connection_and_on_close_runs() {
    let server = TestServer::start(server_config()).await;
    let (mut cp, handle) = connected(&server, "BYE").await;
    assert_eq!(
        server
            .handler
            .connects
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    handle.close(CloseCode::NORMAL, "bye");
    match cp.expect_closed().await.reason {
        CloseReason::PeerClosed { code, reason } => {
            assert_eq!((code, reason.as_str()), (Some(CloseCode::NORMAL), "bye"));
        }
        other => panic!("{other:?}"),
    }
    eventually("on_close ran", || !server.closes_of("BYE").is_empty()).await;
    assert_eq!(
        server.closes_of("BYE"),
        [CloseReason::LocalClose {
            code: CloseCode::NORMAL
        }]
    );
    assert!(!handle.is_connected());
    assert!(server.charge_points.is_empty());
    server.stop().await;
}

/// On its first Heartbeat, answers with a BootNotificationResponse (a bug of the application:
/// the untyped path lets it compile); afterwards, correctly. The count is per connection.
struct WrongOnce;

impl ocpp_tokio::Handler for WrongOnce {
    type State = std::sync::atomic::AtomicU32;

    async fn on_upgrade(
        &self,
        _: ocpp_tokio::Connecting,
    ) -> Result<Self::State, ocpp_tokio::Rejection> {
        Ok(Default::default())
    }

    async fn on_call(
        &self,
        session: &ocpp_tokio::Session<Self::State>,
        call: ocpp_tokio::IncomingCall,
    ) -> ocpp_tokio::Answer {
        use ocpp_tokio::ocpp::RequestRef;
        use ocpp_tokio::Answer;
        match call.view() {
            RequestRef::V1_6(v1_6::Request::Heartbeat(_)) => {
                if session.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0 {
                    let accepted = v1_6::RegistrationStatus::Accepted;
                    Answer::result(v1_6::BootNotificationResponse::new(
                        accepted,
                        now_utc(),
                        300,
                    ))
                } else {
                    Answer::result(v1_6::HeartbeatResponse::new(now_utc()))
                }
            }
            _ => Answer::not_supported(call.action()),
        }
    }
}

async fn a_wrong_answer_goes_out_as_internal_error_and_the_connection_goes_on() {
    let server = Server::builder()
        .config(server_config())
        .shards(shards())
        .handler(WrongOnce)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr().unwrap();
    let service_charge_points = server.charge_points();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let done = tokio::spawn(server.run_until(async {
        let _ = stopped.await;
    }));
    let mut cp = TestCp::connect(addr, "WRONG", OcppVersion::V1_6).await;
    let beat = || Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}));
    // The handler's BootNotificationResponse for a Heartbeat: never sent as such, a CALLERROR
    // InternalError in its place.
    match cp.call(beat()).await {
        Err(CoreFailure::ErrorResponse { code, .. }) => assert_eq!(code, ErrorCode::InternalError),
        other => panic!("expected CALLERROR InternalError, got {other:?}"),
    }
    // The connection goes on: the next Heartbeat gets its HeartbeatResponse.
    match cp.call(beat()).await {
        Ok(Response::V1_6(response)) => {
            assert!(
                matches!(*response, v1_6::Response::Heartbeat(_)),
                "{response:?}"
            )
        }
        other => panic!("expected a HeartbeatResponse, got {other:?}"),
    }
    assert!(service_charge_points
        .get("WRONG")
        .is_some_and(|cp| cp.is_connected()));
    let _ = stop.send(());
    tokio::time::timeout(WAIT, done)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(matches!(
        cp.expect_closed().await.reason,
        CloseReason::PeerClosed {
            code: Some(CloseCode::GOING_AWAY),
            ..
        }
    ));
}

/// A test server that counts our CALLs the core took (in flight, or queued behind the one in
/// flight): the hook sees each as it is written or queued.
async fn counting_calls_out() -> (TestServer, Arc<std::sync::atomic::AtomicUsize>) {
    let calls_out = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let builder = Server::builder().config(server_config()).on_message({
        let calls_out = calls_out.clone();
        move |event| {
            if matches!(event.message, Message::CallOut(_)) {
                calls_out.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    });
    (TestServer::start_with(builder).await, calls_out)
}

async fn a_close_fails_the_queued_call_as_closed_before_sent_and_the_sent_one_as_disconnected() {
    let (server, calls_out) = counting_calls_out().await;
    let (mut cp, _) = connected(&server, "QUEUE").await;
    let call = |charge_points: ocpp_tokio::ChargePoints| {
        tokio::spawn(async move {
            charge_points
                .call("QUEUE", v1_6::ClearCacheRequest {})
                .await
        })
    };
    // The first CALL is written (the charge point has it, and does not answer)...
    let in_flight = call(server.charge_points.clone());
    let (_, request) = cp.expect_call().await;
    assert_eq!(request.action(), "ClearCache");
    // ... the second waits behind it (OCPP-J: one CALL at a time).
    let queued = call(server.charge_points.clone());
    eventually("the second CALL is queued", || {
        calls_out.load(std::sync::atomic::Ordering::Relaxed) == 2
    })
    .await;
    // The charge point goes away.
    drop(cp);
    let queued = tokio::time::timeout(WAIT, queued).await.unwrap().unwrap();
    assert_eq!(queued, Err(CallFailure::ClosedBeforeSent));
    assert_eq!(CallFailure::ClosedBeforeSent.delivery(), Delivery::NotSent);
    let in_flight = tokio::time::timeout(WAIT, in_flight)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(in_flight, Err(CallFailure::Disconnected));
    assert_eq!(CallFailure::Disconnected.delivery(), Delivery::Unknown);
    eventually("QUEUE closed", || !server.closes_of("QUEUE").is_empty()).await;
    assert_eq!(server.closes_of("QUEUE"), [CloseReason::Eof]);
    server.stop().await;
}

/// A handler that panics (the test handler does on ClearCache) costs its own connection, as a
/// panicking task does: the socket is dropped with the CALL unanswered, the registry forgets
/// the charge point, and every other connection carries on (on a shard, the same task drives
/// them all).
async fn a_handler_that_panics_drops_only_its_connection() {
    let server = TestServer::start(server_config()).await;
    // Connections go to the shards in turn: with two shards, one calm connection on each.
    let mut calm = Vec::new();
    for n in 0..2 {
        calm.push(TestCp::connect(server.addr, &format!("CALM{n}"), OcppVersion::V1_6).await);
    }
    let mut buggy = TestCp::connect(server.addr, "BUGGY", OcppVersion::V1_6).await;
    let clear = Request::from(v1_6::Request::from(v1_6::ClearCacheRequest {}));
    buggy.conn.call(std::time::Instant::now(), clear).unwrap();
    let closed = buggy.expect_closed().await;
    assert_eq!(closed.unanswered_outgoing.len(), 1, "{closed:?}");
    eventually("the registry forgets BUGGY", || {
        server.charge_points.get("BUGGY").is_none()
    })
    .await;
    for cp in &mut calm {
        let beat = Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}));
        assert!(cp.call(beat).await.is_ok());
    }
    for n in 0..2 {
        let mut again = TestCp::connect(server.addr, &format!("AGAIN{n}"), OcppVersion::V1_6).await;
        assert_eq!(again.boot().await, "Accepted");
    }
    server.stop().await;
}

/// A handle used from another runtime's thread: its CALL reaches the charge point and the
/// answer comes back (on a shard, the handle drives the connection on its own thread, inside
/// the server's runtime), and the connection goes on serving.
async fn a_call_from_another_runtime_reaches_the_charge_point() {
    let server = TestServer::start(server_config()).await;
    let mut cp = TestCp::connect(server.addr, "ELSEWHERE", OcppVersion::V1_6).await;
    let handle = server.charge_points.get("ELSEWHERE").unwrap();
    let caller = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(handle.call(reset_soft()))
    });
    let (id, request) = cp.expect_call().await;
    assert_eq!(request.action(), "Reset");
    let accepted = v1_6::ResetResponse {
        status: v1_6::ResetStatus::Accepted,
    };
    cp.respond(&id, v1_6::Response::from(accepted).into()).await;
    let outcome = tokio::task::spawn_blocking(move || caller.join().unwrap())
        .await
        .unwrap();
    assert_eq!(outcome.unwrap().status, v1_6::ResetStatus::Accepted);
    let beat = Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}));
    assert!(cp.call(beat).await.is_ok());
    server.stop().await;
}

/// `call_raw_then`: each CALL's outcome reaches its function exactly once, with what
/// `call_raw` would return: the answer; `Disconnected` for the CALL in flight when the
/// charge point goes away and `ClosedBeforeSent` for the one queued behind it; and,
/// at once on the caller's thread, `NotConnected` once the connection is over.
async fn call_raw_then_hands_every_outcome_over_once() {
    let (server, calls_out) = counting_calls_out().await;
    let (mut cp, handle) = connected(&server, "THEN").await;
    let (outcomes, mut outcome) = tokio::sync::mpsc::unbounded_channel();
    let then = |tag: &'static str| {
        let outcomes = outcomes.clone();
        move |result: Result<ocpp_tokio::ocpp::Response, CallFailure>| {
            outcomes.send((tag, result)).unwrap();
        }
    };
    let clear = || Request::from(v1_6::Request::from(v1_6::ClearCacheRequest {}));
    handle.call_raw_then(clear(), then("answered"));
    let (id, request) = cp.expect_call().await;
    assert_eq!(request.action(), "ClearCache");
    let cleared = v1_6::ClearCacheResponse {
        status: v1_6::ClearCacheStatus::Accepted,
    };
    cp.respond(&id, v1_6::Response::from(cleared).into()).await;
    let (tag, result) = tokio::time::timeout(WAIT, outcome.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(tag, "answered");
    assert!(
        matches!(result, Ok(ocpp_tokio::ocpp::Response::V1_6(_))),
        "{result:?}"
    );
    // Two at once: one CALL in flight at a time, so the outcomes come in the order sent.
    handle.call_raw_then(clear(), then("first"));
    handle.call_raw_then(clear(), then("second"));
    for (tag, status) in [
        ("first", v1_6::ClearCacheStatus::Accepted),
        ("second", v1_6::ClearCacheStatus::Rejected),
    ] {
        let (id, _) = cp.expect_call().await;
        let cleared = v1_6::ClearCacheResponse { status };
        cp.respond(&id, v1_6::Response::from(cleared.clone()).into())
            .await;
        let (got, result) = tokio::time::timeout(WAIT, outcome.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got, tag);
        assert_eq!(result, Ok(v1_6::Response::from(cleared).into()));
    }
    // One written and unanswered, one queued behind it; then the charge point goes away.
    handle.call_raw_then(clear(), then("in flight"));
    let _ = cp.expect_call().await;
    handle.call_raw_then(clear(), then("queued"));
    eventually("the second CALL is queued", || {
        calls_out.load(std::sync::atomic::Ordering::Relaxed) == 5
    })
    .await;
    drop(cp);
    let mut ended = Vec::new();
    for _ in 0..2 {
        ended.push(
            tokio::time::timeout(WAIT, outcome.recv())
                .await
                .unwrap()
                .unwrap(),
        );
    }
    ended.sort_by_key(|(tag, _)| *tag);
    assert_eq!(
        ended,
        [
            ("in flight", Err(CallFailure::Disconnected)),
            ("queued", Err(CallFailure::ClosedBeforeSent)),
        ]
    );
    eventually("THEN closed", || !handle.is_connected()).await;
    handle.call_raw_then(clear(), then("too late"));
    assert_eq!(
        outcome.try_recv().unwrap(),
        ("too late", Err(CallFailure::NotConnected))
    );
    assert!(outcome.try_recv().is_err(), "each outcome once");
    server.stop().await;
}

in_both_layouts!(
    call_raw_then_hands_every_outcome_over_once,
    a_call_from_another_runtime_reaches_the_charge_point,
    a_handler_that_panics_drops_only_its_connection,
    calls_reach_the_handler_on_1_6_and_2_0_1,
    a_slow_handler_does_not_stop_the_connection,
    typed_call_results_and_wrong_version,
    every_call_error,
    upgrade_decisions_401_and_404,
    a_duplicate_identity_replaces_the_old_connection,
    the_hook_sees_every_message,
    graceful_shutdown_closes_everyone_with_1001,
    graceful_shutdown_is_bounded_when_a_peer_never_answers,
    the_per_connection_idle_timeout_closes_with_1001,
    server_pings_turned_off_for_one_charge_point,
    a_send_of_2_1_reaches_on_send_and_is_never_answered,
    the_registry_routes_unknown_identities_to_the_remote,
    a_handle_closes_its_connection_and_on_close_runs,
    a_wrong_answer_goes_out_as_internal_error_and_the_connection_goes_on,
    a_close_fails_the_queued_call_as_closed_before_sent_and_the_sent_one_as_disconnected,
);
