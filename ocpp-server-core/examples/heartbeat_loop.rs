//! N Heartbeat round trips through a charge-point and a CSMS connection in memory, for
//! instruction counts: `valgrind --tool=callgrind target/release/examples/heartbeat_loop N`
//! at N = 1 and N = 1001; (difference) / 1000 is the cost of one round trip, start-up cancels.
//!
//! `cargo build --release -p ocpp-server-core --example heartbeat_loop`

use std::sync::Arc;
use std::time::Instant;

use ocpp_server_core::{
    v1_6, ChargePointIdentity, ConnectTarget, Connection, ConnectionConfig, DateTime, Event,
    OcppVersion, Request, Response,
};

/// What a socket write does: copy the pending output out, then advance past it.
fn transmit(from: &mut Connection, scratch: &mut [u8]) -> usize {
    let pending = from.pending_transmit();
    let n = pending.len().min(scratch.len());
    scratch[..n].copy_from_slice(&pending[..n]);
    from.advance_transmit(n);
    n
}

fn main() {
    let rounds: u32 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
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
    for _ in 0..rounds {
        let request = Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}));
        cp.call(now, request).expect("call");
        let n = transmit(&mut cp, &mut scratch);
        csms.handle_data(now, &scratch[..n]);
        while let Some(event) = csms.poll_event() {
            if let Event::Call { id, .. } = event {
                let response = Response::from(v1_6::Response::from(v1_6::HeartbeatResponse {
                    current_time: current_time.clone(),
                }));
                csms.respond(now, &id, response).expect("respond");
            }
        }
        let n = transmit(&mut csms, &mut scratch);
        cp.handle_data(now, &scratch[..n]);
        while let Some(event) = cp.poll_event() {
            if let Event::CallCompleted { .. } = event {
                completed += 1;
            }
        }
    }
    assert_eq!(completed, rounds);
    println!("{rounds} round trips");
}
