//! A full Heartbeat round trip through both state machines, bytes in and bytes out: the charge
//! point's CALL is serialized, framed and masked, the CSMS decodes, validates and delivers it,
//! answers, and the charge point decodes the CALLRESULT with the pending CALL's action.
//!
//! `cargo bench -p ocpp-proto --bench heartbeat`

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use ocpp_messages::v1_6;
use ocpp_messages::version::OcppVersion;
use ocpp_proto::{
    Answer, ChargePointIdentity, ConnectTarget, Connection, ConnectionConfig, Event, Request,
    Response,
};

fn shuttle(from: &mut Connection, to: &mut Connection, now: Instant) {
    let n = from.pending_transmit().len();
    if n > 0 {
        let bytes = from.pending_transmit().to_vec();
        from.advance_transmit(n);
        to.handle_data(now, &bytes);
    }
}

/// What a socket write does: copy the pending output out, then advance past it.
fn transmit(from: &mut Connection, scratch: &mut [u8]) -> usize {
    let pending = from.pending_transmit();
    let n = pending.len().min(scratch.len());
    scratch[..n].copy_from_slice(&pending[..n]);
    from.advance_transmit(n);
    n
}

fn open_pair(now: Instant) -> (Connection, Connection) {
    let config = Arc::new(ConnectionConfig::default().versions(vec![OcppVersion::V1_6]));
    let mut csms = Connection::accept_incoming(now, config.clone());
    let identity = ChargePointIdentity::new("CP1".into(), true).unwrap();
    let target = ConnectTarget::new("csms", "/ocpp", identity);
    let mut cp = Connection::connect(now, config, &target, [1; 16], 7).unwrap();
    shuttle(&mut cp, &mut csms, now);
    while csms.poll_event().is_some() {}
    csms.accept(now).unwrap();
    shuttle(&mut csms, &mut cp, now);
    while csms.poll_event().is_some() {}
    while cp.poll_event().is_some() {}
    (csms, cp)
}

fn heartbeat_round_trip(c: &mut Criterion) {
    let now = Instant::now();
    let (mut csms, mut cp) = open_pair(now);
    let response = Response::from(v1_6::Response::from(v1_6::HeartbeatResponse {
        current_time: ocpp_messages::DateTime::parse("2026-11-29T12:00:00Z").unwrap(),
    }));
    // Scratch buffer of the I/O loop, as a server would have one per loop.
    let mut scratch = vec![0u8; 4096];
    c.bench_function("heartbeat round trip (both state machines)", |b| {
        b.iter(|| {
            let request = Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}));
            let id = cp.call(now, request).unwrap();
            let n = transmit(&mut cp, &mut scratch);
            csms.handle_data(now, &scratch[..n]);
            let Some(Event::Call { id: got, .. }) = csms.poll_event() else {
                panic!("no call")
            };
            csms.answer(now, &got, Answer::Result(response.clone()))
                .unwrap();
            let n = transmit(&mut csms, &mut scratch);
            cp.handle_data(now, &scratch[..n]);
            let Some(Event::CallCompleted { id: done, .. }) = cp.poll_event() else {
                panic!("no result")
            };
            assert_eq!(id, done);
            black_box(done)
        })
    });
}

criterion_group!(benches, heartbeat_round_trip);
criterion_main!(benches);
