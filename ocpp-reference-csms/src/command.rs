//! A request the domain builds as JSON (a tariff's CostUpdated, a charging profile, a split
//! command's parts), decoded as the typed [`Request`] of the charge point's OCPP version, with
//! the [`DecodeError`] that says what does not fit. An operator's command (the admin API, or a
//! command routed from another node) is decoded by [`ocpp_proto::command_request`]: the same
//! strict check, answered as every path answers it (`InvalidRequest`, not sent).
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
