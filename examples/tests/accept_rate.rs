//! `--accept-rate` on the servers: a storm of connections is taken at the rate, the others
//! waiting in the listen backlog (`ocpp_proto::accept`): all are accepted and booted in the
//! end (none refused), the handshakes are spread over time at about the rate (measured from
//! the client side, with wide bounds), a charge point connected before the storm keeps getting
//! answers during it, and the metrics count the connections kept waiting.

mod common;

use std::sync::Barrier;

use common::*;

const STORM: usize = 60;

fn a_connection_storm_is_accepted_at_the_rate(binary: &str, extra: &[&str]) {
    // 20 a second, 5 at once: 60 at once take about 2.75 s (5, then one per 50 ms).
    let mut args = vec!["--accept-rate", "20/5"];
    args.extend_from_slice(extra);
    let server = ServerProcess::start(binary, &args);
    let boot = r#"{"chargePointVendor":"ACME","chargePointModel":"Fast-50"}"#;
    let mut old = ChargePoint::connect(server.ocpp, "OLD", &[OcppVersion::V1_6], None).unwrap();
    assert_eq!(old.call("BootNotification", boot)["status"], "Accepted");
    // The burst fills again (one slot of 50 ms per loop is enough; leave a margin).
    std::thread::sleep(Duration::from_millis(500));

    let barrier = Arc::new(Barrier::new(STORM + 1));
    let ocpp = server.ocpp;
    let storm: Vec<_> = (0..STORM)
        .map(|i| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                let started = Instant::now();
                let identity = format!("STORM{i}");
                let mut cp = ChargePoint::connect(ocpp, &identity, &[OcppVersion::V1_6], None)
                    .unwrap_or_else(|e| panic!("{identity} refused: {e:?}"));
                let connected = started.elapsed();
                let status = cp.call("BootNotification", boot)["status"].clone();
                (connected, status, cp)
            })
        })
        .collect();
    barrier.wait();
    let started = Instant::now();
    // The charge point connected before the storm is answered all through it.
    let mut heartbeats = 0;
    while !storm.iter().all(|t| t.is_finished()) {
        assert!(started.elapsed() < WAIT, "the storm did not end");
        let answer = old.call("Heartbeat", "{}");
        assert!(answer["currentTime"].is_string(), "{answer}");
        heartbeats += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut times = Vec::new();
    let mut charge_points = Vec::new();
    for task in storm {
        let (connected, status, cp) = task.join().expect("a storm charge point failed");
        assert_eq!(status, "Accepted");
        times.push(connected);
        charge_points.push(cp);
    }
    times.sort();
    let last = times[STORM - 1];
    // 60 at 20/s with a burst of 5 take about 2.75 s; the bounds are wide on purpose.
    assert!(last >= Duration::from_millis(1_500), "too fast: {times:?}");
    assert!(heartbeats >= 5, "{heartbeats} heartbeats during {last:?}");
    // An upgrade completes after its accept, so by 1 s at most 5 + 20 (+ slack) completed.
    let within_one_second = times
        .iter()
        .filter(|t| **t <= Duration::from_secs(1))
        .count();
    assert!(
        within_one_second <= 32,
        "{within_one_second} by 1 s: {times:?}"
    );

    let (status, metrics) = http(server.admin, "GET", "/metrics", "");
    assert_eq!(status, 200);
    assert!(
        metrics.contains(&format!("ocpp_sockets_accepted_total {}\n", STORM + 1)),
        "{metrics}"
    );
    let deferred: u64 = metrics
        .lines()
        .find_map(|line| line.strip_prefix("ocpp_accepts_deferred_total "))
        .expect("ocpp_accepts_deferred_total")
        .parse()
        .unwrap();
    // About 55 (each one past the burst waited for its slot); at least some, certainly.
    assert!((10..=STORM as u64).contains(&deferred), "{metrics}");
    drop(charge_points);
    old.close();
}

#[test]
fn mio_server() {
    a_connection_storm_is_accepted_at_the_rate(env!("CARGO_BIN_EXE_mio-server"), &[]);
}

#[test]
fn tokio_server() {
    a_connection_storm_is_accepted_at_the_rate(env!("CARGO_BIN_EXE_tokio-server"), &[]);
}

/// Two loops share the rate (each takes half); the ring's accept gives way to one accept per
/// slot.
#[test]
fn uring_server() {
    if cfg!(not(target_os = "linux")) {
        return eprintln!("skipped: uring-server needs io_uring (Linux)");
    }
    a_connection_storm_is_accepted_at_the_rate(
        env!("CARGO_BIN_EXE_uring-server"),
        &["--threads", "2"],
    );
}
