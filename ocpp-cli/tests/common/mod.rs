//! Running the `ocpp` binary in tests: bounded waits, and only the processes started here are
//! killed (by their handle, on drop). And a writer the tests read back ([`SharedWriter`]).
#![allow(dead_code, unreachable_pub)]

use std::io::{self, BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// The binary under test.
pub const OCPP: &str = env!("CARGO_BIN_EXE_ocpp");

/// Runs `ocpp args...` to the end (at most `limit`), with `stdin` as its input.
pub fn run(args: &[&str], stdin: Option<&str>, limit: Duration) -> Output {
    let mut child = Command::new(OCPP)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ocpp");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write stdin");
    } else {
        drop(child.stdin.take());
    }
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().expect("output");
            panic!(
                "ocpp {args:?} did not finish within {limit:?}; stdout: {}",
                String::from_utf8_lossy(&output.stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A file in the test's scratch directory.
pub fn scratch(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ocpp-cli-{}-{name}", std::process::id()))
}

/// A mock CSMS (`ocpp csms`) on a free loopback port, its stdout (the capture) in a file.
pub struct Csms {
    child: Child,
    /// Where it listens.
    pub addr: String,
    /// Its capture.
    pub capture: PathBuf,
}

impl Csms {
    /// Starts one, giving `interval` in its BootNotification answers.
    pub fn start(name: &str, interval: u32) -> Csms {
        let capture = scratch(&format!("{name}.jsonl"));
        let file = std::fs::File::create(&capture).expect("capture file");
        let mut child = Command::new(OCPP)
            .args([
                "csms",
                "--listen",
                "127.0.0.1:0",
                "--interval",
                &interval.to_string(),
            ])
            .stdout(file)
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ocpp csms");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(addr) = line.strip_prefix("listening on ") {
                    let _ = tx.send(addr.to_string());
                }
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(addr) => addr,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("ocpp csms did not say where it listens");
            }
        };
        Csms {
            child,
            addr,
            capture,
        }
    }

    /// The URL for stations, without the identity.
    pub fn url(&self) -> String {
        format!("ws://{}/ocpp", self.addr)
    }

    /// The capture so far.
    pub fn capture_text(&self) -> String {
        std::fs::read_to_string(&self.capture).unwrap_or_default()
    }

    /// Waits (at most `limit`) until the capture has `lines` lines.
    pub fn wait_for_lines(&self, lines: usize, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let text = self.capture_text();
            if text.lines().count() >= lines || Instant::now() > deadline {
                return text;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Csms {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.capture);
    }
}

/// The station side of a day in the field, 1.6 and 2.0.1.
pub const SCRIPT: &[&str] = &[
    r#"{"t_ms":1,"identity":"CP1","version":"ocpp1.6","dir":"in","text":"[2,\"1\",\"BootNotification\",{\"chargePointVendor\":\"ACME\",\"chargePointModel\":\"X\"}]"}"#,
    r#"{"t_ms":2,"identity":"CP1","version":"ocpp1.6","dir":"in","text":"[2,\"2\",\"StatusNotification\",{\"connectorId\":1,\"errorCode\":\"NoError\",\"status\":\"Available\"}]"}"#,
    r#"{"t_ms":3,"identity":"CP1","version":"ocpp1.6","dir":"in","text":"[2,\"3\",\"Authorize\",{\"idTag\":\"TAG1\"}]"}"#,
    r#"{"t_ms":4,"identity":"CP1","version":"ocpp1.6","dir":"in","text":"[2,\"4\",\"StartTransaction\",{\"connectorId\":1,\"idTag\":\"TAG1\",\"meterStart\":0,\"timestamp\":\"2026-01-01T00:00:00Z\"}]"}"#,
    r#"{"t_ms":5,"identity":"CP1","version":"ocpp1.6","dir":"in","text":"[2,\"5\",\"MeterValues\",{\"connectorId\":1,\"transactionId\":1,\"meterValue\":[{\"timestamp\":\"2026-01-01T00:01:00Z\",\"sampledValue\":[{\"value\":\"100\"}]}]}]"}"#,
    r#"{"t_ms":6,"identity":"CP1","version":"ocpp1.6","dir":"in","text":"[2,\"6\",\"StopTransaction\",{\"transactionId\":1,\"meterStop\":200,\"timestamp\":\"2026-01-01T00:02:00Z\"}]"}"#,
    r#"{"t_ms":7,"identity":"CP1","version":"ocpp1.6","dir":"in","text":"[2,\"7\",\"Heartbeat\",{}]"}"#,
    r#"{"t_ms":8,"identity":"CP2","version":"ocpp2.0.1","dir":"in","text":"[2,\"a\",\"BootNotification\",{\"chargingStation\":{\"model\":\"m\",\"vendorName\":\"v\"},\"reason\":\"PowerUp\"}]"}"#,
    r#"{"t_ms":9,"identity":"CP2","version":"ocpp2.0.1","dir":"in","text":"[2,\"b\",\"TransactionEvent\",{\"eventType\":\"Started\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"triggerReason\":\"Authorized\",\"seqNo\":0,\"transactionInfo\":{\"transactionId\":\"T1\"},\"idToken\":{\"idToken\":\"TAG2\",\"type\":\"ISO14443\"}}]"}"#,
    r#"{"t_ms":10,"identity":"CP2","version":"ocpp2.0.1","dir":"in","text":"[2,\"c\",\"Heartbeat\",{}]"}"#,
];

/// A writer the test can read while the server writes.
#[derive(Clone, Default)]
pub struct SharedWriter(pub Arc<Mutex<Vec<u8>>>);

impl Write for SharedWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
