//! The OCPP connection through its public API: two peers in simulated time, and a CSMS driven by
//! hand-written frames for what a well-behaved peer never sends.

#[path = "../common/mod.rs"]
mod common;

use std::time::Duration;

use common::raw::RawPeer;
use common::*;
use ocpp_frame::{CloseCode, Message};
use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::version::OcppVersion;
use ocpp_proto::{
    Answer, AnswerError, CallFailure, CloseReason, ConnectionConfig, Delivery, Event, MessageId,
    NoCommonVersion, RefusalReason,
};

mod back_pressure;
mod calls;
mod closing;
mod deadlines;
mod errors;
mod handshake;
mod held_calls;
mod keep_alive;
mod v2_1;

fn v16() -> ConnectionConfig {
    ConnectionConfig::default().versions(vec![OcppVersion::V1_6])
}

/// The CSMS sending a Heartbeat makes no sense in OCPP, but it is a valid 1.6 request to test
/// the queue with; the charge point answers NotImplemented? No: Heartbeat is known, so it is
/// decoded and delivered.
fn heartbeat_csms() -> ocpp_proto::Request {
    heartbeat()
}
