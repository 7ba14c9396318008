//! Writing RPC frames straight into a caller's buffer.
//!
//! Every writer appends one complete frame to a `Vec<u8>` the caller owns (typically the
//! connection's outbound buffer), serializing a typed payload in place: no intermediate
//! `serde_json::Value`, no intermediate `String`. On error nothing is appended.

use alloc::vec::Vec;

use serde::Serialize;
use serde_json::value::RawValue;

use super::error::SerializeError;
use super::message::CallError;
use super::message_id::MessageId;
use super::message_type::MessageTypeId;
use crate::error_code::ErrorCode;
use crate::version::OcppVersion;

/// The longest CALLERROR description OCPP 2.x allows, in characters (OCPP 2.0.1 Part 4
/// §4.2.3, OCPP 2.1 Part 4 §4.2.3). OCPP-J 1.6 sets no limit.
pub const MAX_DESCRIPTION_CHARS_2X: usize = 255;

/// Appends a CALL, `[2,"<id>","<action>",<payload>]`, serializing `payload` in place.
///
/// The payload may be any `Serialize` value that serializes to a JSON object, including a
/// [`RawValue`] (written verbatim).
///
/// ```
/// use ocpp_messages::envelope::{write_call, MessageId};
///
/// #[derive(serde::Serialize)]
/// #[serde(rename_all = "camelCase")]
/// struct Heartbeat {}
///
/// let mut out = Vec::new();
/// write_call(&mut out, &MessageId::from_counter(1), "Heartbeat", &Heartbeat {})?;
/// assert_eq!(out, br#"[2,"1","Heartbeat",{}]"#);
/// # Ok::<(), ocpp_messages::envelope::SerializeError>(())
/// ```
///
/// # Errors
/// [`SerializeError::Payload`] if `payload` fails to serialize,
/// [`SerializeError::PayloadNotAnObject`] if it is not a JSON object.
pub fn write_call<T: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    id: &MessageId<'_>,
    action: &str,
    payload: &T,
) -> Result<(), SerializeError> {
    write_action_frame(buf, MessageTypeId::Call, id, action, payload)
}

/// Appends a SEND (OCPP 2.1 only), `[6,"<id>","<action>",<payload>]`; see [`write_call`].
///
/// # Errors
/// As [`write_call`].
pub fn write_send<T: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    id: &MessageId<'_>,
    action: &str,
    payload: &T,
) -> Result<(), SerializeError> {
    write_action_frame(buf, MessageTypeId::Send, id, action, payload)
}

/// Appends a CALLRESULT, `[3,"<id>",<payload>]`, serializing `payload` in place.
///
/// ```
/// use ocpp_messages::envelope::{write_call_result, MessageId};
/// use serde_json::json;
///
/// let mut out = Vec::new();
/// let id = MessageId::new("19223201")?;
/// write_call_result(&mut out, &id, &json!({"currentTime": "2025-01-01T00:00:00Z"}))?;
/// assert_eq!(out, br#"[3,"19223201",{"currentTime":"2025-01-01T00:00:00Z"}]"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`write_call`].
pub fn write_call_result<T: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    id: &MessageId<'_>,
    payload: &T,
) -> Result<(), SerializeError> {
    let start = buf.len();
    write_head(buf, MessageTypeId::CallResult, id);
    let result = write_object(buf, payload, SerializeError::PayloadNotAnObject);
    finish(buf, start, result)
}

/// Appends a CALLERROR, `[4,"<id>","<code>","<description>",<details>]`, for `version`.
///
/// The code is spelt for `version` ([`ErrorCode::as_str`]); on 2.x the description is cut to
/// [`MAX_DESCRIPTION_CHARS_2X`] characters on a character boundary; `details` `None` is written
/// as `{}` (OCPP-J 1.6 §4.2.3, OCPP 2.0.1 Part 4 §4.2.3).
///
/// ```
/// use ocpp_messages::envelope::{write_call_error, MessageId};
/// use ocpp_messages::error_code::ErrorCode;
/// use ocpp_messages::version::OcppVersion;
///
/// let mut out = Vec::new();
/// let id = MessageId::new("7")?;
/// write_call_error(&mut out, OcppVersion::V1_6, &id, &ErrorCode::FormatViolation, "bad \"x\"", None)?;
/// assert_eq!(out, br#"[4,"7","FormationViolation","bad \"x\"",{}]"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`SerializeError::DetailsNotAnObject`] if `details` is not a JSON object.
pub fn write_call_error(
    buf: &mut Vec<u8>,
    version: OcppVersion,
    id: &MessageId<'_>,
    code: &ErrorCode,
    description: &str,
    details: Option<&RawValue>,
) -> Result<(), SerializeError> {
    write_error_parts(
        buf,
        MessageTypeId::CallError,
        version,
        id,
        code,
        description,
        details,
    )
}

/// Appends a CALLRESULTERROR (OCPP 2.1 only), `[5,"<id>","<code>","<description>",<details>]`,
/// answering the CALLRESULT with id `id`; spelt and truncated as for 2.1 (see
/// [`write_call_error`]).
///
/// # Errors
/// As [`write_call_error`].
pub fn write_call_result_error(
    buf: &mut Vec<u8>,
    id: &MessageId<'_>,
    code: &ErrorCode,
    description: &str,
    details: Option<&RawValue>,
) -> Result<(), SerializeError> {
    write_error_parts(
        buf,
        MessageTypeId::CallResultError,
        OcppVersion::V2_1,
        id,
        code,
        description,
        details,
    )
}

/// Writes a CALLERROR or CALLRESULTERROR from its struct.
pub(crate) fn write_error_frame(
    buf: &mut Vec<u8>,
    message_type: MessageTypeId,
    version: OcppVersion,
    error: &CallError<'_>,
) -> Result<(), SerializeError> {
    write_error_parts(
        buf,
        message_type,
        version,
        &error.id,
        &error.code,
        &error.description,
        error.details.as_deref(),
    )
}

fn write_action_frame<T: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    message_type: MessageTypeId,
    id: &MessageId<'_>,
    action: &str,
    payload: &T,
) -> Result<(), SerializeError> {
    let start = buf.len();
    write_head(buf, message_type, id);
    write_json_string(buf, action);
    buf.push(b',');
    let result = write_object(buf, payload, SerializeError::PayloadNotAnObject);
    finish(buf, start, result)
}

fn write_error_parts(
    buf: &mut Vec<u8>,
    message_type: MessageTypeId,
    version: OcppVersion,
    id: &MessageId<'_>,
    code: &ErrorCode,
    description: &str,
    details: Option<&RawValue>,
) -> Result<(), SerializeError> {
    let start = buf.len();
    write_head(buf, message_type, id);
    write_json_string(buf, code.as_str(version));
    buf.push(b',');
    let description = if version.is_2x() {
        truncate_chars(description, MAX_DESCRIPTION_CHARS_2X)
    } else {
        description
    };
    write_json_string(buf, description);
    buf.push(b',');
    let result = match details {
        Some(details) => write_object(buf, details, SerializeError::DetailsNotAnObject),
        None => {
            buf.extend_from_slice(b"{}");
            Ok(())
        }
    };
    finish(buf, start, result)
}

/// `[<type>,"<id>",`: how every frame begins.
#[inline]
fn write_head(buf: &mut Vec<u8>, message_type: MessageTypeId, id: &MessageId<'_>) {
    buf.extend_from_slice(&[b'[', b'0' + message_type.number(), b',']);
    write_json_string(buf, id.as_str());
    buf.push(b',');
}

/// Serializes `value` in place and checks it is a JSON object.
fn write_object<T: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    value: &T,
    not_an_object: SerializeError,
) -> Result<(), SerializeError> {
    let start = buf.len();
    serialize_into(buf, value)?;
    let first = buf
        .get(start..)
        .and_then(|written| written.iter().find(|b| !b.is_ascii_whitespace()));
    if first == Some(&b'{') {
        Ok(())
    } else {
        Err(not_an_object)
    }
}

/// Serializes `value` at the end of `buf`, in place with `std`.
#[cfg(feature = "std")]
fn serialize_into<T: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    value: &T,
) -> Result<(), SerializeError> {
    let mut serializer = serde_json::Serializer::new(&mut *buf);
    value
        .serialize(&mut serializer)
        .map_err(SerializeError::Payload)
}

/// Serializes `value` at the end of `buf`. Without `std`, `serde_json` offers no serializer
/// over a caller's buffer, so this goes through a temporary `Vec`.
#[cfg(not(feature = "std"))]
fn serialize_into<T: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    value: &T,
) -> Result<(), SerializeError> {
    let bytes = serde_json::to_vec(value).map_err(SerializeError::Payload)?;
    buf.extend_from_slice(&bytes);
    Ok(())
}

/// Closes the frame, or undoes everything written since `start` on error.
fn finish(
    buf: &mut Vec<u8>,
    start: usize,
    result: Result<(), SerializeError>,
) -> Result<(), SerializeError> {
    match result {
        Ok(()) => {
            buf.push(b']');
            Ok(())
        }
        Err(e) => {
            buf.truncate(start);
            Err(e)
        }
    }
}

/// The longest prefix of `s` with at most `max` characters.
pub(crate) fn truncate_chars(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    match s.char_indices().nth(max) {
        Some((end, _)) => s.get(..end).unwrap_or(s),
        None => s,
    }
}

/// Writes `s` as a JSON string (RFC 8259 §7): `"` and `\` escaped, control characters as
/// `\n`, `\r`, `\t`, `\b`, `\f` or `\u00XX`; everything else, non-ASCII included, verbatim.
pub(crate) fn write_json_string(buf: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    buf.reserve(bytes.len() + 2);
    buf.push(b'"');
    let mut run_start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ],
            _ => continue,
        };
        buf.extend_from_slice(bytes.get(run_start..i).unwrap_or_default());
        buf.extend_from_slice(escape);
        run_start = i + 1;
    }
    buf.extend_from_slice(bytes.get(run_start..).unwrap_or_default());
    buf.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;

    fn json_string(s: &str) -> String {
        let mut buf = Vec::new();
        write_json_string(&mut buf, s);
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn escaping_matches_serde_json() {
        for s in [
            "",
            "plain",
            "quote\"backslash\\",
            "\n\r\t\u{8}\u{c}",
            "\u{0}\u{1f}\u{7f}",
            "é✓🚗",
            "</script>\u{2028}",
        ] {
            let ours = json_string(s);
            assert_eq!(serde_json::from_str::<String>(&ours).unwrap(), s);
            assert_eq!(ours, serde_json::to_string(s).unwrap());
        }
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_chars("abc", 2), "ab");
        assert_eq!(truncate_chars("ééé", 2), "éé");
        assert_eq!(truncate_chars("ééé", 3), "ééé");
        assert_eq!(truncate_chars("🚗🚗", 1), "🚗");
        assert_eq!(truncate_chars("", 0), "");
    }

    #[test]
    fn failed_write_appends_nothing() {
        let mut buf = b"keep".to_vec();
        let id = MessageId::from_counter(1);
        assert!(matches!(
            write_call(&mut buf, &id, "Heartbeat", &5),
            Err(SerializeError::PayloadNotAnObject)
        ));
        assert_eq!(buf, b"keep");
    }
}
