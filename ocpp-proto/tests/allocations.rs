//! How many heap allocations one Heartbeat costs the CSMS side: the frame read, the CALL
//! decoded and delivered, the answer serialised into the output and written out. Counted per
//! thread by a counting global allocator (the approach of `ocpp-frame/tests/memory.rs`); the
//! figure is deterministic, so the test pins it: a change that adds an allocation to the hot
//! path fails here and must say why. Run with `--nocapture` to see it.
// A `GlobalAlloc` is an `unsafe impl`: the only unsafe code here, a pass-through to `System`.
#![allow(unsafe_code)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use common::*;
use ocpp_messages::v1_6;
use ocpp_proto::Answer;
use ocpp_proto::Event;
use ocpp_proto::{Request, Response};

/// `System`, counting this thread's allocations (reallocations count as one).
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: every call is forwarded to `System` with the same arguments; the counter is only
// bookkeeping and never influences an allocation.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract for this call, passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract for this call, passed on unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for this call, passed on unchanged.
        unsafe { System.dealloc(ptr, layout) };
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: the caller's contract for this call, passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn allocations_per_heartbeat_on_the_csms_side() {
    let mut pair = Pair::connected_v16();
    let response = heartbeat_response();
    let mut per_round = Vec::new();
    for _ in 0..5 {
        pair.cp.call(pair.now, heartbeat()).unwrap();
        let wire = pair.cp.pending_transmit().to_vec();
        pair.cp.advance_transmit(wire.len());
        let answer = response.clone();
        // The CSMS's part only, from the bytes read to the bytes written.
        let before = allocations();
        pair.csms.handle_data(pair.now, &wire);
        let event = pair.csms.poll_event();
        let Some(Event::Call { id, .. }) = event else {
            panic!("no call: {event:?} after {} bytes", wire.len());
        };
        pair.csms
            .answer(pair.now, &id, Answer::Result(answer))
            .unwrap();
        drop(id);
        // What a socket write does: the bytes leave the connection's buffer.
        let mut socket = [0u8; 512];
        let written = pair.csms.pending_transmit().len();
        socket[..written].copy_from_slice(pair.csms.pending_transmit());
        pair.csms.advance_transmit(written);
        per_round.push(allocations() - before);
        // The charge point reads the answer (not counted).
        pair.cp.handle_data(pair.now, &socket[..written]);
        pair.take_cp_events();
    }
    println!("allocations per Heartbeat, CSMS side: {per_round:?}");
    let steady = per_round[per_round.len() - 1];
    assert!(per_round[1..].iter().all(|&n| n == steady), "{per_round:?}");
    // Where they are (2026-12-05): the typed request's box and the exchange state (the event
    // inline; released when nothing is under way, so an idle connection holds none). The
    // decoder's message buffer and the output buffer are this thread's spares (ocpp-frame's
    // `decoder/spare.rs`, `connection/spare.rs`): the first round allocates them, the next
    // ones reuse them (4 before). The CALL's id is owned for the event without one
    // (`MessageId` keeps ids of up to 22 bytes inline; the "awaiting an answer" copy lives in
    // the exchange state). Lower this when one goes.
    assert!(
        steady <= 2,
        "{steady} allocations per Heartbeat: {per_round:?}"
    );
}

/// Allocations on the CSMS side per CALL of its own, from `call` to the `CallCompleted` event
/// of its result, five rounds: `request(round)` built before (the application's part), the
/// charge point answering `response()` (not counted).
fn per_call_of_ours(
    request: impl Fn(u64) -> Request,
    response: impl Fn() -> Response,
) -> Vec<usize> {
    let mut pair = Pair::connected_v16();
    let mut per_round = Vec::new();
    for round in 0..5 {
        let request = request(round);
        let before = allocations();
        let id = pair.csms.call(pair.now, request).unwrap();
        let written = pair.csms.pending_transmit().len();
        let wire = pair.csms.pending_transmit().to_vec();
        pair.csms.advance_transmit(written);
        let counted = allocations() - before - 1; // the test's copy of the bytes
        pair.cp.handle_data(pair.now, &wire);
        let Some(Event::Call { id: cp_id, .. }) = pair.cp.poll_event() else {
            panic!("the charge point got no CALL");
        };
        pair.cp
            .answer(pair.now, &cp_id, Answer::Result(response()))
            .unwrap();
        let answer = pair.cp.pending_transmit().to_vec();
        pair.cp.advance_transmit(answer.len());
        let before = allocations();
        pair.csms.handle_data(pair.now, &answer);
        let event = pair.csms.poll_event();
        let Some(Event::CallCompleted {
            id: done, outcome, ..
        }) = event
        else {
            panic!("no outcome: {event:?}");
        };
        assert_eq!(done, id);
        assert!(outcome.is_ok());
        drop(outcome);
        per_round.push(counted + allocations() - before);
    }
    let steady = per_round[per_round.len() - 1];
    assert!(per_round[1..].iter().all(|&n| n == steady), "{per_round:?}");
    per_round
}

/// The other direction: a CALL of the CSMS's own (what a push is), a Heartbeat.
#[test]
fn allocations_per_call_of_ours_on_the_csms_side() {
    let per_round = per_call_of_ours(|_| heartbeat(), heartbeat_response);
    println!("allocations per CALL of ours, CSMS side: {per_round:?}");
    let steady = per_round[per_round.len() - 1];
    // Where they are (2026-12-05): sending, the exchange state (released once the CALL is
    // written and answered); receiving, the result's own text (here the Heartbeat's
    // `currentTime`) and its box. The output buffer and the decoder's message buffer are this
    // thread's spares, reused from the second round (5 before). The CALL's id, from the
    // connection's counter, is inline in both copies (the caller's and the one awaiting the
    // result). Lower this when one goes.
    assert!(
        steady <= 3,
        "{steady} allocations per CALL of ours: {per_round:?}"
    );
}

/// What a push of the benchmarks is (`bench/run.sh`'s push scenario, mio-server's and
/// tokio-server's `--push-interval-ms`): a DataTransfer of ours, answered `Accepted` with no
/// data.
#[test]
fn allocations_per_push_on_the_csms_side() {
    let push = |seq| {
        Request::from(v1_6::Request::from(v1_6::DataTransferRequest {
            vendor_id: "bench".into(),
            message_id: Some("ts".into()),
            data: Some(format!("{seq}:1780000000000000000")),
        }))
    };
    let accepted = || {
        let accepted: v1_6::DataTransferResponse =
            serde_json::from_str(r#"{"status":"Accepted"}"#).unwrap();
        Response::from(v1_6::Response::from(accepted))
    };
    let per_round = per_call_of_ours(push, accepted);
    println!("allocations per push (DataTransfer, Accepted), CSMS side: {per_round:?}");
    let steady = per_round[per_round.len() - 1];
    // The exchange state while the CALL waits, and the typed result's box (its status is an
    // enum: no text of its own, unlike the Heartbeat's `currentTime` above). The request's
    // text is serialised straight into the thread's spare output buffer.
    assert!(steady <= 2, "{steady} allocations per push: {per_round:?}");
}
