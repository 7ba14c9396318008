//! Back-pressure: a charge point that stops reading. The server keeps serving the others, a
//! SEND refused for a full output is retried after the next write (nothing lost, in order),
//! and a charge point that never reads again is dropped by the core's rule (no pong in time).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use ocpp_proto::Event;
use ocpp_test_kit::WireChargePoint;
use ocpp_tokio::ocpp::{CloseReason, Request};
use ocpp_tokio::registry::SendError;
use ocpp_tokio::{v1_6, v2_1, OcppVersion};
use tokio::net::{TcpSocket, TcpStream};

/// A SEND of about 8 KB carrying its sequence number.
fn stream_send(id: u32) -> Request {
    let element = v2_1::StreamDataElement {
        t: ocpp_tokio::Decimal::new(0, 1),
        v: "x".repeat(2000),
        custom_data: None,
    };
    let request = v2_1::NotifyPeriodicEventStreamRequest {
        data: vec![element; 4],
        id,
        pending: 0,
        basetime: now_utc(),
        custom_data: None,
    };
    Request::from(request)
}

/// A 2.1 charge point whose socket has a small receive buffer.
async fn small_window_cp(server: &TestServer, identity: &str) -> WireChargePoint {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let stream: TcpStream = socket.connect(server.addr).await.unwrap();
    let host = server.addr.to_string();
    let mut cp = WireChargePoint::over(stream, &host, identity, OcppVersion::V2_1, None).unwrap();
    assert!(matches!(
        cp.next_event().await.unwrap(),
        Event::Connected { .. }
    ));
    eventually("registered", || {
        server.charge_points.get(identity).is_some()
    })
    .await;
    cp
}

/// Sends SENDs `0..count` from the server; returns how many went out, and the first error.
fn push(
    server: &TestServer,
    identity: &str,
    count: u32,
    sent: Arc<AtomicUsize>,
) -> tokio::task::JoinHandle<Result<(), SendError>> {
    let handle = server.charge_points.get(identity).unwrap();
    tokio::spawn(async move {
        for id in 0..count {
            handle.send(stream_send(id)).await?;
            sent.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    })
}

async fn heartbeats(cp: &mut WireChargePoint, count: usize) -> Duration {
    let started = Instant::now();
    for _ in 0..count {
        let beat = ocpp_proto::Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}));
        let outcome = cp.call(beat).await.unwrap();
        assert!(outcome.is_ok(), "{outcome:?}");
    }
    started.elapsed()
}

async fn a_paused_reader_gets_every_send_in_order() {
    let config = server_config().max_outbound_bytes(64 * 1024);
    let server = TestServer::start(config).await;
    let mut slow = small_window_cp(&server, "PAUSED").await;
    let mut good = WireChargePoint::connect(server.addr, "GOOD", OcppVersion::V1_6)
        .await
        .unwrap();
    let sent = Arc::new(AtomicUsize::new(0));
    const COUNT: u32 = 600; // about 5 MB: more than the kernel buffers hold
    let pusher = push(&server, "PAUSED", COUNT, sent.clone());

    // PAUSED does not read; GOOD is served meanwhile.
    let took = heartbeats(&mut good, 50).await;
    assert!(took < Duration::from_secs(5), "{took:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = sent.load(Ordering::Relaxed);
    assert!(
        before < COUNT as usize,
        "the output was never full ({before} sent)"
    );

    // PAUSED reads again: every SEND arrives, in order.
    for expected in 0..COUNT {
        match slow.next_event().await.unwrap() {
            Event::Send { request, .. } => {
                let json = serde_json::to_value(&request).unwrap();
                assert_eq!(json["id"], expected);
            }
            other => panic!("{other:?}"),
        }
    }
    tokio::time::timeout(WAIT, pusher)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(sent.load(Ordering::Relaxed), COUNT as usize);
    server.stop().await;
}

async fn a_charge_point_that_never_reads_again_is_dropped() {
    let config = server_config()
        .max_outbound_bytes(64 * 1024)
        .ping_interval(Some(Duration::from_millis(300)))
        .pong_timeout(Duration::from_millis(300));
    let server = TestServer::start(config).await;
    let stalled = small_window_cp(&server, "STALLED").await;
    let mut good = WireChargePoint::connect(server.addr, "GOOD", OcppVersion::V1_6)
        .await
        .unwrap();
    let sent = Arc::new(AtomicUsize::new(0));
    let pusher = push(&server, "STALLED", 100_000, sent.clone());

    // GOOD is served (and answers its pings) all along.
    let started = Instant::now();
    let mut beats = 0;
    while !pusher.is_finished() {
        assert!(started.elapsed() < WAIT, "STALLED was never dropped");
        heartbeats(&mut good, 1).await;
        beats += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(beats > 5, "{beats}");

    // No pong in time: the core drops it; the SEND waiting for room fails.
    let result = pusher.await.unwrap();
    assert_eq!(result, Err(SendError::NotConnected));
    eventually("STALLED closed", || !server.closes_of("STALLED").is_empty()).await;
    let reasons = server.closes_of("STALLED");
    assert!(
        matches!(reasons[0], CloseReason::PongTimeout | CloseReason::SlowPeer),
        "{reasons:?}"
    );
    assert!(server.charge_points.get("STALLED").is_none());
    heartbeats(&mut good, 5).await;
    drop(stalled);
    server.stop().await;
}

in_both_layouts!(
    a_paused_reader_gets_every_send_in_order,
    a_charge_point_that_never_reads_again_is_dropped,
);
