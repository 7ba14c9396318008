//! The soak's side door: commands sent to random charge points through the server's admin
//! HTTP API (`POST /chargepoints/ID/call/ACTION`) at a steady rate, every HTTP outcome
//! counted, and the server's `/metrics` read before and after.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ocpp_messages::version::OcppVersion;

use super::phase::PhaseStats;

/// Threads that send commands: one waiting out a slow answer (a 504 after the call timeout)
/// leaves the others on their schedule.
const SENDERS: usize = 16;

/// A command the driver sends: action, body, weight.
type Template = (&'static str, &'static str, u32);

/// OCPP 1.6 commands, and what the swarm answers: TriggerMessage (then sends the message),
/// DataTransfer, GetConfiguration, RemoteStartTransaction (starts a session when idle),
/// Reset (a clean close a second later), ChangeAvailability (a CALLERROR NotSupported: a
/// 502 with an error body).
const COMMANDS_16: &[Template] = &[
    ("TriggerMessage", r#"{"requestedMessage":"Heartbeat"}"#, 3),
    (
        "TriggerMessage",
        r#"{"requestedMessage":"StatusNotification","connectorId":1}"#,
        2,
    ),
    (
        "DataTransfer",
        r#"{"vendorId":"soak","messageId":"ping","data":"x"}"#,
        3,
    ),
    ("GetConfiguration", "{}", 2),
    (
        "RemoteStartTransaction",
        r#"{"idTag":"REMOTE1","connectorId":1}"#,
        2,
    ),
    (
        "ChangeAvailability",
        r#"{"connectorId":0,"type":"Operative"}"#,
        1,
    ),
    ("Reset", r#"{"type":"Soft"}"#, 1),
];

/// The commands valid in 2.0.1 and 2.1 too.
const COMMANDS_2X: &[Template] = &[
    ("TriggerMessage", r#"{"requestedMessage":"Heartbeat"}"#, 1),
    (
        "DataTransfer",
        r#"{"vendorId":"soak","messageId":"ping"}"#,
        1,
    ),
];

/// One HTTP/1.1 request with `Connection: close`: the status and the body. `timeout` bounds
/// the connect and every read.
pub(crate) fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
    timeout: Duration,
) -> io::Result<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::other("no HTTP status"))?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

/// The server's `/metrics`: every sample line as name → value.
pub(crate) fn metrics(addr: SocketAddr) -> Result<BTreeMap<String, f64>, String> {
    let (status, body) = http(addr, "GET", "/metrics", "", Duration::from_secs(10))
        .map_err(|e| format!("GET /metrics: {e}"))?;
    if status != 200 {
        return Err(format!("GET /metrics: {status}"));
    }
    Ok(body
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (name, value) = line.split_once(' ')?;
            Some((name.to_string(), value.trim().parse().ok()?))
        })
        .collect())
}

/// The command senders, running until stopped.
pub(crate) struct CommandDriver {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<PhaseStats>>,
}

impl CommandDriver {
    /// Starts sending `per_s` commands a second to random identities `prefix000000`...
    pub(crate) fn start(
        admin: SocketAddr,
        per_s: f64,
        count: usize,
        prefix: &str,
        version: OcppVersion,
        call_timeout: Duration,
    ) -> CommandDriver {
        let stop = Arc::new(AtomicBool::new(false));
        let templates = if version == OcppVersion::V1_6 {
            COMMANDS_16
        } else {
            COMMANDS_2X
        };
        let interval = Duration::from_secs_f64(SENDERS as f64 / per_s.max(1e-3));
        let threads = (0..SENDERS)
            .map(|index| {
                let stop = stop.clone();
                let prefix = prefix.to_string();
                std::thread::spawn(move || {
                    let mut sender = Sender {
                        admin,
                        count,
                        prefix,
                        templates,
                        // A command past the server's own deadline (call timeout + its grace)
                        // is a hang.
                        limit: call_timeout + Duration::from_secs(15),
                        rng: fastrand::Rng::with_seed(0xc0de + index as u64),
                        stats: PhaseStats::new("commands", 0),
                    };
                    let offset = interval.mul_f64(index as f64 / SENDERS as f64);
                    sender.run(&stop, Instant::now() + offset, interval);
                    sender.stats
                })
            })
            .collect();
        CommandDriver { stop, threads }
    }

    /// Stops sending, waits for the commands in flight (each bounded) and merges the counts.
    pub(crate) fn finish(self) -> PhaseStats {
        self.stop.store(true, Ordering::Relaxed);
        let mut all = PhaseStats::new("commands", 0);
        for thread in self.threads {
            if let Ok(stats) = thread.join() {
                all.merge(&stats);
            }
        }
        all
    }
}

struct Sender {
    admin: SocketAddr,
    count: usize,
    prefix: String,
    templates: &'static [Template],
    limit: Duration,
    rng: fastrand::Rng,
    stats: PhaseStats,
}

impl Sender {
    fn run(&mut self, stop: &AtomicBool, mut next: Instant, interval: Duration) {
        let total: u32 = self.templates.iter().map(|t| t.2).sum();
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            if next > now {
                std::thread::sleep((next - now).min(Duration::from_millis(200)));
                continue;
            }
            let mut pick = self.rng.u32(..total.max(1));
            let (action, body, _) = *self
                .templates
                .iter()
                .find(|t| {
                    if pick < t.2 {
                        true
                    } else {
                        pick -= t.2;
                        false
                    }
                })
                .unwrap_or(&self.templates[0]);
            let identity = format!("{}{:06}", self.prefix, self.rng.usize(..self.count));
            self.send(&identity, action, body);
            next += interval;
            let now = Instant::now();
            if next < now {
                let missed = ((now - next).as_secs_f64() / interval.as_secs_f64()) as u64;
                self.stats.add("commands_behind_schedule", missed);
                next = now;
            }
        }
    }

    fn send(&mut self, identity: &str, action: &str, body: &str) {
        let started = Instant::now();
        let path = format!("/chargepoints/{identity}/call/{action}");
        self.stats.add("commands_sent", 1);
        self.stats.add(&format!("commands_{action}"), 1);
        let outcome = http(self.admin, "POST", &path, body, self.limit);
        let took = started.elapsed();
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let name = match &outcome {
            Ok((502, body)) if body.contains("\"error\":{") => "http_502_callerror".to_string(),
            Ok((502, _)) => "http_502_disconnected".to_string(),
            Ok((status, _)) => format!("http_{status}"),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                "commands_hung".to_string()
            }
            Err(e) => {
                tracing::warn!(identity, action, "command failed: {e}");
                "commands_failed".to_string()
            }
        };
        if let Ok((status, _)) = &outcome {
            self.stats.record("command", nanos);
            if *status == 200 {
                self.stats.record("command_200", nanos);
            }
        }
        self.stats.add(&name, 1);
    }
}
