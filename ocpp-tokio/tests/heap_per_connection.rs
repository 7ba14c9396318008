//! Where an idle booted charge point's heap goes on an `ocpp-tokio` server: the server runs on
//! this test's thread (a current-thread runtime), the charge points on another thread, and a
//! counting global allocator counts only this thread's allocations. After a warm-up, N more
//! charge points connect and boot (2.0.1, the test handler), and the live heap that grew is
//! divided by N: live allocations, bytes asked for, glibc malloc chunk bytes (at least 32 each:
//! the size plus 8, rounded up to 16), and the live allocations by size, which name the
//! structures (the task, the stream's registration, the timer, the link...). Both layouts: a
//! task per connection, and one shard (`ServerBuilder::shards`), whose slab holds each
//! connection's driver inline. Deterministic: no timing, no RSS. Run with `--nocapture` to see
//! the tables; they fail only if the heap per connection passes 1.5 KiB with a task each
//! (1,254 B of malloc chunks today) or 1 KiB on a shard (694 B): regression guards, not
//! benchmarks (BENCHMARKS.md has the figures).
// A `GlobalAlloc` is an `unsafe impl`: the only unsafe code here, a pass-through to `System`.
#![allow(unsafe_code)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use ocpp_test_kit::WireChargePoint;
use ocpp_tokio::OcppVersion;

/// Sizes counted one by one up to this; larger ones share the last cell.
const SIZES: usize = 4096;

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static LIVE: Cell<[isize; 3]> = const { Cell::new([0; 3]) };
    /// Live allocations by size / 8 (the last cell: everything larger).
    static BY_SIZE: Cell<[i32; SIZES / 8 + 1]> = const { Cell::new([0; SIZES / 8 + 1]) };
}

fn chunk(size: usize) -> isize {
    ((size + 8).div_ceil(16) * 16).max(32) as isize
}

fn note(size: usize, sign: isize) {
    let _ = COUNTING.try_with(|on| {
        if !on.get() {
            return;
        }
        let _ = LIVE.try_with(|live| {
            let mut l = live.get();
            l[0] += sign;
            l[1] += sign * size as isize;
            l[2] += sign * chunk(size);
            live.set(l);
        });
        let _ = BY_SIZE.try_with(|by_size| {
            let mut b = by_size.get();
            b[(size.div_ceil(8)).min(SIZES / 8)] += sign as i32;
            by_size.set(b);
        });
    });
}

// SAFETY: every call is forwarded to `System` with the same arguments; the counters are only
// bookkeeping in thread-locals that never allocate, and never influence an allocation.
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
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(layout.size(), -1);
        note(new_size, 1);
        // SAFETY: the caller's contract for this call, passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Charge points before the measurement. The server's containers grow by doubling (a shard's
/// slab holds each connection's driver inline), so the window is one doubling: from 512 to
/// 1,024 charge points a slab grows by exactly one slot per connection, and each map of
/// connections or charge points doubles once (a map's cost is up to twice its entries).
const WARM_UP: usize = 512;
/// Charge points measured.
const MEASURED: usize = 512;

/// Connects and boots `count` charge points from `from` on, on a runtime of its own thread;
/// they stay open until `release` is dropped or sent to.
fn charge_points(
    addr: std::net::SocketAddr,
    from: usize,
    count: usize,
    release: mpsc::Receiver<()>,
) -> mpsc::Receiver<()> {
    let (booted, all_booted) = mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let mut open = Vec::new();
            for n in from..from + count {
                let identity = format!("HEAP{n:05}");
                let mut cp = WireChargePoint::connect(addr, &identity, OcppVersion::V2_0_1)
                    .await
                    .unwrap();
                assert_eq!(cp.boot().await.unwrap(), "Accepted");
                open.push(cp);
            }
            let _ = booted.send(());
            let _ = tokio::task::spawn_blocking(move || release.recv()).await;
            drop(open);
        });
    });
    all_booted
}

/// Lets the server's tasks run until the charge points' thread says they are booted, then a
/// little longer, so that every task is back to idle.
async fn settle(booted: &mpsc::Receiver<()>) {
    for _ in 0..6000 {
        if booted.try_recv().is_ok() {
            for _ in 0..20 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the charge points did not boot within a minute");
}

#[tokio::test(flavor = "current_thread")]
async fn heap_per_idle_booted_charge_point() {
    let per = measure().await;
    assert!(per < 1536.0, "{per:.0} bytes per idle charge point");
}

#[tokio::test(flavor = "current_thread")]
async fn heap_per_idle_booted_charge_point_on_a_shard() {
    let per = SHARDS.scope(1, measure()).await;
    assert!(per < 1024.0, "{per:.0} bytes per idle charge point");
}

/// Prints the table; returns the bytes of malloc chunks per idle booted charge point.
async fn measure() -> f64 {
    COUNTING.with(|on| on.set(true));
    let server = TestServer::start(server_config()).await;
    let (keep_warm, release_warm) = mpsc::channel();
    settle(&charge_points(server.addr, 0, WARM_UP, release_warm)).await;
    let before = (LIVE.with(Cell::get), BY_SIZE.with(Cell::get));
    let (keep, release) = mpsc::channel();
    settle(&charge_points(server.addr, WARM_UP, MEASURED, release)).await;
    let after = (LIVE.with(Cell::get), BY_SIZE.with(Cell::get));
    COUNTING.with(|on| on.set(false));

    let per = |i: usize| (after.0[i] - before.0[i]) as f64 / MEASURED as f64;
    println!(
        "per idle booted charge point ({MEASURED} measured, {} shards): {:.2} live allocations, \
         {:.0} bytes asked for, {:.0} bytes of malloc chunks",
        shards(),
        per(0),
        per(1),
        per(2)
    );
    println!("live allocations by size, per charge point (sizes rounded up to 8):");
    for (cell, (a, b)) in after.1.iter().zip(before.1.iter()).enumerate() {
        let count = f64::from(a - b) / MEASURED as f64;
        if count.abs() >= 0.05 {
            let size = if cell == SIZES / 8 {
                format!("> {SIZES}")
            } else {
                format!("{}", cell * 8)
            };
            println!("  {size:>8} B: {count:.2}");
        }
    }
    drop((keep, keep_warm));
    let _ = server.stop().await;
    per(2)
}
