//! Reading an RPC frame without decoding its payload.
//!
//! The frame is read in two steps. First `serde_json` checks the whole input is one JSON array
//! and hands out each element as a [`RawValue`] slice of the input (no tree is built, no
//! recursion happens, whatever the nesting). Then each element is interpreted: the message type,
//! the id, the strings, and the payload, which stays raw. Remembering the elements read before a
//! syntax error lets the error say which id it concerns.

use alloc::borrow::Cow;
use alloc::string::String;
use core::fmt;

use serde::de::{Deserializer as _, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::error::{Malformation, ParseError};
use super::message::{Call, CallError, CallResult, RpcMessage};
use super::message_id::{MessageId, MessageIdError};
use super::message_type::MessageTypeId;
use super::MAX_NESTING_DEPTH;
use crate::error_code::ErrorCode;
use crate::version::OcppVersion;

/// Parses one WebSocket text message as an RPC frame of `version`.
///
/// Only the frame is checked: the payload (or error details) must be a JSON object nested at
/// most [`MAX_NESTING_DEPTH`] deep, and is handed on as raw JSON borrowed from `bytes`.
/// Leading and trailing whitespace is allowed; anything else after the array is refused.
///
/// Order of the checks, which decides the error when several things are wrong:
/// 1. the top level must be an array ([`ParseError::InvalidJson`] if the input is not JSON at
///    all, [`ParseError::NotAnArray`] if it is other JSON);
/// 2. the message type decides next: an unknown number gives
///    [`ParseError::UnknownMessageType`] whatever follows, so that the unknown-type rule of the
///    version applies;
/// 3. a syntax error anywhere gives [`ParseError::InvalidJson`], with the type and id if they
///    were read before it;
/// 4. then the id ([`ParseError::InvalidMessageId`]), the number of elements and each element
///    in order ([`ParseError::Malformed`]).
///
/// ```
/// use ocpp_messages::envelope::{parse, ParseError, RpcMessage};
/// use ocpp_messages::version::OcppVersion;
///
/// let msg = parse(br#"[3, "42", {"currentTime": "2025-01-01T00:00:00Z"}]"#, OcppVersion::V2_0_1)?;
/// assert_eq!(msg.id().as_str(), "42");
/// assert_eq!(msg.payload().map(|p| p.get()), Some(r#"{"currentTime": "2025-01-01T00:00:00Z"}"#));
///
/// let err = parse(br#"[2, 42, "Heartbeat", {}]"#, OcppVersion::V2_0_1).unwrap_err();
/// assert!(matches!(err, ParseError::InvalidMessageId { .. }));
/// # Ok::<(), ParseError>(())
/// ```
///
/// # Errors
/// See [`ParseError`]; [`ParseError::respond`] says what to answer.
pub fn parse(bytes: &[u8], version: OcppVersion) -> Result<RpcMessage<'_>, ParseError> {
    match core::str::from_utf8(bytes) {
        Ok(text) => parse_str(text, version),
        // Not UTF-8: no valid JSON either; the parser says where it breaks.
        Err(_) => parse_with(bytes, serde_json::Deserializer::from_slice(bytes), version),
    }
}

/// [`parse`] for text already known to be UTF-8 (a WebSocket text message is): the JSON
/// parser then does not check each string's UTF-8 again.
///
/// ```
/// use ocpp_messages::envelope::{parse_str, RpcMessage};
/// use ocpp_messages::version::OcppVersion;
///
/// let msg = parse_str(r#"[2, "1", "Heartbeat", {}]"#, OcppVersion::V1_6)?;
/// assert!(matches!(msg, RpcMessage::Call(call) if call.action == "Heartbeat"));
/// # Ok::<(), ocpp_messages::envelope::ParseError>(())
/// ```
///
/// # Errors
/// As [`parse`].
pub fn parse_str(text: &str, version: OcppVersion) -> Result<RpcMessage<'_>, ParseError> {
    parse_with(
        text.as_bytes(),
        serde_json::Deserializer::from_str(text),
        version,
    )
}

/// [`parse`] with the JSON deserializer over `bytes` chosen by the caller.
fn parse_with<'a, R: serde_json::de::Read<'a>>(
    bytes: &'a [u8],
    mut de: serde_json::Deserializer<R>,
    version: OcppVersion,
) -> Result<RpcMessage<'a>, ParseError> {
    let first = bytes.iter().copied().find(|b| !is_json_whitespace(*b));
    if first != Some(b'[') {
        let valid_json = first.is_some() && serde_json::from_slice::<&RawValue>(bytes).is_ok();
        return Err(if valid_json {
            ParseError::NotAnArray
        } else {
            invalid_json(None, None)
        });
    }

    let mut elements = Elements::default();
    let syntax_ok = (&mut de)
        .deserialize_seq(ElementsVisitor(&mut elements))
        .and_then(|()| de.end())
        .is_ok();

    let Some(type_element) = elements.get(0) else {
        return Err(if syntax_ok {
            ParseError::EmptyArray
        } else {
            invalid_json(None, None)
        });
    };
    let message_type = match read_message_type(type_element, version) {
        TypeRead::Known(t) => t,
        TypeRead::Unknown(number) => {
            return Err(ParseError::UnknownMessageType {
                number,
                id: read_id(elements.get(1)).ok().map(MessageId::into_owned),
            })
        }
        TypeRead::NotANumber if syntax_ok => return Err(ParseError::MessageTypeNotANumber),
        TypeRead::NotANumber => return Err(invalid_json(None, None)),
    };
    if !syntax_ok {
        let id = read_id(elements.get(1)).ok().map(MessageId::into_owned);
        return Err(invalid_json(Some(message_type), id));
    }

    let id = match read_id(elements.get(1)) {
        Ok(id) => id,
        Err(IdRead::Invalid(problem)) => {
            return Err(ParseError::InvalidMessageId {
                message_type,
                problem,
            })
        }
        Err(IdRead::Undecodable) => return Err(invalid_json(Some(message_type), None)),
    };
    let frame = Frame {
        message_type,
        id,
        elements: &elements,
    };
    frame.interpret()
}

fn invalid_json(message_type: Option<MessageTypeId>, id: Option<MessageId<'static>>) -> ParseError {
    ParseError::InvalidJson { message_type, id }
}

/// JSON's insignificant whitespace (RFC 8259 §2).
fn is_json_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The elements of the array, as raw JSON; only the first five are kept, all are counted.
#[derive(Default)]
struct Elements<'a> {
    kept: [Option<&'a RawValue>; 5],
    count: usize,
}

impl<'a> Elements<'a> {
    fn get(&self, index: usize) -> Option<&'a RawValue> {
        self.kept.get(index).copied().flatten()
    }
}

/// Reads every element of the top-level array as a raw slice of the input.
struct ElementsVisitor<'e, 'a>(&'e mut Elements<'a>);

impl<'de> Visitor<'de> for ElementsVisitor<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an OCPP-J RPC frame (a JSON array)")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(element) = seq.next_element::<&'de RawValue>()? {
            if let Some(slot) = self.0.kept.get_mut(self.0.count) {
                *slot = Some(element);
            }
            self.0.count = self.0.count.saturating_add(1);
        }
        Ok(())
    }
}

enum TypeRead {
    Known(MessageTypeId),
    Unknown(Option<i64>),
    NotANumber,
}

/// Interprets the first element. Only a plain integer literal can be a known type: `2.0` or
/// `2e0` are numbers but not message types.
fn read_message_type(element: &RawValue, version: OcppVersion) -> TypeRead {
    let text = element.get();
    match text.as_bytes().first() {
        Some(b'0'..=b'9' | b'-') => {}
        _ => return TypeRead::NotANumber,
    }
    let digits = text.strip_prefix('-').unwrap_or(text);
    let number = if digits.bytes().all(|b| b.is_ascii_digit()) {
        text.parse::<i64>().ok()
    } else {
        None
    };
    match number.and_then(|n| MessageTypeId::for_version(n, version)) {
        Some(t) => TypeRead::Known(t),
        None => TypeRead::Unknown(number),
    }
}

enum StrRead<'a> {
    Str(Cow<'a, str>),
    NotAString,
    /// A JSON string that does not decode to Unicode (a lone surrogate escape).
    Undecodable,
}

/// Interprets an element as a string, borrowing it when it has no escapes.
fn read_str(element: &RawValue) -> StrRead<'_> {
    let text = element.get();
    let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
        return StrRead::NotAString;
    };
    if !inner.contains('\\') {
        return StrRead::Str(Cow::Borrowed(inner));
    }
    match serde_json::from_str::<String>(text) {
        Ok(s) => StrRead::Str(Cow::Owned(s)),
        Err(_) => StrRead::Undecodable,
    }
}

enum IdRead {
    Invalid(MessageIdError),
    Undecodable,
}

fn read_id(element: Option<&RawValue>) -> Result<MessageId<'_>, IdRead> {
    let Some(element) = element else {
        return Err(IdRead::Invalid(MessageIdError::Missing));
    };
    match read_str(element) {
        StrRead::Str(s) => MessageId::new(s).map_err(IdRead::Invalid),
        StrRead::NotAString => Err(IdRead::Invalid(MessageIdError::NotAString)),
        StrRead::Undecodable => Err(IdRead::Undecodable),
    }
}

/// Whether JSON text nests deeper than `limit` arrays/objects. The text is known to be valid
/// JSON, so brackets inside strings are the only ones to skip.
pub(crate) fn nests_deeper_than(json: &str, limit: usize) -> bool {
    // Each level needs one opening bracket: texts with few of them (all real OCPP payloads)
    // cannot be too deep, and counting them is a cheap, branch-free pass.
    if json.len() <= limit || json.bytes().filter(|b| matches!(b, b'[' | b'{')).count() <= limit {
        return false;
    }
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for b in json.bytes() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// A frame whose type and id have been read.
struct Frame<'e, 'a> {
    message_type: MessageTypeId,
    id: MessageId<'a>,
    elements: &'e Elements<'a>,
}

impl<'a> Frame<'_, 'a> {
    fn interpret(self) -> Result<RpcMessage<'a>, ParseError> {
        let expected = match self.message_type {
            MessageTypeId::Call | MessageTypeId::Send => 4,
            MessageTypeId::CallResult => 3,
            MessageTypeId::CallError | MessageTypeId::CallResultError => 5,
        };
        let found = self.elements.count;
        let is_error_type = matches!(
            self.message_type,
            MessageTypeId::CallError | MessageTypeId::CallResultError
        );
        if found != expected && !(is_error_type && found == 4) {
            return Err(self.malformed(Malformation::WrongLength { expected, found }));
        }
        match self.message_type {
            MessageTypeId::Call | MessageTypeId::Send => {
                let action = self.string(2, Malformation::ActionNotAString)?;
                let payload = self.object(3, Malformation::PayloadNotAnObject)?;
                let call = Call {
                    id: self.id,
                    action,
                    payload: Cow::Borrowed(payload),
                };
                Ok(if self.message_type == MessageTypeId::Call {
                    RpcMessage::Call(call)
                } else {
                    RpcMessage::Send(call)
                })
            }
            MessageTypeId::CallResult => {
                let payload = self.object(2, Malformation::PayloadNotAnObject)?;
                Ok(RpcMessage::CallResult(CallResult {
                    id: self.id,
                    payload: Cow::Borrowed(payload),
                }))
            }
            MessageTypeId::CallError | MessageTypeId::CallResultError => {
                let code = self.string(2, Malformation::ErrorCodeNotAString)?;
                let description = self.string(3, Malformation::DescriptionNotAString)?;
                let details = match self.elements.get(4) {
                    Some(_) => Some(Cow::Borrowed(
                        self.object(4, Malformation::DetailsNotAnObject)?,
                    )),
                    None => None,
                };
                let error = CallError {
                    id: self.id,
                    code: ErrorCode::parse(&code),
                    description,
                    details,
                };
                Ok(if self.message_type == MessageTypeId::CallError {
                    RpcMessage::CallError(error)
                } else {
                    RpcMessage::CallResultError(error)
                })
            }
        }
    }

    fn malformed(&self, problem: Malformation) -> ParseError {
        ParseError::Malformed {
            message_type: self.message_type,
            id: self.id.as_borrowed().into_owned(),
            problem,
        }
    }

    fn string(&self, index: usize, problem: Malformation) -> Result<Cow<'a, str>, ParseError> {
        match self.elements.get(index).map(read_str) {
            Some(StrRead::Str(s)) => Ok(s),
            Some(StrRead::Undecodable) => Err(invalid_json(
                Some(self.message_type),
                Some(self.id.as_borrowed().into_owned()),
            )),
            Some(StrRead::NotAString) | None => Err(self.malformed(problem)),
        }
    }

    fn object(&self, index: usize, problem: Malformation) -> Result<&'a RawValue, ParseError> {
        match self.elements.get(index) {
            Some(raw) if raw.get().starts_with('{') => {
                if nests_deeper_than(raw.get(), MAX_NESTING_DEPTH) {
                    Err(self.malformed(Malformation::TooDeep))
                } else {
                    Ok(raw)
                }
            }
            _ => Err(self.malformed(problem)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn depth_scan_skips_strings() {
        assert!(!nests_deeper_than(r#"{"a":"[[[[[[[[[[[[[[[[[[[["}"#, 2));
        assert!(!nests_deeper_than(r#"{"a":"\"[[[[[[[[[[[[[[[[[[["}"#, 2));
        assert!(nests_deeper_than(r#"{"a":[{"b":[]}]}"#, 3));
        assert!(!nests_deeper_than(r#"{"a":[{"b":[]}]}"#, 4));
        assert!(!nests_deeper_than(r#"{"a":[],"b":[],"c":[],"d":[]}"#, 2));
    }

    #[test]
    fn message_type_numbers() {
        let raw = |s: &str| serde_json::value::RawValue::from_string(s.to_string()).unwrap();
        let v = OcppVersion::V2_1;
        assert!(matches!(
            read_message_type(&raw("2"), v),
            TypeRead::Known(MessageTypeId::Call)
        ));
        assert!(matches!(
            read_message_type(&raw("2.0"), v),
            TypeRead::Unknown(None)
        ));
        assert!(matches!(
            read_message_type(&raw("2e0"), v),
            TypeRead::Unknown(None)
        ));
        assert!(matches!(
            read_message_type(&raw("-2"), v),
            TypeRead::Unknown(Some(-2))
        ));
        assert!(matches!(
            read_message_type(&raw("99999999999999999999999"), v),
            TypeRead::Unknown(None)
        ));
        assert!(matches!(
            read_message_type(&raw("\"2\""), v),
            TypeRead::NotANumber
        ));
        assert!(matches!(
            read_message_type(&raw("null"), v),
            TypeRead::NotANumber
        ));
    }
}
