//! The station's central systems, as the task changes them: the application's changes and
//! persistence, and the security profile of the station's own configuration. The rules
//! (which profile an attempt uses, its URL and settings, SetNetworkProfile answered: OCPP 2.x
//! B09) are [`ocpp_proto::station`]'s ([`NetworkProfiles`],
//! [`answer_set_network_profile`](ocpp_proto::station::answer_set_network_profile)).

use std::sync::Arc;

use ocpp_proto::station::{NetworkProfiles, ProfileRejected};
use tokio::sync::oneshot;

use super::{NetworkProfileError, StationUrl};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_security_profile_of_a_url() {
        let url = StationUrl::parse("wss://csms.example.com:8443/ocpp/CP%7C1").unwrap();
        let other = StationUrl::parse("ws://backup:9000/v2/CP%7C1").unwrap();
        assert_eq!(security_profile_of(&url, true, None), 2);
        assert_eq!(security_profile_of(&other, true, None), 1);
        assert_eq!(security_profile_of(&other, false, None), 0);
    }
}
