//! `ocpp`, a command-line tool for the people in the field, and the library behind it.
//!
//! - [`validate`]: judge OCPP-J messages as the receiving side would (the exact error code our
//!   core answers with, and the JSON path of the offending field);
//! - [`capture`]: the capture format (JSON lines, one message each) and a recorder for
//!   ocpp-tokio's message hook, so that any server can record captures;
//! - [`replay`]: play a capture's station side against a server and compare its answers with
//!   the recorded ones;
//! - [`mock_csms`] and [`mock_station`]: peers that answer the basics and log every message as
//!   capture lines;
//! - [`websocket`]: the small WebSocket client that replay sends exact texts through.
//!
//! The subcommands and their output are described in the crate's README.
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod capture;
pub mod mock_csms;
pub mod mock_station;
pub mod replay;
pub mod validate;
pub mod websocket;
