//! OCTT CSMS test cases of OCPP 2.0.1 (`TC_<block>_<nn>_CSMS`) that the example CSMS
//! implements, end to end against both servers: each case is a `fn tc_<id>_<what>(binary)`,
//! run as `mio_server::tc_...` and `tokio_server::tc_...`. The test runs the charging
//! station's side of the case's scenario on a real loopback socket, with the operator's manual
//! actions done through the admin API, and checks what the CSMS puts on the wire. The case ids
//! and their meaning, the sources and what is not covered are in `examples/README.md`.

#[path = "../common/mod.rs"]
mod common;
#[macro_use]
#[path = "../octt/mod.rs"]
mod octt;

use common::*;
use octt::*;
use serde_json::json;

mod authorization;
mod availability;
mod data_transfer;
mod meter_values;
mod plug_and_charge;
mod provisioning;
mod remote_control;
mod security;
mod smart_charging;
mod tariff_and_cost;
mod transaction_status;
mod transactions;

use authorization::*;
use availability::*;
use data_transfer::*;
use meter_values::*;
use plug_and_charge::*;
use provisioning::*;
use remote_control::*;
use security::*;
use smart_charging::*;
use tariff_and_cost::*;
use transaction_status::*;
use transactions::*;

const V201: &str = "ocpp2.0.1";

fn boot_payload(reason: &str) -> Value {
    let station = json!({"vendorName": "ACME", "model": "AC-22", "serialNumber": "SN-201",
                         "firmwareVersion": "2.0.1"});
    json!({"reason": reason, "chargingStation": station})
}

/// Connects `identity` and boots it (Accepted).
fn booted(server: &ServerProcess, identity: &str) -> Ws {
    let mut ws = connect(server, identity, V201);
    let boot = ws.result("BootNotification", boot_payload("PowerUp"));
    assert_eq!(boot["status"], "Accepted");
    ws
}

fn status_payload(evse: u32, connector: u32, status: &str) -> Value {
    json!({"timestamp": T0, "connectorStatus": status, "evseId": evse, "connectorId": connector})
}

fn status(ws: &mut Ws, evse: u32, connector: u32, status: &str) {
    let payload = status_payload(evse, connector, status);
    assert_eq!(ws.result("StatusNotification", payload), json!({}));
}

fn notify_event_payload(actual: &str) -> Value {
    json!({"generatedAt": T0, "seqNo": 0, "eventData": [{
        "eventId": 1, "timestamp": T0, "trigger": "Delta", "actualValue": actual,
        "eventNotificationType": "HardWiredNotification",
        "component": {"name": "Connector", "evse": {"id": 1, "connectorId": 1}},
        "variable": {"name": "AvailabilityState"}}]})
}

fn id_token(token: &str) -> Value {
    json!({"idToken": token, "type": "ISO14443"})
}

/// A TransactionEvent; `extra` is merged into the payload (idToken, meterValue...).
fn event(kind: &str, trigger: &str, seq_no: u32, tx: &str, info: Value, extra: Value) -> Value {
    let mut transaction_info = json!({"transactionId": tx});
    for (k, v) in info.as_object().unwrap() {
        transaction_info[k] = v.clone();
    }
    let mut payload = json!({"eventType": kind, "timestamp": T0, "triggerReason": trigger,
                             "seqNo": seq_no, "transactionInfo": transaction_info,
                             "evse": {"id": 1, "connectorId": 1}});
    for (k, v) in extra.as_object().unwrap() {
        payload[k] = v.clone();
    }
    payload
}

fn energy(wh: u32) -> Value {
    let sample = json!({"value": wh, "measurand": "Energy.Active.Import.Register",
                        "context": "Sample.Periodic"});
    json!({"meterValue": [{"timestamp": T0, "sampledValue": [sample]}]})
}

fn tokens(name: &str) -> TempFile {
    TempFile::new(
        name,
        "TAG-OK Accepted GROUP1\nTAG-OK2 Accepted GROUP1\nTAG-INVALID Invalid\n\
         TAG-OLD Accepted - 2020-01-01T00:00:00Z\nTAG-BLOCKED Blocked\nTAG-BOSS Accepted MASTER\n",
    )
}

fn server_with_tokens(binary: &str, file: &TempFile) -> ServerProcess {
    ServerProcess::start(
        binary,
        &["--tokens", &file.path(), "--master-pass", "MASTER"],
    )
}

/// No OCTT case id found for this one: OCPP-J 2.0.1 §4.1.7/§4.2, an action the station may not
/// send (a CSMS-to-station action) gets NotSupported, an action that does not exist
/// NotImplemented, and a payload without a required field OccurrenceConstraintViolation; the
/// connection goes on.
fn wrong_calls_get_call_errors(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CS-ERR");
    assert_eq!(
        ws.error("Reset", json!({"type": "Immediate"})),
        "NotSupported"
    );
    assert_eq!(ws.error("NoSuchAction", json!({})), "NotImplemented");
    let missing = json!({"timestamp": T0, "evseId": 1, "connectorId": 1});
    let code = ws.error("StatusNotification", missing);
    assert_eq!(code, "OccurrenceConstraintViolation");
    assert_date_time(&ws.result("Heartbeat", json!({}))["currentTime"]);
    ws.close();
}

/// A command `action` with `body` answered `answer` by a booted station: checks the CALL's
/// payload and the CALLRESULT the admin API reports; the connection carries on.
fn simple_command(binary: &str, action: &str, body: Value, answer: Value) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CS-CMD");
    command(
        &server,
        &mut ws,
        "CS-CMD",
        action,
        body.clone(),
        Answer::Result(answer.clone()),
    )
    .assert_result(&body, &answer);
    assert_date_time(&ws.result("Heartbeat", json!({}))["currentTime"]);
    ws.close();
}

fn variable(component: &str, name: &str) -> Value {
    json!({"component": {"name": component}, "variable": {"name": name}})
}

fn with(mut value: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().unwrap() {
        value[k] = v.clone();
    }
    value
}

on_both_servers!(
    tc_a_01_basic_auth_valid,
    tc_a_02_basic_auth_username_not_identity,
    tc_a_03_basic_auth_invalid_password,
    tc_a_09_password_update_accepted,
    tc_a_10_password_update_rejected,
    tc_b_01_cold_boot_accepted,
    tc_b_02_cold_boot_pending,
    tc_b_06_get_variables_single_value,
    tc_b_07_get_variables_multiple_values,
    tc_b_09_set_variables_single_value,
    tc_b_10_set_variables_multiple_values,
    tc_b_12_get_base_report_configuration_inventory,
    tc_b_13_get_base_report_full_inventory,
    tc_b_14_get_base_report_summary_inventory,
    tc_b_20_reset_without_transaction_on_idle,
    tc_b_21_reset_with_transaction_on_idle,
    tc_b_22_reset_with_transaction_immediate,
    tc_b_25_reset_evse_without_transaction,
    tc_b_30_security_error_while_pending,
    tc_b_30_security_error_while_rejected,
    tc_b_31_pending_trigger_message_boot_notification,
    tc_b_58_no_common_subprotocol_rejected_400,
    tc_b_58_no_common_subprotocol_accept_then_close,
    tc_c_02_authorization_invalid_unknown,
    tc_c_06_authorization_blocked,
    tc_c_07_authorization_expired,
    tc_c_37_clear_cache_accepted,
    tc_c_38_clear_cache_rejected,
    tc_c_39_authorization_by_group_id,
    tc_c_49_master_pass_without_ui,
    tc_c_50_contract_certificate_hash_data_accepted,
    tc_c_51_contract_certificate_revoked,
    tc_c_52_contract_certificate_central_validation,
    tc_e_03_local_start_cable_plugin_first,
    tc_e_04_local_start_authorization_first,
    tc_e_21_stop_authorized_remote,
    tc_e_30_check_transaction_status_ongoing_without_messages,
    tc_e_34_check_transaction_status_without_transaction_id,
    tc_e_53_seq_no_restarts_at_0_for_a_new_transaction,
    tc_e_31_seq_no_gap_asks_get_transaction_status,
    tc_i_01_running_cost_cost_updated,
    tc_i_02_final_total_cost,
    tariff_per_station_and_none,
    tc_f_01_remote_start_cable_plugin_first,
    tc_f_02_remote_start_first,
    tc_f_06_unlock_connector_without_transaction,
    tc_f_11_trigger_meter_values_specific_evse,
    tc_f_12_trigger_meter_values_all_evse,
    tc_f_13_trigger_transaction_event_specific_evse,
    tc_f_15_trigger_log_status_notification_idle,
    tc_f_18_trigger_firmware_status_notification_idle,
    tc_f_20_trigger_message_heartbeat,
    tc_f_23_trigger_status_notification_available,
    tc_f_24_trigger_status_notification_occupied,
    tc_f_27_trigger_message_not_implemented,
    tc_g_03_change_availability_evse_inoperative,
    tc_g_04_change_availability_evse_operative,
    tc_g_05_change_availability_station_inoperative,
    tc_g_06_change_availability_station_operative,
    tc_g_07_change_availability_connector_inoperative,
    tc_g_08_change_availability_connector_operative,
    tc_g_11_change_availability_evse_with_ongoing_transaction,
    tc_g_14_change_availability_station_with_ongoing_transaction,
    tc_g_17_change_availability_connector_with_ongoing_transaction,
    tc_j_01_clock_aligned_meter_values_no_transaction,
    tc_j_02_clock_aligned_meter_values_transaction_ongoing,
    tc_k_53_load_leveling_needs_accepted_then_tx_profile,
    tc_k_55_ev_schedule_exceeding_limits_rejected_and_renegotiated,
    tc_k_57_renegotiation_initiated_by_ev,
    tc_k_58_renegotiation_initiated_by_csms,
    tc_k_59_renegotiation_by_csms_then_charging_needs,
    k15_on_ocpp_2_1,
    tc_m_24_get_certificate_status,
    tc_m_26_certificate_installation_ev,
    tc_m_28_certificate_update_ev,
    pnc_ocsp_check_does_not_block_other_stations,
    pnc_ocpp_2_1_same_handlers,
    tc_p_02_data_transfer_unknown_vendor,
    tc_p_03_receive_custom_data,
    wrong_calls_get_call_errors,
);
