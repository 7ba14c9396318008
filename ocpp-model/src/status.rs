//! A connector's status changed ([`StatusChanged`], 1.6 and 2.x `StatusNotification`).

use ocpp_messages::DateTime;

wire_names! {
    /// A connector's status, 2.x `ConnectorStatusEnumType`. 1.6's finer states of an occupied
    /// connector (`Preparing`, `Charging`, `SuspendedEVSE`, `SuspendedEV`, `Finishing`) are all
    /// [`ConnectorStatus::Occupied`], as in the 2.0.1 migration (the charging state moves to
    /// TransactionEvent); the raw value is kept in [`StatusChanged::raw_status`].
    ConnectorStatus {
        /// Free.
        Available => "Available",
        /// In use (or 1.6 Preparing, Charging, SuspendedEVSE, SuspendedEV, Finishing).
        Occupied => "Occupied",
        /// Reserved.
        Reserved => "Reserved",
        /// Not available.
        Unavailable => "Unavailable",
        /// Faulted.
        Faulted => "Faulted",
    }
}

impl ConnectorStatus {
    /// The status of a 1.6 `ChargePointStatus` value (`None` for an unlisted one).
    ///
    /// ```
    /// use ocpp_model::ConnectorStatus;
    /// assert_eq!(ConnectorStatus::from_1_6("SuspendedEV"), Some(ConnectorStatus::Occupied));
    /// ```
    pub fn from_1_6(value: &str) -> Option<ConnectorStatus> {
        match value {
            "Preparing" | "Charging" | "SuspendedEVSE" | "SuspendedEV" | "Finishing" => {
                Some(ConnectorStatus::Occupied)
            }
            other => ConnectorStatus::from_wire(other),
        }
    }
}

/// A connector's status changed.
///
/// Where: 2.x `evseId` and `connectorId`; 1.6 `connectorId` is what 2.x calls the EVSE (1.6
/// knows one connector per EVSE; 0 is the whole charge point), so it is `evse`, with `connector`
/// `None`.
///
/// ```
/// use ocpp_messages::{v1_6, Request};
/// use ocpp_model::{ConnectorStatus, StationEvent};
///
/// let request: Request = v1_6::StatusNotificationRequest::new(
///     1,
///     v1_6::ChargePointErrorCode::NoError,
///     v1_6::ChargePointStatus::Charging,
/// )
/// .into();
/// let event = StationEvent::from_request(&request);
/// let StationEvent::StatusChanged(changed) = event else { panic!() };
/// assert_eq!((changed.evse, changed.connector), (1, None));
/// assert_eq!(changed.status, ConnectorStatus::Occupied);
/// assert_eq!(changed.raw_status, "Charging");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct StatusChanged {
    /// The EVSE (1.6: the connectorId; 0: the whole charge point).
    pub evse: u32,
    /// The connector within the EVSE (2.x); `None` from 1.6.
    pub connector: Option<u32>,
    /// The status.
    pub status: ConnectorStatus,
    /// The status as the charge point sent it (1.6 `ChargePointStatus`, 2.x
    /// `ConnectorStatusEnumType`).
    pub raw_status: String,
    /// 1.6 `errorCode` (e.g. `NoError`); 2.x reports errors through NotifyEvent: `None`.
    pub error_code: Option<String>,
    /// When (2.x: always; 1.6: optional).
    pub timestamp: Option<DateTime>,
}
