//! A version's `action.rs`: the `Action` enum, `Request` and `Response`, and `decode_call` /
//! `decode_result`.

use std::fmt::Write as _;

use super::header;
use crate::model::Version;

/// The variant of `crate::Request` / `crate::Response` for a version module: `v1_6` -> `V1_6`.
fn version_variant(module: &str) -> String {
    let mut chars = module.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

pub(super) fn action_file(version: &Version) -> String {
    let spec = version.spec;
    let m = spec.module;
    let n = version.actions.len();
    let mut t = header(&[format!("{m}/")]);
    let _ = write!(
        t,
        "//! The actions of {title}: [`Action`], the [`Request`] and [`Response`] of any action, and\n\
//! [`decode_call`] / [`decode_result`].\n\n\
use core::fmt;\n\
use core::str::FromStr;\n\n\
use crate::decode::{{DecodeError, DecodeOptions, UnknownAction}};\n\n",
        title = spec.title
    );
    // Action
    let _ = writeln!(
        t,
        "/// An action of {}, named exactly as on the wire (case-sensitive).",
        spec.title
    );
    t.push_str(
        "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]\npub enum Action {\n",
    );
    for a in &version.actions {
        let send = if a.response.is_none() {
            " (SEND only: never answered)"
        } else {
            ""
        };
        let _ = writeln!(
            t,
            "    /// `{}`{send}: [`{}`](super::{}).",
            a.name, a.name, a.name
        );
        let _ = writeln!(t, "    {},", a.name);
    }
    t.push_str("}\n\n");
    let _ = writeln!(
        t,
        "impl Action {{\n    /// Every action of {}, in alphabetical order.",
        spec.title
    );
    let _ = writeln!(t, "    pub const ALL: [Action; {n}] = [");
    for a in &version.actions {
        let _ = writeln!(t, "        Action::{},", a.name);
    }
    t.push_str("    ];\n\n    /// The action's name on the wire.\n    pub const fn as_str(self) -> &'static str {\n        match self {\n");
    for a in &version.actions {
        let _ = writeln!(t, "            Action::{0} => \"{0}\",", a.name);
    }
    t.push_str("        }\n    }\n\n    /// False for a SEND-only action (OCPP 2.1 §4.2.6: never answered).\n    pub const fn has_response(self) -> bool {\n        !matches!(self, ");
    let send: Vec<String> = version
        .actions
        .iter()
        .filter(|a| a.response.is_none())
        .map(|a| format!("Action::{}", a.name))
        .collect();
    if send.is_empty() {
        t.push_str("Action::__None");
    }
    t.push_str(&send.join(" | "));
    t.push_str(")\n    }\n}\n\n");
    if send.is_empty() {
        // no SEND-only action: rewrite has_response
        t = t.replace(
            "!matches!(self, Action::__None)",
            "let _ = self;\n        true",
        );
    }
    t.push_str("impl FromStr for Action {\n    type Err = UnknownAction;\n\n    fn from_str(name: &str) -> Result<Self, Self::Err> {\n        Ok(match name {\n");
    for a in &version.actions {
        let _ = writeln!(t, "            \"{0}\" => Action::{0},", a.name);
    }
    t.push_str("            _ => return Err(UnknownAction),\n        })\n    }\n}\n\n");
    t.push_str("impl fmt::Display for Action {\n    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {\n        f.write_str(self.as_str())\n    }\n}\n\n");
    // Request / Response
    for (enum_name, what, is_request) in [
        (
            "Request",
            "request (the payload of a CALL, or of a SEND)",
            true,
        ),
        ("Response", "response (the payload of a CALLRESULT)", false),
    ] {
        let _ = writeln!(
            t,
            "crate::payload_enum::payload_enum! {{\n    version = {};\n    /// The {what} of any {} action.",
            version_variant(m),
            spec.title
        );
        let _ = writeln!(t, "    pub enum {enum_name} {{");
        for a in &version.actions {
            let ty = if is_request {
                Some(&a.request)
            } else {
                a.response.as_ref().map(|(r, _)| r)
            };
            if let Some(ty) = ty {
                let _ = writeln!(
                    t,
                    "        /// `{}`.\n        {}(super::{ty}),",
                    a.name, a.name
                );
            }
        }
        t.push_str("    }\n}\n\n");
    }
    let example_action = "Heartbeat";
    let example_payload = "{}";
    let _ = write!(
        t,
        "/// Decodes the payload of a CALL (or SEND) for `action` in strict mode.\n\
///\n\
/// Errors: [`DecodeError::UnknownAction`] (answer `NotImplemented`), [`DecodeError::Json`]\n\
/// (the payload is not JSON) or [`DecodeError::Violation`] (the payload breaks the schema).\n\
///\n\
/// ```\n\
/// use ocpp_messages::{m}::{{decode_call, Action, Request}};\n\
///\n\
/// let request = decode_call(\"{example_action}\", r#\"{example_payload}\"#).unwrap();\n\
/// assert_eq!(request.action(), Action::{example_action});\n\
/// assert!(matches!(request, Request::{example_action}(_)));\n\
/// assert!(decode_call(\"NoSuchAction\", \"{{}}\").is_err());\n\
/// ```\n\
pub fn decode_call(action: &str, payload: &str) -> Result<Request, DecodeError> {{\n\
    decode_call_with(action, payload, &DecodeOptions::strict())\n\
}}\n\n\
/// Decodes the payload of a CALL (or SEND) for `action`, strict or lenient as `options` say for\n\
/// this action.\n\
pub fn decode_call_with(action: &str, payload: &str, options: &DecodeOptions) -> Result<Request, DecodeError> {{\n\
    let parsed = Action::from_str(action).map_err(|_| DecodeError::UnknownAction(action.into()))?;\n\
    Request::decode(parsed, payload, options.mode_for(action))\n\
}}\n\n\
/// Decodes the payload of a CALLRESULT answering a CALL of `action` in strict mode.\n\
///\n\
/// A CALLRESULT carries no action name: take it from the pending CALL.\n\
///\n\
/// ```\n\
/// use ocpp_messages::{m}::{{decode_result, Response}};\n\
///\n\
/// let response = decode_result(\"Heartbeat\", r#\"{{\"currentTime\":\"2025-01-02T03:04:05Z\"}}\"#).unwrap();\n\
/// let Response::Heartbeat(heartbeat) = response else {{ panic!() }};\n\
/// assert_eq!(heartbeat.current_time.as_str(), \"2025-01-02T03:04:05Z\");\n\
/// ```\n\
pub fn decode_result(action: &str, payload: &str) -> Result<Response, DecodeError> {{\n\
    decode_result_with(action, payload, &DecodeOptions::strict())\n\
}}\n\n\
/// Decodes the payload of a CALLRESULT for `action`, strict or lenient as `options` say.\n\
pub fn decode_result_with(action: &str, payload: &str, options: &DecodeOptions) -> Result<Response, DecodeError> {{\n\
    let parsed = Action::from_str(action).map_err(|_| DecodeError::UnknownAction(action.into()))?;\n\
    Response::decode(parsed, payload, options.mode_for(action))\n\
}}\n"
    );
    t
}
