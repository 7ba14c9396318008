//! 1,000 charge points at once on one server: each connects, boots, answers one CALL of the
//! server, and is closed with 1001 by the graceful shutdown.

mod common;

use std::time::{Duration, Instant};

use common::*;
use ocpp_test_kit::WireChargePoint;
use ocpp_tokio::ocpp::{CloseCode, CloseReason};
use ocpp_tokio::{v1_6, v2_0_1, OcppVersion};

const CHARGE_POINTS: usize = 1000;

async fn a_thousand_charge_points_at_once() {
    let started = Instant::now();
    let server = TestServer::start(server_config()).await;
    let addr = server.addr;
    let mut cps = Vec::new();
    for n in 0..CHARGE_POINTS {
        // Half on 1.6, half on 2.0.1.
        let version = if n % 2 == 0 {
            OcppVersion::V1_6
        } else {
            OcppVersion::V2_0_1
        };
        cps.push(tokio::spawn(async move {
            let identity = format!("CP{n:04}");
            let mut cp = WireChargePoint::connect(addr, &identity, version)
                .await
                .unwrap();
            assert_eq!(cp.boot().await.unwrap(), "Accepted");
            let (id, request) = cp.wait_for_call().await.unwrap();
            assert_eq!(request.action(), "ClearCache");
            let response = match version {
                OcppVersion::V1_6 => v1_6::Response::from(v1_6::ClearCacheResponse {
                    status: v1_6::ClearCacheStatus::Accepted,
                })
                .into(),
                _ => v2_0_1::Response::from(v2_0_1::ClearCacheResponse {
                    status: v2_0_1::ClearCacheStatusEnum::Accepted,
                    custom_data: None,
                    status_info: None,
                })
                .into(),
            };
            cp.call_result(&id, response).await.unwrap();
            cp.wait_for_close().await.unwrap().reason
        }));
    }
    let charge_points = server.charge_points.clone();
    eventually("all registered", || charge_points.len() == CHARGE_POINTS).await;

    // The server calls every one of them at once.
    let mut calls = Vec::new();
    for cp in charge_points.iter() {
        calls.push(tokio::spawn(async move {
            match cp.version() {
                OcppVersion::V1_6 => cp.call(v1_6::ClearCacheRequest {}).await.map(|r| {
                    assert_eq!(r.status, v1_6::ClearCacheStatus::Accepted);
                }),
                _ => cp
                    .call(v2_0_1::ClearCacheRequest { custom_data: None })
                    .await
                    .map(|r| assert_eq!(r.status, v2_0_1::ClearCacheStatusEnum::Accepted)),
            }
        }));
    }
    assert_eq!(calls.len(), CHARGE_POINTS);
    for call in calls {
        call.await.unwrap().unwrap();
    }
    let took = server.stop().await;
    assert!(took < Duration::from_secs(5), "shutdown took {took:?}");
    for cp in cps {
        let reason = cp.await.unwrap();
        assert!(
            matches!(
                reason,
                CloseReason::PeerClosed {
                    code: Some(CloseCode::GOING_AWAY),
                    ..
                }
            ),
            "{reason:?}"
        );
    }
    println!("{CHARGE_POINTS} charge points in {:?}", started.elapsed());
}

in_both_layouts!(a_thousand_charge_points_at_once,);
