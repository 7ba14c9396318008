#![no_main]
//! Placeholder target: frame_decoder.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|_data: &[u8]| {});
