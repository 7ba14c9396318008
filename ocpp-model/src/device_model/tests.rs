//! The device model's rules and the catalogue, through the public API of the module.

use ocpp_messages::v2_0_1 as m;

use super::catalogue::{self, Layout};
use super::report::{notify_reports, ReportBase};
use super::*;

fn model() -> DeviceModel {
    DeviceModel::standard(Layout::new(&[2, 1]))
}

fn data(component: &str, variable: &str, value: &str) -> m::SetVariableData {
    m::SetVariableData::new(
        value,
        m::Component::new(component),
        m::Variable::new(variable),
    )
}

#[test]
fn the_catalogue_has_what_every_station_needs() {
    let model = model();
    type Row<'a> = (
        &'a str,
        Option<&'a str>,
        &'a str,
        DataType,
        Mutability,
        Option<&'a str>,
    );
    use DataType as D;
    use Mutability as M;
    // One row a variable: component, instance, variable, data type, mutability, unit.
    #[rustfmt::skip]
    let expect: &[Row<'_>] = &[
        ("OCPPCommCtrlr", None, "HeartbeatInterval", D::Integer, M::ReadWrite, Some("s")),
        ("OCPPCommCtrlr", Some("Default"), "MessageTimeout", D::Integer, M::ReadOnly, Some("s")),
        ("OCPPCommCtrlr", Some("TransactionEvent"), "MessageAttempts", D::Integer, M::ReadWrite, None),
        ("OCPPCommCtrlr", Some("TransactionEvent"), "MessageAttemptInterval", D::Integer, M::ReadWrite, Some("s")),
        ("OCPPCommCtrlr", None, "RetryBackOffRepeatTimes", D::Integer, M::ReadWrite, None),
        ("OCPPCommCtrlr", None, "RetryBackOffRandomRange", D::Integer, M::ReadWrite, Some("s")),
        ("OCPPCommCtrlr", None, "RetryBackOffWaitMinimum", D::Integer, M::ReadWrite, Some("s")),
        ("OCPPCommCtrlr", None, "NetworkConfigurationPriority", D::SequenceList, M::ReadWrite, None),
        ("OCPPCommCtrlr", None, "OfflineThreshold", D::Integer, M::ReadWrite, Some("s")),
        ("OCPPCommCtrlr", None, "ResetRetries", D::Integer, M::ReadWrite, None),
        ("OCPPCommCtrlr", None, "WebSocketPingInterval", D::Integer, M::ReadWrite, Some("s")),
        ("SampledDataCtrlr", None, "TxUpdatedInterval", D::Integer, M::ReadWrite, Some("s")),
        ("SampledDataCtrlr", None, "TxUpdatedMeasurands", D::MemberList, M::ReadWrite, None),
        ("SampledDataCtrlr", None, "TxEndedMeasurands", D::MemberList, M::ReadWrite, None),
        ("SampledDataCtrlr", None, "TxStartedMeasurands", D::MemberList, M::ReadWrite, None),
        ("TxCtrlr", None, "EVConnectionTimeOut", D::Integer, M::ReadWrite, Some("s")),
        ("TxCtrlr", None, "StopTxOnEVSideDisconnect", D::Boolean, M::ReadWrite, None),
        ("TxCtrlr", None, "StopTxOnInvalidId", D::Boolean, M::ReadWrite, None),
        ("TxCtrlr", None, "TxStartPoint", D::MemberList, M::ReadWrite, None),
        ("TxCtrlr", None, "TxStopPoint", D::MemberList, M::ReadWrite, None),
        ("AuthCtrlr", None, "AuthorizeRemoteStart", D::Boolean, M::ReadWrite, None),
        ("AuthCtrlr", None, "LocalAuthorizeOffline", D::Boolean, M::ReadWrite, None),
        ("AuthCtrlr", None, "LocalPreAuthorize", D::Boolean, M::ReadWrite, None),
        ("AuthCacheCtrlr", None, "Enabled", D::Boolean, M::ReadWrite, None),
        ("LocalAuthListCtrlr", None, "Enabled", D::Boolean, M::ReadWrite, None),
        ("LocalAuthListCtrlr", None, "Entries", D::Integer, M::ReadOnly, None),
        ("LocalAuthListCtrlr", None, "ItemsPerMessage", D::Integer, M::ReadOnly, None),
        ("LocalAuthListCtrlr", None, "BytesPerMessage", D::Integer, M::ReadOnly, None),
        ("DeviceDataCtrlr", Some("GetReport"), "ItemsPerMessage", D::Integer, M::ReadOnly, None),
        ("DeviceDataCtrlr", Some("GetVariables"), "ItemsPerMessage", D::Integer, M::ReadOnly, None),
        ("DeviceDataCtrlr", Some("SetVariables"), "BytesPerMessage", D::Integer, M::ReadOnly, None),
        ("SecurityCtrlr", None, "SecurityProfile", D::Integer, M::ReadOnly, None),
        ("SecurityCtrlr", None, "Identity", D::String, M::ReadOnly, None),
        ("SecurityCtrlr", None, "OrganizationName", D::String, M::ReadWrite, None),
        ("ClockCtrlr", None, "DateTime", D::DateTime, M::ReadOnly, None),
        ("ClockCtrlr", None, "TimeSource", D::SequenceList, M::ReadWrite, None),
        ("ChargingStation", None, "AvailabilityState", D::OptionList, M::ReadOnly, None),
        ("ChargingStation", None, "Available", D::Boolean, M::ReadOnly, None),
    ];
    for (component, instance, variable, data_type, mutability, unit) in expect {
        let entry = model
            .variable(&catalogue::id(component), variable, *instance)
            .unwrap_or_else(|e| panic!("{component}.{variable}: {e:?}"));
        assert_eq!(
            entry.characteristics.data_type, *data_type,
            "{component}.{variable}"
        );
        assert_eq!(
            entry.attributes[0].mutability, *mutability,
            "{component}.{variable}"
        );
        assert_eq!(
            entry.characteristics.unit.as_deref(),
            *unit,
            "{component}.{variable}"
        );
        if let Some(value) = &entry.attributes[0].value {
            assert_eq!(
                entry.characteristics.check(value),
                Ok(()),
                "{component}.{variable}"
            );
        }
    }
    // EVSEs and connectors of the layout.
    let connector = ComponentId::new("Connector").at(1, Some(2));
    assert!(model
        .variable(&connector, "AvailabilityState", None)
        .is_ok());
    let none = ComponentId::new("Connector").at(2, Some(2));
    assert_eq!(
        model.variable(&none, "AvailabilityState", None),
        Err(GetStatus::UnknownComponent)
    );
    let evse = ComponentId::new("EVSE").at(2, None);
    let power = model.variable(&evse, "Power", None).unwrap();
    assert!(power.attribute(AttributeType::MaxSet).is_some());
}

#[test]
fn set_variables_statuses() {
    let mut model = model();
    let mut not_attribute = data("OCPPCommCtrlr", "HeartbeatInterval", "5");
    not_attribute.attribute_type = Some(m::AttributeEnum::MaxSet);
    let mut attempts = data("OCPPCommCtrlr", "MessageAttempts", "5");
    attempts.variable.instance = Some("TransactionEvent".into());
    let request = m::SetVariablesRequest::new(vec![
        data("OCPPCommCtrlr", "HeartbeatInterval", "5"),
        data("OCPPCommCtrlr", "HeartbeatInterval", "-5"),
        data("AcmeCtrlr", "HeartbeatInterval", "5"),
        data("OCPPCommCtrlr", "Acme", "5"),
        not_attribute,
        data("SecurityCtrlr", "SecurityProfile", "2"),
        data("TxCtrlr", "StopTxOnInvalidId", "yes"),
        attempts,
    ]);
    let (response, changes) = model.set_variables(&request);
    let statuses: Vec<_> = response
        .set_variable_result
        .iter()
        .map(|r| r.attribute_status.clone())
        .collect();
    use m::SetVariableStatusEnum as S;
    assert_eq!(
        statuses,
        [
            S::Accepted,
            S::Rejected,
            S::UnknownComponent,
            S::UnknownVariable,
            S::NotSupportedAttributeType,
            S::Rejected,
            S::Rejected,
            S::Accepted
        ]
    );
    let reasons: Vec<_> = response
        .set_variable_result
        .iter()
        .map(|r| {
            r.attribute_status_info
                .as_ref()
                .map(|i| i.reason_code.as_str())
        })
        .collect();
    assert_eq!(reasons[1], Some("ValueTooLow"));
    assert_eq!(reasons[5], Some("ReadOnly"));
    assert_eq!(reasons[6], Some("InvalidValue"));
    assert_eq!(changes.len(), 2);
    assert_eq!(changes[0].heartbeat_interval(), Some(5));
    assert_eq!(
        model.value("OCPPCommCtrlr", "HeartbeatInterval").as_deref(),
        Some("5")
    );
}

#[test]
fn values_longer_than_the_configuration_value_size_are_rejected() {
    let mut model = model();
    let long = "x".repeat(1001);
    let request = m::SetVariablesRequest::new(vec![
        data("SecurityCtrlr", "OrganizationName", &long),
        data("SecurityCtrlr", "OrganizationName", &long[..1000]),
    ]);
    let (response, changes) = model.set_variables(&request);
    let first = &response.set_variable_result[0];
    assert_eq!(first.attribute_status, m::SetVariableStatusEnum::Rejected);
    let second = &response.set_variable_result[1];
    assert_eq!(second.attribute_status, m::SetVariableStatusEnum::Accepted);
    assert_eq!(changes.len(), 1);
}

#[test]
fn reboot_required_variables_say_so() {
    let mut model = DeviceModel::new();
    let slot = VariableEntry::new(
        "NetworkConfigurationPriority",
        Characteristics::new(DataType::SequenceList).values(["0", "1"]),
        Mutability::ReadWrite,
        Some("0"),
    )
    .needs_reboot();
    model.insert(ComponentId::new("OCPPCommCtrlr"), slot);
    let outcome = model.set(
        "OCPPCommCtrlr",
        None,
        "NetworkConfigurationPriority",
        None,
        AttributeType::Actual,
        "1,0",
    );
    assert_eq!(outcome.status, SetStatus::RebootRequired);
    assert!(outcome.change.is_some());
}

#[test]
fn get_variables_statuses() {
    let model = model();
    let get = |component: &str, variable: &str| {
        m::GetVariableData::new(m::Component::new(component), m::Variable::new(variable))
    };
    let mut max = get("EVSE", "Power");
    max.component.evse = Some(m::EVSE::new(1));
    max.attribute_type = Some(m::AttributeEnum::MaxSet);
    let request = m::GetVariablesRequest::new(vec![
        get("OCPPCommCtrlr", "HeartbeatInterval"),
        get("SecurityCtrlr", "BasicAuthPassword"),
        get("Nope", "HeartbeatInterval"),
        get("OCPPCommCtrlr", "Nope"),
        max,
    ]);
    let response = model.get_variables(&request);
    use m::GetVariableStatusEnum as G;
    let statuses: Vec<_> = response
        .get_variable_result
        .iter()
        .map(|r| r.attribute_status.clone())
        .collect();
    assert_eq!(
        statuses,
        [
            G::Accepted,
            G::Rejected,
            G::UnknownComponent,
            G::UnknownVariable,
            G::Accepted
        ]
    );
    assert_eq!(
        response.get_variable_result[0].attribute_value.as_deref(),
        Some("60")
    );
    assert_eq!(
        response.get_variable_result[4].attribute_value.as_deref(),
        Some("22000")
    );
    assert_eq!(response.get_variable_result[1].attribute_value, None);
}

#[test]
fn persistent_values_round_trip() {
    let mut model = model();
    let _ = model.set(
        "OCPPCommCtrlr",
        None,
        "HeartbeatInterval",
        None,
        AttributeType::Actual,
        "7",
    );
    let values = model.persistent_values();
    assert!(values
        .iter()
        .all(|(name, _)| !name.contains("SecurityProfile")));
    let mut fresh = self::model();
    for (name, value) in &values {
        assert!(fresh.restore(name, value), "{name}");
    }
    assert_eq!(fresh, model);
    assert!(!fresh.restore("OCPPCommCtrlr/HeartbeatInterval/Actual", "x"));
    assert!(!fresh.restore("SecurityCtrlr/SecurityProfile/Actual", "3"));
    assert!(!fresh.restore("Gone/Gone/Actual", "1"));
}

#[test]
fn reports_are_split_and_numbered() {
    let model = model();
    let full = model.base_report(ReportBase::FullInventory);
    let count: usize = model.components().iter().map(|c| c.variables.len()).sum();
    assert_eq!(full.len(), count);
    let summary = model.base_report(ReportBase::SummaryInventory);
    assert!(summary
        .iter()
        .all(|d| d.variable.name == "AvailabilityState" || d.variable.name == "Available"));
    let config = model.base_report(ReportBase::ConfigurationInventory);
    assert!(config.iter().all(|d| d
        .variable_attribute
        .iter()
        .any(|a| a.mutability != Some(m::MutabilityEnum::ReadOnly))));
    let calls = notify_reports(3, ocpp_messages::DateTime::now(), full.clone(), 20);
    assert_eq!(
        calls
            .iter()
            .map(|c| c.report_data.as_ref().map_or(0, Vec::len))
            .sum::<usize>(),
        full.len()
    );
    for (index, call) in calls.iter().enumerate() {
        assert_eq!(call.request_id, 3);
        assert_eq!(call.seq_no, index as i32);
        assert_eq!(call.tbc, Some(index + 1 < calls.len()));
        assert!(call.report_data.as_ref().unwrap().len() <= 20);
    }
    let empty = notify_reports(4, ocpp_messages::DateTime::now(), Vec::new(), 20);
    assert_eq!(empty.len(), 1);
    assert_eq!(model.items_per_message("GetReport"), Some(20));
}

#[test]
fn custom_reports_filter() {
    let model = model();
    let mut request = m::GetReportRequest::new(1);
    request.component_variable = Some(vec![m::ComponentVariable::new(m::Component::new(
        "Connector",
    ))]);
    let connectors = model.custom_report(&request);
    assert_eq!(connectors.len(), 3 * 3);
    let mut one = m::ComponentVariable::new(m::Component::new("OCPPCommCtrlr"));
    one.variable = Some(m::Variable::new("HeartbeatInterval"));
    request.component_variable = Some(vec![one]);
    assert_eq!(model.custom_report(&request).len(), 1);
    request.component_variable = None;
    request.component_criteria = Some(vec![m::ComponentCriterionEnum::Enabled]);
    let enabled = model.custom_report(&request);
    assert!(enabled.iter().all(|d| d.component.name.ends_with("Ctrlr")));
    assert!(!enabled.is_empty());
}

#[test]
fn configuration_keys() {
    let mut config = Configuration::standard(2);
    for key in [
        "AllowOfflineTxForUnknownId",
        "AuthorizationCacheEnabled",
        "AuthorizeRemoteTxRequests",
        "ClockAlignedDataInterval",
        "ConnectionTimeOut",
        "ConnectorPhaseRotation",
        "GetConfigurationMaxKeys",
        "HeartbeatInterval",
        "LocalAuthorizeOffline",
        "LocalPreAuthorize",
        "MeterValuesAlignedData",
        "MeterValuesSampledData",
        "MeterValueSampleInterval",
        "NumberOfConnectors",
        "ResetRetries",
        "StopTransactionOnEVSideDisconnect",
        "StopTransactionOnInvalidId",
        "StopTxnAlignedData",
        "StopTxnSampledData",
        "SupportedFeatureProfiles",
        "TransactionMessageAttempts",
        "TransactionMessageRetryInterval",
        "UnlockConnectorOnEVSideDisconnect",
        "WebSocketPingInterval",
        "LocalAuthListEnabled",
        "LocalAuthListMaxLength",
        "SendLocalListMaxLength",
    ] {
        let k = config.key(key).unwrap_or_else(|| panic!("{key}"));
        assert!(k.accepts(k.value.as_deref().unwrap_or_default()), "{key}");
    }
    for (key, value, status) in [
        (
            "MeterValuesSampledData",
            "Voltage,SoC",
            ChangeStatus::Accepted,
        ),
        (
            "MeterValuesSampledData",
            "Voltage,Voltage",
            ChangeStatus::Rejected,
        ),
        ("MeterValuesSampledData", "Nonsense", ChangeStatus::Rejected),
        (
            "ConnectorPhaseRotation",
            "0.RST,1.RST,2.Unknown",
            ChangeStatus::Accepted,
        ),
        ("ConnectorPhaseRotation", "1.XYZ", ChangeStatus::Rejected),
        ("LocalPreAuthorize", "TRUE", ChangeStatus::Rejected),
        ("SupportedFeatureProfiles", "Core", ChangeStatus::Rejected),
    ] {
        assert_eq!(config.change(key, value).0, status, "{key} = {value}");
    }
    let mut reboot = ConfigurationKey::new("AcmeMode", KeyType::String, false, "a");
    reboot.reboot_required = true;
    config.insert(reboot);
    assert_eq!(
        config.change("AcmeMode", "b").0,
        ChangeStatus::RebootRequired
    );
    let many = ocpp_messages::v1_6::GetConfigurationRequest::default()
        .with_key(vec!["HeartbeatInterval".to_owned(); 51]);
    assert_eq!(
        config.get_configuration(&many),
        Err(TooManyKeys { asked: 51, max: 50 })
    );
    let all = config.get_configuration(&Default::default()).unwrap();
    assert_eq!(all.configuration_key.unwrap().len(), config.keys().len());
    let values = config.persistent_values();
    assert!(values.iter().all(|(k, _)| k != "NumberOfConnectors"));
    let mut fresh = Configuration::standard(2);
    fresh.insert(ConfigurationKey::new("AcmeMode", KeyType::String, false, "a").needs_reboot());
    for (k, v) in &values {
        assert!(fresh.restore(k, v));
    }
    assert_eq!(fresh, config);
}
