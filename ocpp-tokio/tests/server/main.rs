//! The server through its public API, on loopback sockets: routing, typed calls, every
//! `CallFailure`, upgrade decisions, duplicate identities, the message hook, graceful shutdown,
//! the answer rule on the untyped handler path.

mod calls;
#[path = "../common/mod.rs"]
mod common;
mod connections;
mod handles;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use ocpp_test_kit::WireChargePoint;
use tokio::io::AsyncWriteExt;
// The test charge points speak the core's payload types; the server's API `ocpp_messages`'.
use ocpp_proto::{CallFailure as CoreFailure, Event, Request, Response};
use ocpp_tokio::hook::Traffic;
use ocpp_tokio::ocpp::{CloseCode, CloseReason, Delivery};
use ocpp_tokio::{v1_6, v2_0_1, CallFailure, ErrorCode, OcppVersion, Server};

fn reset_soft() -> v1_6::ResetRequest {
    serde_json::from_value(serde_json::json!({"type": "Soft"})).unwrap()
}

/// A 1.6 test charge point `identity`, connected, and the server's handle of it.
async fn connected(
    server: &TestServer,
    identity: &str,
) -> (WireChargePoint, ocpp_tokio::ChargePoint) {
    let cp = WireChargePoint::connect(server.addr, identity, OcppVersion::V1_6)
        .await
        .unwrap();
    eventually("registered", || {
        server.charge_points.get(identity).is_some()
    })
    .await;
    (cp, server.charge_points.get(identity).unwrap())
}
