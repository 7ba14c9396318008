//! An operator's command as the domain takes it: an action and its JSON payload, decoded as
//! the typed [`Request`] of the charge point's OCPP version. The admin API (HTTP) and the
//! cluster (a command routed from another node) both start here; neither HTTP nor the cluster
//! is known to this module.
//!
//! ```
//! use ocpp_messages::version::OcppVersion;
//! use ocpp_reference_csms::command::decode_command;
//!
//! let reset = decode_command(OcppVersion::V1_6, "Reset", r#"{"type":"Soft"}"#).unwrap();
//! assert_eq!(reset.action(), "Reset");
//! assert!(decode_command(OcppVersion::V1_6, "Reset", r#"{"type":"Now"}"#).is_err());
//! ```

use ocpp_messages::version::OcppVersion;
use ocpp_messages::{v1_6, v2_0_1, v2_1, DecodeError};
use ocpp_proto::Request;

/// Decodes a command body as the request of `action` in `version` (strict schema check).
pub fn decode_command(
    version: OcppVersion,
    action: &str,
    body: &str,
) -> Result<Request, DecodeError> {
    Ok(match version {
        OcppVersion::V1_6 => v1_6::decode_call(action, body)?.into(),
        OcppVersion::V2_0_1 => v2_0_1::decode_call(action, body)?.into(),
        OcppVersion::V2_1 => v2_1::decode_call(action, body)?.into(),
    })
}
