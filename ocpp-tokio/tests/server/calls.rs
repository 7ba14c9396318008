//! Calls both ways through the router: typed results, a slow handler, every `CallFailure`.

use super::*;

async fn calls_reach_the_handler_on_1_6_and_2_0_1() {
    let server = TestServer::start(server_config()).await;
    let mut cp16 = WireChargePoint::connect(server.addr, "CP16", OcppVersion::V1_6)
        .await
        .unwrap();
    let mut cp201 = WireChargePoint::connect(server.addr, "CP201", OcppVersion::V2_0_1)
        .await
        .unwrap();
    assert_eq!(cp16.boot().await.unwrap(), "Accepted");
    assert_eq!(cp201.boot().await.unwrap(), "Accepted");
    let beat = Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}));
    assert!(matches!(
        cp16.call(beat).await.unwrap(),
        Ok(Response::V1_6(_))
    ));
    let beat = Request::from(v2_0_1::Request::from(v2_0_1::HeartbeatRequest {
        custom_data: None,
    }));
    assert!(matches!(
        cp201.call(beat).await.unwrap(),
        Ok(Response::V2_0_1(_))
    ));
    // A known action the handler does not serve: NotSupported, spelled for the version.
    let data: v1_6::DataTransferRequest =
        serde_json::from_value(serde_json::json!({"vendorId": "ACME"})).unwrap();
    match cp16.call(v1_6::Request::from(data).into()).await.unwrap() {
        Err(CoreFailure::ErrorResponse { code, .. }) => assert_eq!(code, ErrorCode::NotSupported),
        other => panic!("{other:?}"),
    }
    // An unknown action: the core answers NotImplemented without the handler.
    cp16.write_raw(&raw_text_frame(r#"[2,"u1","NoSuchAction",{}]"#))
        .await
        .unwrap();
    // (Its CALLERROR is an unmatched response for our client.)
    assert!(matches!(
        cp16.next_event().await.unwrap(),
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
    let mut cp = WireChargePoint::connect(server.addr, "SLOW", OcppVersion::V1_6)
        .await
        .unwrap();
    let handle = server.charge_points.get("SLOW").unwrap();
    let authorize: v1_6::AuthorizeRequest =
        serde_json::from_value(serde_json::json!({"idTag": "T"})).unwrap();
    cp.connection_mut()
        .call(
            std::time::Instant::now(),
            v1_6::Request::from(authorize).into(),
        )
        .unwrap();
    // While the handler sleeps 300 ms, the server's own CALL goes out and is answered.
    let call = tokio::spawn(async move { handle.call(reset_soft()).await });
    let (id, request) = cp.wait_for_call().await.unwrap();
    assert_eq!(request.action(), "Reset");
    let accepted = v1_6::ResetResponse {
        status: v1_6::ResetStatus::Accepted,
    };
    cp.call_result(&id, v1_6::Response::from(accepted).into())
        .await
        .unwrap();
    let result = tokio::time::timeout(WAIT, async {
        loop {
            if let Event::CallCompleted { outcome, .. } = cp.next_event().await.unwrap() {
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
    let mut cp = WireChargePoint::connect(server.addr, "TYPED", OcppVersion::V2_0_1)
        .await
        .unwrap();
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
    let (id, request) = cp.wait_for_call().await.unwrap();
    assert_eq!(request.action(), "GetVariables");
    let response: v2_0_1::GetVariablesResponse = serde_json::from_value(serde_json::json!({
        "getVariableResult": [{
            "attributeStatus": "Accepted", "attributeValue": "120",
            "component": {"name": "OCPPCommCtrlr"}, "variable": {"name": "HeartbeatInterval"}
        }]
    }))
    .unwrap();
    cp.call_result(&id, v2_0_1::Response::from(response.clone()).into())
        .await
        .unwrap();
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
    let (id, _) = cp.wait_for_call().await.unwrap();
    let cleared: v2_0_1::ClearCacheResponse =
        serde_json::from_value(serde_json::json!({"status": "Accepted"})).unwrap();
    cp.call_result(&id, v2_0_1::Response::from(cleared).into())
        .await
        .unwrap();
    assert!(matches!(
        call.await.unwrap(),
        Ok(ocpp_tokio::ocpp::Response::V2_0_1(_))
    ));
    server.stop().await;
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
    let (id, _) = raw.wait_for_call().await.unwrap();
    let error = format!(
        r#"[4,"{}","GenericError","nope",{{"why":"test"}}]"#,
        id.as_str()
    );
    raw.write_raw(&raw_text_frame(&error)).await.unwrap();
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
    let (id, _) = raw.wait_for_call().await.unwrap();
    let bad = format!(r#"[3,"{}",{{"status":"Maybe"}}]"#, id.as_str());
    raw.write_raw(&raw_text_frame(&bad)).await.unwrap();
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
    let (late1, _) = cp.wait_for_call().await.unwrap();
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
    cp.call_error(&late1, ErrorCode::GenericError, "late")
        .await
        .unwrap();
    // The queued one went out after the timeout; let it time out too.
    let (late2, _) = cp.wait_for_call().await.unwrap();
    assert_eq!(second.await.unwrap(), Err(CallFailure::Timeout));
    cp.call_error(&late2, ErrorCode::GenericError, "late")
        .await
        .unwrap();

    // The per-connection call timeout (shorter than the config's).
    let settings = handle.settings();
    assert_eq!(settings.get_call_timeout(), Duration::from_millis(400));
    assert!(handle.set_settings(settings.call_timeout(Duration::from_millis(100))));
    let started = std::time::Instant::now();
    let call = tokio::spawn({
        let handle = handle.clone();
        async move { handle.call(v1_6::ClearCacheRequest {}).await }
    });
    let (late3, _) = cp.wait_for_call().await.unwrap();
    assert_eq!(call.await.unwrap(), Err(CallFailure::Timeout));
    assert!(
        started.elapsed() < Duration::from_millis(390),
        "{:?}",
        started.elapsed()
    );
    cp.call_error(&late3, ErrorCode::GenericError, "late")
        .await
        .unwrap();

    // Disconnected: the charge point goes away before answering (the CALL may have run).
    // The call timeout is long here so that a busy machine cannot turn the disconnect
    // into a timeout (the two are different outcomes, and the one under test must win).
    assert!(handle.set_settings(settings.call_timeout(Duration::from_secs(30))));
    let call = tokio::spawn({
        let handle = handle.clone();
        async move { handle.call(v1_6::ClearCacheRequest {}).await }
    });
    let _ = cp.wait_for_call().await.unwrap();
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

/// A peer that sends its last bytes and ends at once: the server reads both in one go (on a
/// shard, one epoll event with the bytes and the end, and a short read of the bytes), and
/// must still read the end: a CALL waiting on the connection ends `Disconnected` at once, not
/// `Timeout` after its whole timeout (30 s here). Ten charge points, as the bytes and the end
/// do not always come in one event.
async fn last_bytes_and_the_end_together_end_the_connection() {
    let server = TestServer::start(server_config()).await;
    for n in 0..10 {
        let identity = format!("LAST{n}");
        let (mut cp, handle) = connected(&server, &identity).await;
        let settings = handle.settings().call_timeout(Duration::from_secs(30));
        assert!(handle.set_settings(settings));
        let call = tokio::spawn({
            let handle = handle.clone();
            async move { handle.call(v1_6::ClearCacheRequest {}).await }
        });
        let _ = cp.wait_for_call().await.unwrap();
        cp.stream_mut()
            .write_all(&raw_text_frame(r#"[2,"last","Heartbeat",{}]"#))
            .await
            .unwrap();
        cp.stream_mut().shutdown().await.unwrap();
        let outcome = tokio::time::timeout(Duration::from_secs(5), call)
            .await
            .unwrap_or_else(|_| panic!("{identity}: the end was not read"))
            .unwrap();
        assert_eq!(outcome, Err(CallFailure::Disconnected), "{identity}");
    }
    server.stop().await;
}

in_both_layouts!(
    last_bytes_and_the_end_together_end_the_connection,
    calls_reach_the_handler_on_1_6_and_2_0_1,
    a_slow_handler_does_not_stop_the_connection,
    typed_call_results_and_wrong_version,
    every_call_error,
);
