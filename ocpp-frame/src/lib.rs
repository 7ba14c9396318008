//! Sans-IO RFC 6455 (placeholder docs; being written).
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

extern crate alloc;

pub mod handshake;
