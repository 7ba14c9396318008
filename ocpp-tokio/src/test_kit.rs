//! A test kit for your own tests (feature `test-kit`): a mock central system ([`MockCsms`])
//! and a mock charging station ([`MockStation`]) on a loopback port, answering by a script,
//! calling the other side, and recording every message in and out ([`Frame`]).
//!
//! Both are the library's own [`Server`] and [`Station`] with a scripted handler and the
//! message hook: what they put on the wire went through the same rules as your code's.
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
//! - A long-running mock (a command-line tool's) takes its own address
//!   ([`MockCsmsBuilder::listen`]), hands every message to a hook of its own as well
//!   ([`MockCsmsBuilder::on_message`], [`MockStationBuilder::on_message`]) and keeps only the
//!   last frames ([`MockCsmsBuilder::keep_frames`]).
//!
//! ```
//! use ocpp_tokio::station::{Evse, IdToken, Station, StopReason};
//! use ocpp_tokio::test_kit::MockCsms;
//! use ocpp_tokio::OcppVersion;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let csms = MockCsms::builder().versions([OcppVersion::V2_0_1]).start().await?;
//! let station = Station::builder(&csms.url("CP001"))?.versions([OcppVersion::V2_0_1]).connect()?;
//! station.accepted().await?;
//! station.start_transaction(Evse::new(1).with_connector(1), IdToken::new("TAG", "ISO14443"), 0).await?;
//! station.stop_transaction(1, 1_200, StopReason::Local).await?;
//! let events = csms.wait_for_calls("TransactionEvent", 2).await?;
//! assert_eq!(events[1]["transactionInfo"]["stoppedReason"], "Local");
//! station.close();
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use ocpp_messages::{DecodeOptions, Request, Response};
use ocpp_proto::{Answer, CallFailure, ConnectionConfig, ErrorCode, OcppVersion};
use serde_json::{json, Value};
use tokio::sync::{oneshot, Notify};

use crate::hook::{Message, MessageEvent};
use crate::station::{Station, StationError, StationInfo};
use crate::{ChargePoint, ChargePoints, Connecting, Handler, IncomingCall, Rejection, Router};
use crate::{Server, Session};

/// How long a wait of the kit lasts by default.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// Which way a message went, as the mock sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
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
    pub direction: Direction,
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
    /// use ocpp_tokio::test_kit::Frame;
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
        direction: Direction,
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
        direction: Direction,
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

    fn error(
        &self,
        identity: &str,
        direction: Direction,
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
            Message::CallIn(request) => {
                self.request(identity, Direction::In, FrameKind::Call, id, request)
            }
            Message::CallOut(request) => {
                self.request(identity, Direction::Out, FrameKind::Call, id, request)
            }
            Message::SendIn(request) => {
                self.request(identity, Direction::In, FrameKind::Send, id, request)
            }
            Message::SendOut(request) => {
                self.request(identity, Direction::Out, FrameKind::Send, id, request)
            }
            Message::ResultOut(response) => {
                let payload = serde_json::to_value(response).unwrap_or(Value::Null);
                let action = response.action().to_owned();
                self.push(
                    identity,
                    Direction::Out,
                    FrameKind::CallResult,
                    id,
                    action,
                    payload,
                );
            }
            Message::ErrorOut { code, description } => {
                self.error(identity, Direction::Out, id, code, description);
            }
            Message::OutcomeIn(Ok(response)) => {
                let payload = serde_json::to_value(response).unwrap_or(Value::Null);
                let action = response.action().to_owned();
                self.push(
                    identity,
                    Direction::In,
                    FrameKind::CallResult,
                    id,
                    action,
                    payload,
                );
            }
            Message::OutcomeIn(Err(CallFailure::ErrorResponse {
                code, description, ..
            })) => self.error(identity, Direction::In, id, code, description),
            // No answer came (a timeout, a lost connection): no message to record.
            _ => {}
        }
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
fn calls_of(frames: &[Frame], direction: Direction, action: &str) -> Vec<Value> {
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

// ---- the mock central system ----

/// Configures a [`MockCsms`]: from [`MockCsms::builder`].
pub struct MockCsmsBuilder {
    versions: Vec<OcppVersion>,
    script: Script,
    heartbeat_interval_s: u32,
    wait: Duration,
    listen: String,
    hook: Option<crate::hook::Hook>,
    keep: Option<usize>,
}

impl fmt::Debug for MockCsmsBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockCsmsBuilder")
            .field("versions", &self.versions)
            .field("answers", &self.script.table.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl MockCsmsBuilder {
    /// The versions it accepts, in order of preference (default: 2.1, 2.0.1, 1.6).
    ///
    /// ```
    /// use ocpp_tokio::test_kit::MockCsms;
    /// use ocpp_tokio::OcppVersion;
    /// let builder = MockCsms::builder().versions([OcppVersion::V1_6]);
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn versions(mut self, versions: impl IntoIterator<Item = OcppVersion>) -> Self {
        self.versions = versions.into_iter().collect();
        self
    }

    /// Answers every CALL of `action` with `payload` (in every version: give the payload of
    /// the version the test uses).
    ///
    /// ```
    /// use ocpp_tokio::test_kit::MockCsms;
    /// use serde_json::json;
    /// let builder = MockCsms::builder()
    ///     .answer("Authorize", json!({"idTagInfo": {"status": "Blocked"}}));
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn answer(mut self, action: &str, payload: Value) -> Self {
        self.script.table.insert(action.to_owned(), payload);
        self
    }

    /// Answers by a closure first: `Some(payload)` answers, `None` leaves the CALL to the
    /// table and the defaults.
    ///
    /// ```
    /// use ocpp_tokio::test_kit::MockCsms;
    /// use serde_json::json;
    /// let builder = MockCsms::builder().answer_with(|_version, action, call| {
    ///     (action == "Authorize" && call["idTag"] == "STOLEN")
    ///         .then(|| json!({"idTagInfo": {"status": "Blocked"}}))
    /// });
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn answer_with(
        mut self,
        script: impl Fn(OcppVersion, &str, &Value) -> Option<Value> + Send + Sync + 'static,
    ) -> Self {
        self.script.closure = Some(Box::new(script));
        self
    }

    /// The `interval` of the default BootNotification answer, in seconds (default 300).
    ///
    /// ```
    /// let builder = ocpp_tokio::test_kit::MockCsms::builder().heartbeat_interval(5);
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn heartbeat_interval(mut self, seconds: u32) -> Self {
        self.heartbeat_interval_s = seconds;
        self
    }

    /// How long its waits last (default [`DEFAULT_WAIT`]).
    ///
    /// ```
    /// let builder = ocpp_tokio::test_kit::MockCsms::builder().wait(std::time::Duration::from_secs(2));
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// Listens on `addr` instead of 127.0.0.1 and a free port (e.g. a command-line mock
    /// central system on a port given).
    ///
    /// ```
    /// let builder = ocpp_tokio::test_kit::MockCsms::builder().listen("127.0.0.1:9000");
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn listen(mut self, addr: impl Into<String>) -> Self {
        self.listen = addr.into();
        self
    }

    /// Also hands every message to `hook` (e.g. to log it as it goes), as
    /// [`ServerBuilder::on_message`](crate::ServerBuilder::on_message) does.
    ///
    /// ```
    /// use ocpp_tokio::hook::Message;
    /// let builder = ocpp_tokio::test_kit::MockCsms::builder().on_message(|event| {
    ///     if let Message::CallIn(request) = event.message {
    ///         eprintln!("{} {}", event.identity, request.action());
    ///     }
    /// });
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn on_message(mut self, hook: impl Fn(&MessageEvent<'_>) + Send + Sync + 'static) -> Self {
        self.hook = Some(Arc::new(hook));
        self
    }

    /// Keeps only the last `count` frames (a long-running mock; default: all). Waits see
    /// only what is kept.
    ///
    /// ```
    /// let builder = ocpp_tokio::test_kit::MockCsms::builder().keep_frames(1_000);
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn keep_frames(mut self, count: usize) -> Self {
        self.keep = Some(count);
        self
    }

    /// Binds 127.0.0.1 on a free port (or [`MockCsmsBuilder::listen`]'s address) and serves, in a task of its own, until the mock is
    /// dropped or [`MockCsms::stop`]ped.
    ///
    /// # Errors
    /// [`TestKitError::Bind`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ocpp_tokio::test_kit::TestKitError> {
    /// let csms = ocpp_tokio::test_kit::MockCsms::builder().start().await?;
    /// assert!(csms.url("CP1").starts_with("ws://127.0.0.1:"));
    /// # Ok(()) }
    /// ```
    pub async fn start(self) -> Result<MockCsms, TestKitError> {
        let record = Arc::new(Record {
            keep: self.keep,
            ..Record::default()
        });
        let recorder = record.clone();
        let user_hook = self.hook;
        let hook = move |event: &MessageEvent<'_>| {
            recorder.on_message(event);
            if let Some(hook) = &user_hook {
                hook(event);
            }
        };
        let handler = CsmsScript {
            script: self.script,
            heartbeat_interval_s: self.heartbeat_interval_s,
            next_transaction_id: AtomicI32::new(1),
        };
        let server = Server::builder()
            .config(ConnectionConfig::default().versions(self.versions))
            .handler(handler)
            .on_message(hook)
            .bind(self.listen.as_str())
            .await
            .map_err(|e| TestKitError::Bind(e.to_string()))?;
        let addr = server
            .local_addr()
            .map_err(|e| TestKitError::Bind(e.to_string()))?;
        let charge_points = server.charge_points();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = server
                .run_until(async move {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(MockCsms {
            addr,
            record,
            charge_points,
            wait: self.wait,
            stop: Some(stop),
            task: Some(task),
        })
    }
}

/// The mock central system's handler: the script, then the defaults.
struct CsmsScript {
    script: Script,
    heartbeat_interval_s: u32,
    next_transaction_id: AtomicI32,
}

impl CsmsScript {
    /// The defaults: schema-valid answers of the basic CALLs.
    fn default_answer(&self, call: &IncomingCall) -> Option<Value> {
        let v16 = call.version() == OcppVersion::V1_6;
        let now = serde_json::to_value(ocpp_messages::DateTime::now()).unwrap_or(Value::Null);
        Some(match call.action() {
            "BootNotification" => json!({
                "status": "Accepted",
                "currentTime": now,
                "interval": self.heartbeat_interval_s,
            }),
            "Heartbeat" => json!({ "currentTime": now }),
            "StatusNotification" | "MeterValues" => json!({}),
            "Authorize" if v16 => json!({"idTagInfo": {"status": "Accepted"}}),
            "Authorize" => json!({"idTokenInfo": {"status": "Accepted"}}),
            "StartTransaction" => json!({
                "idTagInfo": {"status": "Accepted"},
                "transactionId": self.next_transaction_id.fetch_add(1, Ordering::Relaxed),
            }),
            "StopTransaction" => json!({"idTagInfo": {"status": "Accepted"}}),
            "TransactionEvent" => {
                let payload = serde_json::to_value(call.request()).unwrap_or(Value::Null);
                if payload.get("idToken").is_some() {
                    json!({"idTokenInfo": {"status": "Accepted"}})
                } else {
                    json!({})
                }
            }
            _ => return None,
        })
    }
}

impl Handler for CsmsScript {
    type State = ();

    async fn on_upgrade(&self, _: Connecting) -> Result<(), Rejection> {
        Ok(())
    }

    async fn on_call(&self, _: &Session<()>, call: IncomingCall) -> Answer {
        let payload = self
            .script
            .scripted(&call)
            .or_else(|| self.default_answer(&call));
        match payload {
            Some(payload) => answer_of(call.version(), call.action(), &payload),
            None => Answer::not_supported(call.action()),
        }
    }
}

/// A central system for tests on 127.0.0.1: accepts any identity in the versions it was
/// built with, answers by its script, calls the connected stations, records every message.
///
/// ```
/// use ocpp_tokio::station::Station;
/// use ocpp_tokio::test_kit::{Direction, MockCsms};
/// use ocpp_tokio::OcppVersion;
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let csms = MockCsms::builder().versions([OcppVersion::V1_6]).start().await?;
/// let station = Station::builder(&csms.url("CP7"))?.versions([OcppVersion::V1_6]).connect()?;
/// station.accepted().await?;
/// // The station's router answers NotSupported to what it does not route.
/// let answer = csms.call("CP7", "ClearCache", json!({})).await;
/// assert!(answer.is_err());
/// let boots = csms.calls("BootNotification");
/// assert_eq!(boots[0]["chargePointModel"], "station");
/// assert!(csms.frames().iter().any(|f| f.direction == Direction::Out && f.action == "ClearCache"));
/// station.close();
/// # Ok(()) }
/// ```
pub struct MockCsms {
    addr: SocketAddr,
    record: Arc<Record>,
    charge_points: ChargePoints,
    wait: Duration,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl fmt::Debug for MockCsms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockCsms")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl MockCsms {
    /// A mock to configure; [`MockCsmsBuilder::start`] starts it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ocpp_tokio::test_kit::TestKitError> {
    /// let csms = ocpp_tokio::test_kit::MockCsms::builder().heartbeat_interval(10).start().await?;
    /// # let _ = csms;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn builder() -> MockCsmsBuilder {
        MockCsmsBuilder {
            versions: vec![OcppVersion::V2_1, OcppVersion::V2_0_1, OcppVersion::V1_6],
            script: Script::default(),
            heartbeat_interval_s: 300,
            wait: DEFAULT_WAIT,
            listen: "127.0.0.1:0".to_owned(),
            hook: None,
            keep: None,
        }
    }

    /// Its address (127.0.0.1 and the port it got).
    ///
    /// ``` no_run
    /// # async fn example(csms: ocpp_tokio::test_kit::MockCsms) -> Result<(), Box<dyn std::error::Error>> {
    /// assert!(csms.local_addr().ip().is_loopback());
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL a station of `identity` connects to: `ws://127.0.0.1:PORT/ocpp/IDENTITY`.
    ///
    /// ``` no_run
    /// # async fn example(csms: ocpp_tokio::test_kit::MockCsms) -> Result<(), Box<dyn std::error::Error>> {
    /// let url = csms.url("CP1"); // ws://127.0.0.1:PORT/ocpp/CP1
    /// # let _ = url;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn url(&self, identity: &str) -> String {
        format!("ws://{}/ocpp/{identity}", self.addr)
    }

    /// The stations connected now.
    ///
    /// ``` no_run
    /// # async fn example(csms: ocpp_tokio::test_kit::MockCsms) -> Result<(), Box<dyn std::error::Error>> {
    /// println!("{} connected", csms.charge_points().len());
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn charge_points(&self) -> ChargePoints {
        self.charge_points.clone()
    }

    /// Every message so far, in order.
    ///
    /// ``` no_run
    /// # async fn example(csms: ocpp_tokio::test_kit::MockCsms) -> Result<(), Box<dyn std::error::Error>> {
    /// use ocpp_tokio::test_kit::{Direction, FrameKind};
    /// let answers = csms.frames().into_iter()
    ///     .filter(|f| f.direction == Direction::Out && f.kind == FrameKind::CallResult)
    ///     .count();
    /// # let _ = answers;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn frames(&self) -> Vec<Frame> {
        self.record.frames()
    }

    /// The payloads of the CALLs of `action` the stations sent so far.
    ///
    /// ``` no_run
    /// # async fn example(csms: ocpp_tokio::test_kit::MockCsms) -> Result<(), Box<dyn std::error::Error>> {
    /// let boots = csms.calls("BootNotification");
    /// # let _ = boots;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn calls(&self, action: &str) -> Vec<Value> {
        calls_of(&self.record.frames(), Direction::In, action)
    }

    /// Waits until the stations sent `count` CALLs of `action` (at most the builder's
    /// `wait`); their payloads.
    ///
    /// # Errors
    /// [`TestKitError::Timeout`].
    ///
    /// ```no_run
    /// # async fn example(csms: ocpp_tokio::test_kit::MockCsms) -> Result<(), ocpp_tokio::test_kit::TestKitError> {
    /// let statuses = csms.wait_for_calls("StatusNotification", 2).await?;
    /// assert_eq!(statuses.len(), 2);
    /// # Ok(()) }
    /// ```
    pub async fn wait_for_calls(
        &self,
        action: &str,
        count: usize,
    ) -> Result<Vec<Value>, TestKitError> {
        let what = format!("{count} {action} CALL(s)");
        self.record
            .wait_until(self.wait, &what, |frames| {
                let calls = calls_of(frames, Direction::In, action);
                (calls.len() >= count).then_some(calls)
            })
            .await
    }

    /// Waits until `done` holds for the messages so far (at most the builder's `wait`).
    ///
    /// # Errors
    /// [`TestKitError::Timeout`].
    ///
    /// ```no_run
    /// # async fn example(csms: ocpp_tokio::test_kit::MockCsms) -> Result<(), ocpp_tokio::test_kit::TestKitError> {
    /// csms.wait_until("an Ended event", |frames| {
    ///     frames.iter().any(|f| f.is_call("TransactionEvent") && f.payload["eventType"] == "Ended")
    /// }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn wait_until(
        &self,
        what: &str,
        done: impl Fn(&[Frame]) -> bool,
    ) -> Result<(), TestKitError> {
        self.record
            .wait_until(self.wait, what, |frames| done(frames).then_some(()))
            .await
    }

    /// Waits until a station of `identity` is connected; its handle (typed calls:
    /// [`ChargePoint::call`]).
    ///
    /// # Errors
    /// [`TestKitError::Timeout`].
    ///
    /// ``` no_run
    /// # async fn example(csms: ocpp_tokio::test_kit::MockCsms) -> Result<(), Box<dyn std::error::Error>> {
    /// use ocpp_tokio::v1_6;
    /// let cp = csms.connected("CP1").await?;
    /// let answer = cp.call(v1_6::ClearCacheRequest::default()).await?;
    /// # let _ = answer;
    /// # Ok(()) }
    /// ```
    pub async fn connected(&self, identity: &str) -> Result<ChargePoint, TestKitError> {
        let deadline = tokio::time::Instant::now() + self.wait;
        loop {
            if let Some(cp) = self.charge_points.get(identity) {
                return Ok(cp);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(TestKitError::Timeout(format!("{identity} to connect")));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Calls the station `identity` (once connected, within the builder's `wait`) with the
    /// CALL of `action` in its version, `payload` checked strictly first; the answer's
    /// payload.
    ///
    /// # Errors
    /// [`TestKitError::Timeout`] (not connected), [`TestKitError::Payload`],
    /// [`TestKitError::Call`] (a CALLERROR, no answer...).
    ///
    /// ```no_run
    /// # async fn example(csms: ocpp_tokio::test_kit::MockCsms) -> Result<(), ocpp_tokio::test_kit::TestKitError> {
    /// let answer = csms.call("CP1", "RemoteStartTransaction", serde_json::json!({"idTag": "TAG"})).await?;
    /// assert_eq!(answer["status"], "Accepted");
    /// # Ok(()) }
    /// ```
    pub async fn call(
        &self,
        identity: &str,
        action: &str,
        payload: Value,
    ) -> Result<Value, TestKitError> {
        let cp = self.connected(identity).await?;
        let request = request_of(cp.version(), action, &payload)?;
        let response = cp.call_raw(request).await?;
        serde_json::to_value(&response).map_err(|e| TestKitError::Payload(e.to_string()))
    }

    /// Stops serving: every connection closes (1001).
    ///
    /// ``` no_run
    /// # async fn example(csms: ocpp_tokio::test_kit::MockCsms) -> Result<(), Box<dyn std::error::Error>> {
    /// csms.stop().await; // the stations see 1001 and try again: nobody there
    /// # Ok(()) }
    /// ```
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for MockCsms {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

// ---- the mock station ----

/// Configures a [`MockStation`]: from [`MockStation::builder`].
pub struct MockStationBuilder {
    url: String,
    version: OcppVersion,
    script: Script,
    info: StationInfo,
    wait: Duration,
    hook: Option<crate::hook::Hook>,
    keep: Option<usize>,
}

impl fmt::Debug for MockStationBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockStationBuilder")
            .field("url", &self.url)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl MockStationBuilder {
    /// Answers every CALL of `action` of the central system with `payload`.
    ///
    /// ```
    /// use ocpp_tokio::test_kit::MockStation;
    /// use ocpp_tokio::OcppVersion;
    /// let builder = MockStation::builder("ws://127.0.0.1:9000/ocpp/CP1", OcppVersion::V1_6)
    ///     .answer("Reset", serde_json::json!({"status": "Accepted"}));
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn answer(mut self, action: &str, payload: Value) -> Self {
        self.script.table.insert(action.to_owned(), payload);
        self
    }

    /// Answers by a closure first (`None`: the table, then `NotSupported`).
    ///
    /// ```
    /// use ocpp_tokio::test_kit::MockStation;
    /// use ocpp_tokio::OcppVersion;
    /// use serde_json::json;
    /// let builder = MockStation::builder("ws://127.0.0.1:9000/ocpp/CP1", OcppVersion::V2_0_1)
    ///     .answer_with(|_, action, call| {
    ///         (action == "GetVariables").then(|| json!({"getVariableResult": []}))
    ///     });
    /// # let _ = (builder, json!(null));
    /// ```
    #[must_use]
    pub fn answer_with(
        mut self,
        script: impl Fn(OcppVersion, &str, &Value) -> Option<Value> + Send + Sync + 'static,
    ) -> Self {
        self.script.closure = Some(Box::new(script));
        self
    }

    /// What it says at boot (default: vendor `ocpp-tokio`, model `station`).
    ///
    /// ```
    /// use ocpp_tokio::station::StationInfo;
    /// use ocpp_tokio::test_kit::MockStation;
    /// use ocpp_tokio::OcppVersion;
    /// let builder = MockStation::builder("ws://127.0.0.1:9000/ocpp/CP1", OcppVersion::V1_6)
    ///     .info(StationInfo::new("ACME", "Mock"));
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn info(mut self, info: StationInfo) -> Self {
        self.info = info;
        self
    }

    /// How long its waits last (default [`DEFAULT_WAIT`]).
    ///
    /// ```
    /// let builder = ocpp_tokio::test_kit::MockStation::builder("ws://127.0.0.1:9000/ocpp/CP1", ocpp_tokio::OcppVersion::V1_6)
    ///     .wait(std::time::Duration::from_secs(3));
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// Also hands every message to `hook` ([`StationBuilder::on_message`](crate::station::StationBuilder::on_message)).
    ///
    /// ```
    /// use ocpp_tokio::test_kit::MockStation;
    /// let builder = MockStation::builder("ws://127.0.0.1:9000/ocpp/CP1", ocpp_tokio::OcppVersion::V1_6)
    ///     .on_message(|event| eprintln!("{:?}", event.message));
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn on_message(mut self, hook: impl Fn(&MessageEvent<'_>) + Send + Sync + 'static) -> Self {
        self.hook = Some(Arc::new(hook));
        self
    }

    /// Keeps only the last `count` frames (default: all).
    ///
    /// ```
    /// use ocpp_tokio::test_kit::MockStation;
    /// let builder = MockStation::builder("ws://127.0.0.1:9000/ocpp/CP1", ocpp_tokio::OcppVersion::V1_6)
    ///     .keep_frames(100);
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn keep_frames(mut self, count: usize) -> Self {
        self.keep = Some(count);
        self
    }

    /// Starts the station (a [`Station`] offering the one version): it connects, boots and
    /// reconnects in a task of its own.
    ///
    /// # Errors
    /// [`TestKitError::Station`]: the URL is not `ws://host[:port]/path/IDENTITY`.
    ///
    /// ```no_run
    /// # fn example() -> Result<(), ocpp_tokio::test_kit::TestKitError> {
    /// use ocpp_tokio::test_kit::MockStation;
    /// let station = MockStation::builder("ws://127.0.0.1:9000/ocpp/CP1", ocpp_tokio::OcppVersion::V1_6).connect()?;
    /// # let _ = station;
    /// # Ok(()) }
    /// ```
    pub fn connect(self) -> Result<MockStation, TestKitError> {
        let record = Arc::new(Record {
            keep: self.keep,
            ..Record::default()
        });
        let recorder = record.clone();
        let user_hook = self.hook;
        let hook = move |event: &MessageEvent<'_>| {
            recorder.on_message(event);
            if let Some(hook) = &user_hook {
                hook(event);
            }
        };
        let script = Arc::new(self.script);
        let router =
            Router::<()>::for_station().fallback(move |_: Session<()>, call: IncomingCall| {
                let script = script.clone();
                async move {
                    match script.scripted(&call) {
                        Some(payload) => answer_of(call.version(), call.action(), &payload),
                        None => Answer::not_supported(call.action()),
                    }
                }
            });
        let station = Station::builder(&self.url)?
            .versions([self.version])
            .info(self.info)
            .router(router)
            .on_message(hook)
            .connect()?;
        Ok(MockStation {
            station,
            record,
            wait: self.wait,
        })
    }
}

/// A charging station for tests of a central system: connects to a URL as one identity in
/// one version, boots (the library's [`Station`]), answers by its script, calls, and records
/// every message, its own BootNotifications and Heartbeats included.
///
/// ```
/// use ocpp_tokio::test_kit::{MockCsms, MockStation};
/// use ocpp_tokio::OcppVersion;
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // Your central system would be here; the kit's own mock stands in for it.
/// let csms = MockCsms::builder().start().await?;
/// let station = MockStation::builder(&csms.url("CP9"), OcppVersion::V2_0_1)
///     .answer("Reset", json!({"status": "Accepted"}))
///     .connect()?;
/// station.accepted().await?;
/// let answer = station.call("Authorize", json!({"idToken": {"idToken": "A1", "type": "ISO14443"}})).await?;
/// assert_eq!(answer["idTokenInfo"]["status"], "Accepted");
/// let reset = csms.call("CP9", "Reset", json!({"type": "Immediate"})).await?;
/// assert_eq!(reset["status"], "Accepted");
/// assert_eq!(station.calls("Reset").len(), 1);
/// station.close();
/// # Ok(()) }
/// ```
pub struct MockStation {
    station: Station,
    record: Arc<Record>,
    wait: Duration,
}

impl fmt::Debug for MockStation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockStation")
            .field("station", &self.station)
            .finish_non_exhaustive()
    }
}

impl MockStation {
    /// A mock station for `url` (its last segment is the identity) offering `version`.
    ///
    /// ```
    /// use ocpp_tokio::test_kit::MockStation;
    /// let builder = MockStation::builder("ws://127.0.0.1:9000/ocpp/CP1", ocpp_tokio::OcppVersion::V2_1);
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn builder(url: &str, version: OcppVersion) -> MockStationBuilder {
        MockStationBuilder {
            url: url.to_owned(),
            version,
            script: Script::default(),
            info: StationInfo::new("ocpp-tokio", "station"),
            wait: DEFAULT_WAIT,
            hook: None,
            keep: None,
        }
    }

    /// The station under the mock (its status, its transactions, typed calls).
    ///
    /// ``` no_run
    /// # async fn example(station: ocpp_tokio::test_kit::MockStation) -> Result<(), Box<dyn std::error::Error>> {
    /// let transactions = station.station().transactions();
    /// # let _ = transactions;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn station(&self) -> &Station {
        &self.station
    }

    /// Waits (at most the builder's `wait`) until the central system accepted its boot.
    ///
    /// # Errors
    /// [`TestKitError::Timeout`]; [`TestKitError::NotConnected`] when the station stopped.
    ///
    /// ``` no_run
    /// # async fn example(station: ocpp_tokio::test_kit::MockStation) -> Result<(), Box<dyn std::error::Error>> {
    /// let version = station.accepted().await?;
    /// # let _ = version;
    /// # Ok(()) }
    /// ```
    pub async fn accepted(&self) -> Result<OcppVersion, TestKitError> {
        match tokio::time::timeout(self.wait, self.station.accepted()).await {
            Ok(Ok(version)) => Ok(version),
            Ok(Err(_)) => Err(TestKitError::NotConnected(
                self.station.identity().to_string(),
            )),
            Err(_) => Err(TestKitError::Timeout("an accepted boot".into())),
        }
    }

    /// Calls the central system with the CALL of `action` in the station's version
    /// (`payload` checked strictly first); the answer's payload. A transaction message goes
    /// through the station's offline queue, as [`Station::call`] does.
    ///
    /// # Errors
    /// [`TestKitError::Payload`], [`TestKitError::Call`].
    ///
    /// ``` no_run
    /// # async fn example(station: ocpp_tokio::test_kit::MockStation) -> Result<(), Box<dyn std::error::Error>> {
    /// let answer = station.call("Heartbeat", serde_json::json!({})).await?;
    /// assert!(answer["currentTime"].is_string());
    /// # Ok(()) }
    /// ```
    pub async fn call(&self, action: &str, payload: Value) -> Result<Value, TestKitError> {
        let version = match self.station.status() {
            crate::station::Status::Accepted { version }
            | crate::station::Status::Registering { version, .. } => version,
            _ => self.accepted().await?,
        };
        let request = request_of(version, action, &payload)?;
        let response = self.station.call_raw(request).await?;
        serde_json::to_value(&response).map_err(|e| TestKitError::Payload(e.to_string()))
    }

    /// Every message so far, in order.
    ///
    /// ``` no_run
    /// # async fn example(station: ocpp_tokio::test_kit::MockStation) -> Result<(), Box<dyn std::error::Error>> {
    /// let first = &station.frames()[0];
    /// assert!(first.is_call("BootNotification"));
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn frames(&self) -> Vec<Frame> {
        self.record.frames()
    }

    /// The payloads of the CALLs of `action` the central system sent so far.
    ///
    /// ``` no_run
    /// # async fn example(station: ocpp_tokio::test_kit::MockStation) -> Result<(), Box<dyn std::error::Error>> {
    /// let resets = station.calls("Reset");
    /// # let _ = resets;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn calls(&self, action: &str) -> Vec<Value> {
        calls_of(&self.record.frames(), Direction::In, action)
    }

    /// Waits until the central system sent `count` CALLs of `action`; their payloads.
    ///
    /// # Errors
    /// [`TestKitError::Timeout`].
    ///
    /// ``` no_run
    /// # async fn example(station: ocpp_tokio::test_kit::MockStation) -> Result<(), Box<dyn std::error::Error>> {
    /// let reset = station.wait_for_calls("Reset", 1).await?;
    /// assert_eq!(reset[0]["type"], "Immediate");
    /// # Ok(()) }
    /// ```
    pub async fn wait_for_calls(
        &self,
        action: &str,
        count: usize,
    ) -> Result<Vec<Value>, TestKitError> {
        let what = format!("{count} {action} CALL(s)");
        self.record
            .wait_until(self.wait, &what, |frames| {
                let calls = calls_of(frames, Direction::In, action);
                (calls.len() >= count).then_some(calls)
            })
            .await
    }

    /// Stops the station (its connection closes with 1000).
    ///
    /// ``` no_run
    /// # async fn example(station: ocpp_tokio::test_kit::MockStation) -> Result<(), Box<dyn std::error::Error>> {
    /// station.close();
    /// # Ok(()) }
    /// ```
    pub fn close(&self) {
        self.station.close();
    }
}
