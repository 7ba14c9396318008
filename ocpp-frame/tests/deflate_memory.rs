//! What permessage-deflate costs in memory, measured per thread with a counting global allocator
//! (the approach of `tests/memory.rs`): the compressor and decompressor state per window size,
//! nothing held between messages without context takeover, and the peak heap of a decoder fed
//! a decompression bomb. Run with `--nocapture` to see the figures (they go into BENCHMARKS.md).
#![cfg(feature = "deflate")]
// A `GlobalAlloc` is an `unsafe impl`: the only unsafe code here, a pass-through to `System`.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::{Mutex, MutexGuard};

use ocpp_frame::{CloseCode, Decoder, DecoderConfig, Encoder, Message, Opcode, Role};

/// `System`, counting the bytes currently allocated.
struct Counting;

thread_local! {
    /// Bytes allocated minus bytes freed by this thread. A `const` `Cell` of a plain integer needs
    /// no allocation and no destructor, so the allocator may touch it at any time.
    static LIVE: Cell<isize> = const { Cell::new(0) };
    /// The highest `LIVE` since the last `reset_peak`.
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

/// Adds `delta` to this thread's count. During thread teardown the slot may be gone; the count
/// is then simply not kept.
fn count(delta: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

/// Starts a new peak measurement at the current live count.
fn reset_peak() {
    PEAK.with(|peak| peak.set(live()));
}

/// The highest live count since `reset_peak`.
fn peak() -> isize {
    PEAK.with(Cell::get)
}

fn signed(size: usize) -> isize {
    isize::try_from(size).unwrap_or(isize::MAX)
}

// SAFETY: every call is forwarded to `System` with the same arguments; the counter is only
// bookkeeping and never influences an allocation.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for this call, passed on unchanged.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            count(signed(layout.size()));
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for this call, passed on unchanged.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            count(signed(layout.size()));
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for this call, passed on unchanged.
        unsafe { System.dealloc(ptr, layout) };
        count(-signed(layout.size()));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for this call, passed on unchanged.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            count(-signed(layout.size()));
            count(signed(new_size));
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

static MEASURE: Mutex<()> = Mutex::new(());

fn measure() -> MutexGuard<'static, ()> {
    MEASURE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// This thread's live heap bytes, relative to an arbitrary origin: only differences mean anything.
fn live() -> isize {
    LIVE.with(Cell::get)
}

use ocpp_frame::deflate::{Compressor, DeflateConfig, DeflateParams};

fn params(no_context_takeover: bool, bits: u8) -> DeflateParams {
    DeflateParams {
        server_no_context_takeover: no_context_takeover,
        client_no_context_takeover: no_context_takeover,
        server_max_window_bits: bits,
        client_max_window_bits: bits,
    }
}

/// A MeterValues CALL of about 1 KB, the typical compressible OCPP message.
fn meter_values() -> String {
    let sample = r#"{"value":"1234.5","context":"Sample.Periodic","measurand":"Energy.Active.Import.Register","unit":"Wh","location":"Outlet"}"#;
    let samples = [sample; 7].join(",");
    format!(
        r#"[2,"19223201","MeterValues",{{"connectorId":1,"transactionId":42,"meterValue":[{{"timestamp":"2026-11-30T01:00:00Z","sampledValue":[{samples}]}}]}}]"#
    )
}

/// (heap held after one message, peak while compressing it) of a compressor.
fn compressor_cost(no_context_takeover: bool, bits: u8) -> (isize, isize) {
    let config = DeflateConfig::default().min_compress_size(0);
    let message = meter_values();
    let mut out = Vec::with_capacity(64 * 1024);
    let mut compressor = Compressor::new(Role::Server, &params(no_context_takeover, bits), &config);
    let before = live();
    reset_peak();
    Encoder::new(Role::Server)
        .encode_compressed(
            &mut compressor,
            Opcode::Text,
            message.as_bytes(),
            None,
            &mut out,
        )
        .unwrap();
    let held = live() - before;
    let peak = peak() - before;
    drop(compressor);
    (held, peak)
}

/// (heap held after one message, peak while inflating it) of a decoder.
fn decompressor_cost(no_context_takeover: bool, bits: u8) -> (isize, isize) {
    let config = DeflateConfig::default().min_compress_size(0);
    let params = params(no_context_takeover, bits);
    let message = meter_values();
    let mut wire = Vec::new();
    let mut compressor = Compressor::new(Role::Client, &params, &config);
    Encoder::new(Role::Client)
        .encode_compressed(
            &mut compressor,
            Opcode::Text,
            message.as_bytes(),
            Some(KEY),
            &mut wire,
        )
        .unwrap();
    drop(compressor);
    let mut decoder = Decoder::new(Role::Server, DecoderConfig::default()).with_deflate(&params);
    let before = live();
    reset_peak();
    let decoded = decoder.decode(&wire).unwrap();
    match &decoded.message {
        Some(Message::Text(text)) => assert_eq!(text.as_str(), message),
        other => panic!("{other:?}"),
    }
    drop(decoded);
    let held = live() - before;
    let peak = peak() - before;
    (held, peak)
}

#[test]
fn state_per_mode_and_window() {
    let _guard = measure();
    for bits in [15u8, 12, 9] {
        let (held, peak) = compressor_cost(false, bits);
        println!("compressor, context takeover, {bits} bits: {held} bytes held, peak {peak}");
        assert!(held > 0);
        let (held, peak) = compressor_cost(true, bits);
        println!("compressor, no context takeover, {bits} bits: {held} bytes held, peak {peak}");
        assert_eq!(
            held, 0,
            "no context takeover holds nothing between messages"
        );
        let (held, peak) = decompressor_cost(false, bits);
        println!("decompressor, context takeover, {bits} bits: {held} bytes held, peak {peak}");
        assert!(held > 0);
        let (held, peak) = decompressor_cost(true, bits);
        println!("decompressor, no context takeover, {bits} bits: {held} bytes held, peak {peak}");
        assert_eq!(
            held, 0,
            "no context takeover holds nothing between messages"
        );
    }
}

/// 10 MB of zeros, compressed to about 10 KB, sent to a decoder with a 64 KiB message limit:
/// refused with 1009, and the heap never grows past the limit (plus the half-size buffer being
/// copied while the message buffer doubles) plus the inflate state.
#[test]
fn decompression_bomb_peak_is_bounded() {
    let _guard = measure();
    let params = params(true, 15);
    let config = DeflateConfig::default().min_compress_size(0);
    let mut wire = Vec::new();
    let mut compressor = Compressor::new(Role::Client, &params, &config);
    let bomb = vec![0u8; 10_000_000];
    Encoder::new(Role::Client)
        .encode_compressed(&mut compressor, Opcode::Binary, &bomb, Some(KEY), &mut wire)
        .unwrap();
    drop((compressor, bomb));
    let limit = 64 * 1024;
    let mut decoder = Decoder::new(
        Role::Server,
        DecoderConfig::default()
            .max_message_size(limit)
            .max_frame_size(1 << 20),
    )
    .with_deflate(&params);
    let before = live();
    reset_peak();
    let error = decoder.decode(&wire).unwrap_err();
    let peak = peak() - before;
    let after = live() - before;
    println!(
        "bomb: {} wire bytes (10 MB inflated), limit {limit}: {error}; peak heap {peak} bytes, \
         {after} held after",
        wire.len()
    );
    assert_eq!(error.close_code(), CloseCode::MESSAGE_TOO_BIG);
    let bound = limit as isize * 3 / 2 + 64 * 1024;
    assert!(
        peak <= bound,
        "peak {peak} > 1.5 x limit + 64 KiB of inflate state = {bound}"
    );
    assert_eq!(after, 0);
}
const KEY: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];
