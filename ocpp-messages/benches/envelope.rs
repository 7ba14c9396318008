//! Envelope parse and serialize, against the naive way (parsing into `serde_json::Value`).
//!
//! Run with `cargo bench -p ocpp-messages --bench envelope`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use ocpp_messages::envelope::{parse, write_call_result, MessageId, RpcMessage};
use ocpp_messages::version::OcppVersion;
use serde::Serialize;

const BOOT: &[u8] = br#"[2,"7b0d4a7e-6f3c-4f8e-9b3a-2c6d1e5f8a90","BootNotification",{"chargePointVendor":"VendorX","chargePointModel":"SingleSocketCharger","chargePointSerialNumber":"SN-0001234","chargeBoxSerialNumber":"CB-0001234","firmwareVersion":"1.2.3","iccid":"8931440000000000000","imsi":"234150000000000","meterType":"ACME 3000","meterSerialNumber":"M-42"}]"#;

fn meter_values() -> Vec<u8> {
    let sampled: Vec<String> = (0..10)
        .map(|i| {
            format!(
                r#"{{"value":"{}.{}","context":"Sample.Periodic","format":"Raw","measurand":"Energy.Active.Import.Register","phase":"L1","location":"Outlet","unit":"Wh"}}"#,
                1000 + i * 17,
                i
            )
        })
        .collect();
    format!(
        r#"[2,"7b0d4a7e-6f3c-4f8e-9b3a-2c6d1e5f8a91","MeterValues",{{"connectorId":1,"transactionId":123456,"meterValue":[{{"timestamp":"2025-01-01T12:00:00Z","sampledValue":[{}]}}]}}]"#,
        sampled.join(",")
    )
    .into_bytes()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BootNotificationConf<'a> {
    status: &'a str,
    current_time: &'a str,
    interval: u32,
}

fn bench_parse(c: &mut Criterion) {
    let meter = meter_values();
    for (name, bytes) in [("boot_notification", BOOT), ("meter_values_10", &meter[..])] {
        let mut group = c.benchmark_group(format!("parse/{name}"));
        group.throughput(criterion::Throughput::Bytes(bytes.len() as u64));
        group.bench_function("envelope", |b| {
            b.iter(|| {
                let msg = parse(black_box(bytes), OcppVersion::V1_6).unwrap();
                black_box(msg.payload().map(|p| p.get().len()))
            })
        });
        group.bench_function("serde_json_value", |b| {
            b.iter(|| {
                let v: serde_json::Value = serde_json::from_slice(black_box(bytes)).unwrap();
                black_box(v.as_array().map(Vec::len))
            })
        });
        group.finish();
    }
}

fn bench_serialize(c: &mut Criterion) {
    let id = MessageId::new("7b0d4a7e-6f3c-4f8e-9b3a-2c6d1e5f8a90").unwrap();
    let conf = BootNotificationConf {
        status: "Accepted",
        current_time: "2025-01-01T12:00:00Z",
        interval: 300,
    };
    let mut group = c.benchmark_group("serialize/call_result_boot_notification");
    let mut buf = Vec::with_capacity(256);
    group.bench_function("envelope", |b| {
        b.iter(|| {
            buf.clear();
            write_call_result(&mut buf, black_box(&id), black_box(&conf)).unwrap();
            black_box(buf.len())
        })
    });
    group.bench_function("serde_json_value", |b| {
        b.iter_batched_ref(
            Vec::new,
            |out| {
                let v = serde_json::json!([3, black_box(id.as_str()), black_box(&conf)]);
                serde_json::to_writer(&mut *out, &v).unwrap();
                black_box(out.len())
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();

    // Parse a CALL and write its answer, as a server does.
    c.bench_function("parse_and_answer/boot_notification", |b| {
        b.iter(|| {
            buf.clear();
            if let RpcMessage::Call(call) = parse(black_box(BOOT), OcppVersion::V1_6).unwrap() {
                write_call_result(&mut buf, &call.id, &conf).unwrap();
            }
            black_box(buf.len())
        })
    });
}

criterion_group!(benches, bench_parse, bench_serialize);
criterion_main!(benches);
