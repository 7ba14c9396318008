//! Right after a charge point connected to one node, a command for it posted to another node
//! reaches it: a node answers the WebSocket handshake (101) only once the charge point's claim
//! is registered in Redis (PROTOCOL.md 6.1), so a charge point that has seen its handshake
//! complete can be found from every node; it is never 404 there. For `mio-server` and
//! `tokio-server` as the node the charge point connects to: a `redis-server` of the test's own
//! on a free loopback port and the server processes (`common`), every wait bounded.
//!
//! The node the charge point connects to reaches Redis through a loopback proxy that delays
//! every byte by [`DELAY`] (a Redis farther away than the charge point is, as across a data
//! centre): a node that answered the handshake before its claim was registered loses the race
//! every time, not one time in ten.
//!
//! Needs `redis-server` on the PATH (`apt-get install -y redis-server`).

mod common;

use std::net::TcpListener;
use std::sync::atomic::AtomicBool;

use common::cluster::*;
use common::redis_server::RedisServer;
use common::*;

const TOKIO: &str = env!("CARGO_BIN_EXE_tokio-server");
const MIO: &str = env!("CARGO_BIN_EXE_mio-server");

/// How many charge points connect, one after another, each with a command at once.
const ATTEMPTS: usize = 20;
/// The delay of the proxy between node b and Redis, each way.
const DELAY: Duration = Duration::from_millis(40);

/// A loopback TCP proxy to `upstream` that hands on every chunk [`DELAY`] after it came (no
/// reordering, no throttling beyond that); stopped when dropped (its threads end with their
/// sockets).
struct DelayProxy {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl DelayProxy {
    fn start(upstream: u16) -> DelayProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                            continue;
                        };
                        for (from, to) in [
                            (client.try_clone().unwrap(), server.try_clone().unwrap()),
                            (server, client),
                        ] {
                            Self::pipe(from, to);
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        DelayProxy { port, stop }
    }

    /// `from` → `to`, each chunk [`DELAY`] late; ends (shutting `to` down) with `from`.
    fn pipe(mut from: TcpStream, mut to: TcpStream) {
        let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
        std::thread::spawn(move || {
            let mut buf = [0u8; 16 * 1024];
            while let Ok(n) = from.read(&mut buf) {
                if n == 0
                    || tx
                        .send((Instant::now() + DELAY, buf[..n].to_vec()))
                        .is_err()
                {
                    break;
                }
            }
        });
        std::thread::spawn(move || {
            for (due, chunk) in rx {
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
                if to.write_all(&chunk).is_err() {
                    break;
                }
            }
            let _ = to.shutdown(std::net::Shutdown::Both);
        });
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Node `a` on `redis`, node `b` (two threads) on `redis` through a [`DelayProxy`].
fn nodes(binary: &str, redis: &RedisServer) -> (ServerProcess, ServerProcess, DelayProxy) {
    let a = node(binary, redis, "a", &[]);
    let proxy = DelayProxy::start(redis.port);
    let url = proxy.url();
    let b = ServerProcess::start(
        binary,
        &["--redis", &url, "--node-id", "b", "--threads", "2"],
    );
    redis.wait_inbox("b");
    (a, b, proxy)
}

/// Charge points connect to `b` one by one; the moment each has its 101, a Reset for it is
/// posted to `a`'s admin API and answered by the charge point: 200 every time. Redis names b
/// as the holder by then.
fn a_command_right_after_the_handshake_reaches_the_charge_point(
    redis: &RedisServer,
    a: &ServerProcess,
    b: &ServerProcess,
    tag: &str,
) {
    let mut statuses = Vec::with_capacity(ATTEMPTS);
    for n in 0..ATTEMPTS {
        let identity = format!("{tag}-{n}");
        let mut cp = connect(b, &identity);
        let admin = a.admin;
        let path = format!("/chargepoints/{identity}/call/Reset");
        let command = std::thread::spawn(move || http(admin, "POST", &path, r#"{"type":"Soft"}"#));
        let holder = redis.query(&format!("HGET ocpp:cp:{identity} node"));
        assert_eq!(
            holder.as_deref(),
            Some("b"),
            "{identity}: not claimed at its 101"
        );
        // The Reset comes only if a found the charge point; answer it when it does.
        let deadline = Instant::now() + WAIT;
        while !command.is_finished() {
            assert!(Instant::now() < deadline, "{identity}: no answer from a");
            if let Some(Event::Call { id, request }) =
                cp.next_event_within(Duration::from_millis(20))
            {
                assert_eq!(request.action(), "Reset");
                cp.respond(&id, reset_accepted());
            }
        }
        let (status, body) = command.join().unwrap();
        assert_ne!(
            status, 404,
            "{identity}: 404 right after its handshake on b: {body}"
        );
        assert_eq!(status, 200, "{identity}: {body}");
        statuses.push(status);
        drop(cp);
    }
    assert_eq!(statuses.len(), ATTEMPTS);
}

#[test]
fn mio_server_registers_a_charge_point_before_its_handshake_completes() {
    let redis = RedisServer::start();
    let (a, b, _proxy) = nodes(MIO, &redis);
    a_command_right_after_the_handshake_reaches_the_charge_point(&redis, &a, &b, "MIO");
}

#[test]
fn tokio_server_registers_a_charge_point_before_its_handshake_completes() {
    let redis = RedisServer::start();
    let (a, b, _proxy) = nodes(TOKIO, &redis);
    a_command_right_after_the_handshake_reaches_the_charge_point(&redis, &a, &b, "TOKIO");
}
