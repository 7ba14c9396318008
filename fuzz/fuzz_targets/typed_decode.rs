#![no_main]
//! Typed decoding of arbitrary payloads for every action of every version.
//!
//! Input: byte 0 picks the version and the mode (strict / lenient), byte 1 the action, the rest
//! is the payload. Checks: no panic; whatever is accepted re-encodes to JSON that decodes (in the
//! same mode) to an equal value.
use libfuzzer_sys::fuzz_target;
use ocpp_messages::DecodeOptions;

macro_rules! round_trip {
    ($module:ident, $index:expr, $payload:expr, $options:expr) => {{
        use ocpp_messages::$module::{decode_call_with, decode_result_with, Action};
        let action = Action::ALL[$index % Action::ALL.len()].as_str();
        if let Ok(request) = decode_call_with(action, $payload, $options) {
            let text = request.to_json().expect("a decoded request encodes");
            let again =
                decode_call_with(action, &text, $options).expect("re-encoded request decodes");
            assert_eq!(again, request, "{action}: {text}");
        }
        if let Ok(response) = decode_result_with(action, $payload, $options) {
            let text = response.to_json().expect("a decoded response encodes");
            let again =
                decode_result_with(action, &text, $options).expect("re-encoded response decodes");
            assert_eq!(again, response, "{action}: {text}");
        }
    }};
}

fuzz_target!(|data: &[u8]| {
    let [selector, index, rest @ ..] = data else {
        return;
    };
    let Ok(payload) = std::str::from_utf8(rest) else {
        return;
    };
    let options = if selector & 0x80 == 0 {
        DecodeOptions::strict()
    } else {
        DecodeOptions::lenient()
    };
    let index = usize::from(*index);
    match selector % 3 {
        0 => round_trip!(v1_6, index, payload, &options),
        1 => round_trip!(v2_0_1, index, payload, &options),
        _ => round_trip!(v2_1, index, payload, &options),
    }
});
