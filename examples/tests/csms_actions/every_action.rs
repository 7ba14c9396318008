//! Every charge-point-initiated action answered with a typed, schema-valid CALLRESULT; the
//! CSMS's own actions refused when a charge point sends them.

use super::*;

#[test]
fn v1_6_every_charge_point_action_answered() {
    let all: Vec<&str> = v1_6::Action::ALL.iter().map(|a| a.as_str()).collect();
    assert_covers(&names(CHARGE_POINT_1_6), CENTRAL_SYSTEM_1_6, &all);
    answers_everything(OcppVersion::V1_6, CHARGE_POINT_1_6);
}

#[test]
fn v2_0_1_every_charging_station_action_answered() {
    let all: Vec<&str> = v2_0_1::Action::ALL.iter().map(|a| a.as_str()).collect();
    assert_covers(&names(CHARGING_STATION_2_0_1), CSMS_2_0_1, &all);
    answers_everything(OcppVersion::V2_0_1, CHARGING_STATION_2_0_1);
}

#[test]
fn v2_1_every_charging_station_action_answered() {
    let all: Vec<&str> = v2_1::Action::ALL.iter().map(|a| a.as_str()).collect();
    let mut station = names(CHARGING_STATION_2_1);
    station.extend(names(CHARGING_STATION_SEND_2_1));
    assert_covers(&station, CSMS_2_1, &all);
    answers_everything(OcppVersion::V2_1, CHARGING_STATION_2_1);
    // The SEND is kept too.
    let csms = Csms::new(CsmsConfig::default());
    let cp = identity("CS-SEND");
    csms.on_connected(&cp, OcppVersion::V2_1);
    for (action, payload) in CHARGING_STATION_SEND_2_1 {
        let request = decode_command(OcppVersion::V2_1, action, payload).unwrap();
        csms.on_send(&cp, &request);
        assert_eq!(
            csms.charge_point(&cp).unwrap().extras.notifications[action].len(),
            1
        );
    }
}

#[test]
fn csms_initiated_actions_sent_by_a_charge_point_are_not_supported() {
    let csms = Csms::new(CsmsConfig::default());
    let cp = identity("CP-WRONG-WAY");
    csms.on_connected(&cp, OcppVersion::V2_0_1);
    let reply = call_reply(&csms, &cp, "Reset", r#"{"type":"Immediate"}"#);
    assert_eq!(error_code(reply), ErrorCode::NotSupported);
}
