//! The reconnect back-off, and the refusals that stop the station.

use super::*;

// ---------------------------------------------------------------------------------------------
// 2. Back-off.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backoff_waits_within_the_configured_bounds() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (accepted_tx, mut accepted) = mpsc::unbounded_channel::<Instant>();
    let acceptor = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let _ = accepted_tx.send(Instant::now());
            drop(stream);
        }
    });
    let policy = RetryBackOff {
        wait_minimum: Duration::from_millis(200),
        random_range: Duration::from_millis(100),
        repeat_times: 2,
    };
    let station = station_at(&format!("ws://{addr}/ocpp/BACKOFF"), OcppVersion::V1_6)
        .back_off(policy)
        .connect()
        .unwrap();
    // Every status, as it changes (each lasts at least the shortest wait, 200 ms).
    let mut watch = station.watch_status();
    let statuses = tokio::spawn(async move {
        let mut seen = vec![*watch.borrow_and_update()];
        while watch.changed().await.is_ok() {
            let now = *watch.borrow_and_update();
            seen.push(now);
            if now == Status::Stopped {
                break;
            }
        }
        seen
    });
    let mut instants = Vec::new();
    for _ in 0..5 {
        instants.push(bounded("an attempt", accepted.recv()).await.unwrap());
    }
    close(&station).await;
    acceptor.abort();
    let statuses = bounded("the statuses", statuses).await.unwrap();

    let slack = Duration::from_millis(400);
    for (k, pair) in instants.windows(2).enumerate() {
        let gap = pair[1] - pair[0];
        let fixed = policy.fixed_part(k as u32);
        assert_eq!(
            fixed,
            Duration::from_millis(200) * 2u32.pow((k as u32).min(2))
        );
        assert!(
            gap + Duration::from_millis(20) >= fixed,
            "gap {k}: {gap:?} < {fixed:?}"
        );
        assert!(
            gap <= fixed + policy.random_range + slack,
            "gap {k}: {gap:?} > {fixed:?} + 100 ms + slack"
        );
    }
    // The k-th Waiting (from 0) comes after k failures: its wait lies in `bounds(k)`. (Each
    // Waiting lasts at least 200 ms, so the watcher sees every one; a Connecting lasts
    // milliseconds and may be missed, but when seen it is attempt k + 1.)
    let mut connecting = None;
    let mut waits = 0u32;
    for status in &statuses {
        match *status {
            Status::Connecting { attempt } => connecting = Some(attempt),
            Status::Waiting { wait, .. } => {
                if let Some(attempt) = connecting.take() {
                    assert_eq!(attempt, waits + 1, "{statuses:?}");
                }
                let (low, high) = policy.bounds(waits);
                assert!(
                    low <= wait && wait <= high,
                    "after {waits} failures: {wait:?} not in [{low:?}, {high:?}]"
                );
                waits += 1;
            }
            Status::Stopped => {}
            other => panic!("never connected, yet {other:?}"),
        }
    }
    assert!(waits >= 4, "{statuses:?}");
}

// ---------------------------------------------------------------------------------------------
// 3. Refusals.

/// A 1.6 station of `csms`, "REFUSED".
fn refused_station(csms: &Csms) -> StationBuilder {
    station(csms, "REFUSED", OcppVersion::V1_6)
}

/// A router that counts the upgrades it answers with `answer`; the count.
fn counting(answer: Result<(), Rejection>) -> (Router<()>, Arc<AtomicUsize>) {
    let attempts = Arc::new(AtomicUsize::new(0));
    let counted = attempts.clone();
    let router = Router::<()>::new(move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
        answer
    });
    (router, attempts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_stops_the_station() {
    for (rejection, failure) in [
        (Rejection::UNAUTHORIZED, PermanentFailure::Unauthorized),
        (Rejection::FORBIDDEN, PermanentFailure::Forbidden),
    ] {
        let (router, attempts) = counting(Err(rejection));
        let csms = Csms::start(router).await;
        let station = refused_station(&csms).connect().unwrap();
        assert_eq!(stopped(&station).await, Err(failure.clone()));
        assert_eq!(
            bounded("accepted", station.accepted()).await,
            Err(Stopped {
                failure: Some(failure.clone())
            })
        );
        assert_eq!(station.status(), Status::Stopped);
        assert_eq!(attempts.load(Ordering::SeqCst), 1, "{failure:?}: no retry");
        // A stopped station refuses calls and queueing.
        let beat = v1_6::HeartbeatRequest::default();
        assert_eq!(station.call(beat).await, Err(CallFailure::NotConnected));
        assert!(station.queue(start_transaction()).await.is_err());
        csms.stop().await;
    }

    // With retry_refusals, a 401 is retried with the back-off.
    let (router, attempts) = counting(Err(Rejection::UNAUTHORIZED));
    let csms = Csms::start(router).await;
    let station = refused_station(&csms)
        .retry_refusals(true)
        .connect()
        .unwrap();
    eventually("three attempts", || attempts.load(Ordering::SeqCst) >= 3).await;
    assert_ne!(station.status(), Status::Stopped);
    close(&station).await;
    assert_eq!(
        bounded("accepted", station.accepted()).await,
        Err(Stopped { failure: None })
    );
    csms.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_version_in_common_stops_the_station() {
    // The server's default: complete the handshake without a subprotocol, then close (1002).
    let (router, _) = counting(Ok(()));
    let config = server_config().versions(vec![OcppVersion::V2_0_1]);
    let csms = Csms::start_with(Server::builder().config(config).handler(router)).await;
    let station = refused_station(&csms).connect().unwrap();
    assert_eq!(
        stopped(&station).await,
        Err(PermanentFailure::NoCommonVersion)
    );
    assert_eq!(
        bounded("accepted", station.accepted()).await,
        Err(Stopped {
            failure: Some(PermanentFailure::NoCommonVersion)
        })
    );
    csms.stop().await;

    // A server configured to answer 400 instead: the station cannot tell a 400 from any other
    // bad request, so it keeps retrying with the back-off (it does not stop).
    let (router, _) = counting(Ok(()));
    let config = server_config()
        .versions(vec![OcppVersion::V2_0_1])
        .no_common_version(NoCommonVersion::Reject400);
    let csms = Csms::start_with(Server::builder().config(config).handler(router)).await;
    let station = refused_station(&csms).connect().unwrap();
    keeps_retrying(&station, 3).await;
    close(&station).await;
    csms.stop().await;
}
