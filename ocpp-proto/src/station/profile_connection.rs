//! A network connection profile put to use: the station URL and the connection settings an
//! attempt on it takes, and the central system's SetNetworkProfile answered by the rules of
//! [`NetworkProfiles`] (OCPP 2.0.1 and 2.1 B09). Which profile an attempt uses is
//! [`NetworkProfiles`]' choice.

use std::sync::Arc;
use std::time::Duration;

use ocpp_messages::{DecodeOptions, Request, Response};
use serde_json::{json, Value};

use super::{NetworkProfile, NetworkProfiles, StationUrl, UrlError};
use crate::{Answer, ChargePointIdentity, ConnectionConfig, ErrorCode, OcppVersion};

impl NetworkProfile {
    /// The station URL of this profile for `identity`: `ocppCsmsUrl` and `/IDENTITY` (2.x
    /// `NetworkConnectionProfile.ocppCsmsUrl` is given without the identity).
    ///
    /// ```
    /// use ocpp_proto::station::{NetworkProfile, StationUrl};
    /// let url = StationUrl::parse("wss://csms.example.com:8443/ocpp/CP%7C1").unwrap();
    /// let backup = NetworkProfile::new(1, "ws://backup:9000/v2/").with_security_profile(0);
    /// let other = backup.station_url(url.identity()).unwrap();
    /// assert_eq!((other.authority(), other.endpoint()), ("backup:9000", "/v2"));
    /// assert_eq!(other.identity().as_str(), "CP|1");
    /// ```
    ///
    /// # Errors
    /// [`UrlError`] when `ocppCsmsUrl` is not a `ws://` or `wss://` URL with a host.
    pub fn station_url(&self, identity: &ChargePointIdentity) -> Result<StationUrl, UrlError> {
        let base = self.csms_url.trim_end_matches('/');
        StationUrl::parse(&format!("{base}/x")).map(|url| url.with_identity(identity.clone()))
    }

    /// The connection's settings for this profile: its `messageTimeout` as the call timeout,
    /// and only the versions its `ocppVersion` names (of those `base` offers; all of them
    /// when it names none the station speaks, or none at all). `base` itself when the profile
    /// changes nothing.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use ocpp_proto::station::NetworkProfile;
    /// use ocpp_proto::{ConnectionConfig, OcppVersion};
    /// let base = Arc::new(
    ///     ConnectionConfig::default().versions(vec![OcppVersion::V2_0_1, OcppVersion::V1_6]),
    /// );
    /// let plain = NetworkProfile::new(0, "ws://a/ocpp");
    /// assert!(Arc::ptr_eq(&plain.connection_config(&base), &base));
    /// let v16 = plain.clone().with_ocpp_version("OCPP16").with_message_timeout(7);
    /// let config = v16.connection_config(&base);
    /// assert_eq!(config.get_versions(), [OcppVersion::V1_6]);
    /// assert_eq!(config.get_call_timeout(), Duration::from_secs(7));
    /// // A version the station does not offer: all those it offers.
    /// let v21 = plain.with_ocpp_version("OCPP21");
    /// assert_eq!(v21.connection_config(&base).get_versions(), base.get_versions());
    /// ```
    pub fn connection_config(&self, base: &Arc<ConnectionConfig>) -> Arc<ConnectionConfig> {
        let named: Option<&[OcppVersion]> = match self.ocpp_version.as_deref() {
            Some("OCPP16") => Some(&[OcppVersion::V1_6]),
            // 2.0.1's OCPPVersionEnumType has no OCPP201: OCPP20 stands for it there.
            Some("OCPP20" | "OCPP201") => Some(&[OcppVersion::V2_0_1]),
            Some("OCPP21") => Some(&[OcppVersion::V2_1]),
            _ => None,
        };
        let offered = base.get_versions();
        let versions: Vec<OcppVersion> = offered
            .iter()
            .copied()
            .filter(|v| named.is_none_or(|named| named.contains(v)))
            .collect();
        let timeout = self.message_timeout.filter(|t| *t > 0);
        if timeout.is_none() && (versions.is_empty() || versions.len() == offered.len()) {
            return base.clone();
        }
        let mut config = (**base).clone();
        if !versions.is_empty() {
            config = config.versions(versions);
        }
        if let Some(timeout) = timeout {
            config = config.call_timeout(Duration::from_secs(u64::from(timeout)));
        }
        Arc::new(config)
    }
}

/// Answers a SetNetworkProfile (2.0.1, 2.1): the profile validated and stored in its slot
/// (B09.FR.01), then handed to `keep` (the application's persistence); Rejected with
/// `InvalidNetworkConf` (B09.FR.02) or `NoSecurityDowngrade` (B09.FR.04); Failed when `keep`
/// could not keep it (B09.FR.03). A `wss://` profile on a station without TLS (`tls` false)
/// is content it cannot use: Rejected too. `profiles` changes only when Accepted.
///
/// ```
/// use ocpp_proto::station::{answer_set_network_profile, NetworkProfile, NetworkProfiles};
/// use ocpp_proto::{Answer, DecodeOptions, OcppVersion, Request};
/// let mut profiles = NetworkProfiles::new([NetworkProfile::new(0, "ws://csms/ocpp")]);
/// let set = r#"{"configurationSlot":1,"connectionData":{"ocppVersion":"OCPP20",
///     "ocppTransport":"JSON","ocppCsmsUrl":"ws://backup/ocpp","messageTimeout":30,
///     "securityProfile":0,"ocppInterface":"Wired0"}}"#;
/// let request = Request::decode(OcppVersion::V2_0_1, "SetNetworkProfile", set, &DecodeOptions::strict()).unwrap();
/// let answer = answer_set_network_profile(&mut profiles, &request, false, |_| Ok(()));
/// let Answer::Result(response) = answer else { panic!("{answer:?}") };
/// assert_eq!(serde_json::to_value(&response).unwrap()["status"], "Accepted");
/// assert!(profiles.profile(1).is_some());
/// // Not kept by the application: Failed, and nothing changed.
/// let mut unchanged = NetworkProfiles::new([NetworkProfile::new(0, "ws://csms/ocpp")]);
/// let answer = answer_set_network_profile(&mut unchanged, &request, false, |_| Err("disk full".into()));
/// let Answer::Result(response) = answer else { panic!("{answer:?}") };
/// assert_eq!(serde_json::to_value(&response).unwrap()["status"], "Failed");
/// assert!(unchanged.profile(1).is_none());
/// ```
pub fn answer_set_network_profile(
    profiles: &mut NetworkProfiles,
    request: &Request,
    tls: bool,
    keep: impl FnOnce(&NetworkProfiles) -> Result<(), String>,
) -> Answer {
    let version = request.version();
    let payload = serde_json::to_value(request).unwrap_or(Value::Null);
    let outcome = match profile_of(&payload) {
        None => Err(("Rejected", Some("InvalidNetworkConf"))),
        Some(profile) if profile.csms_url.starts_with("wss://") && !tls => {
            Err(("Rejected", Some("InvalidNetworkConf")))
        }
        Some(profile) => {
            let mut changed = profiles.clone();
            match changed.set_profile(profile) {
                Err(rejected) => Err(("Rejected", Some(rejected.reason_code()))),
                Ok(()) => match keep(&changed) {
                    Ok(()) => {
                        *profiles = changed;
                        Ok(())
                    }
                    Err(_) => Err(("Failed", None)),
                },
            }
        }
    };
    let answer = match outcome {
        Ok(()) => json!({ "status": "Accepted" }),
        Err((status, None)) => json!({ "status": status }),
        Err((status, Some(reason))) => {
            json!({ "status": status, "statusInfo": { "reasonCode": reason } })
        }
    };
    match Response::decode(
        version,
        "SetNetworkProfile",
        &answer.to_string(),
        &DecodeOptions::strict(),
    ) {
        Ok(response) => Answer::Result(response),
        Err(error) => Answer::error(ErrorCode::InternalError, error.to_string()),
    }
}

/// The profile a SetNetworkProfile's payload carries, if it reads as one.
fn profile_of(payload: &Value) -> Option<NetworkProfile> {
    let slot = i32::try_from(payload.get("configurationSlot")?.as_i64()?).ok()?;
    let data = payload.get("connectionData")?;
    let url = data.get("ocppCsmsUrl")?.as_str()?;
    let security = u8::try_from(data.get("securityProfile")?.as_i64()?).ok()?;
    let mut profile = NetworkProfile::new(slot, url).with_security_profile(security);
    if let Some(version) = data.get("ocppVersion").and_then(Value::as_str) {
        profile = profile.with_ocpp_version(version);
    }
    if let Some(timeout) = data
        .get("messageTimeout")
        .and_then(Value::as_u64)
        .and_then(|t| u32::try_from(t).ok())
    {
        profile = profile.with_message_timeout(timeout);
    }
    if let Some(interface) = data.get("ocppInterface").and_then(Value::as_str) {
        profile = profile.with_ocpp_interface(interface);
    }
    Some(profile)
}
