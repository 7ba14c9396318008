//! N round trips through a charge-point and a CSMS connection in memory, for instruction
//! counts: `valgrind --tool=callgrind target/release/examples/heartbeat_loop N [MODE]` at
//! N = 1 and N = 1001; (difference) / 1000 is the cost of one round trip, start-up cancels.
//!
//! MODE `heartbeat` (the default): the charge point's Heartbeat CALL and the CSMS's answer.
//! MODE `push`: the CSMS's DataTransfer CALL (the benchmark push) and the charge point's answer.
//!
//! Every step the CSMS takes is one of the `csms_*` functions below, never inlined, so that
//! `--toggle-collect='heartbeat_loop::csms_*'` counts the server's side alone (what a server
//! pays per message; the charge point's side is the load generator's cost).
//!
//! `cargo build --release -p ocpp-proto --example heartbeat_loop`

use std::sync::Arc;
use std::time::Instant;

use ocpp_proto::{
    v1_6, Answer, ChargePointIdentity, ConnectTarget, Connection, ConnectionConfig, DateTime,
    Event, OcppVersion, Request, Response,
};

/// What a socket write does: copy the pending output out, then advance past it.
fn transmit(from: &mut Connection, scratch: &mut [u8]) -> usize {
    let pending = from.pending_transmit();
    let n = pending.len().min(scratch.len());
    scratch[..n].copy_from_slice(&pending[..n]);
    from.advance_transmit(n);
    n
}

/// The CSMS writes its output to the socket.
#[inline(never)]
fn csms_transmit(csms: &mut Connection, scratch: &mut [u8]) -> usize {
    transmit(csms, scratch)
}

/// The CSMS reads bytes from the socket.
#[inline(never)]
fn csms_receive(csms: &mut Connection, now: Instant, bytes: &[u8]) {
    csms.handle_data(now, bytes);
}

/// The CSMS drains its events, answering a Heartbeat; returns the CALLs it completed.
#[inline(never)]
fn csms_drain(csms: &mut Connection, now: Instant, current_time: &DateTime) -> u32 {
    let mut completed = 0;
    while let Some(event) = csms.poll_event() {
        match event {
            Event::Call { id, .. } => {
                let response = Response::from(v1_6::Response::from(v1_6::HeartbeatResponse {
                    current_time: current_time.clone(),
                }));
                csms.answer(now, &id, Answer::Result(response))
                    .expect("respond");
            }
            Event::CallCompleted { .. } => completed += 1,
            _ => {}
        }
    }
    completed
}

/// The CSMS sends the benchmark push (what `ocpp_reference_csms::push` builds).
#[inline(never)]
fn csms_push(csms: &mut Connection, now: Instant, seq: u64) {
    let request = Request::from(v1_6::Request::from(v1_6::DataTransferRequest {
        vendor_id: "bench".into(),
        message_id: Some("ts".into()),
        // As `ocpp_reference_csms::push` prints it.
        data: Some({
            let mut seq_text = itoa::Buffer::new();
            let seq = seq_text.format(seq);
            let mut data = String::with_capacity(seq.len() + 20);
            data.push_str(seq);
            data.push_str(":1764590400000000000");
            data
        }),
    }));
    csms.call(now, request).expect("push");
}

/// The charge point drains its events, answering a DataTransfer; returns the CALLs it completed.
fn cp_drain(cp: &mut Connection, now: Instant) -> u32 {
    let mut completed = 0;
    while let Some(event) = cp.poll_event() {
        match event {
            Event::Call { id, .. } => {
                let response = Response::from(v1_6::Response::from(v1_6::DataTransferResponse {
                    status: v1_6::DataTransferStatus::Accepted,
                    data: None,
                }));
                cp.answer(now, &id, Answer::Result(response))
                    .expect("respond");
            }
            Event::CallCompleted { .. } => completed += 1,
            _ => {}
        }
    }
    completed
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: u32 = args.next().and_then(|n| n.parse().ok()).unwrap_or(1);
    let push = match args.next().as_deref() {
        None | Some("heartbeat") => false,
        Some("push") => true,
        Some(other) => panic!("unknown mode {other:?} (heartbeat or push)"),
    };
    let now = Instant::now();
    let config = Arc::new(ConnectionConfig::default().versions(vec![OcppVersion::V1_6]));
    let mut csms = Connection::accept_incoming(now, config.clone());
    let identity = ChargePointIdentity::new("CP1".into(), true).expect("identity");
    let target = ConnectTarget::new("csms", "/ocpp", identity);
    let mut cp = Connection::connect(now, config, &target, [1; 16], 7).expect("connect");
    let mut scratch = vec![0u8; 4096];
    let n = transmit(&mut cp, &mut scratch);
    csms.handle_data(now, &scratch[..n]);
    while csms.poll_event().is_some() {}
    csms.accept(now).expect("accept");
    let n = transmit(&mut csms, &mut scratch);
    cp.handle_data(now, &scratch[..n]);
    while csms.poll_event().is_some() {}
    while cp.poll_event().is_some() {}
    let current_time = DateTime::parse("2026-11-29T12:00:00Z").expect("date");
    let mut completed = 0;
    for seq in 0..rounds {
        if push {
            csms_push(&mut csms, now, u64::from(seq));
            let n = csms_transmit(&mut csms, &mut scratch);
            cp.handle_data(now, &scratch[..n]);
            cp_drain(&mut cp, now);
            let n = transmit(&mut cp, &mut scratch);
            csms_receive(&mut csms, now, &scratch[..n]);
            completed += csms_drain(&mut csms, now, &current_time);
        } else {
            let request = Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}));
            cp.call(now, request).expect("call");
            let n = transmit(&mut cp, &mut scratch);
            csms_receive(&mut csms, now, &scratch[..n]);
            csms_drain(&mut csms, now, &current_time);
            let n = csms_transmit(&mut csms, &mut scratch);
            cp.handle_data(now, &scratch[..n]);
            completed += cp_drain(&mut cp, now);
        }
    }
    assert_eq!(completed, rounds);
    println!("{rounds} round trips");
}
