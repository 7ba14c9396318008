#![no_main]
//! Placeholder target: envelope.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|_data: &[u8]| {});
