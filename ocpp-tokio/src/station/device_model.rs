//! The station's device model, served: [`DeviceModelStore`] (of
//! [`ocpp_station_store::device_model`], re-exported here) holds the Sans-IO [`DeviceModel`]
//! (2.x components and variables) and [`Configuration`] (1.6 keys) of
//! [`ocpp_model::device_model`] and keeps the values the central system set in a file of a state
//! directory; [`DeviceModelExt`] answers the central system's GetVariables, SetVariables,
//! GetBaseReport and GetReport (2.0.1 and 2.1, with the NotifyReports after) and
//! GetConfiguration and ChangeConfiguration (1.6) through routes it adds to a [`Router`], and
//! keeps a [`Station`]'s heartbeat interval, back-off and network profiles on the model's.
//!
//! A change is acknowledged (SetVariables `Accepted`, ChangeConfiguration `Accepted`) only once
//! it is durable: written to `<dir>/device_model.json.tmp`, synced, renamed over
//! `device_model.json`, and the directory synced (on a blocking thread: the station's task does
//! not wait for the disk). When that fails the change is refused (`Rejected`, reason
//! `WriteFailed`) and leaves no trace, in the file or in memory. The file holds write-only
//! values too (`SecurityCtrlr.BasicAuthPassword`) in clear: the state directory must be the
//! station's alone.
//!
//! ```no_run
//! use ocpp_tokio::model::device_model::{catalogue::Layout, Configuration, DeviceModel};
//! use ocpp_tokio::station::{DeviceModelExt, DeviceModelStore, Station};
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

use std::time::Duration;

use ocpp_model::device_model::{catalogue, AttributeType, Change};
#[cfg(doc)]
use ocpp_model::device_model::{Configuration, DeviceModel};
use ocpp_proto::{v1_6, v2_0_1, v2_1, ErrorAnswer, OcppVersion};
pub use ocpp_station_store::device_model::*;
use serde::Serialize;

use super::{Station, Status};
use crate::typed::{ResponseOf, TypedCall};
use crate::{Router, Session};

/// How long a report waits after its GetBaseReport or GetReport was answered before its first
/// NotifyReport: the answer goes out when the handler returns, the report after it (OCPP 2.0.1
/// B07.FR.01: the station first answers, then sends the report).
const REPORT_AFTER: Duration = Duration::from_millis(100);

/// What ocpp-tokio does with a [`DeviceModelStore`]: serves it on a station's [`Router`] and
/// keeps a [`Station`] on it. Implemented for [`DeviceModelStore`] only.
pub trait DeviceModelExt {
    /// Adds the routes of the device model to `router`: 1.6 GetConfiguration and
    /// ChangeConfiguration; 2.0.1 and 2.1 GetVariables, SetVariables, GetBaseReport and
    /// GetReport (each report answered, then sent in NotifyReports on the same connection).
    /// A change is written on a blocking thread ([`tokio::task::spawn_blocking`]).
    ///
    /// ```
    /// use ocpp_tokio::model::device_model::{catalogue::Layout, Configuration, DeviceModel};
    /// use ocpp_tokio::station::{DeviceModelExt, DeviceModelStore};
    /// use ocpp_tokio::Router;
    /// let store = DeviceModelStore::in_memory(
    ///     DeviceModel::standard(Layout::new(&[1])),
    ///     Configuration::standard(1),
    /// );
    /// let router = store.routes(Router::<()>::for_station());
    /// assert!(format!("{router:?}").contains("GetVariables"));
    /// ```
    fn routes<S, A>(&self, router: Router<S, A>) -> Router<S, A>
    where
        S: Send + Sync + 'static,
        A: Clone + Send + Sync + 'static;

    /// Keeps `station`'s reconnect back-off on the model's
    /// ([`DeviceModelStore::retry_back_off`]): every change of a `RetryBackOff*` variable by
    /// the central system sets it ([`Station::set_back_off`]) from the next wait.
    fn follow_back_off(&self, station: &Station);

    /// Keeps `station`'s network profiles on the model's: a change of
    /// `NetworkConfigurationPriority` or `NetworkProfileConnectionAttempts` by the central
    /// system (SetVariables) is handed to the station ([`Station::set_network_priority`]),
    /// in force from the next reboot or lost connection (B10.FR.04). The station's rules
    /// (A05.FR.04: no slot below the active security profile) are checked only then: a list
    /// they refuse was already accepted by the model, and is logged and not used.
    fn follow_network_profiles(&self, station: &Station);

    /// Keeps `station`'s heartbeat interval on the model's: the model's value (kept across
    /// restarts) is put in force now, and every change of HeartbeatInterval by the central
    /// system sets it ([`Station::set_heartbeat_interval`]); the station keeps it over
    /// reconnections. A boot answer with an interval (not 0) is the central system's choice
    /// (OCPP 1.6 §4.2, 2.0.1 B01): after every accepted boot, an interval in force other than
    /// the model's is written into the model, not kept. Call it right after
    /// [`StationBuilder::connect`](super::StationBuilder::connect), within a tokio runtime.
    fn follow_heartbeat(&self, station: &Station);
}

impl DeviceModelExt for DeviceModelStore {
    fn routes<S, A>(&self, router: Router<S, A>) -> Router<S, A>
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
                    blocking(move || store.change_configuration(&request))
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
                    async move { blocking(move || store.set_variables(&request)).await? }
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
        routes_2_1(self, router)
    }

    fn follow_back_off(&self, station: &Station) {
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

    fn follow_network_profiles(&self, station: &Station) {
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

    fn follow_heartbeat(&self, station: &Station) {
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
}

/// The 2.1 routes: the device model messages of 2.1 are those of 2.0.1 with optional
/// fields added (OCPP 2.1 Part 2 B05-B08), so they are answered by the 2.0.1 rules, the
/// payloads carried across field by field through their JSON form.
fn routes_2_1<S, A>(store: &DeviceModelStore, router: Router<S, A>) -> Router<S, A>
where
    S: Send + Sync + 'static,
    A: Clone + Send + Sync + 'static,
{
    let get_variables = store.clone();
    let set_variables = store.clone();
    let base_report = store.clone();
    let custom_report = store.clone();
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
                    across(&blocking(move || store.set_variables(&request)).await??)
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

/// Runs `work` (a store's change, written to disk before it returns) on a blocking thread;
/// CALLERROR `InternalError` if it panicked. The local list's routes
/// ([`super::local_auth`]) run theirs here too.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ErrorAnswer> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(ErrorAnswer::internal)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        use ocpp_model::device_model::catalogue::Layout;
        use ocpp_model::device_model::{Configuration, DeviceModel};
        let store = DeviceModelStore::in_memory(
            DeviceModel::standard(Layout::new(&[1])),
            Configuration::standard(1),
        );
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
}
