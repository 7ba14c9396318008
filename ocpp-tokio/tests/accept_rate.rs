//! `ServerBuilder::accept_rate`: a storm of connections is taken at the rate (the others wait
//! in the listen backlog), none is refused, and `PacedListener` counts the ones it kept
//! waiting.

mod common;

use std::time::{Duration, Instant};

use common::*;
use ocpp_test_kit::WireChargePoint;
use ocpp_tokio::server::{AcceptRate, PacedListener};
use ocpp_tokio::{OcppVersion, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_is_accepted_at_the_rate_and_nobody_is_refused() {
    // 10 a second, 2 at once: 12 charge points at once take about 1 s.
    let builder = Server::builder()
        .config(server_config())
        .accept_rate(AcceptRate::new(10, 2));
    let server = TestServer::start_with(builder).await;
    let started = Instant::now();
    let storm: Vec<_> = (0..12)
        .map(|i| {
            let addr = server.addr;
            tokio::spawn(async move {
                let identity = format!("CP{i}");
                let cp = WireChargePoint::connect(addr, &identity, OcppVersion::V1_6).await;
                let cp = cp.unwrap();
                (started.elapsed(), cp)
            })
        })
        .collect();
    let mut times = Vec::new();
    let mut charge_points = Vec::new();
    for task in storm {
        let (elapsed, cp) = tokio::time::timeout(WAIT, task).await.unwrap().unwrap();
        times.push(elapsed);
        charge_points.push(cp);
    }
    times.sort();
    eventually("all registered", || server.charge_points.len() == 12).await;
    // A wide bound: the last upgrade waited for its slot (≈ 1 s: 2 at once, then 10 slots of
    // 100 ms).
    assert!(times[11] >= Duration::from_millis(600), "{times:?}");
    drop(charge_points);
    server.stop().await;
}

#[tokio::test]
async fn a_paced_listener_counts_the_connections_it_kept_waiting() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut listener = PacedListener::new(listener, Some(AcceptRate::new(20, 1)));
    assert_eq!(listener.rate(), Some(AcceptRate::new(20, 1)));
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    let started = Instant::now();
    for _ in 0..3 {
        tokio::time::timeout(WAIT, listener.accept())
            .await
            .unwrap()
            .unwrap();
    }
    // One at once, then one per 50 ms slot; the two after the first waited in the backlog.
    assert!(started.elapsed() >= Duration::from_millis(90));
    assert_eq!(listener.deferred(), 2);
    // Without a rate: as fast as they come, none kept waiting.
    let mut free = PacedListener::new(listener.into_inner(), None);
    clients.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    tokio::time::timeout(WAIT, free.accept())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(free.deferred(), 0);
}
