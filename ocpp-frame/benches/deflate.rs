//! permessage-deflate: encoding (compress + frame) and decoding (unmask + inflate + UTF-8) of a
//! typical OCPP MeterValues CALL (about 1 KB) and a 64 KiB JSON message, with and without
//! context takeover, against the uncompressed encode and decode of the same message in the same
//! run (criterion figures move with the machine's load: quote ratios, see BENCHMARKS.md).
//!
//! `cargo bench -p ocpp-frame --bench deflate -- --warm-up-time 1 --measurement-time 3`
//!
//! Prints the wire size of each message, compressed and not (the bytes in/out ratio), once.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ocpp_frame::deflate::{Compressor, DeflateConfig, DeflateParams};
use ocpp_frame::{Decoder, DecoderConfig, Encoder, Message, Opcode, Role};

/// A MeterValues CALL (OCPP 1.6) with 9 sampled values: about 1 KB.
fn meter_values(i: usize) -> String {
    let samples: Vec<String> = [
        ("Energy.Active.Import.Register", "Wh", "12345.6"),
        ("Power.Active.Import", "W", "7360.0"),
        ("Current.Import", "A", "32.0"),
        ("Voltage", "V", "230.1"),
        ("SoC", "Percent", "57"),
        ("Temperature", "Celsius", "31.5"),
        ("Frequency", "Hz", "50.0"),
        ("Power.Offered", "W", "11000"),
        ("Current.Offered", "A", "16.0"),
    ]
    .iter()
    .map(|(measurand, unit, value)| {
        format!(
            r#"{{"value":"{value}","context":"Sample.Periodic","format":"Raw","measurand":"{measurand}","phase":"L1","location":"Outlet","unit":"{unit}"}}"#
        )
    })
    .collect();
    format!(
        r#"[2,"{i:08}","MeterValues",{{"connectorId":1,"transactionId":{i},"meterValue":[{{"timestamp":"2026-11-30T01:{:02}:00Z","sampledValue":[{}]}}]}}]"#,
        i % 60,
        samples.join(",")
    )
}

/// A 64 KiB JSON message: many MeterValues in a DataTransfer-like array.
fn big_json() -> String {
    let mut json = String::from("[");
    let mut i = 0;
    while json.len() < 64 * 1024 - 1100 {
        json.push_str(&meter_values(i));
        json.push(',');
        i += 1;
    }
    json.push_str("{}]");
    json
}

fn params(no_context_takeover: bool) -> DeflateParams {
    DeflateParams {
        server_no_context_takeover: no_context_takeover,
        client_no_context_takeover: no_context_takeover,
        ..DeflateParams::default()
    }
}

const KEY: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

fn bench(c: &mut Criterion) {
    let config = DeflateConfig::default().min_compress_size(0);
    let messages = [
        ("meter_values_1k", meter_values(7)),
        ("json_64k", big_json()),
    ];
    for (name, message) in &messages {
        let mut group = c.benchmark_group(format!("deflate/{name}"));
        group.throughput(Throughput::Bytes(message.len() as u64));
        let plain = {
            let mut out = Vec::new();
            Encoder::new(Role::Client)
                .encode_text(message, Some(KEY), &mut out)
                .unwrap();
            out
        };
        group.bench_function("encode/uncompressed", |b| {
            let mut out = Vec::with_capacity(plain.len());
            b.iter(|| {
                out.clear();
                Encoder::new(Role::Client)
                    .encode_text(black_box(message), Some(KEY), &mut out)
                    .unwrap();
                black_box(out.len())
            })
        });
        group.bench_function("decode/uncompressed", |b| {
            let mut decoder = Decoder::new(Role::Server, DecoderConfig::default());
            b.iter(|| {
                let decoded = decoder.decode(black_box(&plain)).unwrap();
                black_box(decoded.message)
            })
        });
        for (mode, no_context_takeover) in
            [("no_context_takeover", true), ("context_takeover", false)]
        {
            let params = params(no_context_takeover);
            // The steady state: the message after a first one (with context takeover, the
            // second message refers back to the first).
            let mut compressor = Compressor::new(Role::Client, &params, &config);
            let mut first = Vec::new();
            let encoder = Encoder::new(Role::Client);
            encoder
                .encode_compressed(
                    &mut compressor,
                    Opcode::Text,
                    message.as_bytes(),
                    Some(KEY),
                    &mut first,
                )
                .unwrap();
            let mut wire = Vec::new();
            encoder
                .encode_compressed(
                    &mut compressor,
                    Opcode::Text,
                    message.as_bytes(),
                    Some(KEY),
                    &mut wire,
                )
                .unwrap();
            println!(
                "deflate/{name}/{mode}: {} bytes of text, {} on the wire uncompressed, {} compressed \
                 (first message {}), ratio {:.3}",
                message.len(),
                plain.len(),
                wire.len(),
                first.len(),
                wire.len() as f64 / plain.len() as f64
            );
            group.bench_function(BenchmarkId::new("encode", mode), |b| {
                let mut compressor = Compressor::new(Role::Client, &params, &config);
                let mut out = Vec::with_capacity(plain.len());
                b.iter(|| {
                    out.clear();
                    encoder
                        .encode_compressed(
                            &mut compressor,
                            Opcode::Text,
                            black_box(message.as_bytes()),
                            Some(KEY),
                            &mut out,
                        )
                        .unwrap();
                    black_box(out.len())
                })
            });
            if no_context_takeover {
                // Every message inflates on its own: decode the same one again and again.
                group.bench_function(BenchmarkId::new("decode", mode), |b| {
                    let mut decoder =
                        Decoder::new(Role::Server, DecoderConfig::default()).with_deflate(&params);
                    b.iter(|| {
                        let decoded = decoder.decode(black_box(&wire)).unwrap();
                        assert!(matches!(decoded.message, Some(Message::Text(_))));
                        black_box(decoded.message)
                    })
                });
            } else {
                // A stream with context takeover can only be inflated in order: a fresh
                // compressor/decoder pair per batch of 100 messages.
                let mut stream = Vec::new();
                let mut compressor = Compressor::new(Role::Client, &params, &config);
                for _ in 0..100 {
                    encoder
                        .encode_compressed(
                            &mut compressor,
                            Opcode::Text,
                            message.as_bytes(),
                            Some(KEY),
                            &mut stream,
                        )
                        .unwrap();
                }
                group.throughput(Throughput::Bytes(100 * message.len() as u64));
                group.bench_function(BenchmarkId::new("decode_x100", mode), |b| {
                    b.iter(|| {
                        let mut decoder = Decoder::new(Role::Server, DecoderConfig::default())
                            .with_deflate(&params);
                        let mut input = &stream[..];
                        for _ in 0..100 {
                            let decoded = decoder.decode(input).unwrap();
                            input = &input[decoded.consumed..];
                            black_box(decoded.message);
                        }
                    })
                });
                group.throughput(Throughput::Bytes(message.len() as u64));
            }
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
