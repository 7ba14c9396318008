//! One handler for the central system's commands of every version (`Router::on_command`):
//! against the test kit's central system on 1.6, 2.0.1 and 2.1, a remote start is read as one
//! `Command::RemoteStart` and answered in the version's words; an outcome the version has no
//! word for goes out as CALLERROR `InternalError`, a command the handler refuses as its
//! CALLERROR, and a CALL that is not a command to the router's usual `NotSupported`.

use ocpp_model::{Command, Outcome, ResetKind};
use ocpp_test_kit::{MockCsms, TestKitError};

use super::*;

/// Accepts remote starts for TAG-OK, refuses other tokens; schedules resets (which 1.6
/// cannot say); refuses every other command.
async fn asked(_: Session<()>, command: Command) -> Result<Outcome, ErrorAnswer> {
    match command {
        Command::RemoteStart { token, .. } if token.value == "TAG-OK" => Ok(Outcome::Accepted),
        Command::RemoteStart { .. } => Ok(Outcome::Rejected),
        Command::Reset {
            kind: ResetKind::Immediate,
            ..
        } => Ok(Outcome::Scheduled),
        other => Err(ErrorAnswer::not_supported(other.name())),
    }
}

/// The CALLERROR code of a CALL that failed with one.
fn refused(result: Result<serde_json::Value, TestKitError>) -> ErrorCode {
    match result {
        Err(TestKitError::Call(CallFailure::ErrorResponse { code, .. })) => code,
        other => panic!("a CALLERROR, got {other:?}"),
    }
}

#[tokio::test]
async fn one_command_handler_answers_each_version_in_its_words() {
    let start = |tag: &str, version| match version {
        OcppVersion::V1_6 => ("RemoteStartTransaction", json!({ "idTag": tag })),
        _ => (
            "RequestStartTransaction",
            json!({ "idToken": { "idToken": tag, "type": "ISO14443" }, "remoteStartId": 1 }),
        ),
    };
    let reset = |version| match version {
        OcppVersion::V1_6 => json!({ "type": "Hard" }),
        _ => json!({ "type": "Immediate" }),
    };
    for version in [OcppVersion::V1_6, OcppVersion::V2_0_1, OcppVersion::V2_1] {
        let csms = MockCsms::builder()
            .versions([version])
            .start()
            .await
            .unwrap();
        let identity = "CP-COMMANDS";
        let router = Router::<()>::for_station().on_command(asked);
        let station = Station::builder(&csms.url(identity))
            .unwrap()
            .versions([version])
            .handler(router, ())
            .connect()
            .unwrap();
        status_where(&station, |s| matches!(s, Status::Accepted { .. })).await;

        let (action, payload) = start("TAG-OK", version);
        let answer = csms.call(identity, action, payload).await.unwrap();
        assert_eq!(answer["status"], "Accepted", "{version}");
        let (action, payload) = start("TAG-NO", version);
        let answer = csms.call(identity, action, payload).await.unwrap();
        assert_eq!(answer["status"], "Rejected", "{version}");

        // Scheduled: a 2.x reset status, not a 1.6 one.
        let result = csms.call(identity, "Reset", reset(version)).await;
        match version {
            OcppVersion::V1_6 => assert_eq!(refused(result), ErrorCode::InternalError),
            _ => assert_eq!(result.unwrap()["status"], "Scheduled", "{version}"),
        }
        // A command the handler refuses, and a CALL that is not a command.
        let unlock = match version {
            OcppVersion::V1_6 => json!({ "connectorId": 1 }),
            _ => json!({ "evseId": 1, "connectorId": 1 }),
        };
        let result = csms.call(identity, "UnlockConnector", unlock).await;
        assert_eq!(refused(result), ErrorCode::NotSupported, "{version}");
        let result = csms.call(identity, "ClearCache", json!({})).await;
        assert_eq!(refused(result), ErrorCode::NotSupported, "{version}");

        close(&station).await;
        csms.stop().await;
    }
}
