//! Validation of OCPP-J messages as the receiving side would judge them: the envelope by
//! [`ocpp_messages::envelope::parse_str`] and [`respond_to_parse_error`], the payload by
//! [`Request::decode`] / [`Response::decode`] (strict), so that the error code reported is the
//! one our own core would answer with, spelt for the version (`FormationViolation` in 1.6).
//!
//! Where a payload breaks its schema, the JSON path of the offending field comes from the
//! decoder's own [`Violation::path`](ocpp_messages::Violation::path), written here from the
//! payload's root as `$.meterValue[0].sampledValue[1].unit` (`$` for the payload itself).
//!
//! A CALLRESULT carries no action: [`Validator`] remembers the action of every CALL it has seen
//! (per identity, by message id, in the opposite direction) and decodes the answer for it, or
//! uses the action given with [`Validator::with_action`].
//!
//! ```
//! use ocpp_cli::validate::{Validator, Verdict};
//! use ocpp_messages::OcppVersion;
//!
//! let mut validator = Validator::new();
//! let bad = r#"[2,"1","BootNotification",{"chargePointVendor":"ACME"}]"#;
//! match validator.check_message(OcppVersion::V1_6, "", None, bad) {
//!     Verdict::Invalid(finding) => {
//!         assert_eq!(finding.code, "OccurenceConstraintViolation"); // 1.6 spelling
//!         assert_eq!(finding.path.as_deref(), Some("$.chargePointModel"));
//!     }
//!     other => panic!("{other:?}"),
//! }
//! ```

use std::collections::HashMap;
use std::fmt;

use ocpp_messages::envelope::{parse_str, respond_to_parse_error, Disposition, RpcMessage};
use ocpp_messages::{DecodeError, DecodeOptions, ErrorCode, OcppVersion, Request, Response};

use crate::capture::CaptureDirection;

/// What the receiving side would make of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Accepted: the envelope parses and the payload keeps its schema.
    Valid {
        /// `CALL`, `CALLRESULT`, `CALLERROR`, `CALLRESULTERROR` or `SEND`.
        kind: &'static str,
        /// The action, when known.
        action: Option<String>,
    },
    /// Refused: the error the receiving side would answer (or, for a frame it ignores, why).
    Invalid(Finding),
    /// Not checked: a CALLRESULT whose CALL was not seen and no `--action` was given.
    Unchecked {
        /// Why.
        reason: String,
    },
}

impl Verdict {
    /// Whether this verdict makes the run fail.
    pub fn is_invalid(&self) -> bool {
        matches!(self, Verdict::Invalid(_))
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Valid { kind, action } => match action {
                Some(action) => write!(f, "OK {kind} {action}"),
                None => write!(f, "OK {kind}"),
            },
            Verdict::Invalid(finding) => finding.fmt(f),
            Verdict::Unchecked { reason } => write!(f, "UNCHECKED {reason}"),
        }
    }
}

/// Why a message is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The OCPP error code the receiving side answers with, spelt for the version
    /// (`FormationViolation`, `OccurenceConstraintViolation` in 1.6), or `Ignored` for a frame
    /// the version says to drop without an answer.
    pub code: String,
    /// The JSON path of the offending field in the payload (`$.idTag`, `$` for the payload
    /// itself), when the payload was at fault.
    pub path: Option<String>,
    /// The message's kind and action, when they could be read (`CALL BootNotification`).
    pub context: Option<String>,
    /// What is wrong, in words.
    pub reason: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.code)?;
        if let Some(path) = &self.path {
            write!(f, " at {path}")?;
        }
        if let Some(context) = &self.context {
            write!(f, " ({context})")?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// Checks messages one after the other, remembering the actions of the CALLs it saw so that
/// their CALLRESULTs can be decoded.
#[derive(Debug, Default)]
pub struct Validator {
    action: Option<String>,
    /// (identity, direction of the CALL, message id) -> action.
    calls: HashMap<(String, Option<CaptureDirection>, String), String>,
}

impl Validator {
    /// A validator that learns CALLRESULTs' actions from the CALLs it sees.
    pub fn new() -> Self {
        Validator::default()
    }

    /// Uses `action` for a bare payload, and for a CALLRESULT whose CALL was not seen.
    pub fn with_action(mut self, action: impl Into<String>) -> Self {
        self.action = Some(action.into());
        self
    }

    /// Checks one OCPP-J message (`[2,"id","Action",{..}]` and friends) of `version`, sent by
    /// `identity`'s side `dir` (`None` when unknown: CALLs and answers are then matched by id
    /// alone).
    pub fn check_message(
        &mut self,
        version: OcppVersion,
        identity: &str,
        dir: Option<CaptureDirection>,
        text: &str,
    ) -> Verdict {
        let message = match parse_str(text, version) {
            Ok(message) => message,
            Err(error) => {
                let reason = error.to_string();
                return Verdict::Invalid(match respond_to_parse_error(&error, version) {
                    Disposition::Ignore => Finding {
                        code: "Ignored".into(),
                        path: None,
                        context: None,
                        reason: format!("{reason} (the version says to drop it unanswered)"),
                    },
                    Disposition::Reply(reply) | Disposition::ReplyResultError(reply) => Finding {
                        code: reply.code.as_str(version).to_string(),
                        path: None,
                        context: None,
                        reason,
                    },
                });
            }
        };
        match message {
            RpcMessage::Call(call) | RpcMessage::Send(call) => {
                let kind = if text_is_send(text) { "SEND" } else { "CALL" };
                if kind == "CALL" {
                    self.calls.insert(
                        (identity.to_string(), dir, call.id.as_str().to_string()),
                        call.action.to_string(),
                    );
                }
                check_request(version, kind, &call.action, call.payload.get())
            }
            RpcMessage::CallResult(result) => {
                let key = (
                    identity.to_string(),
                    dir.map(CaptureDirection::opposite),
                    result.id.as_str().to_string(),
                );
                let action = self.calls.remove(&key).or_else(|| self.action.clone());
                match action {
                    Some(action) => check_response(version, &action, result.payload.get()),
                    None => Verdict::Unchecked {
                        reason: format!(
                            "CALLRESULT {}: its CALL was not seen; give --action",
                            result.id.as_str()
                        ),
                    },
                }
            }
            RpcMessage::CallError(error) => {
                let key = (
                    identity.to_string(),
                    dir.map(CaptureDirection::opposite),
                    error.id.as_str().to_string(),
                );
                let action = self.calls.remove(&key);
                Verdict::Valid {
                    kind: "CALLERROR",
                    action: action.or(Some(error.code.as_str(version).to_string())),
                }
            }
            RpcMessage::CallResultError(_) => Verdict::Valid {
                kind: "CALLRESULTERROR",
                action: None,
            },
        }
    }

    /// Checks a bare payload (`{..}`) as the request (or, with `result`, the response) of the
    /// action given with [`Validator::with_action`].
    pub fn check_payload(&self, version: OcppVersion, payload: &str, result: bool) -> Verdict {
        let Some(action) = &self.action else {
            return Verdict::Unchecked {
                reason: "a bare payload needs --action".into(),
            };
        };
        if result {
            check_response(version, action, payload)
        } else {
            check_request(version, "CALL", action, payload)
        }
    }
}

/// Whether the frame's message type is 6 (SEND): the parser gives CALL and SEND the same shape.
fn text_is_send(text: &str) -> bool {
    text.trim_start()
        .strip_prefix('[')
        .is_some_and(|rest| rest.trim_start().starts_with('6'))
}

fn check_request(version: OcppVersion, kind: &'static str, action: &str, payload: &str) -> Verdict {
    match Request::decode(version, action, payload, &DecodeOptions::strict()) {
        Ok(_) => Verdict::Valid {
            kind,
            action: Some(action.to_string()),
        },
        Err(error) => Verdict::Invalid(finding(version, &format!("{kind} {action}"), &error)),
    }
}

fn check_response(version: OcppVersion, action: &str, payload: &str) -> Verdict {
    match Response::decode(version, action, payload, &DecodeOptions::strict()) {
        Ok(_) => Verdict::Valid {
            kind: "CALLRESULT",
            action: Some(action.to_string()),
        },
        Err(error) => Verdict::Invalid(finding(version, &format!("CALLRESULT {action}"), &error)),
    }
}

/// The finding for a payload that did not decode: the code our core answers with
/// ([`DecodeError::error_code`]) and the violation's path.
fn finding(version: OcppVersion, context: &str, error: &DecodeError) -> Finding {
    let code: ErrorCode = error.error_code();
    let (path, reason) = match error {
        DecodeError::Violation(violation) => (
            Some(json_path(violation.path())),
            violation.rule().to_string(),
        ),
        DecodeError::Json(_) => (Some("$".to_string()), error.to_string()),
        other => (None, other.to_string()),
    };
    Finding {
        code: code.as_str(version).to_string(),
        path,
        context: Some(context.to_string()),
        reason,
    }
}

/// `meterValue[0].unit` -> `$.meterValue[0].unit`; the payload itself -> `$`.
fn json_path(path: &str) -> String {
    if path.is_empty() {
        "$".into()
    } else if path.starts_with('[') {
        format!("${path}")
    } else {
        format!("$.{path}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_rooted() {
        assert_eq!(json_path(""), "$");
        assert_eq!(json_path("a[0].b"), "$.a[0].b");
    }

    #[test]
    fn send_is_told_from_call() {
        assert!(text_is_send(r#" [ 6,"1","X",{}]"#));
        assert!(!text_is_send(r#"[2,"1","X",{}]"#));
    }
}
