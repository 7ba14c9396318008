//! Masking throughput: `apply_mask` against the bytewise reference and against a plain
//! `copy_from_slice` of the same size (memcpy: about the most any pass over the bytes can do).
//!
//! `cargo bench -p ocpp-frame --bench mask -- --warm-up-time 1 --measurement-time 3`
//!
//! Two safe candidates for a faster `apply_mask` are measured alongside (`u64_words`,
//! `chunks32`); they are not used by the crate.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ocpp_frame::mask::{apply_mask, apply_mask_bytewise};

/// The key rotated so that its first byte applies to `buf[0]`.
fn rotated(key: [u8; 4], offset: usize) -> [u8; 4] {
    let shift = offset % 4;
    [
        key[shift],
        key[(shift + 1) % 4],
        key[(shift + 2) % 4],
        key[(shift + 3) % 4],
    ]
}

/// Candidate: 8 bytes at a time through `u64`.
fn mask_u64_words(buf: &mut [u8], key: [u8; 4], offset: usize) {
    let rotated = rotated(key, offset);
    let word = u64::from_ne_bytes([
        rotated[0], rotated[1], rotated[2], rotated[3], rotated[0], rotated[1], rotated[2],
        rotated[3],
    ]);
    let mut chunks = buf.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(chunk);
        chunk.copy_from_slice(&(u64::from_ne_bytes(bytes) ^ word).to_ne_bytes());
    }
    for (i, byte) in chunks.into_remainder().iter_mut().enumerate() {
        *byte ^= rotated[i % 4];
    }
}

/// Candidate: 32-byte blocks XORed with a 32-byte key pattern (the compiler vectorises the
/// fixed-length zip), then a byte at a time.
fn mask_chunks32(buf: &mut [u8], key: [u8; 4], offset: usize) {
    let rotated = rotated(key, offset);
    let pattern: [u8; 32] = core::array::from_fn(|i| rotated[i % 4]);
    let mut chunks = buf.chunks_exact_mut(32);
    for chunk in &mut chunks {
        for (byte, k) in chunk.iter_mut().zip(pattern.iter()) {
            *byte ^= k;
        }
    }
    for (i, byte) in chunks.into_remainder().iter_mut().enumerate() {
        *byte ^= rotated[i % 4];
    }
}

fn mask(c: &mut Criterion) {
    let key = [0x37, 0xfa, 0x21, 0x3d];
    // The candidates must agree with the reference before they are timed.
    for len in [0, 1, 7, 31, 33, 100, 1000] {
        for offset in 0..4 {
            let data: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut expected = data.clone();
            apply_mask_bytewise(&mut expected, key, offset);
            for candidate in [apply_mask, mask_u64_words, mask_chunks32] {
                let mut got = data.clone();
                candidate(&mut got, key, offset);
                assert_eq!(got, expected, "len {len} offset {offset}");
            }
        }
    }

    let mut group = c.benchmark_group("mask");
    for (label, len) in [("20B", 20usize), ("1KiB", 1024), ("64KiB", 64 * 1024)] {
        group.throughput(Throughput::Bytes(len as u64));
        let mut buf = vec![0x5a_u8; len];
        let src = vec![0xa5_u8; len];
        group.bench_function(BenchmarkId::new("apply_mask", label), |b| {
            b.iter(|| apply_mask(black_box(&mut buf), black_box(key), 0))
        });
        group.bench_function(BenchmarkId::new("bytewise", label), |b| {
            b.iter(|| apply_mask_bytewise(black_box(&mut buf), black_box(key), 0))
        });
        group.bench_function(BenchmarkId::new("memcpy", label), |b| {
            b.iter(|| black_box(&mut buf).copy_from_slice(black_box(&src)))
        });
        group.bench_function(BenchmarkId::new("u64_words", label), |b| {
            b.iter(|| mask_u64_words(black_box(&mut buf), black_box(key), 0))
        });
        group.bench_function(BenchmarkId::new("chunks32", label), |b| {
            b.iter(|| mask_chunks32(black_box(&mut buf), black_box(key), 0))
        });
    }
    group.finish();
}

criterion_group!(benches, mask);
criterion_main!(benches);
