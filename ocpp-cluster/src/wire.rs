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
