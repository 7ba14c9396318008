#![no_main]
//! What a central system can hand a station as a URL: `StationUrl::parse` on arbitrary text
//! (a configured URL), and SetNetworkProfile answered on an arbitrary payload (its
//! `ocppCsmsUrl` then becomes the URL of a later attempt).
//!
//! Invariants: no panic; a parsed URL has a host, an authority with a port, and an identity
//! that parses again from its own path; a SetNetworkProfile is always answered with a
//! CALLRESULT of the request's version (Accepted, Rejected or Failed) or an InternalError,
//! and the profiles change only when Accepted, with a URL that parses.
use libfuzzer_sys::fuzz_target;
use ocpp_proto::station::{
    answer_set_network_profile, NetworkProfile, NetworkProfiles, StationUrl,
};
use ocpp_proto::{Answer, DecodeOptions, OcppVersion, Request};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(url) = StationUrl::parse(text) {
        assert!(!url.server_name().is_empty() || url.authority().starts_with('['));
        assert!(url.authority().contains(':'), "{}", url.authority());
        let again = StationUrl::parse(&format!(
            "{}/{}",
            url.csms_url(),
            percent_encoded(url.identity().as_str())
        ));
        if let Ok(again) = again {
            assert_eq!(again.identity(), url.identity());
        }
    }
    for version in [OcppVersion::V2_0_1, OcppVersion::V2_1] {
        let Ok(request) = Request::decode(
            version,
            "SetNetworkProfile",
            text,
            &DecodeOptions::lenient(),
        ) else {
            continue;
        };
        for tls in [false, true] {
            let mut profiles = NetworkProfiles::new([NetworkProfile::new(0, "ws://csms/ocpp")]);
            let before = profiles.clone();
            let answer = answer_set_network_profile(&mut profiles, &request, tls, |_| Ok(()));
            match &answer {
                Answer::Result(response) => {
                    assert_eq!(response.version(), version);
                    let status = serde_json::to_value(response).expect("serialises")["status"]
                        .as_str()
                        .map(str::to_owned);
                    match status.as_deref() {
                        Some("Accepted") => {}
                        Some("Rejected" | "Failed") => assert_eq!(profiles, before),
                        other => panic!("status {other:?}"),
                    }
                }
                Answer::Error(error) => {
                    assert_eq!(error.code, ocpp_proto::ErrorCode::InternalError);
                    assert_eq!(profiles, before);
                }
                other => panic!("{other:?}"),
            }
        }
    }
});

/// Every byte but the unreserved ones (RFC 3986) as `%XX`.
fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
