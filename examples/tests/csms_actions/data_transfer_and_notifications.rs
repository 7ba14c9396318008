//! DataTransfer for known and unknown vendors; notifications kept, bounded, on the admin API.

use super::*;

#[test]
fn data_transfer_known_and_unknown_vendors() {
    for version in [OcppVersion::V1_6, OcppVersion::V2_0_1, OcppVersion::V2_1] {
        let csms = Csms::new(CsmsConfig::default().data_transfer_vendors(vec!["acme".into()]));
        let cp = identity("CP-DT");
        csms.on_connected(&cp, version);
        let known = call(
            &csms,
            &cp,
            "DataTransfer",
            r#"{"vendorId":"acme","messageId":"m"}"#,
        );
        assert_eq!(known["status"], "Accepted", "{version:?}");
        let unknown = call(&csms, &cp, "DataTransfer", r#"{"vendorId":"other"}"#);
        assert_eq!(unknown["status"], "UnknownVendorId", "{version:?}");
        let kept = &csms.charge_point(&cp).unwrap().extras.notifications["DataTransfer"];
        assert_eq!(kept[1].payload["vendorId"], "other");
    }
    let csms = Csms::new(CsmsConfig::default());
    let cp = identity("CP-DT");
    csms.on_connected(&cp, OcppVersion::V1_6);
    assert_eq!(
        call(&csms, &cp, "DataTransfer", r#"{"vendorId":"ocpp-ws"}"#)["status"],
        "Accepted"
    );
}

#[test]
fn notifications_are_bounded_and_on_the_admin_api() {
    let csms = Csms::new(CsmsConfig::default().notifications_kept(3));
    let cp = identity("CS-EVENTS");
    csms.on_connected(&cp, OcppVersion::V2_0_1);
    for seq in 0..20 {
        let event = format!(
            r#"{{"generatedAt":"2026-01-01T00:00:00Z","seqNo":{seq},"eventData":[{{"eventId":{seq},"timestamp":"2026-01-01T00:00:00Z","trigger":"Delta","actualValue":"Unavailable","eventNotificationType":"HardWiredNotification","component":{{"name":"Connector"}},"variable":{{"name":"AvailabilityState"}}}}]}}"#
        );
        assert_eq!(call(&csms, &cp, "NotifyEvent", &event), json!({}));
    }
    call(
        &csms,
        &cp,
        "FirmwareStatusNotification",
        r#"{"status":"Installed","requestId":1}"#,
    );
    let state = csms.charge_point(&cp).unwrap();
    let kept = &state.extras.notifications["NotifyEvent"];
    assert_eq!(kept.len(), 3);
    assert_eq!(kept[0].payload["seqNo"], 17);
    assert_eq!(state.extras.notification_counts["NotifyEvent"], 20);

    let (status, body) = admin_get(&csms, "GET", "/chargepoints/CS-EVENTS", "");
    assert_eq!(status, 200);
    assert_eq!(body["notifications"]["NotifyEvent"]["count"], 20);
    assert_eq!(
        body["notifications"]["FirmwareStatusNotification"]["last_status"],
        "Installed"
    );
    let (status, body) = admin_get(
        &csms,
        "GET",
        "/chargepoints/CS-EVENTS/notifications/NotifyEvent",
        "",
    );
    assert_eq!(status, 200);
    assert_eq!(body.as_array().unwrap().len(), 3);
    assert_eq!(body[2]["payload"]["seqNo"], 19);
    let (_, body) = admin_get(&csms, "GET", "/chargepoints/CS-EVENTS/notifications", "");
    assert_eq!(
        body["FirmwareStatusNotification"][0]["payload"]["requestId"],
        1
    );
    let (status, _) = admin_get(&csms, "GET", "/chargepoints/NOBODY/notifications", "");
    assert_eq!(status, 404);
    let (status, _) = admin_get(&csms, "POST", "/chargepoints/CS-EVENTS/notifications", "");
    assert_eq!(status, 405);
}
