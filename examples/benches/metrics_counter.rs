//! One counter increment, the hot-path cost of a metric: the CSMS's own atomics
//! (`ocpp_reference_csms::Counter`, rendered by hand behind `GET /metrics`) against the `metrics` facade with
//! `metrics-exporter-prometheus` installed as the global recorder, through a handle kept
//! (`metrics::Counter`, registered once) and through the `counter!` macro at each increment
//! (a key lookup in the recorder's registry each time). Also one render of the exposition
//! text, 20 counters, each way.
//!
//! `cargo bench -p ocpp-examples --bench metrics_counter`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use ocpp_reference_csms::{Counter, Metrics};

fn increments(c: &mut Criterion) {
    let handle = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .expect("the only recorder");
    let mut group = c.benchmark_group("counter_increment");
    let ours = Counter::default();
    group.bench_function("csms_atomic", |b| b.iter(|| black_box(&ours).inc()));
    let kept = metrics::counter!("ocpp_messages_in_total");
    group.bench_function("metrics_handle", |b| {
        b.iter(|| black_box(&kept).increment(1))
    });
    group.bench_function("metrics_macro", |b| {
        b.iter(|| metrics::counter!("ocpp_messages_out_total").increment(1))
    });
    group.bench_function("metrics_macro_labelled", |b| {
        b.iter(|| metrics::counter!("ocpp_calls_total", "action" => "Heartbeat").increment(1))
    });
    group.finish();

    let mut group = c.benchmark_group("render");
    let ours = Metrics::default();
    ours.messages_in.inc();
    group.bench_function("csms_render", |b| b.iter(|| black_box(ours.render())));
    for i in 0..20 {
        metrics::counter!(format!("ocpp_counter_{i}_total")).increment(1);
    }
    group.bench_function("prometheus_render", |b| {
        b.iter(|| black_box(handle.render()))
    });
    group.finish();
}

criterion_group!(benches, increments);
criterion_main!(benches);
