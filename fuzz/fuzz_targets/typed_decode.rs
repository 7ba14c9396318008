#![no_main]
//! Placeholder target: typed_decode.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|_data: &[u8]| {});
