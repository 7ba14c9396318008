//! The station's device model, served and kept: [`DeviceModelStore`] holds the Sans-IO
//! [`DeviceModel`] (2.x components and variables) and [`Configuration`] (1.6 keys) of
//! [`ocpp_model::device_model`], answers the central system's GetVariables, SetVariables,
//! GetBaseReport and GetReport (2.0.1 and 2.1, with the NotifyReports after) and GetConfiguration and
//! ChangeConfiguration (1.6) through routes it adds to a [`Router`], keeps the values of
//! persistent variables and read-write keys in a file of a state directory, and tells the
//! application what changed.
//!
//! A change is acknowledged (SetVariables `Accepted`, ChangeConfiguration `Accepted`) only once
//! it is durable: written to `<dir>/device_model.json.tmp`, synced, renamed over
//! `device_model.json`, and the directory synced. When that fails the change is refused
//! (`Rejected`, reason `WriteFailed`) and leaves no trace, in the file or in memory. The file
//! holds write-only values too (`SecurityCtrlr.BasicAuthPassword`) in clear: the state
//! directory must be the station's alone.
//!
//! ```no_run
//! use ocpp_tokio::model::device_model::{catalogue::Layout, Configuration, DeviceModel};
//! use ocpp_tokio::station::{DeviceModelStore, Station};
//! use ocpp_tokio::Router;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let store = DeviceModelStore::open(
//!     "/var/lib/charger",
//!     DeviceModel::standard(Layout::new(&[1])),
//!     Configuration::standard(1),
//! )?;
//! store.on_change(|change| println!("the central system set {change:?}"));
//! let router = store.routes(Router::for_station());
//! let station = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")?
//!     .handler(router, ())
//!     .connect()?;
//! // HeartbeatInterval set by the central system (and kept across restarts) drives the station.
//! store.follow_heartbeat(&station);
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use ocpp_model::device_model::report::{notify_reports, ReportBase};
use ocpp_model::device_model::{
    catalogue, AttributeType, Change, Configuration, DeviceModel, SetStatus,
};
use ocpp_proto::{v1_6, v2_0_1, v2_1, ErrorAnswer, ErrorCode, OcppVersion};
use serde::{Deserialize, Serialize};

use super::store::replace_durably;
use super::{RetryBackOff, Station, Status};
use crate::typed::{ResponseOf, TypedCall};
use crate::{Reply, Router, Session};

/// The file in the state directory.
const FILE: &str = "device_model.json";

/// How long a report waits after its GetBaseReport or GetReport was answered before its first
/// NotifyReport: the answer goes out when the handler returns, the report after it (OCPP 2.0.1
/// B07.FR.01: the station first answers, then sends the report).
const REPORT_AFTER: Duration = Duration::from_millis(100);

/// Why [`DeviceModelStore::open`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceModelError {
    /// The state directory or its file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// The file is not one this store wrote.
    #[error("{path}: not a device model file: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// The file's content: the values the central system may have set, by name.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Saved {
    /// 2.x: `Component[instance]@evse.connector/Variable[instance]/Attribute` to value.
    v2: BTreeMap<String, String>,
    /// 1.6: key to value.
    v1_6: BTreeMap<String, String>,
}

#[derive(Debug, Clone)]
struct Models {
    v2: DeviceModel,
    v1_6: Configuration,
}

impl Models {
    /// A setting that 1.6 and 2.x both have ([`Setting`](ocpp_model::Setting): a key and its
    /// variable) changed in one version: the other version's value follows, so a station that
    /// connects with either finds what the central system set last.
    fn mirror(&mut self, change: &Change) {
        let Some(setting) = change.setting() else {
            return;
        };
        match change {
            Change::Key { value, .. } => {
                let (component, variable) = setting.component_variable();
                let id = catalogue::id(component);
                let _ = self.v2.update(&id, variable, AttributeType::Actual, value);
            }
            _ => {
                let _ = self.v1_6.update(setting.key_1_6(), change.value());
            }
        }
    }

    /// Makes a change that was checked and kept on a copy of these models.
    fn apply(&mut self, change: &Change) {
        match change {
            Change::Variable {
                component,
                variable,
                instance,
                attribute,
                value,
            } => {
                let _ = self
                    .v2
                    .set_at(component, variable, instance.as_deref(), *attribute, value);
            }
            Change::Key { key, value } => {
                let _ = self.v1_6.change(key, value);
            }
            _ => {}
        }
        self.mirror(change);
    }

    /// Puts the clock in `ClockCtrlr.DateTime` before it is read.
    fn read_clock(&mut self) {
        let clock = catalogue::id(catalogue::CLOCK_CTRLR);
        let now = ocpp_proto::DateTime::now();
        let _ = self
            .v2
            .update(&clock, "DateTime", AttributeType::Actual, now.as_str());
    }
}

type Listener = Arc<dyn Fn(&Change) + Send + Sync>;

struct Inner {
    models: Mutex<Models>,
    file: Option<PathBuf>,
    /// One change at a time: applied to a copy, made durable, then swapped in.
    writer: tokio::sync::Mutex<()>,
    listeners: Mutex<Vec<Listener>>,
    /// Names in the file that the model no longer has or whose value no longer fits.
    skipped: Vec<String>,
}

/// A station's device model and configuration, served to the central system and kept in a
/// state directory: cheap to clone (every clone is the same store).
#[derive(Clone)]
pub struct DeviceModelStore {
    inner: Arc<Inner>,
}

impl fmt::Debug for DeviceModelStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceModelStore")
            .field("file", &self.inner.file)
            .finish_non_exhaustive()
    }
}

/// The guard of a mutex, poisoned or not (a panicking listener must not stop the store).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl DeviceModelStore {
    /// A store that keeps nothing across restarts (tests, simulations).
    ///
    /// ```
    /// use ocpp_tokio::model::device_model::{catalogue::Layout, Configuration, DeviceModel};
    /// use ocpp_tokio::station::DeviceModelStore;
    /// let store = DeviceModelStore::in_memory(
    ///     DeviceModel::standard(Layout::new(&[1])),
    ///     Configuration::standard(1),
    /// );
    /// assert_eq!(store.configuration().value("NumberOfConnectors").as_deref(), Some("1"));
    /// ```
    pub fn in_memory(device_model: DeviceModel, configuration: Configuration) -> Self {
        DeviceModelStore::with(device_model, configuration, None, Vec::new())
    }

    /// A store kept in `dir` (created if missing): the values saved there by an earlier run
    /// are put back into `device_model` and `configuration` (the defaults of this run); a saved
    /// value whose variable or key is gone, or that no longer fits, is left out
    /// ([`DeviceModelStore::skipped`]).
    ///
    /// ```no_run
    /// use ocpp_tokio::model::device_model::{catalogue::Layout, Configuration, DeviceModel};
    /// use ocpp_tokio::station::DeviceModelStore;
    /// let store = DeviceModelStore::open(
    ///     "/var/lib/charger",
    ///     DeviceModel::standard(Layout::new(&[2])),
    ///     Configuration::standard(2),
    /// )?;
    /// # Ok::<(), ocpp_tokio::station::DeviceModelError>(())
    /// ```
    ///
    /// # Errors
    /// [`DeviceModelError`]: the directory or file cannot be read, or the file is not one this
    /// store wrote.
    pub fn open(
        dir: impl AsRef<Path>,
        mut device_model: DeviceModel,
        mut configuration: Configuration,
    ) -> Result<Self, DeviceModelError> {
        let dir = dir.as_ref();
        fs::create_dir_all(dir).map_err(|source| DeviceModelError::Io {
            path: dir.to_owned(),
            source,
        })?;
        let path = dir.join(FILE);
        let saved: Saved = match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| DeviceModelError::Corrupt {
                path: path.clone(),
                reason: e.to_string(),
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Saved::default(),
            Err(source) => return Err(DeviceModelError::Io { path, source }),
        };
        let mut skipped = Vec::new();
        for (name, value) in &saved.v2 {
            if !device_model.restore(name, value) {
                skipped.push(name.clone());
            }
        }
        for (key, value) in &saved.v1_6 {
            if !configuration.restore(key, value) {
                skipped.push(key.clone());
            }
        }
        Ok(DeviceModelStore::with(
            device_model,
            configuration,
            Some(path),
            skipped,
        ))
    }

    fn with(
        v2: DeviceModel,
        v1_6: Configuration,
        file: Option<PathBuf>,
        skipped: Vec<String>,
    ) -> Self {
        DeviceModelStore {
            inner: Arc::new(Inner {
                models: Mutex::new(Models { v2, v1_6 }),
                file,
                writer: tokio::sync::Mutex::new(()),
                listeners: Mutex::new(Vec::new()),
                skipped,
            }),
        }
    }

    /// The saved values [`DeviceModelStore::open`] left out (their variable or key is gone, or
    /// the value no longer fits).
    pub fn skipped(&self) -> &[String] {
        &self.inner.skipped
    }

    /// The 2.x device model now.
    pub fn device_model(&self) -> DeviceModel {
        lock(&self.inner.models).v2.clone()
    }

    /// The 1.6 configuration now.
    pub fn configuration(&self) -> Configuration {
        lock(&self.inner.models).v1_6.clone()
    }

    /// Changes what the station itself knows (an availability state, the clock, the number of
    /// entries of its local list) with [`DeviceModel::update`] and [`Configuration::update`]:
    /// not a change of the central system's, so neither kept nor told to
    /// [`on_change`](DeviceModelStore::on_change).
    ///
    /// ```
    /// use ocpp_tokio::model::device_model::{catalogue, Configuration, DeviceModel, AttributeType};
    /// use ocpp_tokio::station::DeviceModelStore;
    /// let store = DeviceModelStore::in_memory(
    ///     DeviceModel::standard(catalogue::Layout::new(&[1])),
    ///     Configuration::standard(1),
    /// );
    /// store.update(|model, _| {
    ///     let security = catalogue::id(catalogue::SECURITY_CTRLR);
    ///     model.update(&security, "SecurityProfile", AttributeType::Actual, "2");
    /// });
    /// assert_eq!(store.device_model().value("SecurityCtrlr", "SecurityProfile").as_deref(), Some("2"));
    /// ```
    pub fn update(&self, change: impl FnOnce(&mut DeviceModel, &mut Configuration)) {
        let mut models = lock(&self.inner.models);
        let models = &mut *models;
        change(&mut models.v2, &mut models.v1_6);
    }

    /// Calls `listener` with every change the central system makes, once it is durable (before
    /// the answer goes out), in order.
    pub fn on_change(&self, listener: impl Fn(&Change) + Send + Sync + 'static) {
        lock(&self.inner.listeners).push(Arc::new(listener));
    }

    /// The heartbeat interval the model holds for `version`: 1.6 `HeartbeatInterval`, 2.x
    /// `OCPPCommCtrlr.HeartbeatInterval`.
    pub fn heartbeat_interval(&self, version: OcppVersion) -> Option<Duration> {
        let models = lock(&self.inner.models);
        let value = match version {
            OcppVersion::V1_6 => models.v1_6.value("HeartbeatInterval"),
            _ => models
                .v2
                .value(catalogue::OCPP_COMM_CTRLR, "HeartbeatInterval"),
        }?;
        value.trim().parse().ok().map(Duration::from_secs)
    }

    /// The reconnect back-off the model holds (2.x `OCPPCommCtrlr.RetryBackOffWaitMinimum`,
    /// `RetryBackOffRandomRange`, `RetryBackOffRepeatTimes`, in seconds; the same schedule on
    /// 1.6), for [`StationBuilder::back_off`](super::StationBuilder::back_off); a variable
    /// without a number keeps the default's part.
    ///
    /// ```
    /// use ocpp_tokio::model::device_model::{catalogue::Layout, Configuration, DeviceModel};
    /// use ocpp_tokio::station::{DeviceModelStore, Station};
    /// let store = DeviceModelStore::in_memory(
    ///     DeviceModel::standard(Layout::new(&[1])),
    ///     Configuration::standard(1),
    /// );
    /// let builder = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")
    ///     .unwrap()
    ///     .back_off(store.retry_back_off());
    /// # let _ = builder;
    /// ```
    pub fn retry_back_off(&self) -> RetryBackOff {
        let models = lock(&self.inner.models);
        let number = |variable: &str| -> Option<u64> {
            models
                .v2
                .value(catalogue::OCPP_COMM_CTRLR, variable)?
                .trim()
                .parse()
                .ok()
        };
        let mut back_off = RetryBackOff::default();
        if let Some(seconds) = number("RetryBackOffWaitMinimum") {
            back_off.wait_minimum = Duration::from_secs(seconds);
        }
        if let Some(seconds) = number("RetryBackOffRandomRange") {
            back_off.random_range = Duration::from_secs(seconds);
        }
        if let Some(times) = number("RetryBackOffRepeatTimes") {
            back_off.repeat_times = u32::try_from(times).unwrap_or(u32::MAX);
        }
        back_off
    }

    /// How often a transaction message is tried and the wait between tries, as the model holds
    /// them (1.6 `TransactionMessageAttempts` and `TransactionMessageRetryInterval`; 2.x
    /// `OCPPCommCtrlr.MessageAttempts` and `MessageAttemptInterval` of `TransactionEvent`), for
    /// [`StationBuilder::transaction_retries`](super::StationBuilder::transaction_retries)
    /// (read when the station is built: a later change applies from the next start).
    pub fn transaction_retries(&self, version: OcppVersion) -> Option<(u32, Duration)> {
        let models = lock(&self.inner.models);
        let (attempts, interval) = match version {
            OcppVersion::V1_6 => (
                models.v1_6.value("TransactionMessageAttempts")?,
                models.v1_6.value("TransactionMessageRetryInterval")?,
            ),
            _ => {
                let comm = catalogue::id(catalogue::OCPP_COMM_CTRLR);
                let read = |name: &str| {
                    models
                        .v2
                        .read(&comm, name, Some("TransactionEvent"), AttributeType::Actual)
                        .ok()
                        .flatten()
                };
                (read("MessageAttempts")?, read("MessageAttemptInterval")?)
            }
        };
        let attempts = attempts.trim().parse().ok()?;
        let interval = interval.trim().parse().ok().map(Duration::from_secs)?;
        Some((attempts, interval))
    }

    /// Keeps `station`'s reconnect back-off on the model's: every change of a
    /// `RetryBackOff*` variable by the central system sets it ([`Station::set_back_off`]) from
    /// the next wait.
    pub fn follow_back_off(&self, station: &Station) {
        let store = self.clone();
        let station = station.clone();
        self.on_change(move |change| {
            let Change::Variable { variable, .. } = change else {
                return;
            };
            if variable.starts_with("RetryBackOff") {
                station.set_back_off(store.retry_back_off());
            }
        });
    }

    /// The network settings the model holds: 2.x `OCPPCommCtrlr.NetworkConfigurationPriority`
    /// (the slots, in order) and `NetworkProfileConnectionAttempts`, for
    /// [`NetworkProfiles::set_priority`](super::NetworkProfiles::set_priority) and
    /// [`NetworkProfiles::with_attempts`](super::NetworkProfiles::with_attempts) when the station
    /// is built. A value that is not a list of slots (or a number) is `None`.
    ///
    /// ```
    /// use ocpp_tokio::model::device_model::{catalogue::Layout, Configuration, DeviceModel};
    /// use ocpp_tokio::station::DeviceModelStore;
    /// let store = DeviceModelStore::in_memory(
    ///     DeviceModel::standard(Layout::new(&[1])),
    ///     Configuration::standard(1),
    /// );
    /// assert_eq!(store.network_settings(), (Some(vec![0]), Some(3)));
    /// ```
    pub fn network_settings(&self) -> (Option<Vec<i32>>, Option<u32>) {
        let models = lock(&self.inner.models);
        let value = |variable: &str| models.v2.value(catalogue::OCPP_COMM_CTRLR, variable);
        let priority = value("NetworkConfigurationPriority").and_then(|list| parse_slots(&list));
        let attempts = value("NetworkProfileConnectionAttempts")
            .and_then(|attempts| attempts.trim().parse().ok());
        (priority, attempts)
    }

    /// Keeps `station`'s network profiles on the model's: a change of
    /// `NetworkConfigurationPriority` or `NetworkProfileConnectionAttempts` by the central
    /// system (SetVariables) is handed to the station ([`Station::set_network_priority`]),
    /// in force from the next reboot or lost connection (B10.FR.04). The station's rules
    /// (A05.FR.04: no slot below the active security profile) are checked only then: a list
    /// they refuse was already accepted by the model, and is logged and not used.
    pub fn follow_network_profiles(&self, station: &Station) {
        let store = self.clone();
        let station = station.clone();
        self.on_change(move |change| {
            let Change::Variable { variable, .. } = change else {
                return;
            };
            let (priority, attempts) = store.network_settings();
            match variable.as_str() {
                "NetworkConfigurationPriority" => {
                    if let Some(priority) = priority {
                        station.set_network_priority_detached(priority);
                    }
                }
                "NetworkProfileConnectionAttempts" => {
                    if let Some(attempts) = attempts {
                        station.set_network_attempts_detached(attempts);
                    }
                }
                _ => {}
            }
        });
    }

    /// Keeps `station`'s heartbeat interval on the model's: the model's value (kept across
    /// restarts) is put in force now, and every change of HeartbeatInterval by the central
    /// system sets it ([`Station::set_heartbeat_interval`]); the station keeps it over
    /// reconnections. A boot answer with an interval (not 0) is the central system's choice
    /// (OCPP 1.6 §4.2, 2.0.1 B01): after every accepted boot, an interval in force other than
    /// the model's is written into the model, not kept. Call it right after
    /// [`StationBuilder::connect`](super::StationBuilder::connect).
    pub fn follow_heartbeat(&self, station: &Station) {
        let follower = station.clone();
        self.on_change(move |change| {
            if let Some(seconds) = change.heartbeat_interval() {
                follower.set_heartbeat_interval(Duration::from_secs(seconds));
            }
        });
        // Both versions' settings follow each other: either holds the interval.
        let own = self
            .heartbeat_interval(OcppVersion::V2_0_1)
            .or_else(|| self.heartbeat_interval(OcppVersion::V1_6));
        if let Some(interval) = own {
            station.set_heartbeat_interval(interval);
        }
        let store = self.clone();
        let station = station.clone();
        let mut status = station.watch_status();
        tokio::spawn(async move {
            loop {
                let accepted = match *status.borrow_and_update() {
                    Status::Accepted { version } => Some(version),
                    Status::Stopped => return,
                    _ => None,
                };
                if let Some(version) = accepted {
                    let in_force = station.heartbeat_interval();
                    if store.heartbeat_interval(version) != Some(in_force) {
                        let seconds = in_force.as_secs().to_string();
                        store.update(|model, config| {
                            let comm = catalogue::id(catalogue::OCPP_COMM_CTRLR);
                            let actual = AttributeType::Actual;
                            model.update(&comm, "HeartbeatInterval", actual, &seconds);
                            config.update("HeartbeatInterval", &seconds);
                        });
                    }
                }
                if status.changed().await.is_err() {
                    return;
                }
            }
        });
    }

    /// Applies `change` to a copy of the models; when it changed something, makes the copy
    /// durable, puts it in force and tells the listeners. `Err` when the copy could not be
    /// written: nothing changed.
    async fn apply<T>(
        &self,
        change: impl FnOnce(&mut Models) -> (T, Vec<Change>),
    ) -> Result<T, (T, io::Error)> {
        let _one_at_a_time = self.inner.writer.lock().await;
        let mut next = lock(&self.inner.models).clone();
        let (answer, changes) = change(&mut next);
        if changes.is_empty() {
            return Ok(answer);
        }
        for change in &changes {
            next.mirror(change);
        }
        if let Some(path) = &self.inner.file {
            let saved = Saved {
                v2: next.v2.persistent_values().into_iter().collect(),
                v1_6: next.v1_6.persistent_values().into_iter().collect(),
            };
            let path = path.clone();
            let written = tokio::task::spawn_blocking(move || write_atomically(&path, &saved))
                .await
                .unwrap_or_else(|e| Err(io::Error::other(e.to_string())));
            if let Err(e) = written {
                tracing::warn!(error = %e, "device model not written: change refused");
                return Err((answer, e));
            }
        }
        // Applied again to the models in force, not swapped for the copy: what the station
        // updated meanwhile ([`DeviceModelStore::update`]) stays.
        {
            let mut live = lock(&self.inner.models);
            for change in &changes {
                live.apply(change);
            }
        }
        let listeners = lock(&self.inner.listeners).clone();
        for change in &changes {
            for listener in &listeners {
                listener(change);
            }
        }
        Ok(answer)
    }

    /// Answers a 1.6 GetConfiguration (§5.8).
    ///
    /// # Errors
    /// CALLERROR `OccurenceConstraintViolation` when more keys are asked than
    /// `GetConfigurationMaxKeys`.
    pub fn get_configuration(
        &self,
        request: &v1_6::GetConfigurationRequest,
    ) -> Reply<v1_6::GetConfigurationResponse> {
        lock(&self.inner.models)
            .v1_6
            .get_configuration(request)
            .map_err(|e| ErrorAnswer::new(ErrorCode::OccurrenceConstraintViolation, e.to_string()))
    }

    /// Answers a 1.6 ChangeConfiguration (§5.3), once the change is durable.
    pub async fn change_configuration(
        &self,
        request: &v1_6::ChangeConfigurationRequest,
    ) -> v1_6::ChangeConfigurationResponse {
        let applied = self
            .apply(|models| {
                let (answer, change) = models.v1_6.change_configuration(request);
                (answer, change.into_iter().collect())
            })
            .await;
        applied.unwrap_or_else(|_| {
            v1_6::ChangeConfigurationResponse::new(v1_6::ConfigurationStatus::Rejected)
        })
    }

    /// Answers a 2.0.1 GetVariables (B06).
    ///
    /// # Errors
    /// CALLERROR `OccurrenceConstraintViolation` when it asks for more than
    /// `DeviceDataCtrlr.ItemsPerMessage` of `GetVariables`.
    pub fn get_variables(
        &self,
        request: &v2_0_1::GetVariablesRequest,
    ) -> Reply<v2_0_1::GetVariablesResponse> {
        let mut models = lock(&self.inner.models);
        too_many(&models.v2, "GetVariables", request.get_variable_data.len())?;
        models.read_clock();
        Ok(models.v2.get_variables(request))
    }

    /// Answers a 2.0.1 SetVariables (B05), once the changes are durable.
    ///
    /// # Errors
    /// CALLERROR `OccurrenceConstraintViolation` when it sets more than
    /// `DeviceDataCtrlr.ItemsPerMessage` of `SetVariables`.
    pub async fn set_variables(
        &self,
        request: &v2_0_1::SetVariablesRequest,
    ) -> Reply<v2_0_1::SetVariablesResponse> {
        too_many(
            &lock(&self.inner.models).v2,
            "SetVariables",
            request.set_variable_data.len(),
        )?;
        let applied = self.apply(|models| models.v2.set_variables(request)).await;
        Ok(applied.unwrap_or_else(|(mut answer, _)| {
            for result in &mut answer.set_variable_result {
                let set = matches!(
                    result.attribute_status,
                    v2_0_1::SetVariableStatusEnum::Accepted
                        | v2_0_1::SetVariableStatusEnum::RebootRequired
                );
                if set {
                    result.attribute_status = SetStatus::Rejected.to_v2_0_1();
                    result.attribute_status_info = Some(v2_0_1::StatusInfo::new("WriteFailed"));
                }
            }
            answer
        }))
    }

    /// The NotifyReports of a 2.0.1 GetBaseReport (B07), `DeviceDataCtrlr.ItemsPerMessage` of
    /// `GetReport` items each; `None` for a report base this version does not define.
    pub fn base_report(
        &self,
        request: &v2_0_1::GetBaseReportRequest,
    ) -> Option<Vec<v2_0_1::NotifyReportRequest>> {
        let base = ReportBase::from_v2_0_1(&request.report_base)?;
        let mut models = lock(&self.inner.models);
        models.read_clock();
        let items = models.v2.base_report(base);
        Some(notify_reports(
            request.request_id,
            ocpp_proto::DateTime::now(),
            items,
            models
                .v2
                .items_per_message("GetReport")
                .unwrap_or(usize::MAX),
        ))
    }

    /// The NotifyReports of a 2.0.1 GetReport (B08); `None` when nothing matches (the answer
    /// is then `EmptyResultSet`).
    ///
    /// # Errors
    /// CALLERROR `OccurrenceConstraintViolation` when it names more `componentVariable`s than
    /// `DeviceDataCtrlr.ItemsPerMessage` of `GetReport` (B08.FR.17).
    pub fn custom_report(
        &self,
        request: &v2_0_1::GetReportRequest,
    ) -> Result<Option<Vec<v2_0_1::NotifyReportRequest>>, ErrorAnswer> {
        let mut models = lock(&self.inner.models);
        let named = request.component_variable.as_ref().map_or(0, Vec::len);
        too_many(&models.v2, "GetReport", named)?;
        models.read_clock();
        let items = models.v2.custom_report(request);
        if items.is_empty() {
            return Ok(None);
        }
        let per_message = models.v2.items_per_message("GetReport");
        Ok(Some(notify_reports(
            request.request_id,
            ocpp_proto::DateTime::now(),
            items,
            per_message.unwrap_or(usize::MAX),
        )))
    }

    /// Adds the routes of the device model to `router`: 1.6 GetConfiguration and
    /// ChangeConfiguration; 2.0.1 and 2.1 GetVariables, SetVariables, GetBaseReport and
    /// GetReport (each report answered, then sent in NotifyReports on the same connection).
    ///
    /// ```
    /// use ocpp_tokio::model::device_model::{catalogue::Layout, Configuration, DeviceModel};
    /// use ocpp_tokio::station::DeviceModelStore;
    /// use ocpp_tokio::Router;
    /// let store = DeviceModelStore::in_memory(
    ///     DeviceModel::standard(Layout::new(&[1])),
    ///     Configuration::standard(1),
    /// );
    /// let router = store.routes(Router::<()>::for_station());
    /// assert!(format!("{router:?}").contains("GetVariables"));
    /// ```
    pub fn routes<S, A>(&self, router: Router<S, A>) -> Router<S, A>
    where
        S: Send + Sync + 'static,
        A: Clone + Send + Sync + 'static,
    {
        let get_configuration = self.clone();
        let change_configuration = self.clone();
        let get_variables = self.clone();
        let set_variables = self.clone();
        let base_report = self.clone();
        let custom_report = self.clone();
        let router = router
            .on(
                move |_: Session<S, A>, request: v1_6::GetConfigurationRequest| {
                    std::future::ready(get_configuration.get_configuration(&request))
                },
            )
            .on(
                move |_: Session<S, A>, request: v1_6::ChangeConfigurationRequest| {
                    let store = change_configuration.clone();
                    async move { Ok(store.change_configuration(&request).await) }
                },
            )
            .on(
                move |_: Session<S, A>, request: v2_0_1::GetVariablesRequest| {
                    std::future::ready(get_variables.get_variables(&request))
                },
            )
            .on(
                move |_: Session<S, A>, request: v2_0_1::SetVariablesRequest| {
                    let store = set_variables.clone();
                    async move { store.set_variables(&request).await }
                },
            )
            .on(
                move |session: Session<S, A>, request: v2_0_1::GetBaseReportRequest| {
                    let status = send_reports(&session, base_report.base_report(&request), false);
                    std::future::ready(Ok(v2_0_1::GetBaseReportResponse::new(status)))
                },
            )
            .on(
                move |session: Session<S, A>, request: v2_0_1::GetReportRequest| {
                    let answer = custom_report.custom_report(&request).map(|reports| {
                        v2_0_1::GetReportResponse::new(send_reports(&session, reports, true))
                    });
                    std::future::ready(answer)
                },
            );
        self.routes_2_1(router)
    }

    /// The 2.1 routes: the device model messages of 2.1 are those of 2.0.1 with optional
    /// fields added (OCPP 2.1 Part 2 B05-B08), so they are answered by the 2.0.1 rules, the
    /// payloads carried across field by field through their JSON form.
    fn routes_2_1<S, A>(&self, router: Router<S, A>) -> Router<S, A>
    where
        S: Send + Sync + 'static,
        A: Clone + Send + Sync + 'static,
    {
        let get_variables = self.clone();
        let set_variables = self.clone();
        let base_report = self.clone();
        let custom_report = self.clone();
        router
            .on(
                move |_: Session<S, A>, request: v2_1::GetVariablesRequest| {
                    let answer = across(&request)
                        .and_then(|request| get_variables.get_variables(&request))
                        .and_then(|answer| across(&answer));
                    std::future::ready(answer)
                },
            )
            .on(
                move |_: Session<S, A>, request: v2_1::SetVariablesRequest| {
                    let store = set_variables.clone();
                    async move {
                        let request: v2_0_1::SetVariablesRequest = across(&request)?;
                        across(&store.set_variables(&request).await?)
                    }
                },
            )
            .on(
                move |session: Session<S, A>, request: v2_1::GetBaseReportRequest| {
                    let reports = across(&request).map(|r| base_report.base_report(&r));
                    std::future::ready(reports.and_then(|reports| {
                        let status = send_reports(&session, reports_2_1(reports)?, false);
                        Ok(v2_1::GetBaseReportResponse::new(across(&status)?))
                    }))
                },
            )
            .on(
                move |session: Session<S, A>, request: v2_1::GetReportRequest| {
                    let reports = across(&request).and_then(|r| custom_report.custom_report(&r));
                    std::future::ready(reports.and_then(|reports| {
                        let status = send_reports(&session, reports_2_1(reports)?, true);
                        Ok(v2_1::GetReportResponse::new(across(&status)?))
                    }))
                },
            )
    }
}

/// A payload of one version as the same payload of another (2.0.1 and 2.1 device model
/// messages), through its JSON form; CALLERROR `InternalError` if it does not fit.
fn across<T: Serialize, U: serde::de::DeserializeOwned>(payload: &T) -> Result<U, ErrorAnswer> {
    serde_json::to_value(payload)
        .and_then(serde_json::from_value)
        .map_err(ErrorAnswer::internal)
}

/// 2.0.1 NotifyReports as 2.1 ones.
fn reports_2_1(
    reports: Option<Vec<v2_0_1::NotifyReportRequest>>,
) -> Result<Option<Vec<v2_1::NotifyReportRequest>>, ErrorAnswer> {
    reports
        .map(|reports| reports.iter().map(across).collect())
        .transpose()
}

/// Refuses a request of more items than `DeviceDataCtrlr.ItemsPerMessage` of `instance`.
fn too_many(model: &DeviceModel, instance: &str, items: usize) -> Result<(), ErrorAnswer> {
    match model.items_per_message(instance) {
        Some(max) if items > max => Err(ErrorAnswer::new(
            ErrorCode::OccurrenceConstraintViolation,
            format!("{items} items, at most {max} (ItemsPerMessage {instance})"),
        )),
        _ => Ok(()),
    }
}

/// The status of a report request (`Accepted`; none to send: `EmptyResultSet` for a GetReport,
/// `NotSupported` for a GetBaseReport of a base this version does not define), and the
/// NotifyReports sent after the answer on the session's connection, in order, each once the
/// previous was answered. The size of a NotifyReport is the station's choice (a report may be
/// split over several); this library sends `DeviceDataCtrlr.ItemsPerMessage` of `GetReport`
/// items in each, the number the station takes in one GetReport.
fn send_reports<S, A, R>(
    session: &Session<S, A>,
    reports: Option<Vec<R>>,
    custom: bool,
) -> v2_0_1::GenericDeviceModelStatusEnum
where
    S: Send + Sync + 'static,
    R: TypedCall + Send + 'static,
    ResponseOf<R>: Send,
{
    use v2_0_1::GenericDeviceModelStatusEnum as Status;
    let Some(reports) = reports else {
        return match custom {
            true => Status::EmptyResultSet,
            false => Status::NotSupported,
        };
    };
    let central = session.charge_point().clone();
    tokio::spawn(async move {
        tokio::time::sleep(REPORT_AFTER).await;
        for (seq_no, report) in reports.into_iter().enumerate() {
            if let Err(failure) = central.call(report).await {
                tracing::warn!(%failure, seq_no, "NotifyReport failed: the report stops");
                return;
            }
        }
    });
    Status::Accepted
}

/// Writes `saved` to `path` durably ([`replace_durably`]: `<path>.tmp`, synced, renamed
/// over `path`, directory synced).
fn write_atomically(path: &Path, saved: &Saved) -> io::Result<()> {
    let bytes = serde_json::to_vec_pretty(saved).map_err(io::Error::other)?;
    replace_durably(path, &bytes)
}

/// A `SequenceList` of configuration slots (`"1,0"`): `None` if an item is not a slot.
fn parse_slots(list: &str) -> Option<Vec<i32>> {
    list.split(',')
        .filter(|item| !item.trim().is_empty())
        .map(|item| item.trim().parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use ocpp_model::device_model::catalogue::Layout;

    use super::*;

    /// An empty directory of this test under the system's temporary directory.
    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "ocpp-tokio-device-model-{name}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn open(dir: &Path) -> DeviceModelStore {
        DeviceModelStore::open(
            dir,
            DeviceModel::standard(Layout::new(&[1])),
            Configuration::standard(1),
        )
        .unwrap()
    }

    fn set(component: &str, variable: &str, value: &str) -> v2_0_1::SetVariablesRequest {
        v2_0_1::SetVariablesRequest::new(vec![v2_0_1::SetVariableData::new(
            value,
            v2_0_1::Component::new(component),
            v2_0_1::Variable::new(variable),
        )])
    }

    #[tokio::test]
    async fn the_station_follows_the_network_priority_and_attempts() {
        use super::super::{NetworkProfile, NetworkProfiles};
        let store = DeviceModelStore::in_memory(
            DeviceModel::standard(Layout::new(&[1])),
            Configuration::standard(1),
        );
        assert_eq!(super::parse_slots(" 1, 0 "), Some(vec![1, 0]));
        assert_eq!(super::parse_slots("1,x"), None);
        // Nobody listens on port 9: the station stays offline, its task takes the changes.
        let profiles = NetworkProfiles::new([
            NetworkProfile::new(0, "ws://127.0.0.1:9/ocpp"),
            NetworkProfile::new(1, "ws://127.0.0.1:9/backup"),
        ]);
        let station = Station::builder("ws://127.0.0.1:9/ocpp/CP001")
            .unwrap()
            .network_profiles(profiles)
            .connect()
            .unwrap();
        store.follow_network_profiles(&station);
        for (variable, value) in [
            ("NetworkConfigurationPriority", "1,0"),
            ("NetworkProfileConnectionAttempts", "5"),
        ] {
            let answer = store
                .set_variables(&set("OCPPCommCtrlr", variable, value))
                .await
                .unwrap();
            let status = &answer.set_variable_result[0].attribute_status;
            assert_eq!(*status, v2_0_1::SetVariableStatusEnum::Accepted);
        }
        assert_eq!(store.network_settings(), (Some(vec![1, 0]), Some(5)));
        let mut watch = station.watch_network_profiles();
        tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                {
                    let now = watch.borrow_and_update();
                    if now.priority() == [1, 0] && now.attempts_per_profile() == 5 {
                        return;
                    }
                }
                watch.changed().await.unwrap();
            }
        })
        .await
        .unwrap();
        station.close();
    }

    #[tokio::test]
    async fn a_change_survives_a_restart_and_both_versions_see_it() {
        let dir = dir("restart");
        let store = open(&dir);
        let told = Arc::new(AtomicUsize::new(0));
        let count = told.clone();
        store.on_change(move |_| {
            count.fetch_add(1, Ordering::SeqCst);
        });
        let change = v1_6::ChangeConfigurationRequest::new("HeartbeatInterval", "30");
        let answer = store.change_configuration(&change).await;
        assert_eq!(answer.status, v1_6::ConfigurationStatus::Accepted);
        assert_eq!(told.load(Ordering::SeqCst), 1);
        let answer = store
            .set_variables(&set("TxCtrlr", "EVConnectionTimeOut", "90"))
            .await
            .unwrap();
        let status = &answer.set_variable_result[0].attribute_status;
        assert_eq!(*status, v2_0_1::SetVariableStatusEnum::Accepted);
        drop(store);

        let store = open(&dir);
        assert!(store.skipped().is_empty());
        assert_eq!(
            store.heartbeat_interval(OcppVersion::V1_6),
            Some(Duration::from_secs(30))
        );
        // The 2.x variable of the same setting followed the 1.6 key, and the other way round.
        assert_eq!(
            store.heartbeat_interval(OcppVersion::V2_0_1),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            store.configuration().value("ConnectionTimeOut").as_deref(),
            Some("90")
        );
        assert!(!dir.join("device_model.json.tmp").exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_change_that_cannot_be_kept_is_refused_and_leaves_no_trace() {
        let dir = dir("unwritable");
        let store = open(&dir);
        let told = Arc::new(AtomicUsize::new(0));
        let count = told.clone();
        store.on_change(move |_| {
            count.fetch_add(1, Ordering::SeqCst);
        });
        // The temporary file cannot be created: a directory stands in its way.
        fs::create_dir_all(dir.join("device_model.json.tmp")).unwrap();
        let answer = store
            .set_variables(&set("OCPPCommCtrlr", "HeartbeatInterval", "5"))
            .await
            .unwrap();
        let result = &answer.set_variable_result[0];
        assert_eq!(
            result.attribute_status,
            v2_0_1::SetVariableStatusEnum::Rejected
        );
        let reason = result.attribute_status_info.as_ref().unwrap();
        assert_eq!(reason.reason_code, "WriteFailed");
        let change = v1_6::ChangeConfigurationRequest::new("HeartbeatInterval", "5");
        let answer = store.change_configuration(&change).await;
        assert_eq!(answer.status, v1_6::ConfigurationStatus::Rejected);
        assert_eq!(told.load(Ordering::SeqCst), 0);
        assert_eq!(
            store.heartbeat_interval(OcppVersion::V2_0_1),
            Some(Duration::from_secs(60))
        );
        assert!(!dir.join("device_model.json").exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn saved_values_that_no_longer_fit_are_skipped_and_a_foreign_file_refused() {
        let dir = dir("skipped");
        fs::create_dir_all(&dir).unwrap();
        let saved = r#"{"v2":{"Gone/Gone/Actual":"1","OCPPCommCtrlr/HeartbeatInterval/Actual":"15"},
            "v1_6":{"HeartbeatInterval":"soon","NumberOfConnectors":"9"}}"#;
        fs::write(dir.join(FILE), saved).unwrap();
        let store = open(&dir);
        let mut skipped = store.skipped().to_vec();
        skipped.sort();
        assert_eq!(
            skipped,
            [
                "Gone/Gone/Actual",
                "HeartbeatInterval",
                "NumberOfConnectors"
            ]
        );
        assert_eq!(
            store.heartbeat_interval(OcppVersion::V2_0_1),
            Some(Duration::from_secs(15))
        );
        assert_eq!(
            store.configuration().value("NumberOfConnectors").as_deref(),
            Some("1")
        );
        fs::write(dir.join(FILE), "not json").unwrap();
        let error = DeviceModelStore::open(
            &dir,
            DeviceModel::standard(Layout::new(&[1])),
            Configuration::standard(1),
        )
        .unwrap_err();
        assert!(matches!(error, DeviceModelError::Corrupt { .. }), "{error}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn more_items_than_allowed_is_a_callerror() {
        let store = DeviceModelStore::in_memory(
            DeviceModel::standard(Layout::new(&[1])),
            Configuration::standard(1),
        );
        let item = v2_0_1::GetVariableData::new(
            v2_0_1::Component::new("OCPPCommCtrlr"),
            v2_0_1::Variable::new("HeartbeatInterval"),
        );
        let many = v2_0_1::GetVariablesRequest::new(vec![item.clone(); 21]);
        let error = store.get_variables(&many).unwrap_err();
        assert_eq!(error.code, ErrorCode::OccurrenceConstraintViolation);
        let twenty = v2_0_1::GetVariablesRequest::new(vec![item; 20]);
        assert_eq!(
            store
                .get_variables(&twenty)
                .unwrap()
                .get_variable_result
                .len(),
            20
        );
        let keys =
            v1_6::GetConfigurationRequest::default().with_key(vec!["HeartbeatInterval".into(); 51]);
        let error = store.get_configuration(&keys).unwrap_err();
        assert_eq!(error.code, ErrorCode::OccurrenceConstraintViolation);
        let mut report = v2_0_1::GetReportRequest::new(1);
        let named = v2_0_1::ComponentVariable::new(v2_0_1::Component::new("OCPPCommCtrlr"));
        report.component_variable = Some(vec![named; 21]);
        let error = store.custom_report(&report).unwrap_err();
        assert_eq!(error.code, ErrorCode::OccurrenceConstraintViolation);
    }

    #[tokio::test]
    async fn the_back_off_and_the_retries_come_from_the_model() {
        let store = DeviceModelStore::in_memory(
            DeviceModel::standard(Layout::new(&[1])),
            Configuration::standard(1),
        );
        let answer = store
            .set_variables(&set("OCPPCommCtrlr", "RetryBackOffWaitMinimum", "7"))
            .await
            .unwrap();
        let status = &answer.set_variable_result[0].attribute_status;
        assert_eq!(*status, v2_0_1::SetVariableStatusEnum::Accepted);
        let back_off = store.retry_back_off();
        assert_eq!(back_off.wait_minimum, Duration::from_secs(7));
        assert_eq!(back_off.random_range, Duration::from_secs(10));
        assert_eq!(back_off.repeat_times, 5);
        assert_eq!(
            store.transaction_retries(OcppVersion::V2_0_1),
            Some((3, Duration::from_secs(10)))
        );
        let change = v1_6::ChangeConfigurationRequest::new("TransactionMessageAttempts", "9");
        let _ = store.change_configuration(&change).await;
        assert_eq!(
            store.transaction_retries(OcppVersion::V1_6),
            Some((9, Duration::from_secs(10)))
        );
    }

    #[test]
    fn the_clock_is_read_when_asked() {
        let store = DeviceModelStore::in_memory(
            DeviceModel::standard(Layout::new(&[1])),
            Configuration::standard(1),
        );
        let clock = v2_0_1::GetVariablesRequest::new(vec![v2_0_1::GetVariableData::new(
            v2_0_1::Component::new("ClockCtrlr"),
            v2_0_1::Variable::new("DateTime"),
        )]);
        let answer = store.get_variables(&clock).unwrap();
        let value = answer.get_variable_result[0]
            .attribute_value
            .clone()
            .unwrap();
        assert!(ocpp_proto::DateTime::parse(&value).is_ok(), "{value}");
    }
}
