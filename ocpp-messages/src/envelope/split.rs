//! The shortcut for the two frames that make up nearly all traffic, `[2,"<id>","<Action>",{…}]`
//! and `[3,"<id>",{…}]`: the envelope's tokens are read by hand and the payload is only
//! delimited, so that the payload decoder is the one pass over it.
//!
//! [`parse_str`](super::parse_str) checks the whole frame with `serde_json` first, which scans
//! every payload once as a raw value before the decoder reads it again: about 750 of the 8,100
//! instructions a DataTransfer push costs a server (callgrind, `heartbeat_loop push` of
//! `ocpp-proto`). Here the payload is the text between the last comma of the envelope and
//! the closing bracket. It is one JSON object exactly when the payload decoder accepts it: the
//! decoders ([`crate::decode::decode_payload`] and the typed `decode` functions built on it)
//! refuse anything after the value. So a split frame whose payload then decodes is a frame
//! [`parse_str`](super::parse_str) reads the same way, and a payload that does not decode must
//! go back to [`parse_str`](super::parse_str), whose errors say precisely what was wrong
//! (`tests/split.rs` checks this against it on valid and mutated frames).

use alloc::borrow::Cow;

use super::message_id::MessageId;
use super::parse::nests_deeper_than;
use super::MAX_NESTING_DEPTH;

/// A CALL or CALLRESULT delimited by [`split`]: the id and action are read, the payload is
/// only delimited (see [`split`] for what that promises).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Split<'a> {
    /// `[2,"<id>","<Action>",{payload}]`
    Call {
        /// The message id.
        id: MessageId<'a>,
        /// The action name.
        action: &'a str,
        /// The payload's text: starts with `{` and ends with `}`, not checked further.
        payload: &'a str,
    },
    /// `[3,"<id>",{payload}]`
    CallResult {
        /// The id of the CALL this answers.
        id: MessageId<'a>,
        /// The payload's text: starts with `{` and ends with `}`, not checked further.
        payload: &'a str,
    },
}

/// Splits a CALL or CALLRESULT of the plain shape without reading its payload; `None` for
/// anything else, which [`parse_str`](super::parse_str) must read.
///
/// The plain shape: JSON whitespace anywhere between tokens; message type `2` or `3` written as
/// one digit; an id and an action that are JSON strings without escapes or control characters
/// (an id of at most 36 characters, [`MessageId::new`]); then the payload, which must start
/// with `{` and end with `}` before the closing `]`, and nest at most
/// [`MAX_NESTING_DEPTH`](super::MAX_NESTING_DEPTH) deep.
///
/// **The payload is not checked to be JSON.** Decode it with a decoder of this crate, which
/// accepts one JSON object and nothing after it; if that fails, read the frame again with
/// [`parse_str`](super::parse_str) for the precise answer (a malformed frame and a payload that
/// breaks its schema are answered differently). The same holds for every version: types 2 and
/// 3 mean the same in all of them.
///
/// ```
/// use ocpp_messages::envelope::{split, Split};
/// let Some(Split::Call { id, action, payload }) = split(r#"[2, "19", "Heartbeat", {}]"#) else {
///     panic!("a plain CALL");
/// };
/// assert_eq!((id.as_str(), action, payload), ("19", "Heartbeat", "{}"));
/// // Delimited, not checked: a decoder refuses what follows the object, and then `parse_str`
/// // says the frame has five elements.
/// assert!(matches!(split(r#"[3,"19",{},{}]"#), Some(Split::CallResult { payload: "{},{}", .. })));
/// // Anything else goes to `parse_str`: escapes, other types, other shapes.
/// assert_eq!(split(r#"[2,"1\u0039","Heartbeat",{}]"#), None);
/// assert_eq!(split(r#"[4,"19","GenericError","",{}]"#), None);
/// assert_eq!(split(r#"[3,"19",[]]"#), None);
/// ```
#[must_use]
pub fn split(text: &str) -> Option<Split<'_>> {
    let mut scan = Scan { text, at: 0 };
    scan.byte(b'[')?;
    let message_type = scan.digit()?;
    scan.byte(b',')?;
    let id = MessageId::new(Cow::Borrowed(scan.string()?)).ok()?;
    scan.byte(b',')?;
    let action = match message_type {
        b'2' => {
            let action = scan.string()?;
            scan.byte(b',')?;
            Some(action)
        }
        b'3' => None,
        _ => return None,
    };
    let payload = scan.payload()?;
    if nests_deeper_than(payload, MAX_NESTING_DEPTH) {
        return None;
    }
    Some(match action {
        Some(action) => Split::Call {
            id,
            action,
            payload,
        },
        None => Split::CallResult { id, payload },
    })
}

/// A cursor over the envelope's tokens.
struct Scan<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scan<'a> {
    /// Skips JSON whitespace (RFC 8259 §2) and returns the next byte, if any.
    fn peek(&mut self) -> Option<u8> {
        let bytes = self.text.as_bytes();
        while let Some(&b) = bytes.get(self.at) {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(b);
            }
            self.at += 1;
        }
        None
    }

    /// The byte `expected`, after whitespace.
    fn byte(&mut self, expected: u8) -> Option<()> {
        if self.peek()? != expected {
            return None;
        }
        self.at += 1;
        Some(())
    }

    /// One digit that is the whole number (`2`, not `20`, `2.0` or `2e0`).
    fn digit(&mut self) -> Option<u8> {
        let digit = self.peek().filter(u8::is_ascii_digit)?;
        self.at += 1;
        match self.text.as_bytes().get(self.at) {
            Some(b'0'..=b'9' | b'.' | b'e' | b'E') => None,
            _ => Some(digit),
        }
    }

    /// A JSON string with no escape and no control character: its contents, borrowed.
    fn string(&mut self) -> Option<&'a str> {
        self.byte(b'"')?;
        let start = self.at;
        let rest = self.text.as_bytes().get(start..)?;
        let len = rest
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        if rest[len] != b'"' {
            return None;
        }
        self.at = start + len + 1;
        // `start` and `start + len` are next to ASCII bytes, so they are char boundaries.
        self.text.get(start..start + len)
    }

    /// The rest up to the closing `]` (whitespace after it allowed), if it is `{…}`.
    fn payload(&mut self) -> Option<&'a str> {
        if self.peek()? != b'{' {
            return None;
        }
        let inner = self.text.get(self.at..)?;
        let inner = inner.trim_end_matches([' ', '\t', '\n', '\r']);
        let inner = inner.strip_suffix(']')?;
        let inner = inner.trim_end_matches([' ', '\t', '\n', '\r']);
        inner.ends_with('}').then_some(inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;

    fn call(text: &str) -> Option<(String, String, String)> {
        match split(text)? {
            Split::Call {
                id,
                action,
                payload,
            } => Some((id.as_str().into(), action.into(), payload.into())),
            Split::CallResult { .. } => None,
        }
    }

    #[test]
    fn plain_shapes() {
        assert_eq!(
            call(r#"[2,"a-1","BootNotification",{"x":[1,{"y":"]"}]}]"#),
            Some((
                "a-1".into(),
                "BootNotification".into(),
                r#"{"x":[1,{"y":"]"}]}"#.into()
            ))
        );
        assert_eq!(
            call(" \n[ 2 ,\t\"1\" , \"Heartbeat\" , { } ] \r\n"),
            Some(("1".into(), "Heartbeat".into(), "{ }".into()))
        );
        let Some(Split::CallResult { id, payload }) = split(r#"[3,"7",{"status":"Accepted"}]"#)
        else {
            panic!("a CALLRESULT");
        };
        assert_eq!((id.as_str(), payload), ("7", r#"{"status":"Accepted"}"#));
    }

    #[test]
    fn everything_else_is_left_to_parse_str() {
        for text in [
            "",
            "[",
            "[]",
            r#"{"a":1}"#,
            r#"[20,"1","Heartbeat",{}]"#,
            r#"[2.0,"1","Heartbeat",{}]"#,
            r#"[2e0,"1","Heartbeat",{}]"#,
            r#"[-2,"1","Heartbeat",{}]"#,
            r#"["2","1","Heartbeat",{}]"#,
            r#"[6,"1","Heartbeat",{}]"#,
            r#"[4,"1","GenericError","",{}]"#,
            r#"[5,"1","GenericError","",{}]"#,
            r#"[2,1,"Heartbeat",{}]"#,
            r#"[2,"1\"","Heartbeat",{}]"#,
            r#"[2,"1","Heart\u0062eat",{}]"#,
            "[2,\"1\u{1}\",\"Heartbeat\",{}]",
            "[2,\"1\",\"Heart\tbeat\",{}]",
            r#"[2,"0123456789012345678901234567890123456","Heartbeat",{}]"#,
            r#"[2,"1","Heartbeat",[]]"#,
            r#"[2,"1","Heartbeat",{}"#,
            r#"[2,"1","Heartbeat",{}]x"#,
            r#"[2,"1","Heartbeat"]"#,
            r#"[2,"1"]"#,
            r#"[3,"1","x",{}]"#,
            r#"[3,"1",{}}"#,
        ] {
            assert_eq!(split(text), None, "{text:?}");
        }
    }

    #[test]
    fn too_deep_is_left_to_parse_str() {
        let deep = alloc::format!(
            r#"[2,"1","DataTransfer",{{"a":{}1{}}}]"#,
            "[".repeat(MAX_NESTING_DEPTH),
            "]".repeat(MAX_NESTING_DEPTH)
        );
        assert_eq!(split(&deep), None);
    }

    #[test]
    fn non_ascii_ids_and_actions_are_sliced_on_char_boundaries() {
        assert_eq!(
            call(r#"[2,"é","Ä",{}]"#),
            Some(("é".into(), "Ä".into(), "{}".into()))
        );
    }
}
