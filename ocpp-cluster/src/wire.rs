//! The messages nodes publish to each other's inbox channel (`<prefix>:inbox:<node>`), JSON
//! with a `type` field. See PROTOCOL.md.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::CommandOutcome;

/// Only the `type` field, read first to pick the message's shape.
#[derive(Debug, Deserialize)]
pub(crate) struct Head<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: &'a str,
}

/// `{"type":"command",...}`: run a CALL on a charge point the receiver holds.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Command<'a> {
    #[serde(rename = "type")]
    pub(crate) kind: &'a str,
    pub(crate) id: &'a str,
    pub(crate) reply_to: &'a str,
    pub(crate) identity: &'a str,
    pub(crate) action: &'a str,
    #[serde(borrow)]
    pub(crate) payload: &'a RawValue,
    pub(crate) deadline_ms: u64,
}

/// `{"type":"reply",...}`: the one answer to a command, on the caller's inbox.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Reply<'a> {
    #[serde(rename = "type")]
    pub(crate) kind: &'a str,
    pub(crate) id: &'a str,
    pub(crate) status: &'a str,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub(crate) payload: Option<&'a RawValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) code: Option<&'a str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<&'a str>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub(crate) details: Option<&'a RawValue>,
}

/// `{"type":"superseded",...}`: published by `claim.lua` to the previous holder.
#[derive(Debug, Deserialize)]
pub(crate) struct Superseded<'a> {
    pub(crate) identity: &'a str,
    pub(crate) epoch: u64,
    pub(crate) by_node: &'a str,
    pub(crate) by_epoch: u64,
}

/// Serialises the reply to command `id` with `outcome`. A payload or details that is not
/// valid JSON text becomes a CALLERROR `InternalError` (the caller must get valid JSON).
pub(crate) fn encode_reply(id: &str, outcome: &CommandOutcome) -> String {
    let bad = || Reply {
        kind: "reply",
        id,
        status: "call_error",
        payload: None,
        code: Some("InternalError"),
        description: Some("the charge point's answer is not valid JSON"),
        details: None,
    };
    let reply = match outcome {
        CommandOutcome::Result(payload) => match serde_json::from_str::<&RawValue>(payload) {
            Ok(raw) => Reply {
                kind: "reply",
                id,
                status: "result",
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
                    kind: "reply",
                    id,
                    status: "call_error",
                    payload: None,
                    code: Some(code),
                    description: Some(description),
                    details: Some(raw),
                },
                Err(_) => bad(),
            }
        }
        CommandOutcome::NotConnected => Reply::bare(id, "not_connected"),
        CommandOutcome::Timeout => Reply::bare(id, "timeout"),
    };
    // Serialising these borrowed strings and checked raw values cannot fail.
    serde_json::to_string(&reply).unwrap_or_default()
}

impl<'a> Reply<'a> {
    fn bare(id: &'a str, status: &'a str) -> Self {
        Reply {
            kind: "reply",
            id,
            status,
            payload: None,
            code: None,
            description: None,
            details: None,
        }
    }

    /// The outcome this reply carries; an unknown status reads as a CALLERROR so that the
    /// caller still gets exactly one answer.
    pub(crate) fn outcome(&self) -> CommandOutcome {
        match self.status {
            "result" => CommandOutcome::Result(
                self.payload
                    .map(|p| p.get().to_owned())
                    .unwrap_or_else(|| "{}".to_owned()),
            ),
            "call_error" => CommandOutcome::CallError {
                code: self.code.unwrap_or("InternalError").to_owned(),
                description: self.description.unwrap_or("").to_owned(),
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
