//! Charge point handles and the untyped handler path: the registry's remote, closing, a wrong answer, a panicking handler, calls from another runtime, `call_raw_then`.

use super::*;

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
    match cp.wait_for_close().await.unwrap().reason {
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
    let mut cp = WireChargePoint::connect(addr, "WRONG", OcppVersion::V1_6)
        .await
        .unwrap();
    let beat = || Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}));
    // The handler's BootNotificationResponse for a Heartbeat: never sent as such, a CALLERROR
    // InternalError in its place.
    match cp.call(beat()).await.unwrap() {
        Err(CoreFailure::ErrorResponse { code, .. }) => assert_eq!(code, ErrorCode::InternalError),
        other => panic!("expected CALLERROR InternalError, got {other:?}"),
    }
    // The connection goes on: the next Heartbeat gets its HeartbeatResponse.
    match cp.call(beat()).await.unwrap() {
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
        cp.wait_for_close().await.unwrap().reason,
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
            if matches!(event.message, Traffic::CallOut(_)) {
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
    let (_, request) = cp.wait_for_call().await.unwrap();
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
        let identity = format!("CALM{n}");
        let cp = WireChargePoint::connect(server.addr, &identity, OcppVersion::V1_6).await;
        calm.push(cp.unwrap());
    }
    let mut buggy = WireChargePoint::connect(server.addr, "BUGGY", OcppVersion::V1_6)
        .await
        .unwrap();
    let clear = Request::from(v1_6::Request::from(v1_6::ClearCacheRequest {}));
    buggy
        .connection_mut()
        .call(std::time::Instant::now(), clear)
        .unwrap();
    let closed = buggy.wait_for_close().await.unwrap();
    assert_eq!(closed.unanswered_outgoing.len(), 1, "{closed:?}");
    eventually("the registry forgets BUGGY", || {
        server.charge_points.get("BUGGY").is_none()
    })
    .await;
    for cp in &mut calm {
        let beat = Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}));
        assert!(cp.call(beat).await.unwrap().is_ok());
    }
    for n in 0..2 {
        let identity = format!("AGAIN{n}");
        let mut again = WireChargePoint::connect(server.addr, &identity, OcppVersion::V1_6)
            .await
            .unwrap();
        assert_eq!(again.boot().await.unwrap(), "Accepted");
    }
    server.stop().await;
}

/// A handle used from another runtime's thread: its CALL reaches the charge point and the
/// answer comes back (on a shard, the handle drives the connection on its own thread, inside
/// the server's runtime), and the connection goes on serving.
async fn a_call_from_another_runtime_reaches_the_charge_point() {
    let server = TestServer::start(server_config()).await;
    let mut cp = WireChargePoint::connect(server.addr, "ELSEWHERE", OcppVersion::V1_6)
        .await
        .unwrap();
    let handle = server.charge_points.get("ELSEWHERE").unwrap();
    let caller = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(handle.call(reset_soft()))
    });
    let (id, request) = cp.wait_for_call().await.unwrap();
    assert_eq!(request.action(), "Reset");
    let accepted = v1_6::ResetResponse {
        status: v1_6::ResetStatus::Accepted,
    };
    cp.call_result(&id, v1_6::Response::from(accepted).into())
        .await
        .unwrap();
    let outcome = tokio::task::spawn_blocking(move || caller.join().unwrap())
        .await
        .unwrap();
    assert_eq!(outcome.unwrap().status, v1_6::ResetStatus::Accepted);
    let beat = Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}));
    assert!(cp.call(beat).await.unwrap().is_ok());
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
    let (id, request) = cp.wait_for_call().await.unwrap();
    assert_eq!(request.action(), "ClearCache");
    let cleared = v1_6::ClearCacheResponse {
        status: v1_6::ClearCacheStatus::Accepted,
    };
    cp.call_result(&id, v1_6::Response::from(cleared).into())
        .await
        .unwrap();
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
        let (id, _) = cp.wait_for_call().await.unwrap();
        let cleared = v1_6::ClearCacheResponse { status };
        cp.call_result(&id, v1_6::Response::from(cleared.clone()).into())
            .await
            .unwrap();
        let (got, result) = tokio::time::timeout(WAIT, outcome.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got, tag);
        assert_eq!(result, Ok(v1_6::Response::from(cleared).into()));
    }
    // One written and unanswered, one queued behind it; then the charge point goes away.
    handle.call_raw_then(clear(), then("in flight"));
    let _ = cp.wait_for_call().await.unwrap();
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
    the_registry_routes_unknown_identities_to_the_remote,
    a_handle_closes_its_connection_and_on_close_runs,
    a_wrong_answer_goes_out_as_internal_error_and_the_connection_goes_on,
    a_close_fails_the_queued_call_as_closed_before_sent_and_the_sent_one_as_disconnected,
);
