//! The unit tests of the device model store.

use std::sync::atomic::{AtomicUsize, Ordering};

use ocpp_model::device_model::catalogue::Layout;

use super::*;

/// An empty directory of this test under the system's temporary directory.
fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "ocpp-station-store-device-model-{name}-{}",
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

/// How many changes `store` has told its listeners of, from now on.
fn count_changes(store: &DeviceModelStore) -> Arc<AtomicUsize> {
    let told = Arc::new(AtomicUsize::new(0));
    let count = told.clone();
    store.on_change(move |_| {
        count.fetch_add(1, Ordering::SeqCst);
    });
    told
}

fn set(component: &str, variable: &str, value: &str) -> v2_0_1::SetVariablesRequest {
    v2_0_1::SetVariablesRequest::new(vec![v2_0_1::SetVariableData::new(
        value,
        v2_0_1::Component::new(component),
        v2_0_1::Variable::new(variable),
    )])
}

#[test]
fn a_change_survives_a_restart_and_both_versions_see_it() {
    let dir = dir("restart");
    let store = open(&dir);
    let told = count_changes(&store);
    let change = v1_6::ChangeConfigurationRequest::new("HeartbeatInterval", "30");
    let answer = store.change_configuration(&change);
    assert_eq!(answer.status, v1_6::ConfigurationStatus::Accepted);
    assert_eq!(told.load(Ordering::SeqCst), 1);
    let answer = store
        .set_variables(&set("TxCtrlr", "EVConnectionTimeOut", "90"))
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

#[test]
fn a_change_that_cannot_be_kept_is_refused_and_leaves_no_trace() {
    let dir = dir("unwritable");
    let store = open(&dir);
    let told = count_changes(&store);
    // The temporary file cannot be created: a directory stands in its way.
    fs::create_dir_all(dir.join("device_model.json.tmp")).unwrap();
    let answer = store
        .set_variables(&set("OCPPCommCtrlr", "HeartbeatInterval", "5"))
        .unwrap();
    let result = &answer.set_variable_result[0];
    assert_eq!(
        result.attribute_status,
        v2_0_1::SetVariableStatusEnum::Rejected
    );
    let reason = result.attribute_status_info.as_ref().unwrap();
    assert_eq!(reason.reason_code, "WriteFailed");
    let change = v1_6::ChangeConfigurationRequest::new("HeartbeatInterval", "5");
    let answer = store.change_configuration(&change);
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

#[test]
fn the_back_off_and_the_retries_come_from_the_model() {
    let store = DeviceModelStore::in_memory(
        DeviceModel::standard(Layout::new(&[1])),
        Configuration::standard(1),
    );
    let answer = store
        .set_variables(&set("OCPPCommCtrlr", "RetryBackOffWaitMinimum", "7"))
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
    let _ = store.change_configuration(&change);
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

#[test]
fn a_list_of_slots_reads_or_is_none() {
    assert_eq!(parse_slots(" 1, 0 "), Some(vec![1, 0]));
    assert_eq!(parse_slots("1,x"), None);
}
