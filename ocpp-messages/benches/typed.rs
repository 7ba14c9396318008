//! Typed decode and encode of BootNotification (1.6), MeterValues (1.6, 10 sampled values) and
//! TransactionEvent (2.0.1): `ocpp-messages` (strict: parse, schema check, build) against
//! `rust-ocpp` 3 + serde_json (no schema check) on the same documents, in the same run.
//!
//! `cargo bench -p ocpp-messages --bench typed`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use ocpp_messages::{v1_6, v2_0_1};

const BOOT_NOTIFICATION: &str = r#"{"chargePointVendor":"VendorX","chargePointModel":"SingleSocketCharger","chargePointSerialNumber":"CP-0001","chargeBoxSerialNumber":"CB-0001","firmwareVersion":"1.2.3","iccid":"89310410106543789301","imsi":"310150123456789","meterType":"ACME meter","meterSerialNumber":"M-42"}"#;

fn meter_values() -> String {
    let sampled: Vec<String> = (0..10)
        .map(|i| {
            format!(
                r#"{{"value":"{}.{i}","context":"Sample.Periodic","format":"Raw","measurand":"Energy.Active.Import.Register","phase":"L1","location":"Outlet","unit":"Wh"}}"#,
                1000 + i
            )
        })
        .collect();
    format!(
        r#"{{"connectorId":1,"transactionId":12345,"meterValue":[{{"timestamp":"2025-01-02T03:04:05Z","sampledValue":[{}]}}]}}"#,
        sampled.join(",")
    )
}

const TRANSACTION_EVENT: &str = r#"{"eventType":"Updated","timestamp":"2025-01-02T03:04:05.123Z","triggerReason":"MeterValuePeriodic","seqNo":7,"offline":false,"numberOfPhasesUsed":3,"cableMaxCurrent":32,"transactionInfo":{"transactionId":"f8c7d1f2-8a3b-4a7e-9d3c-0b1e2f3a4b5c","chargingState":"Charging","timeSpentCharging":3600},"idToken":{"idToken":"04A2B3C4D5E6F7","type":"ISO14443"},"evse":{"id":1,"connectorId":1},"meterValue":[{"timestamp":"2025-01-02T03:04:05Z","sampledValue":[{"value":12345.6,"context":"Sample.Periodic","measurand":"Energy.Active.Import.Register","unitOfMeasure":{"unit":"Wh"}},{"value":7200.5,"measurand":"Power.Active.Import","unitOfMeasure":{"unit":"W"}},{"value":31.9,"measurand":"Current.Import","phase":"L1"}]}]}"#;

fn bench(c: &mut Criterion) {
    let meter_values = meter_values();
    let mut group = c.benchmark_group("typed");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));

    // BootNotification 1.6
    let ours = v1_6::decode_call("BootNotification", BOOT_NOTIFICATION).expect("ours decodes");
    let theirs: rust_ocpp::v1_6::messages::boot_notification::BootNotificationRequest =
        serde_json::from_str(BOOT_NOTIFICATION).expect("rust-ocpp decodes");
    group.bench_function("BootNotification-1.6/decode/ocpp-messages", |b| {
        b.iter(|| v1_6::decode_call("BootNotification", black_box(BOOT_NOTIFICATION)))
    });
    group.bench_function("BootNotification-1.6/decode/rust-ocpp", |b| {
        b.iter(|| {
            serde_json::from_str::<
                rust_ocpp::v1_6::messages::boot_notification::BootNotificationRequest,
            >(black_box(BOOT_NOTIFICATION))
        })
    });
    group.bench_function("BootNotification-1.6/encode/ocpp-messages", |b| {
        b.iter(|| serde_json::to_string(black_box(&ours)))
    });
    group.bench_function("BootNotification-1.6/encode/rust-ocpp", |b| {
        b.iter(|| serde_json::to_string(black_box(&theirs)))
    });

    // MeterValues 1.6, 10 sampled values
    let ours = v1_6::decode_call("MeterValues", &meter_values).expect("ours decodes");
    let theirs: rust_ocpp::v1_6::messages::meter_values::MeterValuesRequest =
        serde_json::from_str(&meter_values).expect("rust-ocpp decodes");
    group.bench_function("MeterValues-1.6/decode/ocpp-messages", |b| {
        b.iter(|| v1_6::decode_call("MeterValues", black_box(&meter_values)))
    });
    group.bench_function("MeterValues-1.6/decode/rust-ocpp", |b| {
        b.iter(|| {
            serde_json::from_str::<rust_ocpp::v1_6::messages::meter_values::MeterValuesRequest>(
                black_box(&meter_values),
            )
        })
    });
    group.bench_function("MeterValues-1.6/encode/ocpp-messages", |b| {
        b.iter(|| serde_json::to_string(black_box(&ours)))
    });
    group.bench_function("MeterValues-1.6/encode/rust-ocpp", |b| {
        b.iter(|| serde_json::to_string(black_box(&theirs)))
    });

    // TransactionEvent 2.0.1
    let ours = v2_0_1::decode_call("TransactionEvent", TRANSACTION_EVENT).expect("ours decodes");
    let theirs: rust_ocpp::v2_0_1::messages::transaction_event::TransactionEventRequest =
        serde_json::from_str(TRANSACTION_EVENT).expect("rust-ocpp decodes");
    group.bench_function("TransactionEvent-2.0.1/decode/ocpp-messages", |b| {
        b.iter(|| v2_0_1::decode_call("TransactionEvent", black_box(TRANSACTION_EVENT)))
    });
    group.bench_function("TransactionEvent-2.0.1/decode/rust-ocpp", |b| {
        b.iter(|| {
            serde_json::from_str::<
                rust_ocpp::v2_0_1::messages::transaction_event::TransactionEventRequest,
            >(black_box(TRANSACTION_EVENT))
        })
    });
    group.bench_function("TransactionEvent-2.0.1/encode/ocpp-messages", |b| {
        b.iter(|| serde_json::to_string(black_box(&ours)))
    });
    group.bench_function("TransactionEvent-2.0.1/encode/rust-ocpp", |b| {
        b.iter(|| serde_json::to_string(black_box(&theirs)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
