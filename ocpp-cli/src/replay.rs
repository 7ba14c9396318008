//! Replaying a capture against a server: for each identity in the capture, connect as it (with
//! the capture's subprotocol), send its CALLs and SENDs (`dir: in`) in order with their
//! original text, each after the previous one was answered, answer the server's CALLs with the
//! answers the capture recorded for that action (in order; `NotImplemented` when it has none
//! left), and compare every answer of the server with the recorded one.
//!
//! Two answers are the same when they are of the same message type and, for a CALLRESULT, their
//! payloads are equal as JSON except for the fields named in the ignore list (by name, at any
//! depth; [`DEFAULT_IGNORED`] by default: values that depend on the time); for a CALLERROR,
//! their error codes are equal. Message ids are never compared (a CALLRESULT is matched to its
//! CALL by id).
//!
//! ```no_run
//! use ocpp_cli::capture::read_capture;
//! use ocpp_cli::replay::{replay, ReplayOptions};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let lines = read_capture(std::io::BufReader::new(std::fs::File::open("capture.jsonl")?))?;
//! let report = replay(&lines, &ReplayOptions::new("ws://127.0.0.1:9000/ocpp")).await;
//! print!("{report}");
//! assert!(report.differences.is_empty());
//! # Ok(()) }
//! ```

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::time::Duration;

use ocpp_messages::OcppVersion;
use serde_json::Value;

use crate::capture::{CaptureDirection, CaptureLine};
use crate::websocket::{Link, LinkError};

/// The fields ignored by default: they change with the time of the run.
pub const DEFAULT_IGNORED: &[&str] = &["currentTime", "timestamp"];

/// How to replay.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReplayOptions {
    /// The server's URL without the identity (`ws://127.0.0.1:9000/ocpp`).
    pub url: String,
    /// The field names ignored when comparing payloads.
    pub ignore: Vec<String>,
    /// How long to wait for each answer.
    pub timeout: Duration,
    /// How long to stay connected after the last answer, answering the server's CALLs.
    pub linger: Duration,
}

impl ReplayOptions {
    /// Against `url`, ignoring [`DEFAULT_IGNORED`], 10 s per answer, 200 ms lingering.
    pub fn new(url: impl Into<String>) -> Self {
        ReplayOptions {
            url: url.into(),
            ignore: DEFAULT_IGNORED.iter().map(|s| s.to_string()).collect(),
            timeout: Duration::from_secs(10),
            linger: Duration::from_millis(200),
        }
    }

    /// Ignores these field names instead.
    pub fn ignore(mut self, fields: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.ignore = fields.into_iter().map(Into::into).collect();
        self
    }

    /// Waits this long for each answer.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Stays connected this long after the last answer.
    pub fn linger(mut self, linger: Duration) -> Self {
        self.linger = linger;
        self
    }
}

/// One answer of the server that differs from the recorded one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The identity.
    pub identity: String,
    /// The action of the CALL answered.
    pub action: String,
    /// The CALL's message id.
    pub id: String,
    /// Where: a JSON path in the payload (`$.interval`), or what part of the message.
    pub path: String,
    /// The recorded value (JSON), or `(absent)`.
    pub recorded: String,
    /// The value of this run (JSON), or `(absent)`.
    pub replayed: String,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DIFF {} {} (id {}) {}: recorded {}, replayed {}",
            self.identity, self.action, self.id, self.path, self.recorded, self.replayed
        )
    }
}

/// What a replay found.
#[derive(Debug, Default)]
pub struct Report {
    /// The identities replayed.
    pub identities: usize,
    /// The station messages sent.
    pub sent: usize,
    /// The server answers compared with recorded ones.
    pub compared: usize,
    /// The server's CALLs answered (from the capture or `NotImplemented`).
    pub answered: usize,
    /// The answers that differ (and the connections that failed, as a difference of path
    /// `connection`).
    pub differences: Vec<Difference>,
    /// Every message of this run, as a capture (`ocpp replay --record`): what was sent and
    /// received, stamped when it was.
    pub transcript: Vec<CaptureLine>,
}

impl Report {
    fn log(&mut self, identity: &str, version: OcppVersion, dir: CaptureDirection, text: &str) {
        self.transcript
            .push(CaptureLine::now(identity, version, dir, text.to_string()));
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for difference in &self.differences {
            writeln!(f, "{difference}")?;
        }
        writeln!(
            f,
            "replayed {} identities: {} messages sent, {} answers compared, {} server CALLs answered, {} differences",
            self.identities,
            self.sent,
            self.compared,
            self.answered,
            self.differences.len()
        )
    }
}

/// One identity's part of a capture.
#[derive(Debug, Default)]
struct Script {
    version: Option<OcppVersion>,
    /// The station's CALLs and SENDs: (id, action, text, expects an answer).
    station: Vec<(String, String, String, bool)>,
    /// The server's recorded answers to them, by id.
    answers: HashMap<String, String>,
    /// The server's CALLs' actions, by id.
    server_calls: HashMap<String, String>,
    /// The station's recorded answers, per action of the server's CALL, in order.
    station_answers: HashMap<String, VecDeque<String>>,
}

/// Splits a capture by identity, in the order identities first appear.
fn scripts(lines: &[CaptureLine]) -> Vec<(String, Script)> {
    let mut order: Vec<String> = Vec::new();
    let mut scripts: HashMap<String, Script> = HashMap::new();
    for line in lines {
        let Ok(Value::Array(frame)) = serde_json::from_str::<Value>(&line.text) else {
            continue;
        };
        let script = scripts.entry(line.identity.clone()).or_insert_with(|| {
            order.push(line.identity.clone());
            Script::default()
        });
        if script.version.is_none() {
            script.version = line.ocpp_version();
        }
        let kind = frame.first().and_then(Value::as_u64);
        let id = frame.get(1).and_then(Value::as_str).unwrap_or_default();
        let action = frame.get(2).and_then(Value::as_str).unwrap_or_default();
        match (line.dir, kind) {
            (CaptureDirection::In, Some(2 | 6)) => {
                script
                    .station
                    .push((id.into(), action.into(), line.text.clone(), kind == Some(2)))
            }
            (CaptureDirection::Out, Some(3 | 4)) => {
                script.answers.insert(id.into(), line.text.clone());
            }
            (CaptureDirection::Out, Some(2)) => {
                script.server_calls.insert(id.into(), action.into());
            }
            (CaptureDirection::In, Some(3 | 4)) => {
                if let Some(action) = script.server_calls.get(id) {
                    script
                        .station_answers
                        .entry(action.clone())
                        .or_default()
                        .push_back(line.text.clone());
                }
            }
            _ => {}
        }
    }
    order
        .into_iter()
        .filter_map(|identity| scripts.remove(&identity).map(|s| (identity, s)))
        .collect()
}

/// Replays `lines` as [`ReplayOptions`] say; identities one after the other.
pub async fn replay(lines: &[CaptureLine], options: &ReplayOptions) -> Report {
    let mut report = Report::default();
    for (identity, script) in scripts(lines) {
        report.identities += 1;
        if let Err(error) = replay_one(&identity, script, options, &mut report).await {
            report.differences.push(Difference {
                identity: identity.clone(),
                action: "-".into(),
                id: "-".into(),
                path: "connection".into(),
                recorded: "(a connection)".into(),
                replayed: error.to_string(),
            });
        }
    }
    report
}

async fn replay_one(
    identity: &str,
    mut script: Script,
    options: &ReplayOptions,
    report: &mut Report,
) -> Result<(), LinkError> {
    let version = script.version.unwrap_or(OcppVersion::V1_6);
    let mut link = Link::connect(&options.url, identity, version).await?;
    let station = std::mem::take(&mut script.station);
    for (id, action, text, expects_answer) in station {
        link.send_text(&text).await?;
        report.log(identity, version, CaptureDirection::In, &text);
        report.sent += 1;
        if !expects_answer {
            continue;
        }
        let answer = await_answer(
            &mut link,
            identity,
            &id,
            &mut script,
            version,
            options,
            report,
        )
        .await?;
        let Some(recorded) = script.answers.get(&id) else {
            continue; // The capture ends before the answer: nothing to compare.
        };
        report.compared += 1;
        let replayed = answer.unwrap_or_default();
        for (path, recorded, replayed) in compare(recorded, &replayed, &options.ignore) {
            report.differences.push(Difference {
                identity: identity.into(),
                action: action.clone(),
                id: id.clone(),
                path,
                recorded,
                replayed,
            });
        }
    }
    // Answer what the server still sends for a moment.
    let _ = tokio::time::timeout(options.linger, async {
        loop {
            match link.next_text().await {
                Ok(text) => {
                    report.log(identity, version, CaptureDirection::Out, &text);
                    answer_server_call(&mut link, identity, &text, &mut script, version, report)
                        .await?;
                }
                Err(error) => return Err::<(), _>(error),
            }
        }
    })
    .await;
    link.close().await;
    Ok(())
}

/// Reads until the answer to `id` arrives (its text, `None` after the timeout), answering the
/// server's CALLs meanwhile.
async fn await_answer(
    link: &mut Link,
    identity: &str,
    id: &str,
    script: &mut Script,
    version: OcppVersion,
    options: &ReplayOptions,
    report: &mut Report,
) -> Result<Option<String>, LinkError> {
    let deadline = tokio::time::Instant::now() + options.timeout;
    loop {
        let text = match tokio::time::timeout_at(deadline, link.next_text()).await {
            Ok(text) => text?,
            Err(_) => return Ok(None),
        };
        report.log(identity, version, CaptureDirection::Out, &text);
        if answer_server_call(link, identity, &text, script, version, report).await? {
            continue;
        }
        let Ok(Value::Array(frame)) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        let is_answer = matches!(frame.first().and_then(Value::as_u64), Some(3 | 4));
        if is_answer && frame.get(1).and_then(Value::as_str) == Some(id) {
            return Ok(Some(text));
        }
    }
}

/// Answers `text` if it is a CALL of the server: with the station's next recorded answer to
/// that action (its id replaced), or `NotImplemented`. Returns whether it was one.
async fn answer_server_call(
    link: &mut Link,
    identity: &str,
    text: &str,
    script: &mut Script,
    version: OcppVersion,
    report: &mut Report,
) -> Result<bool, LinkError> {
    let Ok(Value::Array(frame)) = serde_json::from_str::<Value>(text) else {
        return Ok(false);
    };
    if frame.first().and_then(Value::as_u64) != Some(2) {
        return Ok(false);
    }
    let id = frame.get(1).cloned().unwrap_or(Value::Null);
    let action = frame.get(2).and_then(Value::as_str).unwrap_or_default();
    let recorded = script
        .station_answers
        .get_mut(action)
        .and_then(VecDeque::pop_front)
        .and_then(|text| serde_json::from_str::<Value>(&text).ok());
    let answer = match recorded {
        Some(Value::Array(mut answer)) if answer.len() >= 3 => {
            if let Some(slot) = answer.get_mut(1) {
                *slot = id;
            }
            Value::Array(answer)
        }
        _ => {
            let code = ocpp_messages::ErrorCode::NotImplemented;
            serde_json::json!([4, id, code.as_str(version), "not in the capture", {}])
        }
    };
    let answer = answer.to_string();
    link.send_text(&answer).await?;
    report.log(identity, version, CaptureDirection::In, &answer);
    report.answered += 1;
    Ok(true)
}

/// The differences between a recorded answer and a replayed one: (path, recorded, replayed).
pub fn compare(recorded: &str, replayed: &str, ignore: &[String]) -> Vec<(String, String, String)> {
    let absent = || "(absent)".to_string();
    let parse = |text: &str| match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(frame)) => Some(frame),
        _ => None,
    };
    let (Some(recorded), Some(replayed)) = (parse(recorded), parse(replayed)) else {
        let show = |text: &str| {
            if text.is_empty() {
                "(no answer)".to_string()
            } else {
                text.to_string()
            }
        };
        return vec![("message".into(), show(recorded), show(replayed))];
    };
    let kind = |frame: &[Value]| frame.first().and_then(Value::as_u64);
    if kind(&recorded) != kind(&replayed) {
        let name = |frame: &[Value]| match kind(frame) {
            Some(3) => "CALLRESULT".to_string(),
            Some(4) => format!(
                "CALLERROR {}",
                frame.get(2).and_then(Value::as_str).unwrap_or_default()
            ),
            _ => "(unknown)".to_string(),
        };
        return vec![("message type".into(), name(&recorded), name(&replayed))];
    }
    let mut differences = Vec::new();
    if kind(&recorded) == Some(4) {
        let code = |frame: &[Value]| frame.get(2).map(Value::to_string).unwrap_or_else(absent);
        if code(&recorded) != code(&replayed) {
            differences.push(("error code".into(), code(&recorded), code(&replayed)));
        }
        return differences;
    }
    let null = Value::Null;
    walk(
        "$",
        recorded.get(2).unwrap_or(&null),
        replayed.get(2).unwrap_or(&null),
        ignore,
        &mut differences,
    );
    differences
}

fn walk(
    path: &str,
    recorded: &Value,
    replayed: &Value,
    ignore: &[String],
    out: &mut Vec<(String, String, String)>,
) {
    match (recorded, replayed) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                if ignore.iter().any(|name| name == key) {
                    continue;
                }
                let here = format!("{path}.{key}");
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => walk(&here, x, y, ignore, out),
                    (x, y) => out.push((here, show(x), show(y))),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for index in 0..a.len().max(b.len()) {
                let here = format!("{path}[{index}]");
                match (a.get(index), b.get(index)) {
                    (Some(x), Some(y)) => walk(&here, x, y, ignore, out),
                    (x, y) => out.push((here, show(x), show(y))),
                }
            }
        }
        (a, b) if a != b => out.push((path.to_string(), a.to_string(), b.to_string())),
        _ => {}
    }
}

fn show(value: Option<&Value>) -> String {
    value.map_or_else(|| "(absent)".to_string(), Value::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ignored() -> Vec<String> {
        DEFAULT_IGNORED.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn time_fields_and_ids_are_ignored() {
        let a =
            r#"[3,"1",{"currentTime":"2026-01-01T00:00:00Z","interval":300,"status":"Accepted"}]"#;
        let b =
            r#"[3,"9",{"currentTime":"2026-02-02T00:00:00Z","interval":300,"status":"Accepted"}]"#;
        assert!(compare(a, b, &ignored()).is_empty());
    }

    #[test]
    fn a_changed_field_is_reported_with_its_path() {
        let a = r#"[3,"1",{"idTagInfo":{"status":"Accepted"}}]"#;
        let b = r#"[3,"1",{"idTagInfo":{"status":"Invalid"}}]"#;
        assert_eq!(
            compare(a, b, &ignored()),
            vec![(
                "$.idTagInfo.status".to_string(),
                "\"Accepted\"".to_string(),
                "\"Invalid\"".to_string()
            )]
        );
    }

    #[test]
    fn a_result_against_an_error_is_a_difference() {
        let a = r#"[3,"1",{}]"#;
        let b = r#"[4,"1","NotImplemented","",{}]"#;
        assert_eq!(compare(a, b, &ignored())[0].0, "message type");
    }
}
