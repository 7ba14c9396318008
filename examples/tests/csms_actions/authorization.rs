//! Authorization from the token store (1.6 and 2.x), and the tokens on the admin API.

use super::*;

fn store() -> TokenStore {
    TokenStore::parse(
        "TAG-OK Accepted GROUP1\nTAG-BLOCKED Blocked\nTAG-OLD Accepted - 2020-01-01T00:00:00Z\n\
         TAG-BROKE NoCredit\nTAG-BOSS Accepted MASTER\n",
    )
    .unwrap()
    .with_master_pass(Some("MASTER".into()))
}

#[test]
fn v1_6_authorization_from_the_token_store() {
    let csms = Csms::new(CsmsConfig::default().tokens(Some(store())));
    let cp = identity("CP-AUTH");
    csms.on_connected(&cp, OcppVersion::V1_6);
    let status = |tag: &str| {
        call(&csms, &cp, "Authorize", &format!(r#"{{"idTag":"{tag}"}}"#))["idTagInfo"].clone()
    };
    assert_eq!(
        status("TAG-OK"),
        json!({"status":"Accepted","parentIdTag":"GROUP1"})
    );
    assert_eq!(status("TAG-BLOCKED")["status"], "Blocked");
    assert_eq!(status("TAG-OLD")["status"], "Expired");
    assert_eq!(
        status("TAG-BROKE")["status"],
        "Invalid",
        "NoCredit is 2.x only"
    );
    assert_eq!(status("NOBODY")["status"], "Invalid", "1.6 has no Unknown");
    assert_eq!(
        status("TAG-BOSS"),
        json!({"status":"Accepted","parentIdTag":"MASTER"})
    );
    let start = call(
        &csms,
        &cp,
        "StartTransaction",
        r#"{"connectorId":1,"idTag":"TAG-BLOCKED","meterStart":0,"timestamp":"2026-01-01T00:00:00Z"}"#,
    );
    assert_eq!(start["idTagInfo"]["status"], "Blocked");
    let tx = start["transactionId"].as_i64().unwrap();
    // The master pass may stop it.
    let stop = call(
        &csms,
        &cp,
        "StopTransaction",
        &format!(
            r#"{{"transactionId":{tx},"idTag":"MASTER","meterStop":0,"timestamp":"2026-01-01T00:01:00Z"}}"#
        ),
    );
    assert_eq!(
        stop["idTagInfo"],
        json!({"status":"Accepted","parentIdTag":"MASTER"})
    );

    // Without a store: everything Accepted, as before.
    let open = Csms::new(CsmsConfig::default());
    open.on_connected(&cp, OcppVersion::V1_6);
    assert_eq!(
        call(&open, &cp, "Authorize", r#"{"idTag":"NOBODY"}"#)["idTagInfo"],
        json!({"status":"Accepted"})
    );
}

#[test]
fn v2_authorization_from_the_token_store() {
    for version in [OcppVersion::V2_0_1, OcppVersion::V2_1] {
        let csms = Csms::new(CsmsConfig::default().tokens(Some(store())));
        let cp = identity("CS-AUTH");
        csms.on_connected(&cp, version);
        let info = |token: &str| {
            call(
                &csms,
                &cp,
                "Authorize",
                &format!(r#"{{"idToken":{{"idToken":"{token}","type":"ISO14443"}}}}"#),
            )["idTokenInfo"]
                .clone()
        };
        assert_eq!(
            info("TAG-OK"),
            json!({"status":"Accepted","groupIdToken":{"idToken":"GROUP1","type":"Central"}})
        );
        assert_eq!(info("TAG-BLOCKED")["status"], "Blocked");
        assert_eq!(info("TAG-OLD")["status"], "Expired");
        assert_eq!(
            info("TAG-OLD")["cacheExpiryDateTime"],
            "2020-01-01T00:00:00Z"
        );
        assert_eq!(info("TAG-BROKE")["status"], "NoCredit");
        assert_eq!(info("NOBODY")["status"], "Unknown");
        assert_eq!(info("MASTER")["groupIdToken"]["idToken"], "MASTER");
        let event = call(
            &csms,
            &cp,
            "TransactionEvent",
            r#"{"eventType":"Started","timestamp":"2026-01-01T00:00:00Z","triggerReason":"Authorized","seqNo":0,"transactionInfo":{"transactionId":"T1"},"idToken":{"idToken":"NOBODY","type":"ISO14443"}}"#,
        );
        assert_eq!(event["idTokenInfo"]["status"], "Unknown", "{version:?}");
        // NoAuthorization: the station decided, the CSMS does not refuse it.
        let free = call(
            &csms,
            &cp,
            "TransactionEvent",
            r#"{"eventType":"Started","timestamp":"2026-01-01T00:00:00Z","triggerReason":"CablePluggedIn","seqNo":0,"transactionInfo":{"transactionId":"T2"},"idToken":{"idToken":"","type":"NoAuthorization"}}"#,
        );
        assert_eq!(free["idTokenInfo"]["status"], "Accepted");
    }
}

#[test]
fn tokens_on_the_admin_api() {
    let csms = Csms::new(CsmsConfig::default());
    let cp = identity("CS-TOK");
    csms.on_connected(&cp, OcppVersion::V2_0_1);
    let (_, body) = admin_get(&csms, "GET", "/tokens", "");
    assert_eq!(body["enabled"], false);
    assert_eq!(admin_get(&csms, "GET", "/tokens/TAG1", "").0, 404);
    let authorize = r#"{"idToken":{"idToken":"TAG1","type":"ISO14443"}}"#;
    assert_eq!(
        call(&csms, &cp, "Authorize", authorize)["idTokenInfo"]["status"],
        "Accepted"
    );
    let (status, body) = admin_get(
        &csms,
        "PUT",
        "/tokens/TAG1",
        r#"{"status":"Blocked","group":"G"}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        admin_get(&csms, "GET", "/tokens/TAG1", "").1["status"],
        "Blocked"
    );
    assert_eq!(
        call(&csms, &cp, "Authorize", authorize)["idTokenInfo"]["status"],
        "Blocked"
    );
    assert_eq!(
        admin_get(&csms, "PUT", "/tokens/TAG1", r#"{"status":"Sometimes"}"#).0,
        400
    );
    assert_eq!(
        admin_get(
            &csms,
            "PUT",
            "/tokens/TAG1",
            r#"{"status":"Accepted","expiry":"soon"}"#
        )
        .0,
        400
    );
    let (_, body) = admin_get(&csms, "GET", "/tokens", "");
    assert_eq!(body["enabled"], true);
    assert_eq!(body["tokens"]["TAG1"]["group"], "G");
    assert_eq!(admin_get(&csms, "DELETE", "/tokens/TAG1", "").0, 200);
    assert_eq!(admin_get(&csms, "DELETE", "/tokens/TAG1", "").0, 404);
    // The store is on and empty: unknown from now on.
    assert_eq!(
        call(&csms, &cp, "Authorize", authorize)["idTokenInfo"]["status"],
        "Unknown"
    );
}
