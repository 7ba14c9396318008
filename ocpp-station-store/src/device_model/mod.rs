//! The station's device model, kept: [`DeviceModelStore`] holds the Sans-IO [`DeviceModel`]
//! (2.x components and variables) and [`Configuration`] (1.6 keys) of
//! [`ocpp_model::device_model`], answers the central system's GetVariables, SetVariables,
//! GetBaseReport and GetReport (2.0.1; the NotifyReports to send after) and GetConfiguration
//! and ChangeConfiguration (1.6), keeps the values of persistent variables and read-write keys
//! in a file of a state directory, and tells the application what changed. (ocpp-tokio's
//! `station::DeviceModelExt` serves it on a station's router, 2.1 too, and keeps a station's
//! heartbeat, back-off and network profiles on it.)
//!
//! A change is acknowledged (SetVariables `Accepted`, ChangeConfiguration `Accepted`) only once
//! it is durable: written to `<dir>/device_model.json.tmp`, synced, renamed over
//! `device_model.json`, and the directory synced ([`replace_durably`]). When that fails the
//! change is refused (`Rejected`, reason `WriteFailed`) and leaves no trace, in the file or in
//! memory. The file holds write-only values too (`SecurityCtrlr.BasicAuthPassword`) in clear:
//! the state directory must be the station's alone. The methods that change the model write the
//! file before they return (they block: call them off an async runtime's threads).
//!
//! ```
//! use ocpp_model::device_model::{catalogue::Layout, Configuration, DeviceModel};
//! use ocpp_proto::{v1_6, OcppVersion};
//! use ocpp_station_store::DeviceModelStore;
//!
//! let dir = std::env::temp_dir().join(format!("ocpp-device-model-doc-{}", std::process::id()));
//! let store = DeviceModelStore::open(
//!     &dir,
//!     DeviceModel::standard(Layout::new(&[1])),
//!     Configuration::standard(1),
//! )?;
//! store.on_change(|change| println!("the central system set {change:?}"));
//! let change = v1_6::ChangeConfigurationRequest::new("HeartbeatInterval", "30");
//! assert_eq!(store.change_configuration(&change).status, v1_6::ConfigurationStatus::Accepted);
//! drop(store);
//!
//! // Kept across restarts.
//! let store = DeviceModelStore::open(
//!     &dir,
//!     DeviceModel::standard(Layout::new(&[1])),
//!     Configuration::standard(1),
//! )?;
//! let interval = store.heartbeat_interval(OcppVersion::V1_6);
//! assert_eq!(interval, Some(std::time::Duration::from_secs(30)));
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ocpp_model::device_model::report::{notify_reports, ReportBase};
use ocpp_model::device_model::{
    catalogue, AttributeType, Change, Configuration, DeviceModel, SetStatus,
};
use ocpp_proto::station::RetryBackOff;
use ocpp_proto::{v1_6, v2_0_1, ErrorAnswer, ErrorCode, OcppVersion};
use serde::{Deserialize, Serialize};

use crate::durable::replace_durably;
use crate::lock;
/// The file in the state directory.
const FILE: &str = "device_model.json";

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
    writer: Mutex<()>,
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

impl DeviceModelStore {
    /// A store that keeps nothing across restarts (tests, simulations).
    ///
    /// ```
    /// use ocpp_model::device_model::{catalogue::Layout, Configuration, DeviceModel};
    /// use ocpp_station_store::DeviceModelStore;
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
    /// use ocpp_model::device_model::{catalogue::Layout, Configuration, DeviceModel};
    /// use ocpp_station_store::DeviceModelStore;
    /// let store = DeviceModelStore::open(
    ///     "/var/lib/charger",
    ///     DeviceModel::standard(Layout::new(&[2])),
    ///     Configuration::standard(2),
    /// )?;
    /// # Ok::<(), ocpp_station_store::DeviceModelError>(())
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
                writer: Mutex::new(()),
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
    /// use ocpp_model::device_model::{catalogue, Configuration, DeviceModel, AttributeType};
    /// use ocpp_station_store::DeviceModelStore;
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
    /// 1.6), for ocpp-tokio's `StationBuilder::back_off`; a variable
    /// without a number keeps the default's part.
    ///
    /// ```
    /// use ocpp_model::device_model::{catalogue::Layout, Configuration, DeviceModel};
    /// use ocpp_station_store::DeviceModelStore;
    /// let store = DeviceModelStore::in_memory(
    ///     DeviceModel::standard(Layout::new(&[1])),
    ///     Configuration::standard(1),
    /// );
    /// let back_off = store.retry_back_off();
    /// assert_eq!(back_off.repeat_times, 5);
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
    /// ocpp-tokio's `StationBuilder::transaction_retries`
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

    /// The network settings the model holds: 2.x `OCPPCommCtrlr.NetworkConfigurationPriority`
    /// (the slots, in order) and `NetworkProfileConnectionAttempts`, for
    /// [`NetworkProfiles::set_priority`](ocpp_proto::station::NetworkProfiles::set_priority) and
    /// [`NetworkProfiles::with_attempts`](ocpp_proto::station::NetworkProfiles::with_attempts) when the station
    /// is built. A value that is not a list of slots (or a number) is `None`.
    ///
    /// ```
    /// use ocpp_model::device_model::{catalogue::Layout, Configuration, DeviceModel};
    /// use ocpp_station_store::DeviceModelStore;
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

    /// Applies `change` to a copy of the models; when it changed something, makes the copy
    /// durable, puts it in force and tells the listeners. `Err` when the copy could not be
    /// written: nothing changed.
    fn apply<T>(
        &self,
        change: impl FnOnce(&mut Models) -> (T, Vec<Change>),
    ) -> Result<T, (T, io::Error)> {
        let _one_at_a_time = lock(&self.inner.writer);
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
            if let Err(e) = write_atomically(path, &saved) {
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
    ) -> Result<v1_6::GetConfigurationResponse, ErrorAnswer> {
        lock(&self.inner.models)
            .v1_6
            .get_configuration(request)
            .map_err(|e| ErrorAnswer::new(ErrorCode::OccurrenceConstraintViolation, e.to_string()))
    }

    /// Answers a 1.6 ChangeConfiguration (§5.3), once the change is durable.
    pub fn change_configuration(
        &self,
        request: &v1_6::ChangeConfigurationRequest,
    ) -> v1_6::ChangeConfigurationResponse {
        let applied = self.apply(|models| {
            let (answer, change) = models.v1_6.change_configuration(request);
            (answer, change.into_iter().collect())
        });
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
    ) -> Result<v2_0_1::GetVariablesResponse, ErrorAnswer> {
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
    pub fn set_variables(
        &self,
        request: &v2_0_1::SetVariablesRequest,
    ) -> Result<v2_0_1::SetVariablesResponse, ErrorAnswer> {
        too_many(
            &lock(&self.inner.models).v2,
            "SetVariables",
            request.set_variable_data.len(),
        )?;
        let applied = self.apply(|models| models.v2.set_variables(request));
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

/// Writes `saved` to `path` durably ([`replace_durably`]: `<path>.tmp`, synced, renamed
/// over `path`, directory synced).
fn write_atomically(path: &Path, saved: &Saved) -> io::Result<()> {
    let bytes = serde_json::to_vec_pretty(saved).map_err(io::Error::other)?;
    replace_durably(path, &bytes)
}

/// A `SequenceList` of configuration slots (`"1,0"`): `None` if an item is not a slot.
pub(crate) fn parse_slots(list: &str) -> Option<Vec<i32>> {
    list.split(',')
        .filter(|item| !item.trim().is_empty())
        .map(|item| item.trim().parse().ok())
        .collect()
}
