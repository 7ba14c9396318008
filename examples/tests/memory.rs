//! What the CSMS application keeps per idle booted charge point: the `size_of` of its records
//! and the heap it holds after a BootNotification and a StatusNotification (the payloads
//! `ocpp-load` sends), counted by a counting global allocator, as live allocations, bytes
//! asked for, and bytes of glibc malloc chunks (each at least 32 bytes: the size plus an
//! 8-byte header, rounded up to 16). Run with `--nocapture` to see the figures.
// A `GlobalAlloc` is an `unsafe impl`: the only unsafe code here, a pass-through to `System`.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use ocpp_examples::charge_point_payload::{self as payload, ConnectorStage, Outgoing};
use ocpp_messages::version::OcppVersion;
use ocpp_model::BootReason;
use ocpp_proto::Answer;
use ocpp_proto::ChargePointIdentity;
use ocpp_reference_csms::{ChargePointRecord, Csms, CsmsConfig};

/// `System`, counting this thread's live allocations.
struct Counting;

#[derive(Clone, Copy, Default, Debug)]
struct Live {
    allocations: isize,
    bytes: isize,
    chunks: isize,
}

thread_local! {
    static LIVE: Cell<Live> = const { Cell::new(Live { allocations: 0, bytes: 0, chunks: 0 }) };
}

/// The size of the glibc malloc chunk that serves `size` bytes (x86-64).
fn chunk(size: usize) -> isize {
    ((size + 8).div_ceil(16) * 16).max(32) as isize
}

fn note(size: usize, sign: isize) {
    let _ = LIVE.try_with(|live| {
        let mut l = live.get();
        l.allocations += sign;
        l.bytes += sign * size as isize;
        l.chunks += sign * chunk(size);
        live.set(l);
    });
}

fn live() -> Live {
    LIVE.with(Cell::get)
}

// SAFETY: every call is forwarded to `System` with the same arguments; the counters are only
// bookkeeping and never influence an allocation.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size(), 1);
        // SAFETY: the caller's contract for this call, passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size(), 1);
        // SAFETY: the caller's contract for this call, passed on unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(layout.size(), -1);
        // SAFETY: the caller's contract for this call, passed on unchanged.
        unsafe { System.dealloc(ptr, layout) };
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(layout.size(), -1);
        note(new_size, 1);
        // SAFETY: the caller's contract for this call, passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const COUNT: usize = 4096;

fn call(
    csms: &Csms,
    identity: &ChargePointIdentity,
    session: ocpp_reference_csms::SessionId,
    message: &Outgoing,
) {
    let request = payload::request(OcppVersion::V1_6, message).expect("request");
    match csms.on_call(session, identity, &request).wait(csms) {
        Answer::Result(_) => {}
        other => panic!("{other:?}"),
    }
}

/// Per charge point: (live allocations, bytes asked for, malloc chunk bytes).
fn per_charge_point(status: bool) -> (f64, f64, f64) {
    let csms = Csms::new(CsmsConfig::default());
    let identities: Vec<ChargePointIdentity> = (0..COUNT)
        .map(|i| ChargePointIdentity::new(format!("CP{i:06}"), false).expect("identity"))
        .collect();
    let before = live();
    for (i, identity) in identities.iter().enumerate() {
        let session = csms.on_connected(identity, OcppVersion::V1_6);
        let boot = Outgoing::Boot {
            identity: identity.as_str().to_string(),
            reason: BootReason::PowerUp,
        };
        call(&csms, identity, session, &boot);
        if status {
            let status = Outgoing::Status {
                connector: 1 + (i % 2) as u32,
                state: ConnectorStage::Available,
            };
            call(&csms, identity, session, &status);
        }
    }
    let after = live();
    // Nothing rare was kept: the extras of every record are a null pointer.
    assert!(identities.iter().all(|identity| !csms
        .charge_point(identity)
        .unwrap()
        .extras
        .is_allocated()));
    drop(csms);
    let n = COUNT as f64;
    (
        (after.allocations - before.allocations) as f64 / n,
        (after.bytes - before.bytes) as f64 / n,
        (after.chunks - before.chunks) as f64 / n,
    )
}

#[test]
fn csms_record_per_idle_booted_charge_point() {
    println!(
        "size_of::<ChargePointRecord>() = {} bytes; table slot (the Box; the key is the record's \
         identity) = {} bytes",
        std::mem::size_of::<ChargePointRecord>(),
        std::mem::size_of::<Box<ChargePointRecord>>(),
    );
    use ocpp_reference_csms::{BootDetails, CertificateSigning, ItemsPerMessage, LiveSession};
    use std::mem::size_of;
    println!(
        "fields: Option<LiveSession> {} Option<BootDetails> {} Option<CertificateSigning> {} \
         ItemsPerMessage {} Option<Request> {} BTreeMap {} VecDeque {} Vec {}",
        size_of::<Option<LiveSession>>(),
        size_of::<Option<BootDetails>>(),
        size_of::<Option<CertificateSigning>>(),
        size_of::<ItemsPerMessage>(),
        size_of::<Option<ocpp_proto::Request>>(),
        size_of::<std::collections::BTreeMap<String, u8>>(),
        size_of::<std::collections::VecDeque<u8>>(),
        size_of::<Vec<u8>>(),
    );
    let (allocations, bytes, chunks) = per_charge_point(false);
    println!(
        "after BootNotification: {allocations:.2} allocations, {bytes:.0} bytes asked, \
         {chunks:.0} bytes of malloc chunks per charge point (the table's spare capacity included)"
    );
    // Before: 5 allocations and 738 bytes of chunks (a 544-byte record and four strings);
    // 450 with the 360-byte record, before the rare fields moved into `Extras`; 322 before the
    // times became `UnixTime`s and the table's slot only the box (258 then), 226 since the
    // shared texts are one pointer (`SharedText`).
    assert!(
        allocations < 2.1 && chunks <= 240.0,
        "{allocations} {chunks}"
    );
    let (allocations, bytes, chunks) = per_charge_point(true);
    println!(
        "after BootNotification + StatusNotification: {allocations:.2} allocations, {bytes:.0} \
         bytes asked, {chunks:.0} bytes of malloc chunks per charge point"
    );
    // Before: 8 allocations and 1,794 bytes (a BTreeMap node for 11 connectors, two strings).
    assert!(
        allocations < 4.1 && chunks <= 320.0,
        "{allocations} {chunks}"
    );
    // 544 bytes at first, 360 with the rare fields inline, 224 with `SystemTime`s, 200 with
    // `Arc<str>` texts.
    assert!(std::mem::size_of::<ChargePointRecord>() <= 168);
}
