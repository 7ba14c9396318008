//! Provisioning (OCPP 1.6 §4.2 and §3.8 of its errata, OCPP 2.0.1 B01-B03): whether a
//! BootNotification is Accepted, Pending or Rejected, and which CALLs a station that is not
//! Accepted may still send.
//!
//! | last BootNotification answer | CALLs allowed | the others get |
//! | --- | --- | --- |
//! | none yet, or Accepted | all | |
//! | Pending | BootNotification; what answers one of our requests: NotifyReport, NotifyMonitoringReport, NotifyCustomerInformation, NotifyDisplayMessages, ReportChargingProfiles, FirmwareStatusNotification, SignedFirmwareStatusNotification, DiagnosticsStatusNotification, LogStatusNotification, PublishFirmwareStatusNotification; and, once we sent a TriggerMessage or ExtendedTriggerMessage, what it may trigger: Heartbeat, StatusNotification, MeterValues, SignCertificate | SecurityError |
//! | Rejected | BootNotification | SecurityError |
//!
//! Why: a Pending station is being provisioned: the CSMS reads its configuration
//! (GetBaseReport/GetConfiguration) and may trigger messages, and the station answers with
//! the reports above, but "SHALL NOT send request messages ... unless it has been instructed"
//! (B02.FR.02; B02.FR.09 and J16E §3.8: other CALLs get SecurityError). A Rejected station
//! sends nothing but BootNotification after the interval (B03.FR.03/B03.FR.04). A station
//! that was never answered (a 1.6 charge point reconnecting to a restarted CSMS without
//! booting again) is not refused: keeps old behaviour and real chargers working.
//!
//! To accept a Pending station: `PUT /chargepoints/ID/boot` with `{"status":"Accepted"}`,
//! then `POST /chargepoints/ID/call/TriggerMessage` with
//! `{"requestedMessage":"BootNotification"}` (B02.FR.05), or wait for its next boot.

use std::fmt;

/// The answer to a BootNotification (1.6 `RegistrationStatus`, 2.x `RegistrationStatusEnumType`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum BootPolicy {
    /// Registered: every CALL is served.
    #[default]
    Accepted,
    /// Not yet: the CSMS may provision it; only the CALLs in the module docs are served.
    Pending,
    /// Refused: only BootNotification is served.
    Rejected,
}

impl BootPolicy {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            BootPolicy::Accepted => "Accepted",
            BootPolicy::Pending => "Pending",
            BootPolicy::Rejected => "Rejected",
        }
    }

    /// Parses `Accepted`, `Pending`, `Rejected` (any case).
    pub fn parse(text: &str) -> Option<BootPolicy> {
        [
            BootPolicy::Accepted,
            BootPolicy::Pending,
            BootPolicy::Rejected,
        ]
        .into_iter()
        .find(|p| p.as_str().eq_ignore_ascii_case(text))
    }
}

impl fmt::Display for BootPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a Pending station may send that answers one of our requests.
const REPORTS: &[&str] = &[
    "BootNotification",
    "NotifyReport",
    "NotifyMonitoringReport",
    "NotifyCustomerInformation",
    "NotifyDisplayMessages",
    "ReportChargingProfiles",
    "FirmwareStatusNotification",
    "SignedFirmwareStatusNotification",
    "DiagnosticsStatusNotification",
    "LogStatusNotification",
    "PublishFirmwareStatusNotification",
];

/// What a Pending station may send once triggered (TriggerMessage's `requestedMessage`s
/// that are not already in [`REPORTS`]).
const TRIGGERED: &[&str] = &[
    "Heartbeat",
    "StatusNotification",
    "MeterValues",
    "SignCertificate",
];

/// Whether a station whose last BootNotification got `answered` may send `action`;
/// `triggered`: we sent it a TriggerMessage since.
pub fn allows(answered: Option<BootPolicy>, triggered: bool, action: &str) -> bool {
    match answered {
        None | Some(BootPolicy::Accepted) => true,
        Some(BootPolicy::Pending) => {
            REPORTS.contains(&action) || (triggered && TRIGGERED.contains(&action))
        }
        Some(BootPolicy::Rejected) => action == "BootNotification",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates() {
        assert!(allows(None, false, "Heartbeat"));
        assert!(allows(Some(BootPolicy::Accepted), false, "NotifyEvent"));
        let pending = Some(BootPolicy::Pending);
        assert!(allows(pending, false, "BootNotification"));
        assert!(allows(pending, false, "NotifyReport"));
        assert!(!allows(pending, false, "Heartbeat"));
        assert!(allows(pending, true, "Heartbeat"));
        assert!(!allows(pending, true, "TransactionEvent"));
        let rejected = Some(BootPolicy::Rejected);
        assert!(allows(rejected, false, "BootNotification"));
        assert!(!allows(rejected, true, "NotifyReport"));
        assert_eq!(BootPolicy::parse("pending"), Some(BootPolicy::Pending));
        assert_eq!(BootPolicy::parse("maybe"), None);
    }
}
