//! The router's two states, on real sockets: the application-wide state given once with
//! `Router::with_state` is the same for every connection (one count of every Heartbeat), the
//! per-connection state is each connection's own (its own count), in both layouts.

#[macro_use]
mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use ocpp_proto::{Request, Response};
use ocpp_test_kit::WireChargePoint;
use ocpp_tokio::{v1_6, DateTime, OcppVersion, Reply, Router, Server, Session};

/// The application: shared by every connection.
#[derive(Default)]
struct App {
    heartbeats: AtomicU32,
    closed: Mutex<Vec<(String, u32)>>,
}

/// One connection's own.
#[derive(Default)]
struct ConnectionState {
    heartbeats: AtomicU32,
}

async fn heartbeat(
    s: Session<ConnectionState, Arc<App>>,
    _: v1_6::HeartbeatRequest,
) -> Reply<v1_6::HeartbeatResponse> {
    s.heartbeats.fetch_add(1, Ordering::Relaxed);
    s.app().heartbeats.fetch_add(1, Ordering::Relaxed);
    Ok(v1_6::HeartbeatResponse::new(DateTime::now()))
}

async fn application_state_is_shared_connection_state_is_not() {
    let app = Arc::new(App::default());
    let router = Router::<ConnectionState>::default()
        .with_state(Arc::clone(&app))
        .on(heartbeat)
        .on_close(|s: Session<ConnectionState, Arc<App>>, _| async move {
            let own = s.heartbeats.load(Ordering::Relaxed);
            let closed = &s.app().closed;
            closed.lock().unwrap().push((s.identity().to_string(), own));
        });
    let server = Server::builder()
        .config(server_config())
        .shards(shards())
        .handler(router)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let done = tokio::spawn(server.run_until(async {
        let _ = stopped.await;
    }));
    let beat = || Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}));
    for (identity, beats) in [("CP-A", 2), ("CP-B", 3)] {
        let mut cp = WireChargePoint::connect(addr, identity, OcppVersion::V1_6)
            .await
            .unwrap();
        for _ in 0..beats {
            assert!(matches!(
                cp.call(beat()).await.unwrap(),
                Ok(Response::V1_6(_))
            ));
        }
        drop(cp);
    }
    eventually("both connections closed", || {
        app.closed.lock().unwrap().len() == 2
    })
    .await;
    assert_eq!(app.heartbeats.load(Ordering::Relaxed), 5);
    let mut closed = app.closed.lock().unwrap().clone();
    closed.sort();
    assert_eq!(closed, [("CP-A".to_owned(), 2), ("CP-B".to_owned(), 3)]);
    let _ = stop.send(());
    tokio::time::timeout(WAIT, done)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

in_both_layouts!(application_state_is_shared_connection_state_is_not);
