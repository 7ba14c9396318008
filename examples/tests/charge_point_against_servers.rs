//! Our `charge-point` against our `mio-server` and `tokio-server`, as processes on loopback: a
//! charging session, a command sent down through the admin interface, then the server killed
//! and restarted on the same port, and the charge point reconnecting by itself.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The longest any wait in these tests may take.
const WAIT: Duration = Duration::from_secs(30);

/// A child process killed (by its PID) when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a server binary; returns it with its OCPP and admin addresses (from its first line,
/// `NAME listening on ADDR (admin on ADDR)`).
fn start_server(binary: &str, listen: &str) -> (Process, SocketAddr, SocketAddr) {
    let mut child = Command::new(binary)
        .env("OCPP_DATABASE_URL", "memory")
        .args(["--listen", listen, "--admin", "127.0.0.1:0"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start server");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let process = Process(child);
    let line = rx.recv_timeout(WAIT).expect("the server did not start");
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(&words[1..3], ["listening", "on"], "{line}");
    let ocpp = words[3].parse().expect("ocpp address");
    let admin = words[6]
        .trim_end_matches(')')
        .parse()
        .expect("admin address");
    (process, ocpp, admin)
}

/// One HTTP request to the admin interface: status and body.
fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect_timeout(&addr, WAIT).expect("admin connect");
    stream.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("admin response");
    let status = response[9..12].parse().expect("status");
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Polls the admin interface until `done` holds for the charge point's state (bounded).
fn wait_for(admin: SocketAddr, identity: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, body) = http(admin, "GET", &format!("/chargepoints/{identity}"), "");
        if status == 200 {
            let state: Value = serde_json::from_str(&body).expect("json");
            if done(&state) {
                return state;
            }
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn session_command_restart(server: &str, version: &str, identity: &str) {
    let (first, ocpp, admin) = start_server(server, "127.0.0.1:0");
    let _charge_point = Process(
        Command::new(env!("CARGO_BIN_EXE_charge-point"))
            .args(["--url", &format!("ws://{ocpp}/ocpp/{identity}")])
            .args(["--version", version, "--session", "--session-s", "2"])
            .args(["--meter-interval-s", "1", "--duration-s", "120"])
            .args(["--retry-wait-min-s", "0.2", "--retry-random-range-s", "0.2"])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start charge-point"),
    );

    // A whole charging session, seen from the CSMS.
    let state = wait_for(admin, identity, "a finished session", |s| {
        s["status"] == "Accepted" && s["transactions"][0]["ended"].is_string()
    });
    assert_eq!(state["version"], version);
    assert!(
        state["transactions"][0]["energy_wh"]
            .as_f64()
            .unwrap_or(0.0)
            > 0.0,
        "{state}"
    );

    // A command down, answered by the charge point.
    let (status, body) = http(
        admin,
        "POST",
        &format!("/chargepoints/{identity}/call/DataTransfer"),
        r#"{"vendorId":"acme","data":"hello"}"#,
    );
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(answer["result"]["status"], "Accepted", "{body}");

    // The server dies and comes back on the same port: the charge point reconnects and boots.
    drop(first);
    let (_second, again, admin) = start_server(server, &ocpp.to_string());
    assert_eq!(again, ocpp);
    wait_for(admin, identity, "a reconnect", |s| {
        s["connected"] == true && s["status"] == "Accepted"
    });
}

#[test]
fn charge_point_against_mio_server_on_1_6() {
    session_command_restart(env!("CARGO_BIN_EXE_mio-server"), "1.6", "CPM16");
}

#[test]
fn charge_point_against_tokio_server_on_2_0_1() {
    session_command_restart(env!("CARGO_BIN_EXE_tokio-server"), "2.0.1", "CPT201");
}
