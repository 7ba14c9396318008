//! proptest strategies the generated `Arbitrary` implementations use (feature `proptest`):
//! values that the official schemas accept.

use alloc::string::String;

use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;

use crate::datetime::DateTime;
use crate::decimal::Decimal;

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

/// Decimals within the bounds, with up to 6 places (`2935.600`, `-0.125`, trailing zeros
/// included); with a step, 0 or the step doubled `k` times (`0.1`, `0.2`, .., `204.8`: the
/// multiples the `jsonschema` crate's binary `multipleOf` accepts too).
pub fn number(
    min: Option<Decimal>,
    max: Option<Decimal>,
    step: Option<Decimal>,
) -> BoxedStrategy<Decimal> {
    if let Some(step) = step {
        return (0u32..12, any::<bool>())
            .prop_map(move |(k, zero)| {
                if zero {
                    Decimal::ZERO
                } else {
                    step.checked_mul(Decimal::from(1u32 << k)).unwrap_or(step)
                }
            })
            .boxed();
    }
    let lo = min.unwrap_or(Decimal::new(-1_000_000_000, 0));
    let hi = max.unwrap_or(Decimal::new(1_000_000_000, 0));
    let within = (any::<i64>(), 0u32..=4, 0u32..=2).prop_map(move |(m, places, zeros)| {
        // A value of `places` decimals in [lo, hi], then `zeros` trailing zeros written.
        let scale = places.max(lo.scale()).max(hi.scale());
        let (Some(l), Some(h)) = (lo.rescale(scale), hi.rescale(scale)) else {
            return lo;
        };
        let width = i128::from(h.mantissa()) - i128::from(l.mantissa()) + 1;
        let at = i128::from(l.mantissa()) + i128::from(m).rem_euclid(width);
        let d = Decimal::new(i64::try_from(at).unwrap_or(0), scale);
        d.rescale(scale + zeros).unwrap_or(d)
    });
    prop_oneof![Just(lo), Just(hi), within].boxed()
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
