//! The capture format: one OCPP-J message per line, as JSON, seen from the central system.
//!
//! ```text
//! {"t_ms":1764904260123,"identity":"CP1","version":"ocpp1.6","dir":"in","text":"[2,\"1\",\"Heartbeat\",{}]"}
//! {"t_ms":1764904260125,"identity":"CP1","version":"ocpp1.6","dir":"out","text":"[3,\"1\",{\"currentTime\":\"2026-12-05T03:11:00.125Z\"}]"}
//! ```
//!
//! | field | meaning |
//! | --- | --- |
//! | `t_ms` | when, in milliseconds since the Unix epoch |
//! | `identity` | the charge point's identity (the last segment of its URL) |
//! | `version` | the WebSocket subprotocol of the connection: `ocpp1.6`, `ocpp2.0.1`, `ocpp2.1` |
//! | `dir` | `in`: from the station to the central system; `out`: from the central system |
//! | `text` | the OCPP-J message, one WebSocket text message |
//!
//! Lines are in the order the messages were seen; a CALLRESULT's action is that of the CALL
//! with its id earlier in the capture, in the other direction. Empty lines are skipped.
//!
//! [`CaptureRecorder`] writes captures from ocpp-tokio's message hook
//! ([`ServerBuilder::on_message`](ocpp_tokio::ServerBuilder::on_message)). That hook sees the
//! messages decoded, not their bytes, so the `text` it records is the message serialised again
//! from its typed value: the same content (numbers keep their digits), but object keys in the
//! schema's order and the message id as the server holds it. A CALL that the core refused
//! before the application saw it (bad JSON, a schema violation) is answered by the core alone
//! and appears in neither direction; an error answer is recorded only once a message of its
//! identity told the recorder the connection's version.
//!
//! ```
//! use std::sync::Arc;
//! use ocpp_cli::capture::CaptureRecorder;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let file = std::fs::File::create("capture.jsonl")?;
//! let recorder = Arc::new(CaptureRecorder::new(file));
//! let server = ocpp_tokio::Server::builder()
//!     .handler(ocpp_tokio::Router::<()>::default())
//!     .on_message(recorder.hook())
//!     .bind("127.0.0.1:9000")
//!     .await?;
//! # let _ = server; Ok(()) }
//! ```

use std::collections::HashMap;
use std::io::{self, BufRead, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use ocpp_messages::envelope::{write_call, write_call_error, write_call_result, write_send};
use ocpp_messages::{ErrorCode, MessageId, OcppVersion};
use ocpp_tokio::hook::{MessageEvent, Traffic};
use ocpp_tokio::CallFailure;
use serde::{Deserialize, Serialize};

/// Which way a message went, as the central system sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CaptureDirection {
    /// From the station to the central system.
    In,
    /// From the central system to the station.
    Out,
}

impl CaptureDirection {
    /// The other way.
    pub fn opposite(self) -> CaptureDirection {
        match self {
            CaptureDirection::In => CaptureDirection::Out,
            CaptureDirection::Out => CaptureDirection::In,
        }
    }
}

/// One line of a capture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureLine {
    /// When, in milliseconds since the Unix epoch.
    pub t_ms: u64,
    /// The charge point's identity.
    pub identity: String,
    /// The connection's subprotocol (`ocpp1.6`...).
    pub version: String,
    /// Which way the message went.
    pub dir: CaptureDirection,
    /// The OCPP-J text.
    pub text: String,
}

/// Why a capture could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// The capture could not be read.
    #[error("reading the capture: {0}")]
    Io(#[from] io::Error),
    /// A line is not a capture line.
    #[error("line {line}: not a capture line: {reason}")]
    Line {
        /// The line number, from 1.
        line: usize,
        /// What is wrong.
        reason: String,
    },
}

impl CaptureLine {
    /// A line stamped now.
    pub fn now(identity: &str, version: OcppVersion, dir: CaptureDirection, text: String) -> Self {
        CaptureLine {
            t_ms: now_ms(),
            identity: identity.to_string(),
            version: version.subprotocol().to_string(),
            dir,
            text,
        }
    }

    /// The line's OCPP version, if its `version` is one we know.
    pub fn ocpp_version(&self) -> Option<OcppVersion> {
        self.version.parse().ok()
    }

    /// The line as one line of JSON, without the newline.
    pub fn to_json(&self) -> String {
        // A struct of strings and an integer always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads one line of JSON.
    ///
    /// # Errors
    /// The serde error's text when the line is not a capture line.
    pub fn from_json(line: &str) -> Result<CaptureLine, String> {
        serde_json::from_str(line).map_err(|e| e.to_string())
    }
}

/// Reads every line of a capture.
///
/// # Errors
/// [`CaptureError`] on the first line that cannot be read.
pub fn read_capture(reader: impl BufRead) -> Result<Vec<CaptureLine>, CaptureError> {
    let mut lines = Vec::new();
    for (index, line) in reader.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed = CaptureLine::from_json(&line).map_err(|reason| CaptureError::Line {
            line: index + 1,
            reason,
        })?;
        lines.push(parsed);
    }
    Ok(lines)
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Writes the capture of a server from its message hook: one [`CaptureLine`] per message,
/// flushed at once (a capture is read while the server runs).
///
/// Write errors cannot stop the server: they are counted ([`CaptureRecorder::write_errors`]).
/// It keeps one entry per identity seen (its connection's version, for the error answers, which
/// the hook gives without one).
pub struct CaptureRecorder<W: Write + Send> {
    inner: Mutex<Recorder<W>>,
    write_errors: AtomicU64,
}

struct Recorder<W> {
    out: W,
    /// The version of each identity's connection, learnt from its typed messages.
    versions: HashMap<String, OcppVersion>,
}

impl<W: Write + Send> std::fmt::Debug for CaptureRecorder<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureRecorder")
            .field("write_errors", &self.write_errors.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<W: Write + Send + 'static> CaptureRecorder<W> {
    /// A recorder writing to `out`.
    pub fn new(out: W) -> Self {
        CaptureRecorder {
            inner: Mutex::new(Recorder {
                out,
                versions: HashMap::new(),
            }),
            write_errors: AtomicU64::new(0),
        }
    }

    /// The function to give [`ServerBuilder::on_message`](ocpp_tokio::ServerBuilder::on_message).
    pub fn hook(self: &Arc<Self>) -> impl Fn(&MessageEvent<'_>) + Send + Sync + 'static + use<W> {
        let recorder = Arc::clone(self);
        move |event| recorder.record(event)
    }

    /// How many lines could not be written.
    pub fn write_errors(&self) -> u64 {
        self.write_errors.load(Ordering::Relaxed)
    }

    /// Records one message of the hook (nothing for a call outcome that is no message: a
    /// timeout, a lost connection).
    pub fn record(&self, event: &MessageEvent<'_>) {
        let Ok(mut inner) = self.inner.lock() else {
            self.write_errors.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let Some((version, dir, text)) = serialise(event, &mut inner.versions) else {
            return;
        };
        let line = CaptureLine::now(event.identity, version, dir, text).to_json();
        let written = writeln!(inner.out, "{line}").and_then(|()| inner.out.flush());
        if written.is_err() {
            self.write_errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records a message this process sent or received itself (a mock peer's own traffic).
    pub fn record_text(
        &self,
        identity: &str,
        version: OcppVersion,
        dir: CaptureDirection,
        text: String,
    ) {
        let Ok(mut inner) = self.inner.lock() else {
            self.write_errors.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let line = CaptureLine::now(identity, version, dir, text).to_json();
        let written = writeln!(inner.out, "{line}").and_then(|()| inner.out.flush());
        if written.is_err() {
            self.write_errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The version, direction and OCPP-J text of a hook's message.
fn serialise(
    event: &MessageEvent<'_>,
    versions: &mut HashMap<String, OcppVersion>,
) -> Option<(OcppVersion, CaptureDirection, String)> {
    let id = event.id;
    let mut buf = Vec::new();
    let mut learnt = None;
    match event.message {
        Traffic::CallIn(request) | Traffic::CallOut(request) => {
            learnt = Some(request.version());
            write_call(&mut buf, id, request.action(), request).ok()?;
        }
        Traffic::SendIn(request) | Traffic::SendOut(request) => {
            learnt = Some(request.version());
            write_send(&mut buf, id, request.action(), request).ok()?;
        }
        Traffic::ResultOut(response) | Traffic::OutcomeIn(Ok(response)) => {
            learnt = Some(response.version());
            write_call_result(&mut buf, id, response).ok()?;
        }
        Traffic::ErrorOut { code, description } => {
            let version = *versions.get(event.identity)?;
            write_error(&mut buf, version, id, code, description)?;
        }
        Traffic::OutcomeIn(Err(CallFailure::ErrorResponse {
            code, description, ..
        })) => {
            let version = *versions.get(event.identity)?;
            write_error(&mut buf, version, id, code, description)?;
        }
        // A timeout, a lost connection...: nothing went over the wire.
        Traffic::OutcomeIn(Err(_)) => return None,
        // A message kind added to the hook later.
        #[allow(unreachable_patterns)]
        _ => return None,
    }
    // In: what the peer sent (its CALL or SEND, its answer to ours); out: what we sent.
    let dir = match event.message {
        Traffic::CallIn(_) | Traffic::SendIn(_) | Traffic::OutcomeIn(_) => CaptureDirection::In,
        _ => CaptureDirection::Out,
    };
    if let Some(version) = learnt {
        if versions.get(event.identity) != Some(&version) {
            versions.insert(event.identity.to_string(), version);
        }
    }
    let version = learnt.or_else(|| versions.get(event.identity).copied())?;
    Some((version, dir, String::from_utf8(buf).ok()?))
}

fn write_error(
    buf: &mut Vec<u8>,
    version: OcppVersion,
    id: &MessageId<'_>,
    code: &ErrorCode,
    description: &str,
) -> Option<()> {
    write_call_error(buf, version, id, code, description, None).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_round_trips() {
        let line = CaptureLine::now(
            "CP1",
            OcppVersion::V2_0_1,
            CaptureDirection::In,
            r#"[2,"1","Heartbeat",{}]"#.into(),
        );
        let json = line.to_json();
        assert!(json.contains(r#""dir":"in""#), "{json}");
        assert!(json.contains(r#""version":"ocpp2.0.1""#), "{json}");
        assert_eq!(CaptureLine::from_json(&json), Ok(line));
    }
}
