//! A test kit for the tests of ocpp-tokio's users: a mock central system ([`MockCsms`])
//! and a mock charging station ([`MockStation`]) on a loopback port, answering by a script,
//! calling the other side, and recording every message in and out ([`Frame`]).
//!
//! Both are ocpp-tokio's own [`Server`](ocpp_tokio::Server) and
//! [`Station`](ocpp_tokio::Station) with a scripted handler and the message hook: what they put
//! on the wire went through the same rules as your code's.
//!
//! - A script answers a CALL by its action: a table ([`MockCsmsBuilder::answer`],
//!   [`MockStationBuilder::answer`]: a JSON payload) or a closure
//!   ([`MockCsmsBuilder::answer_with`]: the version, the action and the CALL's payload give
//!   `Some(payload)`, or `None` for the table and the defaults). The payload is decoded
//!   strictly as the version's answer: one that does not validate goes out as CALLERROR
//!   `InternalError`, and shows in the record as such.
//! - [`MockCsms`]'s defaults validate against the schemas of each version: BootNotification
//!   (Accepted), Heartbeat, StatusNotification, MeterValues, Authorize (Accepted),
//!   StartTransaction (Accepted, transactionIds 1, 2, 3...), StopTransaction,
//!   TransactionEvent (with an Accepted `idTokenInfo` when the event carries an `idToken`);
//!   anything else is CALLERROR `NotSupported`. [`MockStation`] answers `NotSupported` to
//!   whatever its script does not name.
//! - Every wait is bounded ([`DEFAULT_WAIT`], or the builders' `wait`): a test that waits
//!   for what never comes fails with [`TestKitError::Timeout`], it does not hang.
//! - [`WireChargePoint`] is a charge point on the wire that the test drives step by step:
//!   the core of `ocpp-proto` over a socket of its own (plain TCP, TLS...), for the tests of a
//!   central system's or a relay's behaviour on a real connection.
//! - A long-running mock (a command-line tool's) takes its own address
//!   ([`MockCsmsBuilder::listen`]), hands every message to a hook of its own as well
//!   ([`MockCsmsBuilder::on_message`], [`MockStationBuilder::on_message`]) and keeps only the
//!   last frames ([`MockCsmsBuilder::keep_frames`]).
//!
//! ```
//! use ocpp_tokio::station::{Evse, IdToken, Station, StationStopReason};
//! use ocpp_test_kit::MockCsms;
//! use ocpp_tokio::OcppVersion;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let csms = MockCsms::builder().versions([OcppVersion::V2_0_1]).start().await?;
//! let station = Station::builder(&csms.url("CP001"))?.versions([OcppVersion::V2_0_1]).connect()?;
//! station.accepted().await?;
//! station.start_transaction(Evse::new(1).with_connector(1), IdToken::new("TAG", "ISO14443"), 0).await?;
//! station.stop_transaction(1, 1_200, StationStopReason::Local).await?;
//! let events = csms.wait_for_calls("TransactionEvent", 2).await?;
//! assert_eq!(events[1]["transactionInfo"]["stoppedReason"], "Local");
//! station.close();
//! # Ok(()) }
//! ```

#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod central_system;
mod station;
mod wire;

pub use central_system::{MockCsms, MockCsmsBuilder};
pub use station::{MockStation, MockStationBuilder};
pub use wire::WireChargePoint;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use ocpp_messages::{DecodeOptions, Request, Response};
use ocpp_proto::{Answer, CallFailure, ErrorCode, OcppVersion};
use ocpp_tokio::hook::{MessageEvent, Traffic};
use ocpp_tokio::station::StationError;
use ocpp_tokio::IncomingCall;
use serde_json::{json, Value};
use tokio::sync::Notify;

/// A hook of the user's own, called with every message after the kit recorded it.
type Hook = Arc<dyn Fn(&MessageEvent<'_>) + Send + Sync>;

/// How long a wait of the kit lasts by default.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// Which way a message went, as the mock sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MockDirection {
    /// Received by the mock.
    In,
    /// Sent by the mock.
    Out,
}

/// What kind of OCPP-J message a [`Frame`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// A CALL.
    Call,
    /// A CALLRESULT.
    CallResult,
    /// A CALLERROR.
    CallError,
    /// A SEND (OCPP 2.1).
    Send,
}

/// One message the mock sent or received, recorded when it went or came.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Frame {
    /// When it was recorded.
    pub at: SystemTime,
    /// The station's identity.
    pub identity: String,
    /// In or out, from the mock's side.
    pub direction: MockDirection,
    /// CALL, CALLRESULT, CALLERROR, SEND.
    pub kind: FrameKind,
    /// The message id.
    pub id: String,
    /// The action (of the CALL a CALLRESULT or CALLERROR answers).
    pub action: String,
    /// The payload; a CALLERROR's is `{"errorCode": ..., "errorDescription": ...}`.
    pub payload: Value,
}

impl Frame {
    /// A CALL of `action` (either way).
    ///
    /// ```
    /// use ocpp_test_kit::Frame;
    /// fn boots(frames: &[Frame]) -> usize { frames.iter().filter(|f| f.is_call("BootNotification")).count() }
    /// # let _ = boots;
    /// ```
    #[must_use]
    pub fn is_call(&self, action: &str) -> bool {
        self.kind == FrameKind::Call && self.action == action
    }
}

/// Why the kit failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestKitError {
    /// The loopback port could not be bound.
    #[error("bind: {0}")]
    Bind(String),
    /// The station could not be started.
    #[error(transparent)]
    Station(#[from] StationError),
    /// What was waited for did not come in time.
    #[error("timed out waiting for {0}")]
    Timeout(String),
    /// No station of this identity is connected.
    #[error("{0} is not connected")]
    NotConnected(String),
    /// A payload that is not the version's CALL of that action.
    #[error("payload: {0}")]
    Payload(String),
    /// The CALL failed (a CALLERROR, no answer, the connection ended...).
    #[error(transparent)]
    Call(#[from] CallFailure),
    /// The connection ended (an upgrade refused, a close) while waiting for something else.
    #[error("{waiting_for}: the connection ended ({:?})", .closed.reason)]
    Closed {
        /// What was waited for.
        waiting_for: String,
        /// How the connection ended.
        closed: Box<ocpp_proto::Closed>,
    },
    /// Another event came than the one waited for.
    #[error("unexpected event: {0}")]
    UnexpectedEvent(String),
    /// The core refused (an identity it cannot use, an answer to no CALL, a SEND it cannot
    /// send...).
    #[error("refused: {0}")]
    Refused(String),
    /// The socket failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

/// Every message recorded, in order; shared by the mock and its hook.
#[derive(Default)]
struct Record {
    frames: Mutex<Vec<Frame>>,
    /// Keep only the last this many frames (`None`: all).
    keep: Option<usize>,
    /// The version of each identity's last CALL (a CALLERROR's code is spelt for it).
    versions: Mutex<HashMap<String, OcppVersion>>,
    changed: Notify,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Record {
    fn frames(&self) -> Vec<Frame> {
        lock(&self.frames).clone()
    }

    fn push(
        &self,
        identity: &str,
        direction: MockDirection,
        kind: FrameKind,
        id: &str,
        action: String,
        payload: Value,
    ) {
        {
            let mut frames = lock(&self.frames);
            frames.push(Frame {
                at: SystemTime::now(),
                identity: identity.to_owned(),
                direction,
                kind,
                id: id.to_owned(),
                action,
                payload,
            });
            if let Some(keep) = self.keep {
                let extra = frames.len().saturating_sub(keep);
                frames.drain(..extra);
            }
        }
        self.changed.notify_waiters();
    }

    /// The action of the CALL `id` of `identity` recorded last.
    fn action_of(&self, identity: &str, id: &str) -> String {
        lock(&self.frames)
            .iter()
            .rev()
            .find(|f| f.kind == FrameKind::Call && f.id == id && f.identity == identity)
            .map(|f| f.action.clone())
            .unwrap_or_default()
    }

    fn request(
        &self,
        identity: &str,
        direction: MockDirection,
        kind: FrameKind,
        id: &str,
        request: &Request,
    ) {
        lock(&self.versions).insert(identity.to_owned(), request.version());
        let payload = serde_json::to_value(request).unwrap_or(Value::Null);
        self.push(
            identity,
            direction,
            kind,
            id,
            request.action().to_owned(),
            payload,
        );
    }

    fn result(&self, identity: &str, direction: MockDirection, id: &str, response: &Response) {
        let payload = serde_json::to_value(response).unwrap_or(Value::Null);
        let action = response.action().to_owned();
        self.push(
            identity,
            direction,
            FrameKind::CallResult,
            id,
            action,
            payload,
        );
    }

    fn error(
        &self,
        identity: &str,
        direction: MockDirection,
        id: &str,
        code: &ErrorCode,
        description: &str,
    ) {
        let version = lock(&self.versions)
            .get(identity)
            .copied()
            .unwrap_or(OcppVersion::V2_0_1);
        let payload = json!({"errorCode": code.as_str(version), "errorDescription": description});
        let action = self.action_of(identity, id);
        self.push(
            identity,
            direction,
            FrameKind::CallError,
            id,
            action,
            payload,
        );
    }

    /// Records one message of the hook; `inbound` is the direction of a CALL that comes in.
    fn on_message(&self, event: &MessageEvent<'_>) {
        let (identity, id) = (event.identity, event.id.as_str());
        match event.message {
            Traffic::CallIn(request) => {
                self.request(identity, MockDirection::In, FrameKind::Call, id, request)
            }
            Traffic::CallOut(request) => {
                self.request(identity, MockDirection::Out, FrameKind::Call, id, request)
            }
            Traffic::SendIn(request) => {
                self.request(identity, MockDirection::In, FrameKind::Send, id, request)
            }
            Traffic::SendOut(request) => {
                self.request(identity, MockDirection::Out, FrameKind::Send, id, request)
            }
            Traffic::ResultOut(response) => self.result(identity, MockDirection::Out, id, response),
            Traffic::ErrorOut { code, description } => {
                self.error(identity, MockDirection::Out, id, code, description);
            }
            Traffic::OutcomeIn(Ok(response)) => {
                self.result(identity, MockDirection::In, id, response)
            }
            Traffic::OutcomeIn(Err(CallFailure::ErrorResponse {
                code, description, ..
            })) => self.error(identity, MockDirection::In, id, code, description),
            // No answer came (a timeout, a lost connection): no message to record.
            _ => {}
        }
    }

    /// A record keeping the last `keep` frames (`None`: all), and the hook that records every
    /// message into it, then hands it to the user's own `user_hook`: what a mock gives its
    /// server or station.
    fn recording(
        keep: Option<usize>,
        user_hook: Option<Hook>,
    ) -> (
        Arc<Record>,
        impl Fn(&MessageEvent<'_>) + Send + Sync + 'static,
    ) {
        let record = Arc::new(Record {
            keep,
            ..Record::default()
        });
        let recorder = record.clone();
        let hook = move |event: &MessageEvent<'_>| {
            recorder.on_message(event);
            if let Some(hook) = &user_hook {
                hook(event);
            }
        };
        (record, hook)
    }

    /// The payloads of the CALLs of `action` the peer sent so far: what both mocks' `calls`
    /// give.
    fn calls(&self, action: &str) -> Vec<Value> {
        calls_of(&lock(&self.frames), MockDirection::In, action)
    }

    /// Waits (at most `wait`) until the peer sent `count` CALLs of `action`; their payloads.
    async fn wait_for_calls(
        &self,
        wait: Duration,
        action: &str,
        count: usize,
    ) -> Result<Vec<Value>, TestKitError> {
        let what = format!("{count} {action} CALL(s)");
        self.wait_until(wait, &what, |frames| {
            let calls = calls_of(frames, MockDirection::In, action);
            (calls.len() >= count).then_some(calls)
        })
        .await
    }

    /// Waits until `done` holds for the frames, at most `wait`.
    async fn wait_until<T>(
        &self,
        wait: Duration,
        what: &str,
        done: impl Fn(&[Frame]) -> Option<T>,
    ) -> Result<T, TestKitError> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let changed = self.changed.notified();
            if let Some(found) = done(&lock(&self.frames)) {
                return Ok(found);
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return Err(TestKitError::Timeout(what.to_owned()));
            }
        }
    }
}

/// The payloads of the CALLs of `action` coming `direction`.
fn calls_of(frames: &[Frame], direction: MockDirection, action: &str) -> Vec<Value> {
    frames
        .iter()
        .filter(|f| f.direction == direction && f.is_call(action))
        .map(|f| f.payload.clone())
        .collect()
}

/// A script's closure: the version, the action and the CALL's payload give the answer's
/// payload, or `None` for the table and the defaults.
type ScriptFn = dyn Fn(OcppVersion, &str, &Value) -> Option<Value> + Send + Sync;

/// How a mock answers.
#[derive(Default)]
struct Script {
    closure: Option<Box<ScriptFn>>,
    table: HashMap<String, Value>,
}

impl Script {
    /// The scripted payload for `call`, if any.
    fn scripted(&self, call: &IncomingCall) -> Option<Value> {
        let payload = || serde_json::to_value(call.request()).unwrap_or(Value::Null);
        if let Some(closure) = &self.closure {
            if let Some(answer) = closure(call.version(), call.action(), &payload()) {
                return Some(answer);
            }
        }
        self.table.get(call.action()).cloned()
    }
}

/// The answer of a mock to `call`: the `scripted` payload as the version's answer
/// ([`answer_of`]), or CALLERROR `NotSupported` when there is none.
fn scripted_answer(call: &IncomingCall, scripted: Option<Value>) -> Answer {
    match scripted {
        Some(payload) => answer_of(call.version(), call.action(), &payload),
        None => Answer::not_supported(call.action()),
    }
}

/// `payload` as the version's answer to `action`, strictly decoded; CALLERROR
/// `InternalError` when it is not one.
fn answer_of(version: OcppVersion, action: &str, payload: &Value) -> Answer {
    match Response::decode(
        version,
        action,
        &payload.to_string(),
        &DecodeOptions::strict(),
    ) {
        Ok(response) => Answer::Result(response),
        Err(error) => Answer::error(
            ErrorCode::InternalError,
            format!("the scripted {action} answer is not valid: {error}"),
        ),
    }
}

/// `payload` as the version's CALL of `action`, strictly decoded.
fn request_of(
    version: OcppVersion,
    action: &str,
    payload: &Value,
) -> Result<Request, TestKitError> {
    Request::decode(
        version,
        action,
        &payload.to_string(),
        &DecodeOptions::strict(),
    )
    .map_err(|e| TestKitError::Payload(format!("{action}: {e}")))
}

/// The payload of an answer the mock's call got.
fn payload_of(response: &Response) -> Result<Value, TestKitError> {
    serde_json::to_value(response).map_err(|e| TestKitError::Payload(e.to_string()))
}

/// The README's example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
