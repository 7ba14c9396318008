//! The mock charging station: [`MockStation`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use ocpp_proto::OcppVersion;
use ocpp_tokio::hook::MessageEvent;
use ocpp_tokio::station::{Station, StationInfo};
use ocpp_tokio::{IncomingCall, Router, Session};
use serde_json::Value;

use crate::{
    payload_of, request_of, scripted_answer, Frame, Hook, Record, Script, TestKitError,
    DEFAULT_WAIT,
};

/// Configures a [`MockStation`]: from [`MockStation::builder`].
pub struct MockStationBuilder {
    url: String,
    version: OcppVersion,
    script: Script,
    info: StationInfo,
    wait: Duration,
    hook: Option<Hook>,
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
    /// use ocpp_test_kit::MockStation;
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
    /// use ocpp_test_kit::MockStation;
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
    /// use ocpp_test_kit::MockStation;
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
    /// let builder = ocpp_test_kit::MockStation::builder("ws://127.0.0.1:9000/ocpp/CP1", ocpp_tokio::OcppVersion::V1_6)
    ///     .wait(std::time::Duration::from_secs(3));
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// Also hands every message to `hook` ([`StationBuilder::on_message`](ocpp_tokio::station::StationBuilder::on_message)).
    ///
    /// ```
    /// use ocpp_test_kit::MockStation;
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
    /// use ocpp_test_kit::MockStation;
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
    /// # fn example() -> Result<(), ocpp_test_kit::TestKitError> {
    /// use ocpp_test_kit::MockStation;
    /// let station = MockStation::builder("ws://127.0.0.1:9000/ocpp/CP1", ocpp_tokio::OcppVersion::V1_6).connect()?;
    /// # let _ = station;
    /// # Ok(()) }
    /// ```
    pub fn connect(self) -> Result<MockStation, TestKitError> {
        let (record, hook) = Record::recording(self.keep, self.hook);
        let script = Arc::new(self.script);
        let router =
            Router::<()>::for_station().fallback(move |_: Session<()>, call: IncomingCall| {
                let script = script.clone();
                async move { scripted_answer(&call, script.scripted(&call)) }
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
/// use ocpp_test_kit::{MockCsms, MockStation};
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
    /// use ocpp_test_kit::MockStation;
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
    /// # async fn example(station: ocpp_test_kit::MockStation) -> Result<(), Box<dyn std::error::Error>> {
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
    /// # async fn example(station: ocpp_test_kit::MockStation) -> Result<(), Box<dyn std::error::Error>> {
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
    /// # async fn example(station: ocpp_test_kit::MockStation) -> Result<(), Box<dyn std::error::Error>> {
    /// let answer = station.call("Heartbeat", serde_json::json!({})).await?;
    /// assert!(answer["currentTime"].is_string());
    /// # Ok(()) }
    /// ```
    pub async fn call(&self, action: &str, payload: Value) -> Result<Value, TestKitError> {
        let version = match self.station.status() {
            ocpp_tokio::station::Status::Accepted { version }
            | ocpp_tokio::station::Status::Registering { version, .. } => version,
            _ => self.accepted().await?,
        };
        let request = request_of(version, action, &payload)?;
        let response = self.station.call_raw(request).await?;
        payload_of(&response)
    }

    /// Every message so far, in order.
    ///
    /// ``` no_run
    /// # async fn example(station: ocpp_test_kit::MockStation) -> Result<(), Box<dyn std::error::Error>> {
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
    /// # async fn example(station: ocpp_test_kit::MockStation) -> Result<(), Box<dyn std::error::Error>> {
    /// let resets = station.calls("Reset");
    /// # let _ = resets;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn calls(&self, action: &str) -> Vec<Value> {
        self.record.calls(action)
    }

    /// Waits until the central system sent `count` CALLs of `action`; their payloads.
    ///
    /// # Errors
    /// [`TestKitError::Timeout`].
    ///
    /// ``` no_run
    /// # async fn example(station: ocpp_test_kit::MockStation) -> Result<(), Box<dyn std::error::Error>> {
    /// let reset = station.wait_for_calls("Reset", 1).await?;
    /// assert_eq!(reset[0]["type"], "Immediate");
    /// # Ok(()) }
    /// ```
    pub async fn wait_for_calls(
        &self,
        action: &str,
        count: usize,
    ) -> Result<Vec<Value>, TestKitError> {
        self.record.wait_for_calls(self.wait, action, count).await
    }

    /// Stops the station (its connection closes with 1000).
    ///
    /// ``` no_run
    /// # async fn example(station: ocpp_test_kit::MockStation) -> Result<(), Box<dyn std::error::Error>> {
    /// station.close();
    /// # Ok(()) }
    /// ```
    pub fn close(&self) {
        self.station.close();
    }
}
