//! OCPP-J over WebSocket: the RPC envelope and typed messages for OCPP 1.6, 2.0.1 and 2.1.
//!
//! This crate knows the OCPP-J message layer and nothing of the transport: it takes the bytes of
//! one WebSocket text message and gives them back the same way.
//!
//! - [`version`]: [`OcppVersion`], negotiated through the WebSocket subprotocol
//!   (`ocpp1.6`, `ocpp2.0.1`, `ocpp2.1`).
//! - [`envelope`]: the RPC frame (`[2,"id","Action",{..}]` and friends). Parsing borrows from
//!   the input and keeps payloads as raw JSON until the action is known; writing appends to the
//!   caller's buffer; [`envelope::respond_to_parse_error`] is the one place where the OCPP-J
//!   rules for bad input live.
//! - [`error_code`]: CALLERROR codes, spelt exactly per version and read in any spelling.
//! - [`Decimal`] ([`decimal`]): the exact decimal number of the schemas' `number` fields,
//!   read from and written to JSON digit for digit (`2935.600` stays `2935.600`).
//! - The typed messages of each version and their validation (`v1_6`, `v2_0_1`, `v2_1`,
//!   `validate`, behind features of the same names).
//!
//! ```
//! use ocpp_messages::envelope::{parse, RpcMessage};
//! use ocpp_messages::OcppVersion;
//!
//! let version = OcppVersion::from_subprotocol("ocpp1.6").unwrap();
//! let mut out = Vec::new();
//! match parse(b"[2,19223201,\"Heartbeat\",{}]", version) {
//!     Ok(RpcMessage::Call(_call)) => { /* decode _call.payload for _call.action */ }
//!     Ok(_) => {}
//!     // Integer ids are not valid: answered with id "-1", never echoed.
//!     Err(e) => { e.respond(version).write_to(&mut out, version)?; }
//! }
//! assert_eq!(out, br#"[4,"-1","FormationViolation","MessageId is not a string",{}]"#);
//! # Ok::<(), ocpp_messages::envelope::SerializeError>(())
//! ```
//!
//! - [`Request`] and [`Response`] ([`versioned`]): a payload of any action of any compiled
//!   version, decoded with [`Request::decode`] / [`Response::decode`], matched in one go through
//!   [`Request::view`]; [`DecodeError::error_code`] is the CALLERROR for a payload that failed.
//!
//! Every generated payload and data type has `new(<required fields>)` (or `Default` when all of
//! its fields are optional) and a `with_<field>` setter per optional field; each converts into
//! [`Request`] / [`Response`] with `.into()` and back with `try_into()`:
//!
//! ```
//! use ocpp_messages::{v2_0_1, Response};
//!
//! let authorize = v2_0_1::AuthorizeResponse::new(
//!     v2_0_1::IdTokenInfo::new(v2_0_1::AuthorizationStatusEnum::Accepted)
//!         .with_personal_message(v2_0_1::MessageContent::new(
//!             v2_0_1::MessageFormatEnum::UTF8,
//!             "Welcome",
//!         )),
//! );
//! let response: Response = authorize.clone().into();
//! assert_eq!(response.action(), "Authorize");
//! assert_eq!(
//!     serde_json::to_string(&response)?,
//!     r#"{"idTokenInfo":{"status":"Accepted","personalMessage":{"format":"UTF8","content":"Welcome"}}}"#
//! );
//! assert_eq!(v2_0_1::AuthorizeResponse::try_from(response).ok(), Some(authorize));
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! - `signed` (feature `signed-messages`; a software ES256 signer with `jws-es256`): signed
//!   messages, OCPP Part 4 chapter 7: `<Action>-Signed` with a JWS in the flattened JSON
//!   serialization, the signer and verifier as traits (a key in a secure element never reaches
//!   memory) and a `signed::SignaturePolicy` the application must choose.
//!
//! `no_std` + `alloc` without the default `std` feature.
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

extern crate alloc;

// --- envelope, error codes, versions (owner: envelope work) ---
pub mod envelope;
pub mod error_code;
#[cfg(feature = "signed-messages")]
pub mod signed;
pub mod version;

pub use envelope::{MessageId, MessageTypeId, ParseError, RpcMessage};
pub use error_code::ErrorCode;
pub use version::OcppVersion;
// --- end envelope section ---

// --- generated typed messages, validation, date-time (owner: codegen work) ---
mod payload_enum;
pub mod wire_enum;

pub mod action;
#[cfg(feature = "proptest")]
pub mod arbitrary;
pub mod datetime;
pub mod decimal;
pub mod decode;
pub mod validate;
pub mod versioned;

#[cfg(feature = "v1_6")]
pub mod v1_6;
#[cfg(feature = "v2_0_1")]
pub mod v2_0_1;
#[cfg(feature = "v2_1")]
pub mod v2_1;

pub use action::{ActionRequest, ActionResponse, OcppAction, Payload};
pub use datetime::DateTime;
pub use decimal::{Decimal, DecimalError};
pub use decode::{DecodeError, DecodeOptions};
pub use validate::{Mode, Violation, ViolationKind};
pub use versioned::{Request, RequestRef, Response, ResponseRef};
// --- end codegen section ---
