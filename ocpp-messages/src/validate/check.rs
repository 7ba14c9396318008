//! The checks generated [`Schema`](super::Schema) implementations are made of; one function per
//! JSON schema rule, each reporting the [`ViolationKind`] OCPP-J asks for.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::{Map, Value};

use super::{Mode, Path, Violation, ViolationKind};
use crate::datetime::DateTime;
use crate::decimal::Decimal;

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn wrong_type(value: &Value, path: &Path<'_>, expected: &str) -> Violation {
    Violation::new(
        ViolationKind::Type,
        path,
        format!("expected {expected}, found {}", json_type(value)),
    )
}

/// `"type": "object"`. The payload itself not being an object is a format violation.
pub fn object<'v>(value: &'v Value, path: &Path<'_>) -> Result<&'v Map<String, Value>, Violation> {
    match value {
        Value::Object(map) => Ok(map),
        _ if matches!(path, Path::Root) => Err(Violation::new(
            ViolationKind::Format,
            path,
            format!("payload must be a JSON object, found {}", json_type(value)),
        )),
        _ => Err(wrong_type(value, path, "an object")),
    }
}

/// `"additionalProperties": false`: in strict mode every property must be one of `known`.
pub fn known_fields(
    object: &Map<String, Value>,
    path: &Path<'_>,
    mode: Mode,
    known: &[&str],
) -> Result<(), Violation> {
    if mode == Mode::Lenient {
        return Ok(());
    }
    match object.keys().find(|k| !known.contains(&k.as_str())) {
        None => Ok(()),
        Some(extra) => Err(Violation::new(
            ViolationKind::Format,
            &path.field(extra),
            "property not allowed by the schema (additionalProperties: false)",
        )),
    }
}

/// `"required"`: the property must be present (`path` is the property's path).
pub fn required<'v>(
    object: &'v Map<String, Value>,
    name: &str,
    path: &Path<'_>,
) -> Result<&'v Value, Violation> {
    object
        .get(name)
        .ok_or_else(|| Violation::new(ViolationKind::Occurrence, path, "required property missing"))
}

/// An optional property; in lenient mode `null` counts as absent.
pub fn optional<'v>(object: &'v Map<String, Value>, name: &str, mode: Mode) -> Option<&'v Value> {
    match object.get(name) {
        Some(Value::Null) if mode == Mode::Lenient => None,
        other => other,
    }
}

/// `"type": "string"` with an optional `maxLength` (counted in characters, as JSON schema does).
pub fn string<'v>(
    value: &'v Value,
    path: &Path<'_>,
    max_len: Option<u64>,
) -> Result<&'v str, Violation> {
    let Value::String(s) = value else {
        return Err(wrong_type(value, path, "a string"));
    };
    if let Some(max) = max_len.filter(|max| !fits(s, *max)) {
        let chars = s.chars().count();
        return Err(Violation::new(
            ViolationKind::Property,
            path,
            format!("longer than maxLength {max} ({chars} characters)"),
        ));
    }
    Ok(s)
}

/// `maxLength`: whether `s` has at most `max` characters, as JSON schema counts them.
pub fn fits(s: &str, max: u64) -> bool {
    // Cheap test first: no more bytes than allowed characters means no more characters.
    s.len() as u64 <= max || s.chars().count() as u64 <= max
}

/// `"format": "uri"`: a scheme (`[A-Za-z][A-Za-z0-9+.-]*`), a colon, and no whitespace or
/// control characters.
pub fn is_uri(s: &str) -> bool {
    match s.split_once(':') {
        Some((scheme, _)) => {
            let mut chars = scheme.chars();
            chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
                && !s.chars().any(|c| c.is_whitespace() || c.is_control())
        }
        None => false,
    }
}

/// `"format": "uri"` ([`is_uri`]) with an optional `maxLength`.
pub fn uri(value: &Value, path: &Path<'_>, max_len: Option<u64>) -> Result<(), Violation> {
    if is_uri(string(value, path, max_len)?) {
        Ok(())
    } else {
        Err(Violation::new(
            ViolationKind::Format,
            path,
            "not a URI (format: uri)",
        ))
    }
}

/// `"format": "date-time"`: an RFC 3339 date-time, see [`DateTime`].
pub fn date_time(value: &Value, path: &Path<'_>) -> Result<(), Violation> {
    let s = string(value, path, None)?;
    DateTime::parse(s).map(|_| ()).map_err(|e| {
        Violation::new(
            ViolationKind::Format,
            path,
            format!("not an RFC 3339 date-time: {e}"),
        )
    })
}

/// `"type": "integer"` within `[lo, hi]`: the schema's bounds narrowed to the Rust type's
/// (32 bits, as OCPP defines integers). A number with a fraction part is a type violation.
pub fn integer(value: &Value, path: &Path<'_>, lo: i64, hi: i64) -> Result<(), Violation> {
    let Value::Number(n) = value else {
        return Err(wrong_type(value, path, "an integer"));
    };
    let in_range = match (n.as_i64(), n.as_u64()) {
        (Some(i), _) => (lo..=hi).contains(&i),
        (None, Some(_)) => false,
        (None, None) => return Err(wrong_type(value, path, "an integer")),
    };
    if in_range {
        Ok(())
    } else {
        Err(Violation::new(
            ViolationKind::Property,
            path,
            format!("{n} is outside {lo}..={hi}"),
        ))
    }
}

/// `"type": "number"` with optional `minimum`, `maximum` and `multipleOf`, all exact (the
/// number is read as a [`Decimal`]). A number beyond a `Decimal`'s range (more than 18 places,
/// or more digits than an `i64` mantissa holds) is a property violation: it cannot be kept
/// exactly.
pub fn number(
    value: &Value,
    path: &Path<'_>,
    min: Option<Decimal>,
    max: Option<Decimal>,
    multiple_of: Option<Decimal>,
) -> Result<(), Violation> {
    let Value::Number(n) = value else {
        return Err(wrong_type(value, path, "a number"));
    };
    // The Number's text: its own digits with serde_json's `arbitrary_precision`, otherwise
    // the shortest digits of its f64 (or its integer).
    let x: Decimal = n
        .to_string()
        .parse()
        .map_err(|e| Violation::new(ViolationKind::Property, path, format!("{n}: {e}")))?;
    if let Some(min) = min.filter(|m| x < *m) {
        return Err(Violation::new(
            ViolationKind::Property,
            path,
            format!("{x} is below minimum {min}"),
        ));
    }
    if let Some(max) = max.filter(|m| x > *m) {
        return Err(Violation::new(
            ViolationKind::Property,
            path,
            format!("{x} is above maximum {max}"),
        ));
    }
    if let Some(step) = multiple_of {
        if !is_multiple(x, step) {
            return Err(Violation::new(
                ViolationKind::Property,
                path,
                format!("{x} is not a multiple of {step}"),
            ));
        }
    }
    Ok(())
}

/// `minimum`, `maximum` and `multipleOf` of a number already read (see [`number()`]).
pub fn number_fits(
    x: Decimal,
    min: Option<Decimal>,
    max: Option<Decimal>,
    multiple_of: Option<Decimal>,
) -> bool {
    min.is_none_or(|min| x >= min)
        && max.is_none_or(|max| x <= max)
        && multiple_of.is_none_or(|step| is_multiple(x, step))
}

/// `minItems` and `maxItems` of an array of `n` items (see [`array()`]).
pub fn count_fits(n: usize, min: Option<u64>, max: Option<u64>) -> bool {
    let n = n as u64;
    min.is_none_or(|min| n >= min) && max.is_none_or(|max| n <= max)
}

/// Whether `x` is an integral multiple of `step`, exactly (a step of zero or below: always).
fn is_multiple(x: Decimal, step: Decimal) -> bool {
    if step <= Decimal::ZERO {
        return true;
    }
    // At a common scale both are integers; with an i64 mantissa and a scale of at most 18,
    // `aligned` cannot overflow an i128.
    let scale = x.scale().max(step.scale());
    let aligned = |d: Decimal| i128::from(d.mantissa()) * 10i128.pow(scale - d.scale());
    aligned(x) % aligned(step) == 0
}

/// `"type": "boolean"`.
pub fn boolean(value: &Value, path: &Path<'_>) -> Result<(), Violation> {
    match value {
        Value::Bool(_) => Ok(()),
        _ => Err(wrong_type(value, path, "a boolean")),
    }
}

/// `"type": "array"` with optional `minItems` and `maxItems`.
pub fn array<'v>(
    value: &'v Value,
    path: &Path<'_>,
    min: Option<u64>,
    max: Option<u64>,
) -> Result<&'v Vec<Value>, Violation> {
    let Value::Array(items) = value else {
        return Err(wrong_type(value, path, "an array"));
    };
    let n = items.len() as u64;
    if let Some(min) = min.filter(|m| n < *m) {
        return Err(Violation::new(
            ViolationKind::Occurrence,
            path,
            format!("{n} items, fewer than minItems {min}"),
        ));
    }
    if let Some(max) = max.filter(|m| n > *m) {
        return Err(Violation::new(
            ViolationKind::Occurrence,
            path,
            format!("{n} items, more than maxItems {max}"),
        ));
    }
    Ok(items)
}

/// `"enum"`: a string, and in strict mode one of `values`.
pub fn enum_value(
    value: &Value,
    path: &Path<'_>,
    mode: Mode,
    values: &[&str],
) -> Result<(), Violation> {
    let Value::String(s) = value else {
        return Err(wrong_type(value, path, "a string"));
    };
    if mode == Mode::Strict && !values.contains(&s.as_str()) {
        let mut rule = format!("value {s:?} is not one of ");
        rule.push_str(&values.join(", "));
        return Err(Violation::new(ViolationKind::Property, path, rule));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(text: &str) -> Decimal {
        text.parse().unwrap()
    }

    #[test]
    fn numbers_are_checked_exactly() {
        let step = Some(dec("0.1"));
        assert!(number_fits(dec("0.3"), None, None, step));
        assert!(number_fits(dec("204.800"), None, None, step));
        assert!(!number_fits(dec("0.30000000000000004"), None, None, step));
        assert!(!number_fits(dec("0.05"), None, None, step));
        assert!(number_fits(
            dec("0"),
            Some(dec("0")),
            Some(dec("0.0")),
            None
        ));
        assert!(!number_fits(dec("-0.000001"), Some(dec("0")), None, None));
        assert!(!number_fits(dec("100.01"), None, Some(dec("100")), None));
        let path = Path::Root;
        let n = |text: &str| serde_json::from_str::<Value>(text).unwrap();
        assert!(number(&n("0.3"), &path, None, None, step).is_ok());
        assert!(number(&n("12"), &path, Some(dec("0")), None, step).is_ok());
        let below = number(&n("-1"), &path, Some(dec("0")), None, None).unwrap_err();
        assert_eq!(below.kind(), ViolationKind::Property);
        // Beyond what a Decimal holds exactly: refused, not rounded.
        let huge = number(&n("1e300"), &path, None, None, None).unwrap_err();
        assert_eq!(huge.kind(), ViolationKind::Property);
        let wrong = number(&n("\"1\""), &path, None, None, None).unwrap_err();
        assert_eq!(wrong.kind(), ViolationKind::Type);
    }
}
