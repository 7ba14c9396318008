//! What a station says at boot, per version: the BootNotification it sends and the Heartbeat.
//! What the CSMS's BootNotification answer means is the model's [`BootAnswer`], read with
//! [`BootAnswer::from_response`].
//!
//! OCPP 1.6 §4.2 (`chargePointVendor`, `chargePointModel`, ...) and OCPP 2.0.1 / 2.1 B01
//! (`chargingStation` with `vendorName`, `model`, ..., and a `reason`).

use ocpp_messages::{OcppVersion, Request};
#[cfg(doc)]
use ocpp_model::BootAnswer;
use ocpp_model::BootReason;

#[cfg(feature = "v1_6")]
use ocpp_messages::v1_6;
#[cfg(feature = "v2_0_1")]
use ocpp_messages::v2_0_1;
#[cfg(feature = "v2_1")]
use ocpp_messages::v2_1;

/// `maxLength` of 1.6 `chargePointVendor`.
#[cfg(feature = "v1_6")]
const V16_VENDOR_MAX: usize = 20;
/// `maxLength` of 1.6 `chargePointModel`.
#[cfg(feature = "v1_6")]
const V16_MODEL_MAX: usize = 20;
/// `maxLength` of 1.6 `chargePointSerialNumber`.
#[cfg(feature = "v1_6")]
const V16_SERIAL_MAX: usize = 25;
/// `maxLength` of 1.6 `firmwareVersion`.
#[cfg(feature = "v1_6")]
const V16_FIRMWARE_MAX: usize = 50;
/// `maxLength` of 2.x `chargingStation.vendorName`.
#[cfg(any(feature = "v2_0_1", feature = "v2_1"))]
const V2_VENDOR_MAX: usize = 50;
/// `maxLength` of 2.x `chargingStation.model`.
#[cfg(any(feature = "v2_0_1", feature = "v2_1"))]
const V2_MODEL_MAX: usize = 20;
/// `maxLength` of 2.x `chargingStation.serialNumber`.
#[cfg(any(feature = "v2_0_1", feature = "v2_1"))]
const V2_SERIAL_MAX: usize = 25;
/// `maxLength` of 2.x `chargingStation.firmwareVersion`.
#[cfg(any(feature = "v2_0_1", feature = "v2_1"))]
const V2_FIRMWARE_MAX: usize = 50;

/// Who the station is, as its BootNotification tells the CSMS.
///
/// Values longer than the version's schema allows are cut (at a character boundary) by
/// [`boot_request`], so that the request always validates: 1.6 vendor 20 characters, model 20,
/// serial number 25, firmware version 50; 2.x vendor name 50, model 20, serial number 25,
/// firmware version 50.
///
/// ```
/// use ocpp_proto::station::StationInfo;
/// let info = StationInfo::new("ACME", "Wallbox One").with_serial_number("SN-0001");
/// assert_eq!(info.serial_number.as_deref(), Some("SN-0001"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct StationInfo {
    /// The vendor (1.6 `chargePointVendor`, 2.x `vendorName`).
    pub vendor: String,
    /// The model (1.6 `chargePointModel`, 2.x `model`).
    pub model: String,
    /// The serial number (1.6 `chargePointSerialNumber`, 2.x `serialNumber`).
    pub serial_number: Option<String>,
    /// The firmware version (`firmwareVersion`).
    pub firmware_version: Option<String>,
}

impl StationInfo {
    /// A station of this vendor and model, with no serial number or firmware version.
    pub fn new(vendor: impl Into<String>, model: impl Into<String>) -> Self {
        StationInfo {
            vendor: vendor.into(),
            model: model.into(),
            serial_number: None,
            firmware_version: None,
        }
    }

    /// Sets the serial number.
    #[must_use]
    pub fn with_serial_number(mut self, serial_number: impl Into<String>) -> Self {
        self.serial_number = Some(serial_number.into());
        self
    }

    /// Sets the firmware version.
    #[must_use]
    pub fn with_firmware_version(mut self, firmware_version: impl Into<String>) -> Self {
        self.firmware_version = Some(firmware_version.into());
        self
    }
}

/// The reason a connection's BootNotification gives (the 2.x `reason`; OCPP 1.6 has no such
/// field): the one the station was asked to give (a reboot's, kept until a boot is accepted),
/// else [`Unknown`](BootReason::Unknown) once a boot of this running station was accepted (a
/// later connection: the link was lost and came back, the process did not restart; 2.x has no
/// reason for that, and `Unknown` is the only value that does not claim a restart that did not
/// happen), else [`PowerUp`](BootReason::PowerUp).
///
/// ```
/// use ocpp_proto::station::{connection_boot_reason, BootReason};
///
/// assert_eq!(connection_boot_reason(None, false), BootReason::PowerUp);
/// assert_eq!(connection_boot_reason(None, true), BootReason::Unknown);
/// let reset = Some(BootReason::RemoteReset);
/// assert_eq!(connection_boot_reason(reset, true), BootReason::RemoteReset);
/// ```
pub fn connection_boot_reason(requested: Option<BootReason>, booted_before: bool) -> BootReason {
    match (requested, booted_before) {
        (Some(reason), _) => reason,
        (None, true) => BootReason::Unknown,
        (None, false) => BootReason::PowerUp,
    }
}

/// Cuts `value` to at most `max` characters, at a character boundary.
fn cut(value: &str, max: usize) -> String {
    match value.char_indices().nth(max) {
        Some((end, _)) => value.get(..end).unwrap_or(value).to_owned(),
        None => value.to_owned(),
    }
}

/// [`cut`] for an optional value.
fn cut_opt(value: &Option<String>, max: usize) -> Option<String> {
    value.as_deref().map(|value| cut(value, max))
}

/// The BootNotification of a 2.x version: the same fields and reasons in 2.0.1 and 2.1, in
/// each version's own types.
#[cfg(any(feature = "v2_0_1", feature = "v2_1"))]
macro_rules! boot_v2 {
    ($v:ident, $info:expr, $reason:expr) => {{
        use $v::BootReasonEnum as R;
        let info = $info;
        let mut station = $v::ChargingStation::new(
            cut(&info.model, V2_MODEL_MAX),
            cut(&info.vendor, V2_VENDOR_MAX),
        );
        station.serial_number = cut_opt(&info.serial_number, V2_SERIAL_MAX);
        station.firmware_version = cut_opt(&info.firmware_version, V2_FIRMWARE_MAX);
        let reason = match $reason {
            BootReason::PowerUp => R::PowerUp,
            BootReason::RemoteReset => R::RemoteReset,
            BootReason::LocalReset => R::LocalReset,
            BootReason::FirmwareUpdate => R::FirmwareUpdate,
            BootReason::Triggered => R::Triggered,
            BootReason::Watchdog => R::Watchdog,
            BootReason::ApplicationReset => R::ApplicationReset,
            BootReason::ScheduledReset => R::ScheduledReset,
            // `Unknown` (a later connection of the same running station among others), and
            // a value 2.x does not list.
            _ => R::Unknown,
        };
        Request::from($v::BootNotificationRequest::new(station, reason))
    }};
}

/// The BootNotification a station sends for `version` (OCPP 1.6 §4.2, 2.0.1 and 2.1 B01).
///
/// OCPP 1.6: `chargePointVendor`, `chargePointModel`, `chargePointSerialNumber`,
/// `firmwareVersion` (no reason). OCPP 2.0.1 and 2.1: `chargingStation` with `vendorName`,
/// `model`, `serialNumber`, `firmwareVersion`, and `reason`. Fields longer than the schema allows
/// are cut at a character boundary (see [`StationInfo`]), so that the request always validates.
///
/// `None` only when `version`'s feature (`v1_6`, `v2_0_1`, `v2_1`) is not compiled in; a
/// connection never negotiates such a version.
///
/// ```
/// use ocpp_proto::station::{boot_request, BootReason, StationInfo};
/// use ocpp_proto::OcppVersion;
///
/// let info = StationInfo::new("ACME", "Wallbox One");
/// let request = boot_request(OcppVersion::V2_0_1, &info, BootReason::PowerUp).unwrap();
/// assert_eq!(request.action(), "BootNotification");
/// let json = serde_json::to_string(&request).unwrap();
/// assert_eq!(
///     json,
///     r#"{"chargingStation":{"model":"Wallbox One","vendorName":"ACME"},"reason":"PowerUp"}"#
/// );
/// ```
pub fn boot_request(
    version: OcppVersion,
    info: &StationInfo,
    reason: BootReason,
) -> Option<Request> {
    let _ = (info, reason);
    match version {
        #[cfg(feature = "v1_6")]
        OcppVersion::V1_6 => {
            let mut request = v1_6::BootNotificationRequest::new(
                cut(&info.vendor, V16_VENDOR_MAX),
                cut(&info.model, V16_MODEL_MAX),
            );
            request.charge_point_serial_number = cut_opt(&info.serial_number, V16_SERIAL_MAX);
            request.firmware_version = cut_opt(&info.firmware_version, V16_FIRMWARE_MAX);
            Some(request.into())
        }
        #[cfg(feature = "v2_0_1")]
        OcppVersion::V2_0_1 => Some(boot_v2!(v2_0_1, info, reason)),
        #[cfg(feature = "v2_1")]
        OcppVersion::V2_1 => Some(boot_v2!(v2_1, info, reason)),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// The Heartbeat request of `version` (an empty payload on every version).
///
/// `None` only when `version`'s feature is not compiled in, as for [`boot_request`].
pub fn heartbeat_request(version: OcppVersion) -> Option<Request> {
    match version {
        #[cfg(feature = "v1_6")]
        OcppVersion::V1_6 => Some(v1_6::HeartbeatRequest::default().into()),
        #[cfg(feature = "v2_0_1")]
        OcppVersion::V2_0_1 => Some(v2_0_1::HeartbeatRequest::default().into()),
        #[cfg(feature = "v2_1")]
        OcppVersion::V2_1 => Some(v2_1::HeartbeatRequest::default().into()),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

#[cfg(all(test, feature = "v1_6", feature = "v2_0_1", feature = "v2_1"))]
mod tests {
    use super::*;
    use ocpp_messages::RequestRef;

    fn long_info() -> StationInfo {
        StationInfo::new("V".repeat(80), "é".repeat(30))
            .with_serial_number("S".repeat(40))
            .with_firmware_version("ü".repeat(70))
    }

    #[test]
    fn boot_request_v1_6_fields() {
        let info = StationInfo::new("ACME", "One")
            .with_serial_number("SN1")
            .with_firmware_version("1.2.3");
        let request = boot_request(OcppVersion::V1_6, &info, BootReason::Watchdog).unwrap();
        let RequestRef::V1_6(v1_6::Request::BootNotification(boot)) = request.view() else {
            panic!("not a 1.6 BootNotification: {request:?}");
        };
        assert_eq!(boot.charge_point_vendor, "ACME");
        assert_eq!(boot.charge_point_model, "One");
        assert_eq!(boot.charge_point_serial_number.as_deref(), Some("SN1"));
        assert_eq!(boot.firmware_version.as_deref(), Some("1.2.3"));
        assert_eq!(boot.charge_box_serial_number, None);
        request.validate().unwrap();
    }

    #[test]
    fn boot_request_v2_fields_and_reasons() {
        let info = StationInfo::new("ACME", "One")
            .with_serial_number("SN1")
            .with_firmware_version("1.2.3");
        let reasons = [
            (BootReason::PowerUp, "PowerUp"),
            (BootReason::Unknown, "Unknown"),
            (BootReason::RemoteReset, "RemoteReset"),
            (BootReason::LocalReset, "LocalReset"),
            (BootReason::FirmwareUpdate, "FirmwareUpdate"),
            (BootReason::Triggered, "Triggered"),
            (BootReason::Watchdog, "Watchdog"),
            (BootReason::ApplicationReset, "ApplicationReset"),
            (BootReason::ScheduledReset, "ScheduledReset"),
        ];
        for (reason, wire) in reasons {
            for version in [OcppVersion::V2_0_1, OcppVersion::V2_1] {
                let request = boot_request(version, &info, reason).unwrap();
                assert_eq!(request.version(), version);
                request.validate().unwrap();
                let json = serde_json::to_value(&request).unwrap();
                assert_eq!(json["reason"], wire);
                assert_eq!(json["chargingStation"]["vendorName"], "ACME");
                assert_eq!(json["chargingStation"]["model"], "One");
                assert_eq!(json["chargingStation"]["serialNumber"], "SN1");
                assert_eq!(json["chargingStation"]["firmwareVersion"], "1.2.3");
            }
        }
    }

    #[test]
    fn long_fields_are_cut_and_validate_on_every_version() {
        let info = long_info();
        for version in OcppVersion::ALL {
            let request = boot_request(version, &info, BootReason::PowerUp).unwrap();
            request.validate().unwrap();
        }
        let request = boot_request(OcppVersion::V1_6, &info, BootReason::PowerUp).unwrap();
        let RequestRef::V1_6(v1_6::Request::BootNotification(boot)) = request.view() else {
            panic!("not a 1.6 BootNotification");
        };
        assert_eq!(boot.charge_point_vendor.chars().count(), 20);
        assert_eq!(boot.charge_point_model, "é".repeat(20));
        assert_eq!(
            boot.firmware_version.as_deref(),
            Some("ü".repeat(50).as_str())
        );
        let request = boot_request(OcppVersion::V2_1, &info, BootReason::PowerUp).unwrap();
        let json = serde_json::to_value(&request).unwrap();
        assert_eq!(json["chargingStation"]["vendorName"], "V".repeat(50));
        assert_eq!(json["chargingStation"]["serialNumber"], "S".repeat(25));
    }

    #[test]
    fn cut_keeps_short_values_and_char_boundaries() {
        for (value, max, kept) in [
            ("abc", 5, "abc"),
            ("abcde", 5, "abcde"),
            ("abcdef", 5, "abcde"),
            ("ééé", 2, "éé"),
            ("", 0, ""),
            ("a", 0, ""),
        ] {
            assert_eq!(cut(value, max), kept, "{value:?} cut to {max}");
        }
    }

    #[test]
    fn heartbeat_request_per_version() {
        for version in OcppVersion::ALL {
            let request = heartbeat_request(version).unwrap();
            assert_eq!(
                (request.version(), request.action()),
                (version, "Heartbeat")
            );
            assert_eq!(serde_json::to_string(&request).unwrap(), "{}");
        }
    }

    /// The reason asked for wins until a boot is accepted; without one, the first boot of the
    /// running station says PowerUp and a later connection's says Unknown.
    #[test]
    fn boot_reason_for_a_connection() {
        use BootReason::*;
        assert_eq!(connection_boot_reason(None, false), PowerUp);
        assert_eq!(connection_boot_reason(None, true), Unknown);
        for reason in [RemoteReset, LocalReset, FirmwareUpdate, Triggered] {
            assert_eq!(connection_boot_reason(Some(reason), false), reason);
            assert_eq!(connection_boot_reason(Some(reason), true), reason);
        }
    }
}
