//! Connections: upgrade decisions, duplicate identities, the message hook, graceful shutdown, idle timeouts and pings, 2.1 SEND, `serve_connection`.

use super::*;

async fn upgrade_decisions_401_and_404() {
    let server = TestServer::start(server_config()).await;
    let mut accepted = Vec::new();
    for (identity, password, status) in [
        ("UNKNOWN1", None, Some(404)),
        ("AUTH1", None, Some(401)),
        ("AUTH1", Some(&b"wrong-password-16"[..]), Some(401)),
        ("AUTH1", Some(PASSWORD), None),
    ] {
        let mut cp = WireChargePoint::start(server.addr, identity, OcppVersion::V1_6, password)
            .await
            .unwrap();
        match (cp.next_event().await.unwrap(), status) {
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
    let mut old = WireChargePoint::connect(server.addr, "DUP", OcppVersion::V1_6)
        .await
        .unwrap();
    eventually("registered", || server.charge_points.get("DUP").is_some()).await;
    let old_handle = server.charge_points.get("DUP").unwrap();
    // A CALL of the old connection is pending when the new one arrives.
    let pending = tokio::spawn({
        let handle = old_handle.clone();
        async move { handle.call(v1_6::ClearCacheRequest {}).await }
    });
    let _ = old.wait_for_call().await.unwrap();

    let mut new = WireChargePoint::connect(server.addr, "DUP", OcppVersion::V1_6)
        .await
        .unwrap();
    let closed = old.wait_for_close().await.unwrap();
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
    assert_eq!(new.boot().await.unwrap(), "Accepted");
    let call = tokio::spawn(async move { new_handle.call(v1_6::ClearCacheRequest {}).await });
    let (id, _) = new.wait_for_call().await.unwrap();
    let cleared = v1_6::ClearCacheResponse {
        status: v1_6::ClearCacheStatus::Accepted,
    };
    new.call_result(&id, v1_6::Response::from(cleared).into())
        .await
        .unwrap();
    assert!(call.await.unwrap().is_ok());
    server.stop().await;
}

async fn the_hook_sees_every_message() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let builder = Server::builder().config(server_config()).on_message({
        let seen = seen.clone();
        move |event| {
            let what = match event.message {
                Traffic::CallIn(r) => format!("in CALL {}", r.action()),
                Traffic::ResultOut(r) => format!("out RESULT {}", r.action()),
                Traffic::ErrorOut { code, .. } => format!("out ERROR {code:?}"),
                Traffic::CallOut(r) => format!("out CALL {}", r.action()),
                Traffic::OutcomeIn(Ok(r)) => format!("in RESULT {}", r.action()),
                Traffic::OutcomeIn(other) => format!("in OUTCOME {other:?}"),
                other => format!("{other:?}"),
            };
            seen.lock()
                .unwrap()
                .push(format!("{}: {what}", event.identity));
        }
    });
    let server = TestServer::start_with(builder).await;
    let mut cp = WireChargePoint::connect(server.addr, "HOOK", OcppVersion::V1_6)
        .await
        .unwrap();
    cp.boot().await.unwrap();
    let handle = server.charge_points.get("HOOK").unwrap();
    let call = tokio::spawn(async move { handle.call(reset_soft()).await });
    let (id, _) = cp.wait_for_call().await.unwrap();
    let accepted = v1_6::ResetResponse {
        status: v1_6::ResetStatus::Accepted,
    };
    cp.call_result(&id, v1_6::Response::from(accepted).into())
        .await
        .unwrap();
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
        let identity = format!("SHUT{n}");
        let cp = WireChargePoint::connect(server.addr, &identity, OcppVersion::V2_0_1).await;
        cps.push(cp.unwrap());
    }
    eventually("all registered", || server.charge_points.len() == 5).await;
    let closes = tokio::spawn(async move {
        let mut codes = Vec::new();
        for mut cp in cps {
            let closed = cp.wait_for_close().await.unwrap();
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
    // This charge point connects and then never reads or answers the close: it is never
    // driven again (a `WireChargePoint` reads only while the test waits on it).
    let silent = WireChargePoint::connect(server.addr, "SILENT", OcppVersion::V1_6)
        .await
        .unwrap();
    let mut polite = WireChargePoint::connect(server.addr, "POLITE", OcppVersion::V1_6)
        .await
        .unwrap();
    eventually("both registered", || server.charge_points.len() == 2).await;
    let charge_points = server.charge_points.clone();
    let polite_closed = tokio::spawn(async move { polite.wait_for_close().await.unwrap() });
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
    let mut cp = WireChargePoint::connect(server.addr, "IDLE", OcppVersion::V1_6)
        .await
        .unwrap();
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
    let closed = cp.wait_for_close().await.unwrap();
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
    let mut cp = WireChargePoint::connect(server.addr, "SEND21", OcppVersion::V2_1)
        .await
        .unwrap();
    let element = ocpp_tokio::v2_1::StreamDataElement::new(ocpp_tokio::Decimal::new(0, 1), "1.5");
    let stream =
        ocpp_tokio::v2_1::NotifyPeriodicEventStreamRequest::new(vec![element], 7, 0, now_utc());
    let request = Request::from(ocpp_tokio::v2_1::Request::from(stream));
    cp.send(request).await.unwrap();
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
        cp.call(beat).await.unwrap(),
        Err(CoreFailure::ErrorResponse { .. }) | Ok(_)
    ));
    // And the server's SEND to a 1.6 charge point is refused as such.
    let _cp16 = WireChargePoint::connect(server.addr, "SEND16", OcppVersion::V1_6)
        .await
        .unwrap();
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
    let mut cp =
        WireChargePoint::over(client, "in-memory", "DUPLEX", OcppVersion::V2_0_1, None).unwrap();
    assert!(matches!(
        cp.next_event().await.unwrap(),
        Event::Connected { .. }
    ));
    assert_eq!(cp.boot().await.unwrap(), "Accepted");
    assert_eq!(server.connections(), 1);
    assert_eq!(server.shutdown().await, 0);
    assert!(matches!(
        cp.wait_for_close().await.unwrap().reason,
        CloseReason::PeerClosed {
            code: Some(CloseCode::GOING_AWAY),
            ..
        }
    ));
    assert_eq!(server.connections(), 0);
}

in_both_layouts!(
    upgrade_decisions_401_and_404,
    a_duplicate_identity_replaces_the_old_connection,
    the_hook_sees_every_message,
    graceful_shutdown_closes_everyone_with_1001,
    graceful_shutdown_is_bounded_when_a_peer_never_answers,
    the_per_connection_idle_timeout_closes_with_1001,
    server_pings_turned_off_for_one_charge_point,
    a_send_of_2_1_reaches_on_send_and_is_never_answered,
);
