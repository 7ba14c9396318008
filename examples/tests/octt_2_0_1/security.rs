//! Block A, security: Basic auth (valid, username not the identity, wrong password), password
//! update accepted and rejected.

use super::*;

fn basic_auth_server(binary: &str, file: &TempFile) -> ServerProcess {
    ServerProcess::start(binary, &["--basic-auth", &file.path()])
}

/// TC_A_01_CSMS, Basic Authentication - Valid username/password combination.
pub(crate) fn tc_a_01_basic_auth_valid(binary: &str) {
    let file = TempFile::new("passwords201", "CS-A01:0123456789abcdef\n");
    let server = basic_auth_server(binary, &file);
    let credentials = Some(("CS-A01", &b"0123456789abcdef"[..]));
    let mut ws = upgrade(server.ocpp, "CS-A01", Some(V201), credentials).opened(V201);
    assert_eq!(
        ws.result("BootNotification", boot_payload("PowerUp"))["status"],
        "Accepted"
    );
    ws.close();
}

/// TC_A_02_CSMS, Basic Authentication - Username does not equal ChargingStationId: 401.
pub(crate) fn tc_a_02_basic_auth_username_not_identity(binary: &str) {
    let file = TempFile::new(
        "passwords201",
        "CS-A02:0123456789abcdef\nOTHER:0123456789abcdef\n",
    );
    let server = basic_auth_server(binary, &file);
    let credentials = Some(("OTHER", &b"0123456789abcdef"[..]));
    let refused = upgrade(server.ocpp, "CS-A02", Some(V201), credentials);
    assert_eq!(refused.status, 401);
    assert!(refused.ws.is_none());
}

/// TC_A_03_CSMS, Basic Authentication - Invalid password: 401 (and without credentials too).
pub(crate) fn tc_a_03_basic_auth_invalid_password(binary: &str) {
    let file = TempFile::new("passwords201", "CS-A03:0123456789abcdef\n");
    let server = basic_auth_server(binary, &file);
    let credentials = Some(("CS-A03", &b"0123456789abcdeX"[..]));
    assert_eq!(
        upgrade(server.ocpp, "CS-A03", Some(V201), credentials).status,
        401
    );
    assert_eq!(upgrade(server.ocpp, "CS-A03", Some(V201), None).status, 401);
}

/// The password change of TC_A_09 / TC_A_10: SetVariables SecurityCtrlr.BasicAuthPassword,
/// answered `status`; then which of the old and the new password opens the next connection.
fn password_update(binary: &str, answer_status: &str) -> (u16, u16) {
    let file = TempFile::new("passwords201", "CS-A09:old-password-0000\n");
    let server = basic_auth_server(binary, &file);
    let open = |password: &str| {
        upgrade(
            server.ocpp,
            "CS-A09",
            Some(V201),
            Some(("CS-A09", password.as_bytes())),
        )
    };
    let mut ws = open("old-password-0000").opened(V201);
    ws.result("BootNotification", boot_payload("PowerUp"));
    let password = with(
        variable("SecurityCtrlr", "BasicAuthPassword"),
        json!({"attributeValue": "new-password-1111"}),
    );
    let body = json!({"setVariableData": [password]});
    let answer = json!({"setVariableResult": [with(variable("SecurityCtrlr", "BasicAuthPassword"),
                                                   json!({"attributeStatus": answer_status}))]});
    command(
        &server,
        &mut ws,
        "CS-A09",
        "SetVariables",
        body.clone(),
        Answer::Result(answer.clone()),
    )
    .assert_result(&body, &answer);
    ws.close();
    let old = open("old-password-0000");
    let old_status = old.status;
    if let Some(mut ws) = old.ws {
        ws.result("BootNotification", boot_payload("PowerUp"));
        ws.close();
    }
    let new = open("new-password-1111");
    let new_status = new.status;
    if let Some(mut ws) = new.ws {
        let boot = ws.result("BootNotification", boot_payload("PowerUp"));
        assert_eq!(boot["status"], "Accepted");
        status(&mut ws, 1, 1, "Available");
        ws.close();
    }
    (old_status, new_status)
}

/// TC_A_09_CSMS, Update Charging Station Password for HTTP Basic Authentication - Accepted:
/// from the next connection on, the new password opens (and boots Accepted) and the old one gets
/// 401. The case ends with the operator setting the old password back
/// (`PUT /chargepoints/ID/password`): then the old one opens again and the new one gets 401.
pub(crate) fn tc_a_09_password_update_accepted(binary: &str) {
    assert_eq!(password_update(binary, "Accepted"), (401, 101));
    // The test case allows RebootRequired too: it counts from the reboot's connection.
    assert_eq!(password_update(binary, "RebootRequired"), (401, 101));

    let file = TempFile::new("passwords201-back", "CS-A09:old-password-0000\n");
    let server = basic_auth_server(binary, &file);
    let open = |password: &str| {
        upgrade(
            server.ocpp,
            "CS-A09",
            Some(V201),
            Some(("CS-A09", password.as_bytes())),
        )
    };
    let path = "/chargepoints/CS-A09/password";
    let (status, _) = admin(&server, "PUT", path, r#"{"password":"new-password-1111"}"#);
    assert_eq!(status, 200);
    assert_eq!(open("old-password-0000").status, 401);
    open("new-password-1111").opened(V201).close();
    let (status, _) = admin(&server, "PUT", path, r#"{"password":"old-password-0000"}"#);
    assert_eq!(status, 200);
    assert_eq!(open("new-password-1111").status, 401);
    let mut ws = open("old-password-0000").opened(V201);
    assert_eq!(
        ws.result("BootNotification", boot_payload("PowerUp"))["status"],
        "Accepted"
    );
    ws.close();
    // Removed: no password opens it.
    let (status, body) = admin(&server, "DELETE", path, "");
    assert_eq!((status, &body["password"]), (200, &json!(false)));
    assert_eq!(open("old-password-0000").status, 401);
}

/// TC_A_10_CSMS, Update Charging Station Password for HTTP Basic Authentication - Rejected:
/// the CSMS keeps accepting the old password (and boots the station Accepted), not the new.
pub(crate) fn tc_a_10_password_update_rejected(binary: &str) {
    assert_eq!(password_update(binary, "Rejected"), (101, 401));
}
