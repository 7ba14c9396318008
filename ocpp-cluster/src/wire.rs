//! The messages nodes publish to each other's inbox channel (`<prefix>:inbox:<node>`), JSON
//! with a `type` field. See PROTOCOL.md.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use ocpp_proto::{CallFailure, ErrorCode, OcppVersion};

use crate::JsonCallOutcome;

/// Only the `type` field, read first to pick the message's shape.
#[derive(Debug, Deserialize)]
pub(crate) struct WireHead<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Cow<'a, str>,
}

/// `{"type":"command",...}`: run a CALL on a charge point the receiver holds.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct WireCommand<'a> {
    #[serde(borrow, rename = "type")]
    pub(crate) kind: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) id: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) reply_to: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) identity: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) action: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) payload: &'a RawValue,
    pub(crate) deadline_ms: u64,
    /// The OCPP version the payload was written for, as its subprotocol (`ocpp1.6`); absent:
    /// the holder decodes it for its connection's version.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub(crate) version: Option<Cow<'a, str>>,
}

/// `{"type":"reply",...}`: the one answer to a command, on the caller's inbox.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct WireReply<'a> {
    #[serde(borrow, rename = "type")]
    pub(crate) kind: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) id: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) status: Cow<'a, str>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub(crate) payload: Option<&'a RawValue>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub(crate) code: Option<Cow<'a, str>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<Cow<'a, str>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub(crate) details: Option<&'a RawValue>,
}

/// `{"type":"superseded",...}`: published by `claim.lua` (or `refresh.lua`) to the previous
/// holder; on Redis Cluster by the node after the script (PROTOCOL.md 1.2).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct WireSuperseded<'a> {
    /// `"superseded"`.
    #[serde(rename = "type", borrow, default = "superseded_kind")]
    pub(crate) kind: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) identity: Cow<'a, str>,
    pub(crate) epoch: u64,
    #[serde(borrow)]
    pub(crate) by_node: Cow<'a, str>,
    pub(crate) by_epoch: u64,
}

fn superseded_kind() -> Cow<'static, str> {
    Cow::Borrowed("superseded")
}

/// Serialises the reply to command `id` with `outcome`. A payload or details that is not
/// valid JSON text becomes a CALLERROR `InternalError` (the caller must get valid JSON).
pub(crate) fn encode_reply(id: &str, outcome: &JsonCallOutcome) -> String {
    let invalid_json = |what: &str| CallFailure::InvalidResponse {
        description: format!("the charge point's {what} is not valid JSON"),
    };
    let substitute;
    let failure = match outcome {
        Ok(payload) => match serde_json::from_str::<&RawValue>(payload) {
            Ok(raw) => {
                let mut reply = WireReply::bare(id, "result");
                reply.payload = Some(raw);
                return to_json(&reply);
            }
            Err(_) => {
                substitute = invalid_json("CALLRESULT");
                &substitute
            }
        },
        Err(CallFailure::ErrorResponse { details, .. })
            if serde_json::from_str::<&RawValue>(details_or_empty(details)).is_err() =>
        {
            substitute = invalid_json("CALLERROR's details");
            &substitute
        }
        Err(failure) => failure,
    };
    let mut reply = WireReply::bare(id, failure.name());
    match failure {
        CallFailure::ErrorResponse {
            code,
            description,
            details,
        } => {
            reply.code = Some(code.as_str(OcppVersion::V2_0_1).into());
            reply.description = Some(description.as_str().into());
            reply.details = serde_json::from_str(details_or_empty(details)).ok();
        }
        CallFailure::InvalidRequest { description }
        | CallFailure::InvalidResponse { description } => {
            reply.description = Some(description.as_str().into());
        }
        _ => {}
    }
    to_json(&reply)
}

/// Serialising these strings and checked raw values cannot fail.
fn to_json(reply: &WireReply<'_>) -> String {
    serde_json::to_string(reply).unwrap_or_default()
}

fn details_or_empty(details: &str) -> &str {
    if details.trim().is_empty() {
        "{}"
    } else {
        details
    }
}

impl<'a> WireReply<'a> {
    fn bare(id: &'a str, status: &'a str) -> Self {
        WireReply {
            kind: "reply".into(),
            id: id.into(),
            status: status.into(),
            payload: None,
            code: None,
            description: None,
            details: None,
        }
    }

    /// The command's outcome this reply carries. A status this node does not know (a newer
    /// node's) reads as [`CallFailure::Timeout`]: nothing says the CALL was not sent, so the
    /// caller must treat it as one that may have run.
    pub(crate) fn outcome(&self) -> JsonCallOutcome {
        let description = || self.description.as_deref().unwrap_or("").to_owned();
        match &*self.status {
            "result" => Ok(self
                .payload
                .map(|p| p.get().to_owned())
                .unwrap_or_else(|| "{}".to_owned())),
            "call_error" => Err(CallFailure::ErrorResponse {
                code: ErrorCode::parse(self.code.as_deref().unwrap_or("InternalError")),
                description: description(),
                details: self
                    .details
                    .map(|d| d.get().to_owned())
                    .unwrap_or_else(|| "{}".to_owned()),
            }),
            "invalid_request" => Err(CallFailure::InvalidRequest {
                description: description(),
            }),
            "invalid_response" => Err(CallFailure::InvalidResponse {
                description: description(),
            }),
            other => Err(CallFailure::from_name(other).unwrap_or_else(|| {
                tracing::warn!(status = other, "unknown reply status: read as a timeout");
                CallFailure::Timeout
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call_error(code: ErrorCode, description: &str) -> JsonCallOutcome {
        Err(CallFailure::ErrorResponse {
            code,
            description: description.to_owned(),
            details: "{}".to_owned(),
        })
    }

    #[test]
    fn replies_are_spelled_as_protocol_md_says_and_read_back() {
        let cases = [
            (
                Ok(r#"{"status":"Accepted"}"#.to_owned()),
                r#"{"type":"reply","id":"x","status":"result","payload":{"status":"Accepted"}}"#,
            ),
            (
                call_error(ErrorCode::NotSupported, "not here"),
                r#"{"type":"reply","id":"x","status":"call_error","code":"NotSupported","description":"not here","details":{}}"#,
            ),
            (
                Err(CallFailure::NotConnected),
                r#"{"type":"reply","id":"x","status":"not_connected"}"#,
            ),
            (
                Err(CallFailure::Timeout),
                r#"{"type":"reply","id":"x","status":"timeout"}"#,
            ),
            (
                Err(CallFailure::Disconnected),
                r#"{"type":"reply","id":"x","status":"disconnected"}"#,
            ),
            (
                Err(CallFailure::DeadlinePassed),
                r#"{"type":"reply","id":"x","status":"deadline_passed"}"#,
            ),
            (
                Err(CallFailure::ClosedBeforeSent),
                r#"{"type":"reply","id":"x","status":"closed_before_sent"}"#,
            ),
            (
                Err(CallFailure::QueueFull),
                r#"{"type":"reply","id":"x","status":"queue_full"}"#,
            ),
            (
                Err(CallFailure::InvalidRequest {
                    description: "no Reset in 2.0.1".to_owned(),
                }),
                r#"{"type":"reply","id":"x","status":"invalid_request","description":"no Reset in 2.0.1"}"#,
            ),
        ];
        for (outcome, text) in cases {
            assert_eq!(encode_reply("x", &outcome), text);
            let reply: WireReply<'_> = serde_json::from_str(text).unwrap();
            assert_eq!(reply.outcome(), outcome);
        }
    }

    #[test]
    fn an_error_code_is_sent_in_2x_spelling_and_read_by_meaning() {
        let text = encode_reply("x", &call_error(ErrorCode::FormatViolation, ""));
        assert!(text.contains(r#""code":"FormatViolation""#), "{text}");
        let v16 = r#"{"type":"reply","id":"x","status":"call_error","code":"FormationViolation"}"#;
        let reply: WireReply<'_> = serde_json::from_str(v16).unwrap();
        assert!(matches!(
            reply.outcome(),
            Err(CallFailure::ErrorResponse {
                code: ErrorCode::FormatViolation,
                ..
            })
        ));
    }

    #[test]
    fn an_answer_that_is_not_json_becomes_an_invalid_response() {
        let text = encode_reply("x", &Ok("not json".to_owned()));
        let reply: WireReply<'_> = serde_json::from_str(&text).unwrap();
        assert!(matches!(
            reply.outcome(),
            Err(CallFailure::InvalidResponse { .. })
        ));
    }

    #[test]
    fn an_unknown_status_is_still_one_answer_and_may_have_run() {
        let reply: WireReply<'_> =
            serde_json::from_str(r#"{"type":"reply","id":"x","status":"maybe"}"#).unwrap();
        let failure = reply.outcome().unwrap_err();
        assert!(failure.may_have_reached_peer());
    }

    #[test]
    fn strings_that_need_escapes_survive_the_round_trip() {
        // A CALLERROR description with a quote, a backslash and a newline; an identity with a
        // quote (OCPP 1.6 allows it). Borrowed `&str` fields could not read these back.
        let outcome = call_error(ErrorCode::GenericError, "say \"no\"\\\nthen stop");
        let json = encode_reply("id-\"1\"", &outcome);
        let reply: WireReply<'_> = serde_json::from_str(&json).unwrap();
        assert_eq!(reply.id, "id-\"1\"");
        assert_eq!(reply.outcome(), outcome);
        let command = r#"{"type":"command","id":"a-1","reply_to":"a","identity":"CP\"7","action":"Reset","payload":{},"deadline_ms":1}"#;
        let command: WireCommand<'_> = serde_json::from_str(command).unwrap();
        assert_eq!(command.identity, "CP\"7");
    }

    #[test]
    fn the_documented_command_and_superseded_messages_parse() {
        let command = r#"{"type":"command","id":"a-5f0c9e1d2b3a4c5d-17","reply_to":"a","identity":"CP-1","action":"Reset","payload":{"type":"Soft"},"deadline_ms":1796121429478}"#;
        let head: WireHead<'_> = serde_json::from_str(command).unwrap();
        assert_eq!(head.kind, "command");
        let command: WireCommand<'_> = serde_json::from_str(command).unwrap();
        assert_eq!(command.payload.get(), r#"{"type":"Soft"}"#);
        assert_eq!(command.deadline_ms, 1_796_121_429_478);
        let superseded = r#"{"type":"superseded","identity":"CP-7","epoch":1796121429478310,"by_node":"b","by_epoch":1796121429478311}"#;
        let superseded: WireSuperseded<'_> = serde_json::from_str(superseded).unwrap();
        assert_eq!(superseded.by_epoch, 1_796_121_429_478_311);
    }
}
