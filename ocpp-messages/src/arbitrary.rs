//! proptest strategies the generated `Arbitrary` implementations use (feature `proptest`):
//! values that the official schemas accept.

use alloc::string::String;

use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;

use crate::datetime::DateTime;

/// Strings of at most `max` characters (any Unicode scalar value), up to 64 long.
pub fn string(max: u64) -> BoxedStrategy<String> {
    let cap = max.min(64) as usize;
    proptest::collection::vec(any::<char>(), 0..=cap)
        .prop_map(String::from_iter)
        .boxed()
}

/// Simple absolute URIs.
pub fn uri() -> BoxedStrategy<String> {
    (0u32..100_000)
        .prop_map(|n| alloc::format!("https://example.com/firmware/{n}"))
        .boxed()
}

/// RFC 3339 date-times with and without fractions, in UTC and with offsets.
pub fn date_time() -> BoxedStrategy<DateTime> {
    (
        (1970u32..=2100, 1u32..=12, 1u32..=28),
        (0u32..=23, 0u32..=59, 0u32..=59),
        proptest::option::of((0u32..1_000_000_000, 1usize..=9)),
        proptest::option::of((any::<bool>(), 0u32..=14, 0u32..=59)),
    )
        .prop_filter_map(
            "valid date-time",
            |((y, mo, d), (h, mi, s), fraction, offset)| {
                let mut text = alloc::format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}");
                if let Some((nanos, digits)) = fraction {
                    let all = alloc::format!("{nanos:09}");
                    text.push('.');
                    text.push_str(&all[..digits]);
                }
                match offset {
                    None => text.push('Z'),
                    Some((east, oh, om)) => text.push_str(&alloc::format!(
                        "{}{oh:02}:{om:02}",
                        if east { '+' } else { '-' }
                    )),
                }
                DateTime::parse(&text).ok()
            },
        )
        .boxed()
}

/// Numbers within the bounds; with a step, 0 or the step doubled `k` times (exact multiples in
/// binary, the only ones the `jsonschema` crate's exact `multipleOf` accepts for steps like 0.1).
pub fn number(min: Option<f64>, max: Option<f64>, step: Option<f64>) -> BoxedStrategy<f64> {
    if let Some(step) = step {
        return (0u32..12, any::<bool>())
            .prop_map(move |(k, zero)| {
                if zero {
                    0.0
                } else {
                    step * f64::from(1u32 << k)
                }
            })
            .boxed();
    }
    let lo = min.unwrap_or(-1.0e9);
    let hi = max.unwrap_or(1.0e9);
    prop_oneof![Just(lo), Just(hi), lo..=hi].boxed()
}

/// Some JSON value, for properties without a type.
pub fn any_json() -> BoxedStrategy<serde_json::Value> {
    prop_oneof![
        any::<i32>().prop_map(serde_json::Value::from),
        string(20).prop_map(serde_json::Value::from),
        Just(serde_json::json!({"nested": [1, "two"]})),
    ]
    .boxed()
}
