//! What a decoder costs in memory, measured with a counting global allocator.
//!
//! The allocator counts, per thread, the bytes allocated minus the bytes freed by that thread, so a
//! measurement sees only what its own test did: the harness freeing another test's output on its
//! main thread cannot move the figure (a process-wide counter once underflowed in CI that way).
//! Measurements still hold `MEASURE` so their printed figures do not interleave.
//! Run with `--nocapture` to see the figures.
// A `GlobalAlloc` is an `unsafe impl`: the only unsafe code here, a pass-through to `System`.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::{Mutex, MutexGuard};

use bytes::BytesMut;
use ocpp_frame::{Decoder, DecoderConfig, Encoder, FrameHeader, Message, Opcode, Role};

/// `System`, counting the bytes currently allocated.
struct Counting;

thread_local! {
    /// Bytes allocated minus bytes freed by this thread. A `const` `Cell` of a plain integer needs
    /// no allocation and no destructor, so the allocator may touch it at any time.
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

/// Adds `delta` to this thread's count. During thread teardown the slot may be gone; the count
/// is then simply not kept.
fn count(delta: isize) {
    let _ = LIVE.try_with(|live| live.set(live.get() + delta));
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

const KEY: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

/// A client's byte stream: messages of many sizes and kinds, some fragmented, pings between.
fn client_stream() -> (Vec<u8>, usize) {
    let encoder = Encoder::new(Role::Client);
    let mut out = Vec::new();
    let mut count = 0;
    for (i, size) in [
        0usize,
        1,
        20,
        125,
        126,
        1000,
        4096,
        65535,
        65536,
        200_000,
        1 << 20,
    ]
    .into_iter()
    .enumerate()
    {
        let text = "é".repeat(size / 2) + if size % 2 == 1 { "x" } else { "" };
        let key = [i as u8, 1, 2, 3];
        encoder.encode_text(&text, Some(key), &mut out).unwrap();
        encoder
            .encode_binary(&vec![i as u8; size], Some(key), &mut out)
            .unwrap();
        encoder
            .encode_ping(&[i as u8; 7], Some(key), &mut out)
            .unwrap();
        count += 3;
        // The same binary payload in three fragments, a pong in between.
        let third = size / 3;
        let payload = vec![0xa5; size];
        let header = |opcode, fin| FrameHeader {
            fin,
            ..FrameHeader::new(opcode, 0)
        };
        let (a, rest) = payload.split_at(third);
        let (b, c) = rest.split_at(third);
        encoder
            .encode_frame(header(Opcode::Binary, false), a, Some(key), &mut out)
            .unwrap();
        encoder.encode_pong(b"p", Some(key), &mut out).unwrap();
        encoder
            .encode_frame(header(Opcode::Continuation, false), b, Some(key), &mut out)
            .unwrap();
        encoder
            .encode_frame(header(Opcode::Continuation, true), c, Some(key), &mut out)
            .unwrap();
        count += 2;
    }
    (out, count)
}

/// Decodes `stream` in reads of `read` bytes through `decode`, dropping every message at once.
fn decode_all(decoder: &mut Decoder, stream: &[u8], read: usize) -> usize {
    let mut count = 0;
    for piece in stream.chunks(read) {
        let mut pos = 0;
        loop {
            let decoded = decoder.decode(&piece[pos..]).unwrap();
            pos += decoded.consumed;
            match decoded.message {
                Some(message) => {
                    drop(message);
                    count += 1;
                }
                None => break,
            }
        }
    }
    count
}

#[test]
fn decoder_memory() {
    let _guard = measure();
    let size = std::mem::size_of::<Decoder>();
    println!("size_of::<Decoder>() = {size} bytes");
    println!(
        "size_of::<Message>() = {} bytes",
        std::mem::size_of::<Message>()
    );
    assert!(size <= 256, "a decoder is {size} bytes");

    // 1. Idle after many messages: nothing held, in the copying and in the zero-copy path.
    let (stream, expected) = client_stream();
    for read in [1 << 20, 4096, 1000, 7] {
        let before = live();
        let mut decoder = Decoder::new(Role::Server, DecoderConfig::default().max_fragments(4));
        assert_eq!(live(), before, "Decoder::new allocates");
        assert_eq!(decode_all(&mut decoder, &stream, read), expected);
        assert!(decoder.is_idle());
        assert_eq!(decoder.heap_bytes(), 0);
        // The thread's spare message buffers are not the decoder's.
        ocpp_frame::free_spare_buffers();
        let held = live() - before;
        drop(decoder);
        println!(
            "decode, reads of {read:>7} B: {expected} messages ({} B), idle decoder holds {held} B",
            stream.len()
        );
        assert_eq!(held, 0);
    }
    for read in [1 << 20, 8192, 1000] {
        let before = live();
        let mut decoder = Decoder::new(Role::Server, DecoderConfig::default().max_fragments(4));
        let mut count = 0;
        {
            let mut buf = BytesMut::with_capacity(read);
            for piece in stream.chunks(read) {
                buf.extend_from_slice(piece);
                while let Some(message) = decoder.decode_buf(&mut buf).unwrap() {
                    drop(message);
                    count += 1;
                }
            }
        }
        assert_eq!(count, expected);
        assert!(decoder.is_idle());
        // With the read buffer dropped (and the thread's spare message buffers, which are not
        // the decoder's), whatever is still live belongs to the decoder.
        ocpp_frame::free_spare_buffers();
        let held = live() - before;
        drop(decoder);
        println!("decode_buf, reads of {read:>7} B: idle decoder holds {held} B");
        assert_eq!(held, 0);
    }

    // 2. A frame that declares 1 MiB of which 100 bytes arrived holds about 100 bytes.
    let payload = vec![b'a'; 1 << 20];
    let mut frame = Vec::new();
    Encoder::new(Role::Client)
        .encode_binary(&payload, Some(KEY), &mut frame)
        .unwrap();
    drop(payload);
    let partial = &frame[..14 + 100];
    let before = live();
    let mut decoder = Decoder::new(Role::Server, DecoderConfig::default());
    let decoded = decoder.decode(partial).unwrap();
    assert_eq!((decoded.consumed, decoded.message), (partial.len(), None));
    let held = live() - before;
    println!(
        "decode: 1 MiB frame, 100 B arrived: decoder holds {held} B (heap_bytes() = {})",
        decoder.heap_bytes()
    );
    assert!(held < 4096, "holds {held} bytes");
    drop(decoder);

    let before = live();
    let mut decoder = Decoder::new(Role::Server, DecoderConfig::default());
    {
        let mut buf = BytesMut::from(partial);
        assert_eq!(decoder.decode_buf(&mut buf).unwrap(), None);
    }
    let held = live() - before;
    println!(
        "decode_buf: 1 MiB frame, 100 B arrived: decoder holds {held} B (heap_bytes() = {})",
        decoder.heap_bytes()
    );
    assert!(held < 4096, "holds {held} bytes");
    drop(decoder);

    // 3. The same frame arriving in 4 KiB reads: what is held follows what arrived.
    let before = live();
    let mut decoder = Decoder::new(Role::Server, DecoderConfig::default());
    let mut arrived = 0;
    let mut peak = 0;
    for piece in frame.chunks(4096) {
        let decoded = decoder.decode(piece).unwrap();
        arrived += decoded.consumed;
        let held = live() - before;
        peak = peak.max(held);
        if decoded.message.is_none() {
            // At most twice what arrived (the buffer doubles), plus the allocator's minimum.
            assert!(
                held <= 2 * signed(arrived) + 64,
                "{held} B held for {arrived} B"
            );
        }
    }
    println!(
        "decode: 1 MiB frame in 4 KiB reads: peak {peak} B held ({:.2}x the payload)",
        peak as f64 / f64::from(1u32 << 20)
    );
}

/// Two fragments of one byte each, client to server.
fn two_tiny_fragments() -> (Vec<u8>, Vec<u8>) {
    let encoder = Encoder::new(Role::Client);
    let (mut first, mut second) = (Vec::new(), Vec::new());
    let header = |opcode| FrameHeader {
        fin: false,
        ..FrameHeader::new(opcode, 0)
    };
    encoder
        .encode_frame(header(Opcode::Text), b"a", Some(KEY), &mut first)
        .unwrap();
    encoder
        .encode_frame(header(Opcode::Continuation), b"b", Some(KEY), &mut second)
        .unwrap();
    (first, second)
}

/// Regression: `decode_buf` once kept a first fragment as a slice of the caller's read buffer, so
/// a decoder waiting for the rest of a 1-byte message pinned the caller's whole allocation (64 KiB
/// here) while `heap_bytes()` reported 1. Only whole messages and control frames take the
/// zero-copy path now.
#[test]
fn decode_buf_first_fragment_pins_read_buffer() {
    let _guard = measure();
    let (first, _) = two_tiny_fragments();
    let before = live();
    let mut decoder = Decoder::new(Role::Server, DecoderConfig::default());
    {
        let mut buf = BytesMut::with_capacity(64 * 1024);
        buf.extend_from_slice(&first);
        assert_eq!(decoder.decode_buf(&mut buf).unwrap(), None);
    }
    let held = live() - before;
    println!(
        "decode_buf, 1-byte first fragment from a 64 KiB read buffer: decoder holds {held} B, \
         heap_bytes() = {}",
        decoder.heap_bytes()
    );
    assert!(held < 4096, "holds {held} bytes");
}

/// Regression (found by the `frame_decoder` fuzz target): when the continuation of such a
/// fragment arrived in the same read buffer, `BytesMut::reserve` on the shared slice allocated
/// the read buffer's original capacity (up to 64 KiB), far above the documented bound of about
/// twice `max_message_size`.
#[test]
fn decode_buf_continuation_allocates_read_buffer_capacity() {
    let _guard = measure();
    let (first, second) = two_tiny_fragments();
    let max_message_size = 16;
    let mut decoder = Decoder::new(
        Role::Server,
        DecoderConfig::default().max_message_size(max_message_size),
    );
    let mut buf = BytesMut::with_capacity(8192);
    buf.extend_from_slice(&first);
    buf.extend_from_slice(&second);
    assert_eq!(decoder.decode_buf(&mut buf).unwrap(), None);
    let heap = decoder.heap_bytes();
    println!("decode_buf, two 1-byte fragments, max_message_size 16: heap_bytes() = {heap}");
    assert!(heap <= 2 * (max_message_size as usize + 125) + 64, "{heap}");
}

/// An idle decoder is small, and a whole frame in the input is decoded without the boxed partial
/// state: what is live while the message is held is the message's payload and nothing else
/// (`decode`), or nothing beyond the caller's buffer (`decode_buf`). A frame or message split
/// across calls holds the partial state between them (reported by `heap_bytes()`, to the byte)
/// and nothing once it is complete. The decoder was 184 bytes with all of that inline.
#[test]
fn partial_state_is_boxed_only_between_calls() {
    let _guard = measure();
    let size = std::mem::size_of::<Decoder>();
    println!("size_of::<Decoder>() = {size} bytes");
    assert!(size <= 56, "a decoder is {size} bytes");

    let encoder = Encoder::new(Role::Client);
    let mut frames = Vec::new();
    for (opcode, payload) in [
        (Opcode::Text, &b"[2,\"1\",\"Heartbeat\",{}]"[..]),
        (Opcode::Binary, &[7; 1000][..]),
        (Opcode::Ping, &b""[..]),
        (Opcode::Pong, &b"pong"[..]),
        (Opcode::Text, &[b'x'; 70_000][..]),
    ] {
        let mut wire = Vec::new();
        encoder
            .encode_frame(FrameHeader::new(opcode, 0), payload, Some(KEY), &mut wire)
            .unwrap();
        frames.push((wire, payload.len()));
    }

    // Whole frames through `decode`: what is live is the message's payload (a data message's
    // buffer is `bytes`' shared one, with its header, so that the thread may keep it for the
    // next message once this one is dropped: `ocpp_frame::free_spare_buffers`).
    let mut decoder = Decoder::new(Role::Server, DecoderConfig::default());
    for (wire, len) in &frames {
        ocpp_frame::free_spare_buffers();
        let before = live();
        let decoded = decoder.decode(wire).unwrap();
        assert_eq!(decoded.consumed, wire.len());
        let message = decoded.message.unwrap();
        let payload = live() - before;
        assert!(
            (signed(*len)..=signed(*len) + 64).contains(&payload),
            "decode of a {len} B frame: {payload} B live"
        );
        assert!(decoder.is_idle());
        assert_eq!(decoder.heap_bytes(), 0);
        drop(message);
        ocpp_frame::free_spare_buffers();
        assert_eq!(live(), before);
    }
    // A second message reuses the first one's buffer: no allocation.
    let (wire, len) = &frames[0];
    let first = decoder.decode(wire).unwrap().message;
    drop(first);
    let before = live();
    let again = decoder.decode(wire).unwrap().message.unwrap();
    assert_eq!(live(), before, "the second {len} B message allocated");
    drop(again);
    ocpp_frame::free_spare_buffers();

    // Whole frames through `decode_buf`: the payload is a slice of the caller's buffer.
    let mut buf = BytesMut::with_capacity(128 * 1024);
    // The first split of a `BytesMut` allocates its shared header (`bytes`' doing, once per
    // buffer): done here, so that what follows measures the decoder.
    drop(buf.split());
    for (wire, len) in &frames {
        buf.extend_from_slice(wire);
        ocpp_frame::free_spare_buffers();
        let before = live();
        let message = decoder.decode_buf(&mut buf).unwrap().unwrap();
        assert_eq!(live(), before, "decode_buf of a {len} B frame");
        assert!(buf.is_empty());
        assert!(decoder.is_idle());
        assert_eq!(decoder.heap_bytes(), 0);
        drop(message);
    }
    drop(buf);

    // A frame split across two calls, cut inside the header and inside the payload.
    let (wire, len) = &frames[1];
    for cut in [1, 3, 8, 9, 500, wire.len() - 1] {
        for zero_copy in [false, true] {
            ocpp_frame::free_spare_buffers();
            let before = live();
            let mut decoder = Decoder::new(Role::Server, DecoderConfig::default());
            let first = if zero_copy {
                let mut buf = BytesMut::from(&wire[..cut]);
                assert_eq!(decoder.decode_buf(&mut buf).unwrap(), None);
                assert!(buf.is_empty());
                None
            } else {
                decoder.decode(&wire[..cut]).unwrap().message
            };
            assert_eq!(first, None);
            assert!(!decoder.is_idle(), "cut at {cut}");
            let held = live() - before;
            assert!(held > 0, "cut at {cut}: nothing held");
            assert_eq!(held, signed(decoder.heap_bytes()), "cut at {cut}");
            let second = if zero_copy {
                let mut buf = BytesMut::from(&wire[cut..]);
                decoder.decode_buf(&mut buf).unwrap()
            } else {
                let decoded = decoder.decode(&wire[cut..]).unwrap();
                assert_eq!(decoded.consumed, wire.len() - cut);
                decoded.message
            };
            match second {
                Some(Message::Binary(payload)) => assert_eq!(payload.len(), *len),
                other => panic!("cut at {cut}: {other:?}"),
            }
            assert!(decoder.is_idle());
            assert_eq!(decoder.heap_bytes(), 0, "cut at {cut}");
            drop(decoder);
            ocpp_frame::free_spare_buffers();
            assert_eq!(live(), before, "cut at {cut}");
        }
    }

    // A message in two fragments, each a whole frame: held between them, not after.
    let (first, mut second) = two_tiny_fragments();
    second[0] |= 0x80; // FIN: the continuation ends the message.
    ocpp_frame::free_spare_buffers();
    let before = live();
    let mut decoder = Decoder::new(Role::Server, DecoderConfig::default());
    assert_eq!(decoder.decode(&first).unwrap().message, None);
    assert!(!decoder.is_idle());
    assert_eq!(live() - before, signed(decoder.heap_bytes()));
    let message = decoder.decode(&second).unwrap().message;
    assert_eq!(message, Some(Message::Text("ab".into())));
    assert!(decoder.is_idle());
    assert_eq!(decoder.heap_bytes(), 0);
    drop((message, decoder));
    ocpp_frame::free_spare_buffers();
    assert_eq!(live(), before);
}
