//! The station feeds its authorization cache by itself (`StationBuilder::local_auth`): a token
//! the central system authorized online is accepted offline from the cache when the cache
//! rules allow; one it answered Invalid is not; with the cache off nothing is learnt. Against
//! the test kit's `MockCsms` (loopback), 1.6 and 2.0.1; "offline" is the central system gone.

use std::time::Duration;

use ocpp_test_kit::MockCsms;
use ocpp_tokio::model::local_auth::{Decision, Settings, Source};
use ocpp_tokio::model::{IdToken, IdTokenType};
use ocpp_tokio::station::{Evse, LocalAuthStore, Station, StationStopReason, Status};
use ocpp_tokio::{v1_6, v2_0_1, OcppVersion};
use serde_json::json;

/// Waits (bounded) until `done` holds.
async fn eventually(what: &str, done: impl Fn() -> bool) {
    for _ in 0..500 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("not in 5 s: {what}");
}

/// A central system that refuses the token `BAD` (Invalid) and accepts every other.
async fn csms(version: OcppVersion) -> MockCsms {
    MockCsms::builder()
        .versions([version])
        .answer_with(|version, action, call| {
            let bad = call["idTag"] == "BAD" || call["idToken"]["idToken"] == "BAD";
            match (bad, version, action) {
                (true, OcppVersion::V1_6, "Authorize") => {
                    Some(json!({"idTagInfo": {"status": "Invalid"}}))
                }
                (true, _, "Authorize") => Some(json!({"idTokenInfo": {"status": "Invalid"}})),
                _ => None,
            }
        })
        .start()
        .await
        .unwrap()
}

fn station(
    csms: &MockCsms,
    identity: &str,
    version: OcppVersion,
    store: &LocalAuthStore,
) -> Station {
    Station::builder(&csms.url(identity))
        .unwrap()
        .versions([version])
        .local_auth(store.clone())
        .connect()
        .unwrap()
}

/// The central system goes away; the station is offline once it says so.
async fn go_offline(csms: MockCsms, station: &Station) -> bool {
    csms.stop().await;
    eventually("the station offline", || {
        !matches!(station.status(), Status::Accepted { .. })
    })
    .await;
    matches!(station.status(), Status::Accepted { .. })
}

fn from_cache(decision: &Decision) -> bool {
    matches!(
        decision,
        Decision::Accepted {
            source: Source::Cache,
            ..
        }
    )
}

#[tokio::test]
async fn authorized_online_accepted_offline_from_the_cache_1_6() {
    let dir = std::env::temp_dir().join(format!("ocpp-auth-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = LocalAuthStore::open(&dir, Settings::default()).unwrap();
    let csms = csms(OcppVersion::V1_6).await;
    let station = station(&csms, "CACHE16", OcppVersion::V1_6, &store);
    tokio::time::timeout(Duration::from_secs(10), station.accepted())
        .await
        .unwrap()
        .unwrap();

    let good = station
        .call(v1_6::AuthorizeRequest::new("GOOD"))
        .await
        .unwrap();
    assert_eq!(good.id_tag_info.status, v1_6::AuthorizationStatus::Accepted);
    let bad = station
        .call(v1_6::AuthorizeRequest::new("BAD"))
        .await
        .unwrap();
    assert_eq!(bad.id_tag_info.status, v1_6::AuthorizationStatus::Invalid);
    // A StartTransaction's idTagInfo too.
    let card = IdToken::from_id_tag("CARD");
    let started = station
        .start_transaction(Evse::new(1), card, 0)
        .await
        .unwrap();
    started.outcome().await.unwrap();
    station
        .stop_transaction(1, 10, StationStopReason::Local)
        .await
        .unwrap();

    let tag = |t: &str| IdToken::from_id_tag(t);
    eventually("GOOD, BAD and CARD learnt", || {
        let cache = store.snapshot();
        ["GOOD", "BAD", "CARD"]
            .iter()
            .all(|t| cache.cache().get(&tag(t)).is_some())
    })
    .await;

    let online = go_offline(csms, &station).await;
    assert!(!online);
    let good = store.authorize_locally(&tag("GOOD"), online);
    assert!(good.may_charge() && from_cache(&good), "{good:?}");
    assert!(from_cache(&store.authorize_locally(&tag("CARD"), online)));
    let bad = store.authorize_locally(&tag("BAD"), online);
    assert!(!bad.may_charge(), "{bad:?}");
    // Never seen: refused offline (AllowOfflineTxForUnknownId is off).
    assert!(!store.authorize_locally(&tag("OTHER"), online).may_charge());
    station.close();
    let _ = station.stopped().await;

    // The cache is in the store's file: a restarted station has it.
    let reopened = LocalAuthStore::open(&dir, Settings::default()).unwrap();
    assert!(from_cache(&reopened.authorize_locally(&tag("GOOD"), false)));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn authorized_online_accepted_offline_from_the_cache_2_0_1() {
    let store = LocalAuthStore::in_memory(Settings::default());
    let csms = csms(OcppVersion::V2_0_1).await;
    let station = station(&csms, "CACHE201", OcppVersion::V2_0_1, &store);
    tokio::time::timeout(Duration::from_secs(10), station.accepted())
        .await
        .unwrap()
        .unwrap();
    let iso = |t: &str| v2_0_1::IdToken::new(t.to_owned(), v2_0_1::IdTokenEnum::ISO14443);
    let good = station
        .call(v2_0_1::AuthorizeRequest::new(iso("GOOD")))
        .await
        .unwrap();
    assert_eq!(
        good.id_token_info.status,
        v2_0_1::AuthorizationStatusEnum::Accepted
    );
    let bad = station
        .call(v2_0_1::AuthorizeRequest::new(iso("BAD")))
        .await
        .unwrap();
    assert_eq!(
        bad.id_token_info.status,
        v2_0_1::AuthorizationStatusEnum::Invalid
    );
    // A TransactionEvent's idTokenInfo too (the mock answers Accepted to an event with a token).
    let card = IdToken::new("CARD", IdTokenType::Iso14443);
    let started = station
        .start_transaction(Evse::new(1).with_connector(1), card, 0)
        .await
        .unwrap();
    started.outcome().await.unwrap();

    let token = |t: &str| IdToken::new(t, IdTokenType::Iso14443);
    eventually("GOOD, BAD and CARD learnt", || {
        let cache = store.snapshot();
        ["GOOD", "BAD", "CARD"]
            .iter()
            .all(|t| cache.cache().get(&token(t)).is_some())
    })
    .await;
    let online = go_offline(csms, &station).await;
    let good = store.authorize_locally(&token("GOOD"), online);
    assert!(good.may_charge() && from_cache(&good), "{good:?}");
    assert!(from_cache(&store.authorize_locally(&token("CARD"), online)));
    assert!(!store.authorize_locally(&token("BAD"), online).may_charge());
    station.close();
}

#[tokio::test]
async fn nothing_learnt_with_the_cache_off() {
    let mut settings = Settings::default();
    settings.cache_enabled = false;
    let store = LocalAuthStore::in_memory(settings);
    let csms = csms(OcppVersion::V1_6).await;
    let station = station(&csms, "NOCACHE", OcppVersion::V1_6, &store);
    tokio::time::timeout(Duration::from_secs(10), station.accepted())
        .await
        .unwrap()
        .unwrap();
    station
        .call(v1_6::AuthorizeRequest::new("GOOD"))
        .await
        .unwrap();
    // A second round trip: the first answer's learning has had its turn.
    station
        .call(v1_6::HeartbeatRequest::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(store
        .snapshot()
        .cache()
        .get(&IdToken::from_id_tag("GOOD"))
        .is_none());
    let online = go_offline(csms, &station).await;
    assert!(!store
        .authorize_locally(&IdToken::from_id_tag("GOOD"), online)
        .may_charge());
    station.close();
}
