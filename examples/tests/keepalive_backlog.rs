//! A pong that has arrived is not late, even when the server's loop fell behind.
//!
//! 1,500 charge points (more than the 1,024 readiness events mio-server takes from one `poll`)
//! are pinged by the server; each holds its pong back. The server is stopped (SIGSTOP), every
//! charge point sends its pong, and the server stays stopped until every pong's deadline has
//! passed. When it runs again, all the pongs are in its sockets: a loop that judged the
//! deadlines after its first batch of events would close the charge points whose pongs it had
//! not read yet (`PongTimeout`; seen as 124,743 such closes while a million charge points' nodes
//! were busy restoring their claims, BENCHMARKS.md). None may be closed.
//!
//! mio-server, tokio-server on shards, and tokio-server with a task per connection (the
//! library's default layout: tokio fires the timers that are due after each look at its
//! reactor's first 1,024 events; before its driver read past tokio's readiness, 1 of the 1,500
//! was closed in 4 runs of 7).
//!
//! Each over plain TCP and over TLS, where the pongs wait as TLS records.
//!
//! Bounded: every wait has a deadline; the test takes about 12 s per server.

mod common;

use std::io::ErrorKind;

use common::*;
use rustix::process::{kill_process, Pid, Signal};

/// More charge points than one turn of mio-server's loop takes readiness events for.
const CHARGE_POINTS: usize = 1_500;
const PING_INTERVAL_S: u64 = 2;
const PONG_TIMEOUT_S: u64 = 6;

/// Feeds what the socket holds to the charge point's connection; `false` once it ended.
fn read_available(cp: &mut ChargePoint, buf: &mut [u8]) -> bool {
    loop {
        match cp.stream.read(buf) {
            Ok(0) => return false,
            Ok(n) => cp.connection.handle_data(Instant::now(), &buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    while let Some(event) = cp.connection.poll_event() {
        if matches!(event, Event::Closed(_)) {
            return false;
        }
    }
    true
}

/// Over plain TCP, or over TLS (`wss://`: the pongs wait in the socket as TLS records, which
/// the server must decrypt before it judges their deadlines).
#[derive(Clone, Copy, PartialEq)]
enum Transport {
    Plain,
    Tls,
}

fn pongs_read_after_a_stall_are_in_time(binary: &str, options: &[&str], transport: Transport) {
    let pki = Pki::new("keepalive");
    let mut args: Vec<String> = vec![
        "--ping-interval-s".into(),
        PING_INTERVAL_S.to_string(),
        "--pong-timeout-s".into(),
        PONG_TIMEOUT_S.to_string(),
    ];
    args.extend(options.iter().map(|option| option.to_string()));
    let tls = (transport == Transport::Tls).then(|| {
        args.extend(pki.server_args());
        pki.client(None)
    });
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = ServerProcess::start(binary, &args);
    let pid = Pid::from_child(&server.child);
    let mut cps: Vec<ChargePoint> = (0..CHARGE_POINTS)
        .map(|i| {
            let cp = ChargePoint::connect_with(
                server.ocpp,
                &format!("KA{i:05}"),
                &[OcppVersion::V1_6],
                None,
                tls.as_ref(),
            )
            .expect("upgrade");
            cp.stream
                .socket()
                .set_nonblocking(true)
                .expect("nonblocking");
            cp
        })
        .collect();

    // Every charge point speaks at once (an unsolicited Pong, RFC 6455 5.5.3, masked with a
    // zero key), so that the server's pings, which follow its peers' silence, come together
    // however long the connects took.
    for cp in &mut cps {
        cp.stream
            .write_all(&[0x8A, 0x80, 0, 0, 0, 0])
            .expect("an unsolicited pong");
    }

    // Every charge point's ping: its connection queues the pong, which is not sent yet.
    let mut buf = vec![0u8; 16 * 1024];
    let mut pinged: Vec<Option<Instant>> = vec![None; CHARGE_POINTS];
    let deadline = Instant::now() + Duration::from_secs(30);
    while pinged.iter().any(Option::is_none) {
        assert!(
            Instant::now() < deadline,
            "{} of {CHARGE_POINTS} charge points were not pinged within 30 s",
            pinged.iter().filter(|at| at.is_none()).count()
        );
        for (cp, at) in cps.iter_mut().zip(pinged.iter_mut()) {
            if at.is_none() {
                assert!(read_available(cp, &mut buf), "closed before its ping");
                if !cp.connection.pending_transmit().is_empty() {
                    *at = Some(Instant::now());
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let first = pinged.iter().flatten().min().copied().expect("pinged");
    let last = pinged.iter().flatten().max().copied().expect("pinged");
    assert!(
        last - first < Duration::from_secs(PONG_TIMEOUT_S / 2),
        "the pings spread over {:?}: the first pong would be late before the server stops",
        last - first
    );

    // The server stops; every pong goes out and waits in its socket; every deadline passes.
    kill_process(pid, Signal::STOP).expect("SIGSTOP");
    for cp in &mut cps {
        cp.flush();
    }
    let resume = last + Duration::from_secs(PONG_TIMEOUT_S + 1);
    std::thread::sleep(resume.saturating_duration_since(Instant::now()));
    kill_process(pid, Signal::CONT).expect("SIGCONT");

    // Let it catch up (its next pings come PING_INTERVAL_S after the pongs it reads; their
    // own deadlines are PONG_TIMEOUT_S later), then count the connections it closed.
    std::thread::sleep(Duration::from_secs(3));
    let closed = cps
        .iter_mut()
        .map(|cp| read_available(cp, &mut buf))
        .filter(|open| !open)
        .count();
    assert_eq!(
        closed, 0,
        "{closed} of {CHARGE_POINTS} connections were closed although their pongs had arrived"
    );
}

#[test]
fn mio_server_reads_the_pongs_before_it_judges_their_deadlines() {
    pongs_read_after_a_stall_are_in_time(env!("CARGO_BIN_EXE_mio-server"), &[], Transport::Plain);
}

#[test]
fn mio_server_reads_the_pongs_over_tls_before_it_judges_their_deadlines() {
    pongs_read_after_a_stall_are_in_time(env!("CARGO_BIN_EXE_mio-server"), &[], Transport::Tls);
}

#[test]
fn tokio_server_reads_the_pongs_before_it_judges_their_deadlines() {
    pongs_read_after_a_stall_are_in_time(env!("CARGO_BIN_EXE_tokio-server"), &[], Transport::Plain);
}

#[test]
fn tokio_server_reads_the_pongs_over_tls_before_it_judges_their_deadlines() {
    pongs_read_after_a_stall_are_in_time(env!("CARGO_BIN_EXE_tokio-server"), &[], Transport::Tls);
}

/// The library's default layout: a task per connection, whose deadlines are tokio timers.
#[test]
fn tokio_server_with_a_task_per_connection_reads_the_pongs_before_it_judges_their_deadlines() {
    pongs_read_after_a_stall_are_in_time(
        env!("CARGO_BIN_EXE_tokio-server"),
        &["--shards", "0"],
        Transport::Plain,
    );
}

/// The same over TLS: the driver reads the TLS records past tokio's readiness and decrypts them
/// (`ocpp-tokio/src/driver/past_readiness.rs`).
#[test]
fn tokio_server_with_a_task_per_connection_reads_the_pongs_over_tls_before_it_judges_their_deadlines(
) {
    pongs_read_after_a_stall_are_in_time(
        env!("CARGO_BIN_EXE_tokio-server"),
        &["--shards", "0"],
        Transport::Tls,
    );
}
