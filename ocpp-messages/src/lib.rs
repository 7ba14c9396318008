//! OCPP-J over WebSocket: the RPC envelope and typed messages for OCPP 1.6, 2.0.1 and 2.1.
//!
//! (Crate documentation is being written; see the modules.)
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

extern crate alloc;

// --- envelope, error codes, versions (owner: envelope work) ---
pub mod envelope;
pub mod error_code;
pub mod version;
// --- end envelope section ---

// --- generated typed messages, validation, date-time (owner: codegen work) ---
// --- end codegen section ---
