//! The tests of [`Decimal`]: parsing, printing, equality, arithmetic, conversions, serde, and
//! properties against `i128` arithmetic.

use super::*;
use alloc::format;
use alloc::vec::Vec;
use proptest::prelude::*;

fn d(text: &str) -> Decimal {
    text.parse().unwrap()
}

#[test]
fn parses_json_numbers_and_prints_their_digits() {
    for text in [
        "0",
        "-1",
        "2935.600",
        "-0.25",
        "0.000",
        "0.001",
        "-0.000000000000000001",
        "9223372036854775807",
        "-9223372036854775808",
        "922337203.6854775807",
        "1500",
        "12.0",
    ] {
        assert_eq!(d(text).to_string(), text, "{text}");
    }
    for (text, shown) in [
        ("1.5e3", "1500"),
        ("1.5E+3", "1500"),
        ("15e-4", "0.0015"),
        ("1.50e-3", "0.00150"),
        ("-0", "0"),
        ("-0.0", "0.0"),
        ("0e-999", "0.000000000000000000"),
        ("0e999999999999999999999", "0"),
        ("1.0000000000000000000000", "1.000000000000000000"),
        ("100000000000000000000e-10", "10000000000.00000000"),
        ("1e18", "1000000000000000000"),
        ("1000000000000000000.0", "1000000000000000000"),
        ("-922337203685477580.80", "-922337203685477580.8"),
    ] {
        assert_eq!(d(text).to_string(), shown, "{text}");
    }
    assert_eq!(d("2935.600"), Decimal::new(2935600, 3));
    assert_eq!(d("2935.600").mantissa(), 2935600);
    assert_eq!(d("2935.600").scale(), 3);
}

#[test]
fn refuses_what_is_not_a_json_number_or_does_not_fit() {
    for text in [
        "", "-", "+1", "01", "-01", ".5", "5.", "1e", "1e+", "1.5.2", " 1", "1 ", "0x10", "NaN",
        "inf", "1_000", "\"1\"", "--1", "1e3.5",
    ] {
        assert_eq!(text.parse::<Decimal>(), Err(DecimalError::Syntax), "{text}");
    }
    for text in [
        "9223372036854775808",
        "-9223372036854775809",
        "12345678901234567890",
        "1e19",
        "0.0000000000000000001",
        "1e-19",
        "1.5e999999999999999999",
        "1e-999999999999999999",
    ] {
        assert_eq!(
            text.parse::<Decimal>(),
            Err(DecimalError::OutOfRange),
            "{text}"
        );
    }
}

#[test]
fn equality_order_and_hash_are_by_value() {
    use core::hash::BuildHasher;
    let hasher = std::collections::hash_map::RandomState::new();
    assert_eq!(d("2935.6"), d("2935.600"));
    assert_eq!(hasher.hash_one(d("2935.6")), hasher.hash_one(d("2935.600")));
    assert_eq!(hasher.hash_one(d("0")), hasher.hash_one(d("-0.000")));
    assert!(d("-0.25") < d("0"));
    assert!(d("0.1") < d("0.10000000000000001"));
    assert!(d("9223372036854775807") > d("922337203.6854775807"));
    let mut sorted: Vec<Decimal> = ["3", "-1.5", "0.001", "2.99", "-1.50001"]
        .into_iter()
        .map(d)
        .collect();
    sorted.sort();
    let shown: Vec<String> = sorted.iter().map(Decimal::to_string).collect();
    assert_eq!(shown, ["-1.50001", "-1.5", "0.001", "2.99", "3"]);
}

#[test]
fn arithmetic_is_exact_and_checked() {
    assert_eq!(
        d("2941.15").checked_sub(d("2935.600")).unwrap().to_string(),
        "5.550"
    );
    assert_eq!(d("0.1").checked_add(d("0.2")).unwrap().to_string(), "0.3");
    assert_eq!(
        d("1.5").checked_mul(d("-0.25")).unwrap().to_string(),
        "-0.375"
    );
    assert_eq!(
        d("0.000000001")
            .checked_mul(d("0.0000000010"))
            .unwrap()
            .to_string(),
        "0.000000000000000001"
    );
    assert_eq!(d("0.000000001").checked_mul(d("0.0000000001")), None);
    assert_eq!(d("9223372036854775807").checked_add(Decimal::ONE), None);
    assert_eq!(d("-9223372036854775808").checked_sub(Decimal::ONE), None);
    assert_eq!(d("-9223372036854775808").checked_neg(), None);
    assert_eq!(d("4294967296").checked_mul(d("4294967296")), None);
    assert_eq!(d("2.5").round_dp(0).to_string(), "3");
    assert_eq!(d("-2.5").round_dp(0).to_string(), "-3");
    assert_eq!(d("2.449").round_dp(1).to_string(), "2.4");
    assert_eq!(
        d("-9223372036854775.808").round_dp(0).to_string(),
        "-9223372036854776"
    );
    assert_eq!(d("1.5").rescale(19), None);
    assert_eq!(d("9223372036854775807").rescale(1), None);
    assert!(Decimal::ZERO.is_zero() && d("-0.00").is_zero());
    assert!(d("-0.01").is_negative() && !d("-0").is_negative());
}

#[test]
fn conversions() {
    assert_eq!(Decimal::from(-7i32).to_string(), "-7");
    assert_eq!(Decimal::from(u32::MAX).to_string(), "4294967295");
    assert_eq!(Decimal::from(i64::MIN).to_string(), "-9223372036854775808");
    assert_eq!(d("2935.600").to_f64(), 2935.6);
    assert_eq!(d("-0.000000000000000001").to_f64(), -1e-18);
    assert_eq!(d("-9223372036854775808").to_f64(), i64::MIN as f64);
    for (x, shown) in [
        (0.1, "0.1"),
        (-0.0, "0"),
        (2935.6, "2935.6"),
        (1e-7, "0.0000001"),
        (1e18, "1000000000000000000"),
        (1e-18, "0.000000000000000001"),
    ] {
        assert_eq!(Decimal::try_from(x).unwrap().to_string(), shown, "{x}");
    }
    assert_eq!(Decimal::try_from(f64::NAN), Err(DecimalError::NotFinite));
    assert_eq!(
        Decimal::try_from(f64::INFINITY),
        Err(DecimalError::NotFinite)
    );
    assert_eq!(Decimal::try_from(1e20), Err(DecimalError::OutOfRange));
    assert_eq!(Decimal::try_from(1e-20), Err(DecimalError::OutOfRange));
    assert_eq!(Decimal::try_from(1.5e-18), Err(DecimalError::OutOfRange));
}

#[test]
fn serde_json_keeps_the_digits() {
    let read: Vec<Decimal> =
        serde_json::from_str("[2935.600, -0.125, 1.5e3, 0, -7, 12.0]").unwrap();
    assert_eq!(
        serde_json::to_string(&read).unwrap(),
        "[2935.600,-0.125,1500,0,-7,12.0]"
    );
    // From a reader (owned raw text) too.
    let owned: Decimal = serde_json::from_reader(&b" 0.50 "[..]).unwrap();
    assert_eq!(owned.to_string(), "0.50");
    // Through a Value: the f64's digits, the same value.
    // (serde_json's `arbitrary_precision`, when another crate of the build turns it on,
    // keeps the digits in the Value too.)
    let value = serde_json::to_value(d("2935.600")).unwrap();
    assert_eq!(value.as_f64(), Some(2935.6));
    let back: Decimal = serde_json::from_value(value).unwrap();
    assert_eq!(back, d("2935.600"));
    assert!(["2935.6", "2935.600"].contains(&back.to_string().as_str()));
    for bad in ["\"1.5\"", "true", "null", "[1]", "{}", "1e400"] {
        assert!(serde_json::from_str::<Decimal>(bad).is_err(), "{bad}");
    }
}

/// JSON number text in plain notation as `Display` writes it: no exponent, no `-0`.
fn plain_number() -> impl Strategy<Value = String> {
    (any::<i64>(), 0u32..=Decimal::MAX_SCALE).prop_map(|(m, scale)| {
        let digits = format!("{:0width$}", m.unsigned_abs(), width = scale as usize + 1);
        let (int, frac) = digits.split_at(digits.len() - scale as usize);
        let sign = if m < 0 { "-" } else { "" };
        if scale == 0 {
            format!("{sign}{int}")
        } else {
            format!("{sign}{int}.{frac}")
        }
    })
}

fn value(d: Decimal) -> (i128, u32) {
    (i128::from(d.mantissa()), d.scale())
}

/// `a` and `b` as integers at a common scale.
fn common((ma, sa): (i128, u32), (mb, sb): (i128, u32)) -> (i128, i128, u32) {
    let s = sa.max(sb);
    (ma * 10i128.pow(s - sa), mb * 10i128.pow(s - sb), s)
}

proptest! {
    #[test]
    fn text_round_trips(text in plain_number()) {
        let parsed: Decimal = text.parse().unwrap();
        prop_assert_eq!(parsed.to_string(), text.clone());
        let json: Decimal = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(serde_json::to_string(&json).unwrap(), text);
    }

    #[test]
    fn exponent_forms_read_the_same_value(m in any::<i64>(), scale in 0u32..=18, shift in -5i32..=5) {
        let decimal = Decimal::new(m, scale);
        // m × 10^-scale written as m followed by `shift` zeros, e-(scale + shift), or as
        // mE-scale.
        let text = if shift >= 0 {
            format!("{m}{}e-{}", "0".repeat(shift as usize), scale as i32 + shift)
        } else {
            format!("{m}E-{scale}")
        };
        match text.parse::<Decimal>() {
            Ok(read) => prop_assert_eq!(read, decimal),
            Err(e) => prop_assert_eq!(e, DecimalError::OutOfRange, "{}", text),
        }
    }

    #[test]
    fn order_and_arithmetic_agree_with_i128(a in plain_number(), b in plain_number()) {
        let (da, db) = (d(&a), d(&b));
        let (ia, ib, s) = common(value(da), value(db));
        prop_assert_eq!(da.cmp(&db), ia.cmp(&ib));
        prop_assert_eq!(da == db, ia == ib);
        match da.checked_add(db) {
            Some(sum) => prop_assert_eq!(value(sum), (ia + ib, s)),
            None => prop_assert!(i64::try_from(ia + ib).is_err()),
        }
        match da.checked_sub(db) {
            Some(diff) => prop_assert_eq!(value(diff), (ia - ib, s)),
            None => prop_assert!(i64::try_from(ia - ib).is_err()),
        }
        if let Some(product) = da.checked_mul(db) {
            let (ma, sa) = value(da);
            let (mb, sb) = value(db);
            // product = ma × mb × 10^-(sa+sb), possibly with trailing zeros dropped.
            let (ps, es) = (product.scale(), sa + sb);
            prop_assert!(ps <= es);
            prop_assert_eq!(i128::from(product.mantissa()) * 10i128.pow(es - ps), ma * mb);
        }
        let f = da.to_f64();
        prop_assert_eq!(f, a.parse::<f64>().unwrap());
    }

    #[test]
    fn rounding_is_half_away_from_zero(text in plain_number(), dp in 0u32..=18) {
        let x = d(&text);
        let r = x.round_dp(dp);
        prop_assert!(r.scale() <= dp.max(x.scale()));
        // |x - r| <= half a unit in the last place kept.
        let (ix, ir, s) = common(value(x), value(r));
        let unit = 10i128.pow(s - r.scale().min(s));
        let diff = (ix - ir).abs();
        prop_assert!(diff * 2 <= unit, "{} -> {}", x, r);
        if diff * 2 == unit {
            prop_assert!(ir.abs() > ix.abs());
        }
    }

    #[test]
    fn f64_conversion_round_trips(x in proptest::num::f64::NORMAL | proptest::num::f64::ZERO) {
        if let Ok(decimal) = Decimal::try_from(x) {
            prop_assert_eq!(decimal.to_f64(), x);
        }
    }
}
