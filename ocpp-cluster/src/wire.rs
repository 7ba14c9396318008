//! The messages nodes publish to each other's inbox channel (`<prefix>:inbox:<node>`), JSON
//! with a `type` field. See PROTOCOL.md.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::CommandOutcome;

/// Only the `type` field, read first to pick the message's shape.
#[derive(Debug, Deserialize)]
pub(crate) struct Head<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Cow<'a, str>,
}

/// `{"type":"command",...}`: run a CALL on a charge point the receiver holds.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Command<'a> {
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
}

/// `{"type":"reply",...}`: the one answer to a command, on the caller's inbox.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Reply<'a> {
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

/// `{"type":"superseded",...}`: published by `claim.lua` to the previous holder.
#[derive(Debug, Deserialize)]
pub(crate) struct Superseded<'a> {
    #[serde(borrow)]
    pub(crate) identity: Cow<'a, str>,
    pub(crate) epoch: u64,
    #[serde(borrow)]
    pub(crate) by_node: Cow<'a, str>,
    pub(crate) by_epoch: u64,
}

/// Serialises the reply to command `id` with `outcome`. A payload or details that is not
/// valid JSON text becomes a CALLERROR `InternalError` (the caller must get valid JSON).
pub(crate) fn encode_reply(id: &str, outcome: &CommandOutcome) -> String {
    let bad = || Reply {
        kind: "reply".into(),
        id: id.into(),
        status: "call_error".into(),
        payload: None,
        code: Some("InternalError".into()),
        description: Some("the charge point's answer is not valid JSON".into()),
        details: None,
    };
    let reply = match outcome {
        CommandOutcome::Result(payload) => match serde_json::from_str::<&RawValue>(payload) {
            Ok(raw) => Reply {
                kind: "reply".into(),
                id: id.into(),
                status: "result".into(),
                payload: Some(raw),
                code: None,
                description: None,
                details: None,
            },
            Err(_) => bad(),
        },
        CommandOutcome::CallError {
            code,
            description,
            details,
        } => {
            let details = if details.trim().is_empty() {
                "{}"
            } else {
                details
            };
            match serde_json::from_str::<&RawValue>(details) {
                Ok(raw) => Reply {
                    kind: "reply".into(),
                    id: id.into(),
                    status: "call_error".into(),
                    payload: None,
                    code: Some(code.as_str().into()),
                    description: Some(description.as_str().into()),
                    details: Some(raw),
                },
                Err(_) => bad(),
            }
        }
        CommandOutcome::NotConnected => Reply::bare(id, "not_connected"),
        CommandOutcome::Timeout => Reply::bare(id, "timeout"),
    };
    // Serialising these strings and checked raw values cannot fail.
    serde_json::to_string(&reply).unwrap_or_default()
}

impl<'a> Reply<'a> {
    fn bare(id: &'a str, status: &'a str) -> Self {
        Reply {
            kind: "reply".into(),
            id: id.into(),
            status: status.into(),
            payload: None,
            code: None,
            description: None,
            details: None,
        }
    }

    /// The outcome this reply carries; an unknown status reads as a CALLERROR so that the
    /// caller still gets exactly one answer.
    pub(crate) fn outcome(&self) -> CommandOutcome {
        match &*self.status {
            "result" => CommandOutcome::Result(
                self.payload
                    .map(|p| p.get().to_owned())
                    .unwrap_or_else(|| "{}".to_owned()),
            ),
            "call_error" => CommandOutcome::CallError {
                code: self.code.as_deref().unwrap_or("InternalError").to_owned(),
                description: self.description.as_deref().unwrap_or("").to_owned(),
                details: self
                    .details
                    .map(|d| d.get().to_owned())
                    .unwrap_or_else(|| "{}".to_owned()),
            },
            "not_connected" => CommandOutcome::NotConnected,
            "timeout" => CommandOutcome::Timeout,
            other => CommandOutcome::CallError {
                code: "InternalError".to_owned(),
                description: format!("unknown reply status {other:?}"),
                details: "{}".to_owned(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_spelled_as_protocol_md_says_and_read_back() {
        let cases = [
            (
                CommandOutcome::Result(r#"{"status":"Accepted"}"#.to_owned()),
                r#"{"type":"reply","id":"x","status":"result","payload":{"status":"Accepted"}}"#,
            ),
            (
                CommandOutcome::CallError {
                    code: "NotSupported".to_owned(),
                    description: "not here".to_owned(),
                    details: String::new(),
                },
                r#"{"type":"reply","id":"x","status":"call_error","code":"NotSupported","description":"not here","details":{}}"#,
            ),
            (
                CommandOutcome::NotConnected,
                r#"{"type":"reply","id":"x","status":"not_connected"}"#,
            ),
            (
                CommandOutcome::Timeout,
                r#"{"type":"reply","id":"x","status":"timeout"}"#,
            ),
        ];
        for (outcome, text) in cases {
            assert_eq!(encode_reply("x", &outcome), text);
            let reply: Reply<'_> = serde_json::from_str(text).unwrap();
            let expected = match outcome {
                CommandOutcome::CallError {
                    code, description, ..
                } => CommandOutcome::CallError {
                    code,
                    description,
                    details: "{}".to_owned(),
                },
                other => other,
            };
            assert_eq!(reply.outcome(), expected);
        }
    }

    #[test]
    fn an_answer_that_is_not_json_becomes_an_internal_error() {
        let text = encode_reply("x", &CommandOutcome::Result("not json".to_owned()));
        let reply: Reply<'_> = serde_json::from_str(&text).unwrap();
        assert!(
            matches!(reply.outcome(), CommandOutcome::CallError { code, .. } if code == "InternalError")
        );
    }

    #[test]
    fn an_unknown_status_is_still_one_answer() {
        let reply: Reply<'_> =
            serde_json::from_str(r#"{"type":"reply","id":"x","status":"maybe"}"#).unwrap();
        assert!(matches!(reply.outcome(), CommandOutcome::CallError { .. }));
    }

    #[test]
    fn strings_that_need_escapes_survive_the_round_trip() {
        // A CALLERROR description with a quote, a backslash and a newline; an identity with a
        // quote (OCPP 1.6 allows it). Borrowed `&str` fields could not read these back.
        let outcome = CommandOutcome::CallError {
            code: "GenericError".to_owned(),
            description: "say \"no\"\\\nthen stop".to_owned(),
            details: "{}".to_owned(),
        };
        let json = encode_reply("id-\"1\"", &outcome);
        let reply: Reply<'_> = serde_json::from_str(&json).unwrap();
        assert_eq!(reply.id, "id-\"1\"");
        assert_eq!(reply.outcome(), outcome);
        let command = r#"{"type":"command","id":"a-1","reply_to":"a","identity":"CP\"7","action":"Reset","payload":{},"deadline_ms":1}"#;
        let command: Command<'_> = serde_json::from_str(command).unwrap();
        assert_eq!(command.identity, "CP\"7");
    }

    #[test]
    fn the_documented_command_and_superseded_messages_parse() {
        let command = r#"{"type":"command","id":"a-5f0c9e1d2b3a4c5d-17","reply_to":"a","identity":"CP-1","action":"Reset","payload":{"type":"Soft"},"deadline_ms":1796121429478}"#;
        let head: Head<'_> = serde_json::from_str(command).unwrap();
        assert_eq!(head.kind, "command");
        let command: Command<'_> = serde_json::from_str(command).unwrap();
        assert_eq!(command.payload.get(), r#"{"type":"Soft"}"#);
        assert_eq!(command.deadline_ms, 1_796_121_429_478);
        let superseded = r#"{"type":"superseded","identity":"CP-7","epoch":1796121429478310,"by_node":"b","by_epoch":1796121429478311}"#;
        let superseded: Superseded<'_> = serde_json::from_str(superseded).unwrap();
        assert_eq!(superseded.by_epoch, 1_796_121_429_478_311);
    }
}
