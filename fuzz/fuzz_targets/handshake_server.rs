#![no_main]
//! Placeholder target: handshake_server.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|_data: &[u8]| {});
