//! The station's transactions across restarts, and its heartbeat and sends over a reconnection.

use super::*;

// ---------------------------------------------------------------------------------------------
// The station's transactions across restarts (in one process: a station closed, another
// started on the same journal).

/// Every transaction message a central system got, as JSON, in order.
type Seen = Arc<Mutex<Vec<serde_json::Value>>>;

fn recording_transactions(seen: &Seen) -> Router<()> {
    fn keep(seen: &Seen, action: &str, request: &impl serde::Serialize) {
        let mut value = serde_json::to_value(request).unwrap();
        value["action"] = json!(action);
        seen.lock().unwrap().push(value);
    }
    accepting(Router::<()>::default())
        .on(with(
            seen,
            |seen, _, r: v1_6::StartTransactionRequest| async move {
                keep(&seen, "StartTransaction", &r);
                Ok(j::<v1_6::StartTransactionResponse>(
                    json!({"idTagInfo": {"status": "Accepted"}, "transactionId": 4711}),
                ))
            },
        ))
        .on(with(
            seen,
            |seen, _, r: v1_6::MeterValuesRequest| async move {
                keep(&seen, "MeterValues", &r);
                Ok(v1_6::MeterValuesResponse::default())
            },
        ))
        .on(with(
            seen,
            |seen, _, r: v1_6::StopTransactionRequest| async move {
                keep(&seen, "StopTransaction", &r);
                Ok(j::<v1_6::StopTransactionResponse>(json!({})))
            },
        ))
        .on(with(
            seen,
            |seen, _, r: v2_0_1::TransactionEventRequest| async move {
                keep(&seen, "TransactionEvent", &r);
                Ok(transaction_event_answer())
            },
        ))
        .on(|_, _: ocpp_tokio::v2_1::BootNotificationRequest| async {
            Ok(j::<ocpp_tokio::v2_1::BootNotificationResponse>(json!({
                "currentTime": "2026-05-01T10:00:00Z", "interval": 300, "status": "Accepted"
            })))
        })
        .on(with(
            seen,
            |seen, _, r: ocpp_tokio::v2_1::TransactionEventRequest| async move {
                keep(&seen, "TransactionEvent", &r);
                Ok(j::<ocpp_tokio::v2_1::TransactionEventResponse>(json!({})))
            },
        ))
}

/// Runs `station` until accepted, does `work`, closes it.
async fn one_run<F: std::future::Future<Output = ()>>(
    builder: StationBuilder,
    work: impl FnOnce(Station) -> F,
) {
    let station = builder.connect().unwrap();
    bounded("accepted", station.accepted()).await.unwrap();
    work(station.clone()).await;
    close(&station).await;
}

async fn seen_where(seen: &Seen, what: &str, done: impl Fn(&[serde_json::Value]) -> bool) {
    bounded(what, async {
        while !done(&seen.lock().unwrap()) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

async fn a_transaction_resumed_then_ended_after_power_loss(version: OcppVersion) {
    use ocpp_tokio::station::{Evse, IdToken};
    let seen = Seen::default();
    let config = server_config().versions(vec![version]);
    let csms = Csms::start_with(
        Server::builder()
            .config(config)
            .handler(recording_transactions(&seen)),
    )
    .await;
    let journal = journal_path();
    let builder = || station(&csms, "CP-TX", version).store(FileStore::open(&journal).unwrap());
    let id = if version == OcppVersion::V1_6 {
        None
    } else {
        Some("CP-TX")
    };

    // Run 1: started, one reading; the 1.6 id reaches the application.
    one_run(builder(), |station| async move {
        let token = IdToken::new("TAG", "ISO14443");
        let started = station
            .start_transaction(Evse::new(1), token, 100)
            .await
            .unwrap();
        started.outcome().await.unwrap();
        let mut transactions = station.watch_transactions();
        let known = bounded("the transaction id", async {
            loop {
                if let Some(id) = transactions.borrow_and_update().transaction_id(1) {
                    return id;
                }
                transactions.changed().await.unwrap();
            }
        })
        .await;
        match id {
            None => assert_eq!(known, "4711"),
            Some(prefix) => assert!(known.starts_with(prefix), "{known}"),
        }
        station
            .meter(1, 150)
            .await
            .unwrap()
            .outcome()
            .await
            .unwrap();
    })
    .await;

    // Run 2: the application goes on with it; the id is known before any answer.
    one_run(
        builder().resume_transactions(|_| true),
        |station| async move {
            assert_eq!(station.restarted_transactions().len(), 1);
            let known = station.transaction_id(1).unwrap();
            if id.is_none() {
                assert_eq!(known, "4711");
            }
            station
                .meter(1, 200)
                .await
                .unwrap()
                .outcome()
                .await
                .unwrap();
        },
    )
    .await;

    // Run 3: by default, ended as after a power loss with the last reading.
    let watched = seen.clone();
    one_run(builder(), |station| async move {
        assert_eq!(station.restarted_transactions().len(), 1);
        assert!(station.transactions().open().next().is_none());
        let ended = |seen: &[serde_json::Value]| {
            seen.iter()
                .any(|m| m["action"] == "StopTransaction" || m["eventType"] == "Ended")
        };
        seen_where(&watched, "the end", ended).await;
        // Its answer reaches the station before it closes: a CALL of ours goes out only once
        // the end's is answered (one in flight). Closed before that, the station would send
        // the end again in run 4, as it may (its journal keeps what was not answered).
        let heartbeat = match version {
            OcppVersion::V1_6 => v1_6::HeartbeatRequest::default().into(),
            OcppVersion::V2_0_1 => v2_0_1::HeartbeatRequest::default().into(),
            OcppVersion::V2_1 => ocpp_tokio::v2_1::HeartbeatRequest::default().into(),
        };
        let answered = bounded("a heartbeat after the end", station.call_raw(heartbeat)).await;
        assert!(
            !matches!(answered, Err(CallFailure::WrongVersion)),
            "{answered:?}"
        );
    })
    .await;
    // Run 4: nothing open any more.
    one_run(builder(), |station| async move {
        assert!(station.restarted_transactions().is_empty());
    })
    .await;

    let seen = seen.lock().unwrap().clone();
    if version == OcppVersion::V1_6 {
        let actions: Vec<_> = seen.iter().map(|m| m["action"].as_str().unwrap()).collect();
        assert_eq!(
            actions,
            [
                "StartTransaction",
                "MeterValues",
                "MeterValues",
                "StopTransaction"
            ]
        );
        for m in &seen[1..] {
            assert_eq!(m["transactionId"], 4711, "{m}");
        }
        assert_eq!(seen[3]["reason"], "PowerLoss");
        assert_eq!(seen[3]["meterStop"], 200);
    } else {
        let seq_nos: Vec<_> = seen.iter().map(|m| m["seqNo"].as_i64().unwrap()).collect();
        assert_eq!(seq_nos, [0, 1, 2, 3]);
        let ids: Vec<_> = seen
            .iter()
            .map(|m| m["transactionInfo"]["transactionId"].clone())
            .collect();
        assert!(ids.iter().all(|i| *i == ids[0]), "{ids:?}");
        assert_eq!(seen[3]["eventType"], "Ended");
        assert_eq!(seen[3]["triggerReason"], "AbnormalCondition");
        assert_eq!(seen[3]["transactionInfo"]["stoppedReason"], "PowerLoss");
        assert_eq!(seen[3]["meterValue"][0]["sampledValue"][0]["value"], 200);
    }
    csms.stop().await;
    let _ = std::fs::remove_file(&journal);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_1_6_transaction_resumed_then_ended_after_power_loss() {
    a_transaction_resumed_then_ended_after_power_loss(OcppVersion::V1_6).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2_0_1_transaction_resumed_then_ended_after_power_loss() {
    a_transaction_resumed_then_ended_after_power_loss(OcppVersion::V2_0_1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2_1_transaction_resumed_then_ended_after_power_loss() {
    a_transaction_resumed_then_ended_after_power_loss(OcppVersion::V2_1).await;
}

/// 1.6: a transaction started offline, the station restarted before any answer: it ends with
/// PowerLoss, and the id the StartTransaction's answer then gives reaches the application.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_1_6_id_given_after_a_restart_reaches_the_application() {
    use ocpp_tokio::station::{Evse, IdToken, TransactionRef};
    let seen = Seen::default();
    let csms = Csms::start(recording_transactions(&seen)).await;
    let journal = journal_path();

    // Run 1: nobody listens; the transaction is started all the same (in the journal).
    let offline = station_at("ws://127.0.0.1:1/ocpp/CP-TX", OcppVersion::V1_6)
        .store(FileStore::open(&journal).unwrap())
        .connect()
        .unwrap();
    let token = IdToken::new("TAG", "ISO14443");
    bounded("start", offline.start_transaction(Evse::new(1), token, 100))
        .await
        .unwrap();
    bounded("meter", offline.meter(1, 120)).await.unwrap();
    close(&offline).await;

    // Run 2: ended at start; the answer's id is kept with the ended transaction.
    let station = station(&csms, "CP-TX", OcppVersion::V1_6)
        .store(FileStore::open(&journal).unwrap())
        .connect()
        .unwrap();
    assert_eq!(station.restarted_transactions().len(), 1);
    assert_eq!(station.transaction_id(1), None);
    let mut transactions = station.watch_transactions();
    bounded("the id of the ended transaction", async {
        loop {
            let given = transactions
                .borrow_and_update()
                .ended()
                .any(|t| t.id == TransactionRef::Given(4711));
            if given {
                return;
            }
            transactions.changed().await.unwrap();
        }
    })
    .await;
    let ended = |seen: &[serde_json::Value]| seen.iter().any(|m| m["action"] == "StopTransaction");
    seen_where(&seen, "the StopTransaction", ended).await;
    close(&station).await;
    let seen = seen.lock().unwrap().clone();
    let actions: Vec<_> = seen.iter().map(|m| m["action"].as_str().unwrap()).collect();
    assert_eq!(
        actions,
        ["StartTransaction", "MeterValues", "StopTransaction"]
    );
    assert_eq!(seen[1]["transactionId"], 4711);
    assert_eq!(seen[2]["transactionId"], 4711);
    assert_eq!(seen[2]["reason"], "PowerLoss");
    assert_eq!(seen[2]["meterStop"], 120);
    csms.stop().await;
    let _ = std::fs::remove_file(&journal);
}

/// The station's own heartbeat interval, set before it connects (a `HeartbeatInterval` kept
/// in its settings), holds when the central system's boot answer says 0 ("the station
/// chooses"), and over a reconnection too; before, every new connection went back to 60 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stations_heartbeat_interval_holds_over_a_reconnection_when_the_boot_says_0() {
    let heartbeats: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let router = Router::<()>::default()
        .on(|_, _: v2_0_1::BootNotificationRequest| async {
            Ok(boot201(v2_0_1::RegistrationStatusEnum::Accepted, 0))
        })
        .on(with(
            &heartbeats,
            |heartbeats, _, _: v2_0_1::HeartbeatRequest| async move {
                heartbeats.lock().unwrap().push(Instant::now());
                Ok(v2_0_1::HeartbeatResponse::new(time()))
            },
        ));
    let csms = Csms::start(router).await;
    let station = station(&csms, "CP-HB0", OcppVersion::V2_0_1)
        .connect()
        .unwrap();
    station.set_heartbeat_interval(Duration::from_secs(1));
    for connection in 0..2 {
        bounded("accepted", station.accepted()).await.unwrap();
        if connection == 0 {
            // The setting is a command to the station's task, which may take it after the
            // first boot was accepted (a loaded machine): it holds from then on.
            eventually("the station's own interval", || {
                station.heartbeat_interval() == Duration::from_secs(1)
            })
            .await;
        } else {
            assert_eq!(station.heartbeat_interval(), Duration::from_secs(1));
        }
        let seen = heartbeats.lock().unwrap().len();
        eventually("two heartbeats", || {
            heartbeats.lock().unwrap().len() >= seen + 2
        })
        .await;
        if connection == 0 {
            // The central system drops the connection; the station reconnects and boots.
            let cp = csms.charge_points.get("CP-HB0").expect("connected");
            cp.close(CloseCode::GOING_AWAY, "bye");
            until_waiting(&station).await;
        }
    }
    close(&station).await;
    csms.stop().await;
}

/// The central system's SENDs reach the station's `on_send` one after the other, in the order
/// they came, as a server's do (`Router::on_send`); before, the station spawned a task per
/// SEND, and a slow first handler let the second run beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stations_sends_are_handled_one_after_the_other_in_order() {
    let router =
        Router::<()>::default().on(|_, _: ocpp_tokio::v2_1::BootNotificationRequest| async {
            Ok(j::<ocpp_tokio::v2_1::BootNotificationResponse>(json!({
                "currentTime": "2026-05-01T10:00:00Z", "interval": 300, "status": "Accepted"
            })))
        });
    let config = server_config().versions(vec![OcppVersion::V2_1]);
    let csms = Csms::start_with(Server::builder().config(config).handler(router)).await;
    // Each handler notes when it starts and ends; the first takes a while.
    let spans: Arc<Mutex<Vec<(u32, Instant, Instant)>>> = Arc::default();
    let recorded = Arc::clone(&spans);
    let station_router = Router::<()>::for_station().on_send(move |_, send| {
        let spans = Arc::clone(&recorded);
        async move {
            let started = Instant::now();
            let ocpp_tokio::ocpp::Request::V2_1(request) = send.request() else {
                return;
            };
            let ocpp_tokio::v2_1::Request::NotifyPeriodicEventStream(stream) = &**request else {
                return;
            };
            let seq = stream.id;
            if seq == 1 {
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            spans.lock().unwrap().push((seq, started, Instant::now()));
        }
    });
    let station = station(&csms, "CP-SENDS", OcppVersion::V2_1)
        .router(station_router)
        .connect()
        .unwrap();
    bounded("accepted", station.accepted()).await.unwrap();
    let cp = csms.charge_points.get("CP-SENDS").expect("connected");
    for id in [1, 2] {
        let element =
            ocpp_tokio::v2_1::StreamDataElement::new(ocpp_tokio::Decimal::new(0, 1), "1.5");
        let stream =
            ocpp_tokio::v2_1::NotifyPeriodicEventStreamRequest::new(vec![element], id, 0, time());
        cp.send(ocpp_tokio::v2_1::Request::from(stream))
            .await
            .expect("written");
    }
    eventually("both SENDs handled", || spans.lock().unwrap().len() == 2).await;
    let spans = spans.lock().unwrap().clone();
    let [(1, _, first_end), (2, second_start, _)] = spans.as_slice() else {
        panic!("out of order: {spans:?}");
    };
    assert!(
        second_start >= first_end,
        "the second SEND's handler ran beside the first"
    );
    close(&station).await;
    csms.stop().await;
}

/// A 2.1 central system that accepts every boot and keeps, in `received`, the `id` of every
/// NotifyPeriodicEventStream SEND in the order its `on_send` got them.
async fn csms_keeping_streams(received: &Arc<Mutex<Vec<u32>>>) -> Csms {
    let received = Arc::clone(received);
    let router = Router::<()>::default()
        .on(|_, _: ocpp_tokio::v2_1::BootNotificationRequest| async {
            Ok(j::<ocpp_tokio::v2_1::BootNotificationResponse>(json!({
                "currentTime": "2026-05-01T10:00:00Z", "interval": 300, "status": "Accepted"
            })))
        })
        .on_send(move |_, send| {
            let received = Arc::clone(&received);
            async move {
                if let ocpp_tokio::ocpp::Request::V2_1(request) = send.request() {
                    if let ocpp_tokio::v2_1::Request::NotifyPeriodicEventStream(s) = &**request {
                        received.lock().unwrap().push(s.id);
                    }
                }
            }
        });
    let config = server_config().versions(vec![OcppVersion::V2_1]);
    Csms::start_with(Server::builder().config(config).handler(router)).await
}

/// The station's own SENDs go through the message hook as its CALLs do (`Traffic::SendOut`),
/// and reach the central system's `on_send`; before, the station wrote them past the hook.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stations_own_sends_are_shown_to_its_message_hook() {
    let received: Arc<Mutex<Vec<u32>>> = Arc::default();
    let csms = csms_keeping_streams(&received).await;
    // The station sends a stream's values when the central system triggers it.
    let station_router = Router::<()>::for_station().on(
        |session: Session<()>, _: ocpp_tokio::v2_1::TriggerMessageRequest| {
            let cp = session.charge_point().clone();
            async move {
                let element =
                    ocpp_tokio::v2_1::StreamDataElement::new(ocpp_tokio::Decimal::new(0, 1), "1.5");
                let stream = ocpp_tokio::v2_1::NotifyPeriodicEventStreamRequest::new(
                    vec![element],
                    7,
                    0,
                    time(),
                );
                cp.send(ocpp_tokio::v2_1::Request::from(stream))
                    .await
                    .expect("written");
                Ok(j::<ocpp_tokio::v2_1::TriggerMessageResponse>(
                    json!({"status": "Accepted"}),
                ))
            }
        },
    );
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let station = station(&csms, "CP-SENDS-OUT", OcppVersion::V2_1)
        .router(station_router)
        .on_message({
            let seen = Arc::clone(&seen);
            move |event| {
                if let ocpp_tokio::hook::Traffic::SendOut(request) = event.message {
                    seen.lock().unwrap().push(request.action().to_owned());
                }
            }
        })
        .connect()
        .unwrap();
    bounded("accepted", station.accepted()).await.unwrap();
    let cp = csms.charge_points.get("CP-SENDS-OUT").expect("connected");
    let trigger: ocpp_tokio::v2_1::TriggerMessageRequest =
        j(json!({"requestedMessage": "Heartbeat"}));
    bounded("TriggerMessage", cp.call(trigger)).await.unwrap();
    eventually("the SEND received", || *received.lock().unwrap() == [7]).await;
    assert_eq!(*seen.lock().unwrap(), ["NotifyPeriodicEventStream"]);
    close(&station).await;
    csms.stop().await;
}

/// A TCP proxy to `upstream` for one connection, whose station-to-central-system direction
/// stops while `paused` says so: the station's writes then fill the proxy's small receive
/// buffer, the kernel's, and the station's own output.
async fn pausable_proxy(
    upstream: SocketAddr,
    mut paused: tokio::sync::watch::Receiver<bool>,
) -> SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(1).unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (station, _) = listener.accept().await.unwrap();
        let csms = tokio::net::TcpStream::connect(upstream).await.unwrap();
        let (mut from_station, mut to_station) = station.into_split();
        let (mut from_csms, mut to_csms) = csms.into_split();
        tokio::spawn(async move { tokio::io::copy(&mut from_csms, &mut to_station).await });
        let mut buf = vec![0u8; 4096];
        loop {
            while *paused.borrow_and_update() {
                if paused.changed().await.is_err() {
                    return;
                }
            }
            match from_station.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if to_csms.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            }
        }
    });
    addr
}

/// The station's SENDs under back-pressure are kept and written once there is room, in
/// order, as a server's are (`tests/backpressure.rs`); before, the station answered
/// `QueueFull` at once and the SEND was lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stations_sends_wait_out_back_pressure_and_arrive_in_order() {
    const COUNT: u32 = 600; // about 5 MB: more than the kernel buffers hold
    let received: Arc<Mutex<Vec<u32>>> = Arc::default();
    let csms = csms_keeping_streams(&received).await;
    let (pause, paused) = tokio::sync::watch::channel(false);
    let proxy = pausable_proxy(csms.addr, paused).await;
    let (handles, mut handle) = mpsc::unbounded_channel();
    let station_router = Router::<()>::for_station().on_connect(move |session: Session<()>| {
        let _ = handles.send(session.charge_point().clone());
        async {}
    });
    let station = station_at(&format!("ws://{proxy}/ocpp/CP-FULL"), OcppVersion::V2_1)
        .config(ConnectionConfig::default().max_outbound_bytes(64 * 1024))
        .router(station_router)
        .connect()
        .unwrap();
    bounded("accepted", station.accepted()).await.unwrap();
    let cp = bounded("the session's handle", handle.recv())
        .await
        .unwrap();

    pause.send(true).unwrap();
    let sent = Arc::new(AtomicUsize::new(0));
    let sender = tokio::spawn({
        let sent = Arc::clone(&sent);
        async move {
            for id in 0..COUNT {
                let element = ocpp_tokio::v2_1::StreamDataElement::new(
                    ocpp_tokio::Decimal::new(0, 1),
                    "x".repeat(2000),
                );
                let stream = ocpp_tokio::v2_1::NotifyPeriodicEventStreamRequest::new(
                    vec![element; 4],
                    id,
                    0,
                    time(),
                );
                cp.send(ocpp_tokio::v2_1::Request::from(stream)).await?;
                sent.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<(), ocpp_tokio::registry::SendError>(())
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = sent.load(Ordering::Relaxed);
    assert!(
        before < COUNT as usize,
        "the output was never full ({before} sent)"
    );
    pause.send(false).unwrap();
    bounded("every SEND written", sender)
        .await
        .unwrap()
        .unwrap();
    eventually("every SEND received", || {
        received.lock().unwrap().len() == COUNT as usize
    })
    .await;
    assert_eq!(*received.lock().unwrap(), (0..COUNT).collect::<Vec<_>>());
    close(&station).await;
    csms.stop().await;
}
