// Settings is `#[non_exhaustive]`: the tests set its fields as an application must.
#![allow(clippy::field_reassign_with_default)]

use std::collections::BTreeMap;

use ocpp_messages::{v1_6, v2_0_1, DateTime};
use proptest::prelude::*;

use super::*;
use crate::{Authorization, AuthorizationStatus, IdToken, IdTokenType};

fn at(seconds: i64) -> DateTime {
    DateTime::from_unix_timestamp(1_767_225_600 + seconds).unwrap()
}

fn tag(value: &str) -> IdToken {
    IdToken::from_id_tag(value)
}

fn with(status: AuthorizationStatus) -> Option<Authorization> {
    Some(Authorization::new(status))
}

fn accepted() -> Option<Authorization> {
    with(AuthorizationStatus::Accepted)
}

fn full(version: i32, tags: &[&str]) -> ListUpdate {
    tags.iter()
        .fold(ListUpdate::new(version, UpdateKind::Full), |u, t| {
            u.with(tag(t), accepted())
        })
}

#[test]
fn full_then_differential_adds_changes_and_removes() {
    let mut local = LocalAuthorization::default();
    assert_eq!(local.local_list_version(), 0);
    assert_eq!(
        local.send_local_list(&full(1, &["A", "B"])),
        UpdateStatus::Accepted
    );
    let diff = ListUpdate::new(2, UpdateKind::Differential)
        .with(tag("C"), accepted())
        .with(tag("b"), with(AuthorizationStatus::Blocked))
        .with(tag("A"), None);
    assert_eq!(local.send_local_list(&diff), UpdateStatus::Accepted);
    assert_eq!(local.local_list_version(), 2);
    let list = local.list();
    assert_eq!(list.len(), 2);
    assert!(list.get(&tag("A")).is_none());
    assert_eq!(
        list.get(&tag("B")).unwrap().status,
        AuthorizationStatus::Blocked
    );
    assert_eq!(
        list.get(&tag("c")).unwrap().status,
        AuthorizationStatus::Accepted
    );
    // An empty differential only moves the version; an empty full empties the list.
    let empty = ListUpdate::new(5, UpdateKind::Differential);
    assert_eq!(local.send_local_list(&empty), UpdateStatus::Accepted);
    assert_eq!((local.list().len(), local.local_list_version()), (2, 5));
    assert_eq!(local.send_local_list(&full(6, &[])), UpdateStatus::Accepted);
    assert_eq!((local.list().len(), local.local_list_version()), (0, 0));
}

#[test]
fn an_old_differential_is_a_version_mismatch_and_changes_nothing() {
    let mut local = LocalAuthorization::default();
    assert_eq!(
        local.send_local_list(&full(5, &["A"])),
        UpdateStatus::Accepted
    );
    for version in [5, 4, 1] {
        let diff = ListUpdate::new(version, UpdateKind::Differential).with(tag("A"), None);
        assert_eq!(local.send_local_list(&diff), UpdateStatus::VersionMismatch);
    }
    assert_eq!(local.list().len(), 1);
    // A full update may go back.
    assert_eq!(
        local.send_local_list(&full(3, &["B"])),
        UpdateStatus::Accepted
    );
    assert_eq!(local.local_list_version(), 3);
    assert!(local.list().get(&tag("A")).is_none());
    // 0 and -1 mean something else.
    assert_eq!(
        local.send_local_list(&full(0, &["B"])),
        UpdateStatus::Failed
    );
    assert_eq!(
        local.send_local_list(&full(-1, &["B"])),
        UpdateStatus::Failed
    );
}

#[test]
fn limits_duplicates_and_a_disabled_list_fail() {
    let mut settings = Settings::default();
    settings.items_per_message = 2;
    settings.list_max_entries = 3;
    let mut local = LocalAuthorization::new(settings.clone());
    assert_eq!(
        local.send_local_list(&full(1, &["A", "B", "C"])),
        UpdateStatus::Failed
    );
    assert_eq!(
        local.send_local_list(&full(1, &["A", "B"])),
        UpdateStatus::Accepted
    );
    let diff = |v, tags: &[&str]| {
        tags.iter()
            .fold(ListUpdate::new(v, UpdateKind::Differential), |u, t| {
                u.with(tag(t), accepted())
            })
    };
    assert_eq!(
        local.send_local_list(&diff(2, &["C"])),
        UpdateStatus::Accepted
    );
    assert_eq!(
        local.send_local_list(&diff(3, &["D"])),
        UpdateStatus::Failed
    );
    assert_eq!(
        local.send_local_list(&diff(3, &["x", "X"])),
        UpdateStatus::Failed
    );
    assert_eq!(local.list().len(), 3);
    assert_eq!(local.local_list_version(), 2);

    settings.list_enabled = false;
    local.set_settings(settings.clone());
    assert_eq!(
        local.send_local_list(&full(9, &["A"])),
        UpdateStatus::NotSupported
    );
    assert_eq!(UpdateStatus::NotSupported.for_2_x(), UpdateStatus::Failed);
    assert_eq!(local.local_list_version(), 2);
    settings.list_available = false;
    local.set_settings(settings);
    assert_eq!(local.local_list_version(), -1);
}

#[test]
fn the_cache_learns_expires_forgets_and_is_cleared() {
    let mut settings = Settings::default();
    settings.cache_lifetime_s = Some(60);
    settings.cache_max_entries = 2;
    settings.local_authorize_offline = true;
    let mut local = LocalAuthorization::new(settings.clone());
    let accepted = Authorization::new(AuthorizationStatus::Accepted);
    assert!(local.learn(&tag("A"), &accepted, &at(0)));
    let decision = local.authorize_locally(&tag("a"), &at(59), false);
    assert_eq!(
        decision,
        Decision::Accepted {
            source: Source::Cache,
            authorization: Authorization {
                expiry: Some(at(60)),
                ..accepted.clone()
            }
        }
    );
    assert_eq!(
        local.authorize_locally(&tag("A"), &at(60), false),
        Decision::Refused(Refusal::NotAccepted {
            source: Source::Cache,
            status: AuthorizationStatus::Expired
        })
    );
    // An explicit expiry wins over the lifetime.
    let until = Authorization {
        expiry: Some(at(1000)),
        ..accepted.clone()
    };
    assert!(local.learn(&tag("B"), &until, &at(1)));
    assert!(local
        .authorize_locally(&tag("B"), &at(999), false)
        .may_charge());
    // Full: the oldest learnt goes.
    assert!(local.learn(&tag("C"), &accepted, &at(2)));
    assert_eq!(local.cache().len(), 2);
    assert!(local.cache().get(&tag("A")).is_none());
    // A listed token is not cached.
    assert_eq!(
        local.send_local_list(&full(1, &["D"])),
        UpdateStatus::Accepted
    );
    assert!(!local.learn(&tag("D"), &accepted, &at(3)));
    assert_eq!(local.clear_cache(), ClearCacheStatus::Accepted);
    assert!(local.cache().is_empty());
    settings.cache_enabled = false;
    local.set_settings(settings);
    assert!(!local.learn(&tag("A"), &accepted, &at(4)));
    assert_eq!(local.clear_cache(), ClearCacheStatus::Rejected);
}

#[test]
fn offline_and_online_decisions_follow_the_flags() {
    let now = at(0);
    let blocked = Authorization::new(AuthorizationStatus::Blocked);
    let accepted = Authorization::new(AuthorizationStatus::Accepted);
    for pre in [false, true] {
        for offline in [false, true] {
            for unknown in [false, true] {
                let mut settings = Settings::default();
                settings.local_pre_authorize = pre;
                settings.local_authorize_offline = offline;
                settings.offline_tx_for_unknown_id = unknown;
                let mut local = LocalAuthorization::new(settings);
                let update = full(1, &["LISTED"]).with(tag("BAD"), Some(blocked.clone()));
                assert_eq!(local.send_local_list(&update), UpdateStatus::Accepted);
                local.learn(&tag("CACHED"), &accepted, &now);
                local.learn(&tag("CACHEDBAD"), &blocked, &now);
                // The list has priority over the cache.
                local.learn(&tag("BAD"), &accepted, &now);
                let decide = |t: &str, online| local.authorize_locally(&tag(t), &now, online);
                // Where an accepted token was found.
                let source_of = |t: &str, online| match decide(t, online) {
                    Decision::Accepted { source, .. } => Some(source),
                    _ => None,
                };

                // Online.
                if !pre {
                    for t in ["LISTED", "CACHED", "BAD", "NEW"] {
                        assert_eq!(decide(t, true), Decision::AskCentralSystem(Ask::Online));
                    }
                } else {
                    assert_eq!(source_of("LISTED", true), Some(Source::LocalList));
                    assert_eq!(source_of("CACHED", true), Some(Source::Cache));
                    assert_eq!(
                        decide("BAD", true),
                        Decision::AskCentralSystem(Ask::NotAccepted {
                            source: Source::LocalList,
                            status: AuthorizationStatus::Blocked
                        })
                    );
                    assert_eq!(
                        decide("NEW", true),
                        Decision::AskCentralSystem(Ask::Unknown)
                    );
                }

                // Offline.
                let unknown_decision = match unknown {
                    true => Decision::UnknownAllowedOffline,
                    false => Decision::Refused(Refusal::UnknownOffline),
                };
                assert_eq!(decide("NEW", false), unknown_decision);
                assert_eq!(
                    decide("BAD", false),
                    Decision::Refused(Refusal::NotAccepted {
                        source: Source::LocalList,
                        status: AuthorizationStatus::Blocked
                    })
                );
                assert!(!decide("CACHEDBAD", false).may_charge());
                if offline {
                    assert_eq!(source_of("LISTED", false), Some(Source::LocalList));
                    assert_eq!(source_of("CACHED", false), Some(Source::Cache));
                } else {
                    assert_eq!(decide("LISTED", false), unknown_decision);
                    assert_eq!(decide("CACHED", false), unknown_decision);
                }
            }
        }
    }
}

#[test]
fn an_expired_list_entry_is_refused_offline_and_asked_online() {
    let mut settings = Settings::default();
    settings.local_pre_authorize = true;
    let mut local = LocalAuthorization::new(settings);
    let until = Authorization {
        expiry: Some(at(10)),
        ..Authorization::new(AuthorizationStatus::Accepted)
    };
    let update = ListUpdate::new(1, UpdateKind::Full).with(tag("A"), Some(until));
    assert_eq!(local.send_local_list(&update), UpdateStatus::Accepted);
    assert!(local
        .authorize_locally(&tag("A"), &at(9), false)
        .may_charge());
    let expired = AuthorizationStatus::Expired;
    assert_eq!(
        local.authorize_locally(&tag("A"), &at(10), false),
        Decision::Refused(Refusal::NotAccepted {
            source: Source::LocalList,
            status: expired
        })
    );
    assert_eq!(
        local.authorize_locally(&tag("A"), &at(10), true),
        Decision::AskCentralSystem(Ask::NotAccepted {
            source: Source::LocalList,
            status: expired
        })
    );
}

#[test]
fn the_messages_of_each_version_read_alike() {
    let v16 = v1_6::SendLocalListRequest::new(4, v1_6::UpdateType::Differential)
        .with_local_authorization_list(vec![
            v1_6::AuthorizationData::new("A").with_id_tag_info(
                v1_6::IdTagInfo::new(v1_6::AuthorizationStatus::Accepted)
                    .with_expiry_date(at(5))
                    .with_parent_id_tag("G"),
            ),
            v1_6::AuthorizationData::new("B"),
        ]);
    let update = ListUpdate::from_v1_6(&v16);
    assert_eq!((update.version, update.kind), (4, UpdateKind::Differential));
    assert_eq!(
        update.entries[0].1,
        Some(Authorization {
            status: AuthorizationStatus::Accepted,
            expiry: Some(at(5)),
            group: Some(tag("G")),
        })
    );
    assert_eq!(update.entries[1], (tag("B"), None));

    let token = v2_0_1::IdToken::new("E1", v2_0_1::IdTokenEnum::from_wire("eMAID"));
    let v201 = v2_0_1::SendLocalListRequest::new(7, v2_0_1::UpdateEnum::Full)
        .with_local_authorization_list(vec![v2_0_1::AuthorizationData::new(token)
            .with_id_token_info(v2_0_1::IdTokenInfo::new(
                v2_0_1::AuthorizationStatusEnum::from_wire("NoCredit"),
            ))]);
    let update = ListUpdate::from_v2_0_1(&v201);
    assert_eq!((update.version, update.kind), (7, UpdateKind::Full));
    assert_eq!(update.entries[0].0, IdToken::new("E1", IdTokenType::EMaid));
    assert_eq!(update.entries[0].1, with(AuthorizationStatus::NoCredit));
    // A token of another type is another token.
    let mut local = LocalAuthorization::default();
    assert_eq!(local.send_local_list(&update), UpdateStatus::Accepted);
    assert!(local
        .list()
        .get(&IdToken::new("e1", IdTokenType::EMaid))
        .is_some());
    assert!(local.list().get(&tag("E1")).is_none());

    assert_eq!(
        UpdateStatus::VersionMismatch.to_v1_6().status,
        v1_6::UpdateStatus::VersionMismatch
    );
    assert_eq!(
        UpdateStatus::NotSupported.to_v2_0_1().status,
        v2_0_1::SendLocalListStatusEnum::Failed
    );
    assert_eq!(
        ClearCacheStatus::Rejected.to_v1_6().status,
        v1_6::ClearCacheStatus::Rejected
    );
}

#[test]
fn settings_come_from_either_device_model() {
    use crate::device_model::{catalogue::Layout, Configuration, DeviceModel};
    let mut config = Configuration::standard(1);
    assert!(config.update("AllowOfflineTxForUnknownId", "true"));
    let settings = Settings::from_configuration(&config);
    assert!(settings.offline_tx_for_unknown_id && settings.list_available);
    assert_eq!(
        (settings.list_max_entries, settings.items_per_message),
        (1000, 100)
    );
    let model = DeviceModel::standard(Layout::new(&[1]));
    let settings = Settings::from_device_model(&model);
    assert_eq!(settings.cache_lifetime_s, Some(86400));
    assert!(settings.local_authorize_offline && !settings.local_pre_authorize);
    assert_eq!(settings.items_per_message, 100);
}

/// One step of the property test: a full or differential update of tokens among a few, each
/// set (`Some`) or removed (`None`).
fn update() -> impl Strategy<Value = ListUpdate> {
    let entry = (0u8..6, proptest::option::of(0usize..3));
    (
        -1i32..8,
        any::<bool>(),
        proptest::collection::vec(entry, 0..5),
    )
        .prop_map(|(version, is_full, entries)| {
            let statuses = [
                AuthorizationStatus::Accepted,
                AuthorizationStatus::Blocked,
                AuthorizationStatus::Expired,
            ];
            let kind = if is_full {
                UpdateKind::Full
            } else {
                UpdateKind::Differential
            };
            entries
                .into_iter()
                .fold(ListUpdate::new(version, kind), |u, (t, s)| {
                    u.with(
                        tag(&format!("T{t}")),
                        s.map(|s| Authorization::new(statuses[s])),
                    )
                })
        })
}

proptest! {
    /// Any sequence of updates: an accepted one leaves the list a reference map would have, a
    /// refused one leaves it as it was, and the status follows the rules.
    #[test]
    fn the_list_follows_a_reference(updates in proptest::collection::vec(update(), 0..20)) {
        let mut settings = Settings::default();
        settings.items_per_message = 3;
        settings.list_max_entries = 4;
        let mut local = LocalAuthorization::new(settings);
        let mut reference: BTreeMap<String, AuthorizationStatus> = BTreeMap::new();
        let mut version = 0;
        for update in updates {
            let before = local.list().clone();
            let status = local.send_local_list(&update);
            let mut next = match update.kind {
                UpdateKind::Full => BTreeMap::new(),
                UpdateKind::Differential => reference.clone(),
            };
            for (t, a) in &update.entries {
                match a {
                    Some(a) => next.insert(t.value.clone(), a.status),
                    None => next.remove(&t.value),
                };
            }
            let mut tokens: Vec<_> = update.entries.iter().map(|(t, _)| &t.value).collect();
            tokens.sort();
            tokens.dedup();
            let expected = if update.version < 1 {
                UpdateStatus::Failed
            } else if update.kind == UpdateKind::Differential && update.version <= version {
                UpdateStatus::VersionMismatch
            } else if update.entries.len() > 3 || tokens.len() != update.entries.len() || next.len() > 4 {
                UpdateStatus::Failed
            } else {
                UpdateStatus::Accepted
            };
            prop_assert_eq!(status, expected);
            if status == UpdateStatus::Accepted {
                reference = next;
                version = if reference.is_empty() { 0 } else { update.version };
            } else {
                prop_assert_eq!(local.list(), &before);
            }
            let listed: BTreeMap<String, AuthorizationStatus> =
                local.list().entries().map(|(t, a)| (t.value.clone(), a.status)).collect();
            prop_assert_eq!(&listed, &reference);
            prop_assert_eq!(local.local_list_version(), version);
        }
    }
}
