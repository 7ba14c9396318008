//! The station's central systems: the URL each attempt connects to, from the core's
//! [`NetworkProfiles`], and SetNetworkProfile answered by the same rules (OCPP 2.x B09).
//! The choice itself (which profile, how many attempts, failing over and back) is
//! [`ocpp_proto::station::NetworkProfiles`]'s.

use std::sync::Arc;
use std::time::Duration;

use ocpp_messages::{DecodeOptions, Request, Response};
use ocpp_proto::station::{NetworkProfile, NetworkProfiles, ProfileRejected};
use ocpp_proto::{Answer, ChargePointIdentity, ConnectionConfig, ErrorCode, OcppVersion};
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::{NetworkProfileError, StationUrl, UrlError};

/// A change of the station's network profiles ([`Station::set_network_priority`]).
pub(crate) struct NetworkChange {
    pub(super) change: Box<NetworkEdit>,
    pub(super) reply: oneshot::Sender<Result<(), NetworkProfileError>>,
}

/// What [`NetworkChange`] does to the profiles.
pub(super) type NetworkEdit =
    dyn FnOnce(&mut NetworkProfiles) -> Result<(), ProfileRejected> + Send;

/// The application's persistence of the profiles ([`StationBuilder::on_network_profiles`]):
/// called with the new profiles before a change is accepted; an error answers Failed.
///
/// [`StationBuilder::on_network_profiles`]: super::StationBuilder::on_network_profiles
pub(crate) type ProfilesHook = dyn Fn(&NetworkProfiles) -> Result<(), String> + Send + Sync;

/// The station URL of `profile` for `identity`: `ocppCsmsUrl` and `/IDENTITY` (2.x
/// `NetworkConnectionProfile.ocppCsmsUrl` is given without the identity).
pub(crate) fn url_for(
    profile: &NetworkProfile,
    identity: &ChargePointIdentity,
) -> Result<StationUrl, UrlError> {
    let base = profile.csms_url.trim_end_matches('/');
    StationUrl::parse(&format!("{base}/x")).map(|url| url.with_identity(identity.clone()))
}

/// The connection's settings for `profile`: its `messageTimeout` as the call timeout, and
/// only the versions its `ocppVersion` names (of those the station offers; all of them when
/// it names none the station speaks, or none at all).
pub(crate) fn config_for(
    base: &Arc<ConnectionConfig>,
    profile: &NetworkProfile,
) -> Arc<ConnectionConfig> {
    let named: Option<&[OcppVersion]> = match profile.ocpp_version.as_deref() {
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
        .filter(|v| named.map_or(true, |named| named.contains(v)))
        .collect();
    let timeout = profile.message_timeout.filter(|t| *t > 0);
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

/// The central system's URL of `url` without the identity, as a profile holds it.
pub(crate) fn base_of(url: &StationUrl) -> String {
    let scheme = if url.tls() { "wss" } else { "ws" };
    format!("{scheme}://{}{}", url.authority(), url.endpoint())
}

/// The security profile a station's own configuration amounts to: TLS with a client
/// certificate 3, TLS 2, a password 1, nothing 0.
pub(crate) fn security_profile_of(
    url: &StationUrl,
    password: bool,
    tls: Option<&Arc<rustls::ClientConfig>>,
) -> u8 {
    match (url.tls(), tls) {
        (true, Some(config)) if config.client_auth_cert_resolver.has_certs() => 3,
        (true, _) => 2,
        (false, _) if password => 1,
        (false, _) => 0,
    }
}

/// Answers a SetNetworkProfile (2.0.1, 2.1): the profile validated and stored in its slot
/// (B09.FR.01), then handed to `hook`; Rejected with `InvalidNetworkConf` (B09.FR.02) or
/// `NoSecurityDowngrade` (B09.FR.04); Failed when the hook could not keep it (B09.FR.03).
/// A `wss://` profile on a station without a TLS configuration is content it cannot use:
/// Rejected too. `profiles` changes only when Accepted.
pub(crate) fn set_network_profile(
    profiles: &mut NetworkProfiles,
    hook: Option<&ProfilesHook>,
    request: &Request,
    tls: bool,
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
                Ok(()) => match hook.map_or(Ok(()), |hook| hook(&changed)) {
                    Ok(()) => {
                        *profiles = changed;
                        Ok(())
                    }
                    Err(error) => {
                        tracing::warn!(%error, "SetNetworkProfile: the profiles were not kept");
                        Err(("Failed", None))
                    }
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

/// The version-neutral profile of a SetNetworkProfile payload (`None`: not one).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_of_profiles_carry_the_identity() {
        let url = StationUrl::parse("wss://csms.example.com:8443/ocpp/CP%7C1").unwrap();
        assert_eq!(base_of(&url), "wss://csms.example.com:8443/ocpp");
        let profile = NetworkProfile::new(1, "ws://backup:9000/v2/").with_security_profile(0);
        let other = url_for(&profile, url.identity()).unwrap();
        assert_eq!(other.authority(), "backup:9000");
        assert_eq!(other.endpoint(), "/v2");
        assert_eq!(other.identity().as_str(), "CP|1");
        assert!(url_for(&NetworkProfile::new(1, "http://x"), url.identity()).is_err());
        assert_eq!(security_profile_of(&url, true, None), 2);
        assert_eq!(security_profile_of(&other, true, None), 1);
        assert_eq!(security_profile_of(&other, false, None), 0);
    }

    #[test]
    fn a_profile_sets_the_call_timeout_and_the_versions() {
        let base = Arc::new(
            ConnectionConfig::default().versions(vec![OcppVersion::V2_0_1, OcppVersion::V1_6]),
        );
        let plain = NetworkProfile::new(0, "ws://a/ocpp");
        assert!(Arc::ptr_eq(&config_for(&base, &plain), &base));
        let v16 = plain
            .clone()
            .with_ocpp_version("OCPP16")
            .with_message_timeout(7);
        let config = config_for(&base, &v16);
        assert_eq!(config.get_versions(), [OcppVersion::V1_6]);
        assert_eq!(config.get_call_timeout(), Duration::from_secs(7));
        // A version the station does not offer: all those it offers.
        let v21 = plain.with_ocpp_version("OCPP21");
        assert_eq!(config_for(&base, &v21).get_versions(), base.get_versions());
    }
}
