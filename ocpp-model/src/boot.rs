//! A charge point boots ([`Booted`], 1.6 and 2.x `BootNotification`) and is registered
//! ([`BootAnswer`]: what the CSMS answers, and what a station reads in the answer).

use std::time::Duration;

use ocpp_messages::{v1_6, v2_0_1, v2_1, DateTime, Response, ResponseRef};

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
    /// Why a charge point booted: 2.x `BootReasonEnumType`, as a CSMS reads it and as a
    /// station sends it (ocpp-proto's `boot_request`; 1.6 has no reason).
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
        /// Not known (and every 1.6 boot, and an unlisted value). A station sends it for a
        /// later connection of the same running station, which did not restart.
        Unknown => "Unknown",
        /// The watchdog restarted it.
        Watchdog => "Watchdog",
    }
}

wire_names! {
    /// Whether the CSMS registers a booted charge point (1.6 `RegistrationStatus`, 2.x
    /// `RegistrationStatusEnumType`: the same three values).
    RegistrationStatus {
        /// Registered: the station may send anything, and heartbeats at the interval.
        Accepted => "Accepted",
        /// Not yet: the CSMS wants to inspect or configure the station first; the station
        /// sends only what the CSMS triggers, and boots again after `interval`.
        Pending => "Pending",
        /// Refused: the station sends nothing but the next BootNotification, after `interval`.
        Rejected => "Rejected",
    }
}

/// The answer to [`Booted`]: what the CSMS answers, and what a station reads in the
/// BootNotificationResponse of any version ([`BootAnswer::from_response`]).
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
#[derive(Debug, Clone, PartialEq, Eq)]
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

    /// The answer a BootNotificationResponse of any version carries, read leniently for the
    /// station; `None` for a response of another action. A status the schema does not list (a
    /// lenient decode) counts as [`RegistrationStatus::Rejected`], the reading that lets the
    /// station send least; a negative interval counts as 0.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ocpp_messages::{v1_6, DateTime, Response};
    /// use ocpp_model::{BootAnswer, RegistrationStatus};
    ///
    /// let time = DateTime::from_unix_timestamp(1_780_000_000).unwrap();
    /// let response = Response::from(v1_6::BootNotificationResponse::new(
    ///     v1_6::RegistrationStatus::Accepted,
    ///     time,
    ///     300,
    /// ));
    /// let answer = BootAnswer::from_response(&response).unwrap();
    /// assert_eq!(answer.status, RegistrationStatus::Accepted);
    /// assert_eq!(answer.interval(), Duration::from_secs(300));
    /// ```
    pub fn from_response(response: &Response) -> Option<BootAnswer> {
        let (status, interval, current_time) = match response.view() {
            ResponseRef::V1_6(v1_6::Response::BootNotification(boot)) => {
                (boot.status.as_str(), boot.interval, &boot.current_time)
            }
            ResponseRef::V2_0_1(v2_0_1::Response::BootNotification(boot)) => {
                (boot.status.as_str(), boot.interval, &boot.current_time)
            }
            ResponseRef::V2_1(v2_1::Response::BootNotification(boot)) => {
                (boot.status.as_str(), boot.interval, &boot.current_time)
            }
            _ => return None,
        };
        Some(BootAnswer {
            status: RegistrationStatus::from_wire(status).unwrap_or(RegistrationStatus::Rejected),
            interval_s: u32::try_from(interval).unwrap_or(0),
            current_time: current_time.clone(),
        })
    }

    /// [`interval_s`](Self::interval_s) as a [`Duration`]: accepted, the heartbeat interval;
    /// otherwise the least wait before the next BootNotification.
    pub fn interval(&self) -> Duration {
        Duration::from_secs(u64::from(self.interval_s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time() -> DateTime {
        DateTime::from_unix_timestamp(1_780_000_000).unwrap()
    }

    #[test]
    fn boot_answer_from_every_version() {
        let v16 = Response::from(v1_6::BootNotificationResponse::new(
            v1_6::RegistrationStatus::Pending,
            time(),
            5,
        ));
        let v201 = Response::from(v2_0_1::BootNotificationResponse::new(
            time(),
            -3,
            v2_0_1::RegistrationStatusEnum::Rejected,
        ));
        let v21 = Response::from(v2_1::BootNotificationResponse::new(
            time(),
            30,
            v2_1::RegistrationStatusEnum::Accepted,
        ));
        let expected = [
            (v16, RegistrationStatus::Pending, 5),
            (v201, RegistrationStatus::Rejected, 0),
            (v21, RegistrationStatus::Accepted, 30),
        ];
        for (response, status, secs) in expected {
            let answer = BootAnswer::from_response(&response).unwrap();
            assert_eq!(answer.status, status);
            assert_eq!(answer.interval_s, secs);
            assert_eq!(answer.interval(), Duration::from_secs(secs.into()));
            assert_eq!(answer.current_time, time());
        }
    }

    #[test]
    fn boot_answer_unknown_status_is_rejected_and_other_actions_are_none() {
        let odd = Response::from(v1_6::BootNotificationResponse::new(
            v1_6::RegistrationStatus::from_wire("Maybe"),
            time(),
            10,
        ));
        let answer = BootAnswer::from_response(&odd).unwrap();
        assert_eq!(answer.status, RegistrationStatus::Rejected);
        let heartbeat = Response::from(v2_0_1::HeartbeatResponse::new(time()));
        assert_eq!(BootAnswer::from_response(&heartbeat), None);
    }
}
