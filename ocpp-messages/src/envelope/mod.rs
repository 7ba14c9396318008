//! The OCPP-J RPC envelope: the JSON array around every OCPP message.
//!
//! | type | layout | versions |
//! | --- | --- | --- |
//! | 2 CALL | `[2,"<id>","<Action>",{payload}]` | all |
//! | 3 CALLRESULT | `[3,"<id>",{payload}]` | all |
//! | 4 CALLERROR | `[4,"<id>","<code>","<description>",{details}]` | all |
//! | 5 CALLRESULTERROR | `[5,"<id>","<code>","<description>",{details}]` | 2.1 |
//! | 6 SEND | `[6,"<id>","<Action>",{payload}]` | 2.1 |
//!
//! (OCPP-J 1.6 §4, OCPP 2.0.1 Part 4 §4, OCPP 2.1 Part 4 §4.)
//!
//! - Reading: [`parse`] (or [`RpcMessage::parse`]) turns the bytes of one WebSocket text
//!   message into an [`RpcMessage`] that borrows from them. Payloads are not decoded: they stay
//!   raw JSON ([`serde_json::value::RawValue`]) until the action, and so the type to decode
//!   into, is known.
//! - The fast way for the frames of nearly all traffic: [`split`] reads the envelope of a plain
//!   CALL or CALLRESULT by hand and only delimits the payload, so that decoding it is the one
//!   pass over it; anything else, and a payload that does not decode, goes to [`parse_str`].
//! - Bad input: a [`ParseError`] says what was wrong and what could be read;
//!   [`respond_to_parse_error`] (also [`ParseError::respond`]) says, for the negotiated version,
//!   whether to ignore it or which CALLERROR to send. Those rules live there and nowhere else.
//! - Writing: [`write_call`], [`write_call_result`], [`write_call_error`], [`write_send`],
//!   [`write_call_result_error`] append a frame to the caller's buffer, serializing a typed
//!   payload in place; [`RpcMessage::write_to`] writes a message value.
//!
//! ```
//! use ocpp_messages::envelope::{parse, write_call_result, RpcMessage};
//! use ocpp_messages::version::OcppVersion;
//! use serde_json::json;
//!
//! let version = OcppVersion::V1_6;
//! let mut out = Vec::new();
//! match parse(br#"[2,"1","Heartbeat",{}]"#, version) {
//!     Ok(RpcMessage::Call(call)) if call.action == "Heartbeat" => {
//!         write_call_result(&mut out, &call.id, &json!({"currentTime": "2025-01-01T00:00:00Z"}))?;
//!     }
//!     Ok(_) => {}
//!     Err(e) => {
//!         e.respond(version).write_to(&mut out, version)?;
//!     }
//! }
//! assert_eq!(out, br#"[3,"1",{"currentTime":"2025-01-01T00:00:00Z"}]"#);
//! # Ok::<(), ocpp_messages::envelope::SerializeError>(())
//! ```

mod error;
mod message;
mod message_id;
mod message_type;
mod parse;
mod respond;
mod serialize;
mod split;

pub use error::{Malformation, ParseError, SerializeError};
pub use message::{to_payload, Call, CallError, CallResult, RpcMessage};
pub use message_id::{MessageId, MessageIdError};
pub use message_type::MessageTypeId;
#[cfg(feature = "signed-messages")]
pub(crate) use parse::nests_deeper_than;
pub use parse::{parse, parse_str};
pub use respond::{respond_to_parse_error, Disposition};
pub use serialize::{
    write_call, write_call_error, write_call_result, write_call_result_error, write_send,
    MAX_DESCRIPTION_CHARS_2X,
};
pub use split::{split, Split};

/// How deeply a payload (or error details) may nest arrays and objects, the payload object
/// itself counting as 1. Deeper frames are refused with [`Malformation::TooDeep`].
///
/// The parser itself never recurses, so this bound protects the consumers of the payload
/// (typed decoding, `serde_json::Value`, a recursive walker). 128 is `serde_json`'s own
/// recursion limit; real OCPP payloads nest fewer than 10 levels.
pub const MAX_NESTING_DEPTH: usize = 128;
