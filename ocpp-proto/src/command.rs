//! An operator's command (an action and its JSON payload, as an admin API or another cluster
//! node hands it over) as the request to send: the one decoding every path uses, local or
//! routed, on every server.
//!
//! Strict, whatever the connection's [`DecodeOptions`](crate::DecodeOptions): those describe
//! how far a charge point's own messages may drift from the schema; a command is ours, and
//! what the central system sends fits the schema (a charge point answers a CALL that does not
//! with FormatViolation or TypeConstraintViolation, OCPP-J 4.3). One rule, so that a command
//! is never refused on the node that holds the charge point and sent from another one.

use ocpp_messages::{DecodeOptions, OcppVersion, Request};

use crate::CallFailure;

/// `payload_json` decoded as the request of `action` for `version` (strict schema check), or
/// [`CallFailure::InvalidRequest`]: not sent, the caller learns that the request does not fit
/// this charge point's version, not a CALLERROR made up in its name.
///
/// ```
/// use ocpp_proto::{command_request, CallFailure, OcppVersion};
///
/// let reset = command_request(OcppVersion::V1_6, "Reset", r#"{"type":"Soft"}"#).unwrap();
/// assert_eq!(reset.action(), "Reset");
/// let wrong = command_request(OcppVersion::V1_6, "Reset", r#"{"type":"Now"}"#);
/// assert!(matches!(wrong, Err(CallFailure::InvalidRequest { .. })));
/// assert!(!wrong.unwrap_err().may_have_reached_peer());
/// ```
pub fn command_request(
    version: OcppVersion,
    action: &str,
    payload_json: &str,
) -> Result<Request, CallFailure> {
    Request::decode(version, action, payload_json, &DecodeOptions::strict()).map_err(|e| {
        CallFailure::InvalidRequest {
            description: format!("{action} for OCPP {version}: {e}"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_with_a_value_the_schema_does_not_list_is_refused_not_sent() {
        for (version, action, payload) in [
            (OcppVersion::V1_6, "Reset", r#"{"type":"Later"}"#),
            (OcppVersion::V2_0_1, "Reset", r#"{"type":"Later"}"#),
            (OcppVersion::V1_6, "Reset", r#"{"type":"Soft","extra":1}"#),
            (OcppVersion::V1_6, "NoSuchAction", "{}"),
            (OcppVersion::V1_6, "Reset", "not json"),
        ] {
            match command_request(version, action, payload) {
                Err(CallFailure::InvalidRequest { description }) => {
                    assert!(description.starts_with(action), "{description}");
                }
                other => panic!("{version} {action} {payload}: {other:?}"),
            }
        }
        let ok = command_request(OcppVersion::V2_1, "Reset", r#"{"type":"OnIdle"}"#);
        assert_eq!(ok.map(|r| r.action().to_owned()), Ok("Reset".to_owned()));
    }
}
