//! The mock central system: [`MockCsms`].

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ocpp_proto::{Answer, ConnectionConfig, OcppVersion};
use ocpp_tokio::hook::MessageEvent;
use ocpp_tokio::{ChargePoint, ChargePoints, Connecting, Handler, IncomingCall, Rejection};
use ocpp_tokio::{Server, Session};
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::{
    payload_of, request_of, scripted_answer, Frame, Hook, Record, Script, TestKitError,
    DEFAULT_WAIT,
};

/// Configures a [`MockCsms`]: from [`MockCsms::builder`].
pub struct MockCsmsBuilder {
    versions: Vec<OcppVersion>,
    script: Script,
    heartbeat_interval_s: u32,
    wait: Duration,
    listen: String,
    hook: Option<Hook>,
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
    /// use ocpp_test_kit::MockCsms;
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
    /// use ocpp_test_kit::MockCsms;
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
    /// use ocpp_test_kit::MockCsms;
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
    /// let builder = ocpp_test_kit::MockCsms::builder().heartbeat_interval(5);
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
    /// let builder = ocpp_test_kit::MockCsms::builder().wait(std::time::Duration::from_secs(2));
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
    /// let builder = ocpp_test_kit::MockCsms::builder().listen("127.0.0.1:9000");
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn listen(mut self, addr: impl Into<String>) -> Self {
        self.listen = addr.into();
        self
    }

    /// Also hands every message to `hook` (e.g. to log it as it goes), as
    /// [`ServerBuilder::on_message`](ocpp_tokio::ServerBuilder::on_message) does.
    ///
    /// ```
    /// use ocpp_tokio::hook::Traffic;
    /// let builder = ocpp_test_kit::MockCsms::builder().on_message(|event| {
    ///     if let Traffic::CallIn(request) = event.message {
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
    /// let builder = ocpp_test_kit::MockCsms::builder().keep_frames(1_000);
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
    /// # async fn main() -> Result<(), ocpp_test_kit::TestKitError> {
    /// let csms = ocpp_test_kit::MockCsms::builder().start().await?;
    /// assert!(csms.url("CP1").starts_with("ws://127.0.0.1:"));
    /// # Ok(()) }
    /// ```
    pub async fn start(self) -> Result<MockCsms, TestKitError> {
        let (record, hook) = Record::recording(self.keep, self.hook);
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
        scripted_answer(&call, payload)
    }
}

/// A central system for tests on 127.0.0.1: accepts any identity in the versions it was
/// built with, answers by its script, calls the connected stations, records every message.
///
/// ```
/// use ocpp_tokio::station::Station;
/// use ocpp_test_kit::{MockCsms, MockDirection};
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
/// assert!(csms
///     .frames()
///     .iter()
///     .any(|f| f.direction == MockDirection::Out && f.action == "ClearCache"));
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
    /// # async fn main() -> Result<(), ocpp_test_kit::TestKitError> {
    /// let csms = ocpp_test_kit::MockCsms::builder().heartbeat_interval(10).start().await?;
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
    /// # async fn example(csms: ocpp_test_kit::MockCsms) -> Result<(), Box<dyn std::error::Error>> {
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
    /// # async fn example(csms: ocpp_test_kit::MockCsms) -> Result<(), Box<dyn std::error::Error>> {
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
    /// # async fn example(csms: ocpp_test_kit::MockCsms) -> Result<(), Box<dyn std::error::Error>> {
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
    /// # async fn example(csms: ocpp_test_kit::MockCsms) -> Result<(), Box<dyn std::error::Error>> {
    /// use ocpp_test_kit::{FrameKind, MockDirection};
    /// let answers = csms.frames().into_iter()
    ///     .filter(|f| f.direction == MockDirection::Out && f.kind == FrameKind::CallResult)
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
    /// # async fn example(csms: ocpp_test_kit::MockCsms) -> Result<(), Box<dyn std::error::Error>> {
    /// let boots = csms.calls("BootNotification");
    /// # let _ = boots;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn calls(&self, action: &str) -> Vec<Value> {
        self.record.calls(action)
    }

    /// Waits until the stations sent `count` CALLs of `action` (at most the builder's
    /// `wait`); their payloads.
    ///
    /// # Errors
    /// [`TestKitError::Timeout`].
    ///
    /// ```no_run
    /// # async fn example(csms: ocpp_test_kit::MockCsms) -> Result<(), ocpp_test_kit::TestKitError> {
    /// let statuses = csms.wait_for_calls("StatusNotification", 2).await?;
    /// assert_eq!(statuses.len(), 2);
    /// # Ok(()) }
    /// ```
    pub async fn wait_for_calls(
        &self,
        action: &str,
        count: usize,
    ) -> Result<Vec<Value>, TestKitError> {
        self.record.wait_for_calls(self.wait, action, count).await
    }

    /// Waits until `done` holds for the messages so far (at most the builder's `wait`).
    ///
    /// # Errors
    /// [`TestKitError::Timeout`].
    ///
    /// ```no_run
    /// # async fn example(csms: ocpp_test_kit::MockCsms) -> Result<(), ocpp_test_kit::TestKitError> {
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
    /// # async fn example(csms: ocpp_test_kit::MockCsms) -> Result<(), Box<dyn std::error::Error>> {
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
    /// # async fn example(csms: ocpp_test_kit::MockCsms) -> Result<(), ocpp_test_kit::TestKitError> {
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
        payload_of(&response)
    }

    /// Stops serving: every connection closes (1001).
    ///
    /// ``` no_run
    /// # async fn example(csms: ocpp_test_kit::MockCsms) -> Result<(), Box<dyn std::error::Error>> {
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
