#![no_main]
//! Placeholder target: handshake_client.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|_data: &[u8]| {});
