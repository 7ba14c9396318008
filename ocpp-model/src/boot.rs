//! A charge point boots ([`Booted`], 1.6 and 2.x `BootNotification`) and is registered
//! ([`BootAnswer`]).

use ocpp_messages::DateTime;

/// A charge point (re)started and introduces itself.
///
/// ```
/// use ocpp_messages::{v1_6, Request};
/// use ocpp_model::{BootReason, StationEvent};
///
/// let request: Request = v1_6::BootNotificationRequest::new("ACME", "One").into();
/// let StationEvent::Booted(booted) = StationEvent::from_request(&request) else { panic!() };
/// assert_eq!((booted.vendor.as_str(), booted.model.as_str()), ("ACME", "One"));
/// assert_eq!(booted.reason, BootReason::Unknown); // 1.6 gives no reason
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Booted {
    /// 1.6 `chargePointVendor`, 2.x `chargingStation.vendorName`.
    pub vendor: String,
    /// 1.6 `chargePointModel`, 2.x `chargingStation.model`.
    pub model: String,
    /// 1.6 `chargePointSerialNumber` (or the deprecated `chargeBoxSerialNumber`), 2.x
    /// `chargingStation.serialNumber`.
    pub serial: Option<String>,
    /// `firmwareVersion`.
    pub firmware: Option<String>,
    /// 2.x `reason`; 1.6 has none: [`BootReason::Unknown`] with `raw_reason` `None`.
    pub reason: BootReason,
    /// The reason as the charge point sent it.
    pub raw_reason: Option<String>,
}

wire_names! {
    /// Why a charge point booted: 2.x `BootReasonEnumType`.
    BootReason {
        /// The application restarted.
        ApplicationReset => "ApplicationReset",
        /// After a firmware update.
        FirmwareUpdate => "FirmwareUpdate",
        /// Reset locally.
        LocalReset => "LocalReset",
        /// Powered up.
        PowerUp => "PowerUp",
        /// Reset by the CSMS.
        RemoteReset => "RemoteReset",
        /// A scheduled reset.
        ScheduledReset => "ScheduledReset",
        /// Asked by TriggerMessage.
        Triggered => "Triggered",
        /// Not known (and every 1.6 boot, and an unlisted value).
        Unknown => "Unknown",
        /// The watchdog restarted it.
        Watchdog => "Watchdog",
    }
}

wire_names! {
    /// Whether the CSMS registers a booted charge point (1.6 `RegistrationStatus`, 2.x
    /// `RegistrationStatusEnumType`: the same three values).
    RegistrationStatus {
        /// Registered.
        Accepted => "Accepted",
        /// Not yet: boot again after `interval`.
        Pending => "Pending",
        /// Refused: boot again after `interval`.
        Rejected => "Rejected",
    }
}

/// The answer to [`Booted`].
///
/// ```
/// use ocpp_messages::DateTime;
/// use ocpp_model::{BootAnswer, RegistrationStatus};
/// let answer = BootAnswer {
///     status: RegistrationStatus::Accepted,
///     interval_s: 300,
///     current_time: DateTime::from_unix_timestamp(0).unwrap(),
/// };
/// assert_eq!(answer.interval_s, 300);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct BootAnswer {
    /// Registered or not.
    pub status: RegistrationStatus,
    /// Accepted: the heartbeat interval; otherwise when to boot again (seconds).
    pub interval_s: u32,
    /// The CSMS's clock.
    pub current_time: DateTime,
}

impl BootAnswer {
    /// Accepted, with the heartbeat interval and the CSMS's clock.
    ///
    /// ```
    /// use ocpp_messages::DateTime;
    /// use ocpp_model::{BootAnswer, RegistrationStatus};
    ///
    /// let answer = BootAnswer::accepted(300, DateTime::from_unix_timestamp(0).unwrap());
    /// assert_eq!(answer.status, RegistrationStatus::Accepted);
    /// ```
    pub fn accepted(interval_s: u32, current_time: DateTime) -> Self {
        BootAnswer {
            status: RegistrationStatus::Accepted,
            interval_s,
            current_time,
        }
    }
}
