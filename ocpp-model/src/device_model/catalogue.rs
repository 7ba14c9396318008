//! The standard components and variables of OCPP 2.0.1, as typed data: those every station needs
//! and those this library itself uses, with the data types, units and mutability of OCPP 2.0.1
//! Part 2, "Referenced Components and Variables" of each functional block (B Provisioning:
//! `OCPPCommCtrlr`, `DeviceDataCtrlr`; A Security: `SecurityCtrlr`; C Authorization:
//! `AuthCtrlr`, `AuthCacheCtrlr`; D LocalAuthorizationList Management: `LocalAuthListCtrlr`;
//! E Transactions: `TxCtrlr`, `SampledDataCtrlr`; J MeterValues: `AlignedDataCtrlr`; G Availability: `ChargingStation`, `EVSE`,
//! `Connector`; P Time: `ClockCtrlr`), and its Appendix 3 "Standardized Components" for the
//! physical ones.
//!
//! The values are defaults a station developer changes with [`DeviceModel::update`]
//! (read-only facts: the number of connectors, the security profile) or leaves to the central
//! system (read-write settings).
//!
//! ```
//! use ocpp_model::device_model::{catalogue, DeviceModel, Mutability};
//! let model = DeviceModel::standard(catalogue::Layout::new(&[2, 1]));
//! let heartbeat = model
//!     .variable(&catalogue::id(catalogue::OCPP_COMM_CTRLR), "HeartbeatInterval", None)
//!     .unwrap();
//! assert_eq!(heartbeat.characteristics.unit.as_deref(), Some("s"));
//! assert_eq!(heartbeat.attributes[0].mutability, Mutability::ReadWrite);
//! ```

use super::{
    Attribute, AttributeType, Characteristics, ComponentEntry, ComponentId, DataType, DeviceModel,
    Mutability, VariableEntry,
};
use crate::device_model::configuration::MEASURANDS;

/// OCPP communication settings (B Provisioning).
pub const OCPP_COMM_CTRLR: &str = "OCPPCommCtrlr";
/// Clock-aligned meter values (J MeterValues).
pub const ALIGNED_DATA_CTRLR: &str = "AlignedDataCtrlr";
/// Meter values sampled in a transaction (E Transactions, J MeterValues).
pub const SAMPLED_DATA_CTRLR: &str = "SampledDataCtrlr";
/// Transaction behaviour (E Transactions).
pub const TX_CTRLR: &str = "TxCtrlr";
/// Authorization (C Authorization).
pub const AUTH_CTRLR: &str = "AuthCtrlr";
/// The authorization cache (C Authorization).
pub const AUTH_CACHE_CTRLR: &str = "AuthCacheCtrlr";
/// The local authorization list (D LocalAuthorizationList Management).
pub const LOCAL_AUTH_LIST_CTRLR: &str = "LocalAuthListCtrlr";
/// Limits of the device model messages (B Provisioning).
pub const DEVICE_DATA_CTRLR: &str = "DeviceDataCtrlr";
/// Security (A Security).
pub const SECURITY_CTRLR: &str = "SecurityCtrlr";
/// The clock (P Time).
pub const CLOCK_CTRLR: &str = "ClockCtrlr";
/// The station as a whole (G Availability).
pub const CHARGING_STATION: &str = "ChargingStation";
/// An EVSE (G Availability).
pub const EVSE: &str = "EVSE";
/// A connector of an EVSE (G Availability).
pub const CONNECTOR: &str = "Connector";

/// The measurands a `SampledDataCtrlr` list may name (OCPP 2.0.1 Part 2 `MeasurandEnumType`).
pub const MEASURANDS_2_0_1: &[&str] = MEASURANDS;

/// The trigger points of a transaction (`TxStartPoint`, `TxStopPoint`; OCPP 2.0.1 E
/// "Transaction mechanism").
pub const TX_POINTS: &[&str] = &[
    "ParkingBayOccupancy",
    "EVConnected",
    "Authorized",
    "DataSigned",
    "PowerPathClosed",
    "EnergyTransfer",
];

/// The availability states of `AvailabilityState` (G Availability).
pub const AVAILABILITY_STATES: &[&str] = &[
    "Available",
    "Occupied",
    "Reserved",
    "Unavailable",
    "Faulted",
];

/// The sources `ClockCtrlr.TimeSource` may list (P Time).
pub const TIME_SOURCES: &[&str] = &[
    "Heartbeat",
    "NTP",
    "GPS",
    "RealTimeClock",
    "MobileNetwork",
    "RadioTimeTransmitter",
];

/// The station's EVSEs and their connectors: the `EVSE` and `Connector` components of the
/// catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Per EVSE (ids from 1), its number of connectors.
    pub connectors: Vec<u32>,
}

impl Layout {
    /// EVSE 1 with `connectors[0]` connectors, EVSE 2 with `connectors[1]`...
    pub fn new(connectors: &[u32]) -> Self {
        Layout {
            connectors: connectors.to_vec(),
        }
    }
}

/// A station-wide component by name.
pub fn id(name: &str) -> ComponentId {
    ComponentId::new(name)
}

fn integer() -> Characteristics {
    Characteristics::new(DataType::Integer)
}

fn seconds() -> Characteristics {
    Characteristics::new(DataType::Integer).unit("s").min(0)
}

fn boolean() -> Characteristics {
    Characteristics::new(DataType::Boolean)
}

fn rw(name: &str, characteristics: Characteristics, value: &str) -> VariableEntry {
    VariableEntry::new(name, characteristics, Mutability::ReadWrite, Some(value))
}

fn ro(name: &str, characteristics: Characteristics, value: &str) -> VariableEntry {
    VariableEntry::new(name, characteristics, Mutability::ReadOnly, Some(value))
}

fn measurands(name: &str, value: &str) -> VariableEntry {
    rw(
        name,
        Characteristics::new(DataType::MemberList).values(MEASURANDS.iter().copied()),
        value,
    )
}

fn component(name: &str, variables: Vec<VariableEntry>) -> ComponentEntry {
    ComponentEntry {
        id: id(name),
        variables,
    }
}

/// The standard components for `layout`, in this order: the controllers, then the station,
/// its EVSEs and their connectors.
pub fn standard(layout: &Layout) -> Vec<ComponentEntry> {
    let mut out = vec![
        component(
            OCPP_COMM_CTRLR,
            vec![
                ro(
                    "FileTransferProtocols",
                    Characteristics::new(DataType::MemberList)
                        .values(["FTP", "FTPS", "HTTP", "HTTPS", "SFTP"]),
                    "HTTPS",
                ),
                rw("HeartbeatInterval", seconds(), "60"),
                ro("MessageTimeout", seconds(), "30").instance("Default"),
                rw("MessageAttempts", integer().min(0), "3").instance("TransactionEvent"),
                rw("MessageAttemptInterval", seconds(), "10").instance("TransactionEvent"),
                rw(
                    "NetworkConfigurationPriority",
                    Characteristics::new(DataType::SequenceList),
                    "0",
                ),
                rw("NetworkProfileConnectionAttempts", integer().min(0), "3"),
                rw("OfflineThreshold", seconds(), "60"),
                rw("ResetRetries", integer().min(0), "2"),
                rw("RetryBackOffRepeatTimes", integer().min(0), "5"),
                rw("RetryBackOffRandomRange", seconds(), "10"),
                rw("RetryBackOffWaitMinimum", seconds(), "3"),
                rw("UnlockOnEVSideDisconnect", boolean(), "true"),
                rw("WebSocketPingInterval", seconds(), "30"),
            ],
        ),
        component(
            ALIGNED_DATA_CTRLR,
            vec![
                rw("Enabled", boolean(), "true"),
                rw("Interval", seconds(), "0"),
                measurands("Measurands", "Energy.Active.Import.Register"),
                rw("TxEndedInterval", seconds(), "0"),
                measurands("TxEndedMeasurands", "Energy.Active.Import.Register"),
            ],
        ),
        component(
            SAMPLED_DATA_CTRLR,
            vec![
                rw("TxUpdatedInterval", seconds(), "60"),
                measurands("TxUpdatedMeasurands", "Energy.Active.Import.Register"),
                rw("TxEndedInterval", seconds(), "0"),
                measurands("TxEndedMeasurands", "Energy.Active.Import.Register"),
                measurands("TxStartedMeasurands", "Energy.Active.Import.Register"),
            ],
        ),
        component(
            TX_CTRLR,
            vec![
                rw("EVConnectionTimeOut", seconds(), "60"),
                rw("StopTxOnEVSideDisconnect", boolean(), "true"),
                rw("StopTxOnInvalidId", boolean(), "true"),
                rw(
                    "TxStartPoint",
                    Characteristics::new(DataType::MemberList).values(TX_POINTS.iter().copied()),
                    "PowerPathClosed",
                ),
                rw(
                    "TxStopPoint",
                    Characteristics::new(DataType::MemberList).values(TX_POINTS.iter().copied()),
                    "EVConnected,Authorized",
                ),
            ],
        ),
        component(
            AUTH_CTRLR,
            vec![
                rw("Enabled", boolean(), "true"),
                rw("AuthorizeRemoteStart", boolean(), "true"),
                rw("LocalAuthorizeOffline", boolean(), "true"),
                rw("LocalPreAuthorize", boolean(), "false"),
                rw("OfflineTxForUnknownIdEnabled", boolean(), "false"),
            ],
        ),
        component(
            AUTH_CACHE_CTRLR,
            vec![
                ro("Available", boolean(), "true"),
                rw("Enabled", boolean(), "true"),
                rw("LifeTime", seconds(), "86400"),
                rw(
                    "Policy",
                    Characteristics::new(DataType::OptionList)
                        .values(["LRU", "LFU", "FIFO", "CUSTOM"]),
                    "LRU",
                ),
            ],
        ),
        component(
            LOCAL_AUTH_LIST_CTRLR,
            vec![
                ro("Available", boolean(), "true"),
                rw("Enabled", boolean(), "true"),
                ro("Entries", integer().min(0), "0"),
                ro("ItemsPerMessage", integer().min(1), "100"),
                ro("BytesPerMessage", integer().min(1), "65536"),
            ],
        ),
        component(
            DEVICE_DATA_CTRLR,
            vec![
                ro("ItemsPerMessage", integer().min(1), "20").instance("GetReport"),
                ro("ItemsPerMessage", integer().min(1), "20").instance("GetVariables"),
                ro("ItemsPerMessage", integer().min(1), "20").instance("SetVariables"),
                ro("BytesPerMessage", integer().min(1), "65536").instance("GetReport"),
                ro("BytesPerMessage", integer().min(1), "65536").instance("GetVariables"),
                ro("BytesPerMessage", integer().min(1), "65536").instance("SetVariables"),
                ro("ConfigurationValueSize", integer().min(1), "1000"),
                ro("ReportingValueSize", integer().min(1), "2500"),
            ],
        ),
        component(
            SECURITY_CTRLR,
            vec![
                ro("SecurityProfile", integer().min(1).max(3), "1"),
                ro(
                    "Identity",
                    Characteristics::new(DataType::String).max(48),
                    "",
                ),
                rw(
                    "OrganizationName",
                    Characteristics::new(DataType::String),
                    "",
                ),
                ro("CertificateEntries", integer().min(0), "0"),
                VariableEntry::new(
                    "BasicAuthPassword",
                    Characteristics::new(DataType::String).min(16).max(40),
                    Mutability::WriteOnly,
                    None,
                ),
            ],
        ),
        component(
            CLOCK_CTRLR,
            vec![
                VariableEntry::new(
                    "DateTime",
                    Characteristics::new(DataType::DateTime),
                    Mutability::ReadOnly,
                    None,
                ),
                rw(
                    "TimeSource",
                    Characteristics::new(DataType::SequenceList)
                        .values(TIME_SOURCES.iter().copied()),
                    "Heartbeat",
                ),
            ],
        ),
        component(CHARGING_STATION, physical()),
    ];
    for (index, count) in layout.connectors.iter().enumerate() {
        let evse = i32::try_from(index + 1).unwrap_or(i32::MAX);
        out.push(ComponentEntry {
            id: id(EVSE).at(evse, None),
            variables: physical(),
        });
        for connector in 1..=*count {
            out.push(ComponentEntry {
                id: id(CONNECTOR).at(evse, Some(i32::try_from(connector).unwrap_or(i32::MAX))),
                variables: vec![
                    ro("Available", boolean(), "true"),
                    ro(
                        "AvailabilityState",
                        Characteristics::new(DataType::OptionList)
                            .values(AVAILABILITY_STATES.iter().copied()),
                        "Available",
                    ),
                    ro("SupplyPhases", integer().min(0).max(3), "3"),
                ],
            });
        }
    }
    out
}

/// The variables of the station and of an EVSE (G Availability; `Power` of Appendix 3).
fn physical() -> Vec<VariableEntry> {
    vec![
        ro("Available", boolean(), "true"),
        ro(
            "AvailabilityState",
            Characteristics::new(DataType::OptionList).values(AVAILABILITY_STATES.iter().copied()),
            "Available",
        ),
        ro("SupplyPhases", integer().min(0).max(3), "3"),
        ro(
            "Power",
            Characteristics::new(DataType::Decimal).unit("W").min(0),
            "0",
        )
        .with(Attribute::new(
            AttributeType::MaxSet,
            Mutability::ReadOnly,
            Some("22000"),
        )),
    ]
}

impl DeviceModel {
    /// The Actual value of `DeviceDataCtrlr.ItemsPerMessage` of `instance` (`GetReport`,
    /// `GetVariables`, `SetVariables`), when it is a positive number.
    pub fn items_per_message(&self, instance: &str) -> Option<usize> {
        self.read(
            &id(DEVICE_DATA_CTRLR),
            "ItemsPerMessage",
            Some(instance),
            AttributeType::Actual,
        )
        .ok()
        .flatten()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
    }
}
