//! Every charge-point-initiated action of OCPP 1.6, 2.0.1 and 2.1 answered through the `Csms`
//! API with a typed, schema-valid CALLRESULT (never NotSupported or NotImplemented), and what
//! they report kept on the admin API; authorization from a token store; the boot policy.
//!
//! The payloads are the minimal schema-valid ones (every required field, nothing else, the
//! first value of each enumeration), derived from the schemas in `ocpp-messages/schemas/`
//! (decoding them in strict mode checks them again); each list is checked
//! against the version's `Action::ALL` so that an action added to a version cannot be
//! forgotten.

use std::collections::BTreeSet;

use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::version::OcppVersion;
use ocpp_messages::{v1_6, v2_0_1, v2_1};
use ocpp_proto::Answer;
use ocpp_proto::{ChargePointIdentity, Response};
use ocpp_reference_csms::admin::{self, decode_command, AdminRequest, Route};
use ocpp_reference_csms::{BootPolicy, Csms, CsmsConfig, TokenStore};
use serde_json::{json, Value};

mod authorization;
mod boot_policy;
mod data_transfer_and_notifications;
mod every_action;
mod payloads;

use payloads::*;

fn identity(name: &str) -> ChargePointIdentity {
    ChargePointIdentity::new(name.into(), true).unwrap()
}

/// Checks that the charge-point actions and the central-system actions of a version, between
/// them, are exactly its `Action::ALL` (DataTransfer goes both ways).
fn assert_covers(charge_point: &[&str], central: &[&str], all: &[&str]) {
    let ours: BTreeSet<&str> = charge_point.iter().chain(central).copied().collect();
    let all: BTreeSet<&str> = all.iter().copied().collect();
    let missing: Vec<_> = all.difference(&ours).collect();
    let extra: Vec<_> = ours.difference(&all).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}, not actions {extra:?}"
    );
    for action in charge_point {
        assert!(
            *action == "DataTransfer" || !central.contains(action),
            "{action} listed both ways"
        );
    }
}

/// The CALLRESULT payload of `action`, after checking it is one and passes its schema.
fn call(csms: &Csms, cp: &ChargePointIdentity, action: &str, payload: &str) -> Value {
    match call_reply(csms, cp, action, payload) {
        Answer::Result(response) => {
            assert_eq!(response.action(), action);
            validated(&response)
        }
        other => panic!("{action}: {other:?}"),
    }
}

fn call_reply(csms: &Csms, cp: &ChargePointIdentity, action: &str, payload: &str) -> Answer {
    let version = csms.version_of(cp).expect("connected");
    let request = decode_command(version, action, payload)
        .unwrap_or_else(|e| panic!("{action} {payload}: {e}"));
    csms.on_call(csms_session(csms, cp), cp, &request)
        .wait(csms)
}

fn csms_session(csms: &Csms, cp: &ChargePointIdentity) -> ocpp_reference_csms::SessionId {
    csms.charge_point(cp).unwrap().session.unwrap().id
}

fn validated(response: &Response) -> Value {
    match response {
        Response::V1_6(r) => r.validate().unwrap(),
        Response::V2_0_1(r) => r.validate().unwrap(),
        Response::V2_1(r) => r.validate().unwrap(),
        other => panic!("{other:?}"),
    }
    serde_json::to_value(response).unwrap()
}

fn error_code(reply: Answer) -> ErrorCode {
    match reply {
        Answer::Error(error) => error.code,
        other => panic!("expected a CALLERROR, got {other:?}"),
    }
}

/// Every charge-point action answered, none NotSupported/NotImplemented, every answer valid,
/// every report kept.
fn answers_everything(version: OcppVersion, actions: &[(&str, &str)]) {
    let csms = Csms::new(CsmsConfig::default());
    let cp = identity("CP-ALL");
    csms.on_connected(&cp, version);
    for (action, payload) in actions {
        let reply = call_reply(&csms, &cp, action, payload);
        let Answer::Result(response) = reply else {
            panic!("{version:?} {action}: {reply:?}")
        };
        assert_eq!(response.action(), *action);
        assert_eq!(response.version(), version);
        validated(&response);
    }
    assert_eq!(csms.metrics().call_errors_sent.get(), 0);
    let state = csms.charge_point(&cp).unwrap();
    for (action, _) in actions {
        let typed = [
            "BootNotification",
            "Heartbeat",
            "StatusNotification",
            "MeterValues",
            "Authorize",
            "StartTransaction",
            "StopTransaction",
            "TransactionEvent",
        ];
        if !typed.contains(action) {
            assert_eq!(state.extras.notifications[action].len(), 1, "{action} kept");
        }
    }
}

fn names(list: &[(&'static str, &str)]) -> Vec<&'static str> {
    list.iter().map(|(action, _)| *action).collect()
}

fn admin_get(csms: &Csms, method: &str, path: &str, body: &str) -> (u16, Value) {
    let request = AdminRequest {
        method: method.into(),
        path: path.into(),
        body: body.as_bytes().to_vec(),
        authorization: None,
        caller_timeout: None,
    };
    match admin::route(csms, &request) {
        Route::Respond(response) => {
            let body = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
            (response.status, body)
        }
        Route::Call { .. } | Route::Calls { .. } => panic!("{path}: a CALL"),
    }
}
