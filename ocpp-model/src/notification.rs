//! What a charge point reports without asking anything back: [`SecurityEvent`],
//! [`FirmwareStatus`], [`LogStatus`].

use ocpp_messages::DateTime;

/// A security event (1.6 security whitepaper and 2.x `SecurityEventNotification`: the same
/// three fields).
///
/// ```
/// use ocpp_messages::{v2_0_1, DateTime, Request};
/// use ocpp_model::StationEvent;
///
/// let time = DateTime::from_unix_timestamp(0).unwrap();
/// let request: Request =
///     v2_0_1::SecurityEventNotificationRequest::new("StartupOfTheDevice", time).into();
/// let StationEvent::SecurityEvent(event) = StationEvent::from_request(&request) else { panic!() };
/// assert_eq!(event.kind, "StartupOfTheDevice");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SecurityEvent {
    /// `type`: the event, in the words of the specifications' security events list.
    pub kind: String,
    /// When.
    pub timestamp: DateTime,
    /// `techInfo`.
    pub tech_info: Option<String>,
}

/// A firmware update's progress (1.6 and 2.x `FirmwareStatusNotification`; the status values
/// differ between versions and are kept as sent).
#[derive(Debug, Clone, PartialEq)]
pub struct FirmwareStatus {
    /// The status as sent (e.g. `Downloading`, `Installed`).
    pub status: String,
    /// `requestId` (of the UpdateFirmware or 1.6 SignedUpdateFirmware it follows).
    pub request_id: Option<i32>,
    /// 1.6: sent as `SignedFirmwareStatusNotification` (security whitepaper), answered as
    /// such; false otherwise.
    pub signed_update: bool,
}

/// A log upload's progress (1.6 security whitepaper and 2.x `LogStatusNotification`).
#[derive(Debug, Clone, PartialEq)]
pub struct LogStatus {
    /// The status as sent (e.g. `Uploading`, `Uploaded`).
    pub status: String,
    /// `requestId` (of the GetLog it follows).
    pub request_id: Option<i32>,
}
