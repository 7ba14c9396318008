//! Shared by the schema-conformance tests: the official schemas, a seeded schema-driven JSON
//! instance generator, schema mutations that make an instance invalid, and a JSON comparison
//! that treats numbers by value.
//!
//! The generator interprets the schemas (test code may); the library's checks are generated.
#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;

use ocpp_messages::ViolationKind;
use serde_json::{json, Map, Value};

/// SplitMix64: small, seeded, deterministic.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        let span = (hi as i128 - lo as i128 + 1) as u128;
        (lo as i128 + (self.next() as u128 % span) as i128) as i64
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// One payload schema of one action.
pub struct PayloadSchema {
    pub action: String,
    pub is_request: bool,
    pub file: String,
    pub schema: Value,
}

fn schemas_dir(version: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("schemas")
        .join(version)
}

/// The schema of `action`'s request or response in `version` (`v1_6`, `v2_0_1`, `v2_1`);
/// `None` when there is no such file (the response of a SEND-only action).
pub fn payload_schema(version: &str, action: &str, is_request: bool) -> Option<PayloadSchema> {
    let candidates: Vec<String> = match (version, is_request) {
        ("v1_6", true) => vec![format!("{action}.json")],
        (_, true) => vec![format!("{action}Request.json"), format!("{action}.json")],
        (_, false) => vec![format!("{action}Response.json")],
    };
    for file in candidates {
        let path = schemas_dir(version).join(&file);
        if let Ok(text) = std::fs::read_to_string(&path) {
            let schema: Value = serde_json::from_str(&text).expect("schema is JSON");
            return Some(PayloadSchema {
                action: action.to_owned(),
                is_request,
                file,
                schema,
            });
        }
    }
    None
}

/// A validator (drafts 4 and 6 from `$schema`, formats checked).
pub fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .expect("schema compiles")
}

/// Follows `$ref` (local definitions only).
pub fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    match node.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = r.trim_start_matches("#/definitions/");
            &root["definitions"][name]
        }
        None => node,
    }
}

const CHARS: &[char] = &[
    'a', 'b', 'z', 'A', 'Q', '0', '7', ' ', '-', '_', '.', ':', '/', '"', '\\', '\n', '\t', 'é',
    'ß', '€', '中', '😀', '\u{1}', '\u{7f}',
];

fn random_string(rng: &mut Rng, max: Option<u64>) -> String {
    let cap = max.unwrap_or(40);
    let len = if max.is_some() && rng.chance(15) {
        cap
    } else {
        rng.below(cap.min(30) + 1)
    };
    (0..len)
        .map(|_| CHARS[rng.below(CHARS.len() as u64) as usize])
        .collect()
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A random RFC 3339 date-time in the forms OCPP peers send.
pub fn random_date_time(rng: &mut Rng) -> String {
    let year = rng.range(1970, 2100);
    let month = rng.range(1, 12);
    let day = rng.range(1, days_in_month(year, month));
    let mut s = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        rng.range(0, 23),
        rng.range(0, 59),
        rng.range(0, 59)
    );
    if rng.chance(40) {
        s.push('.');
        for _ in 0..rng.range(1, 9) {
            s.push(char::from(b'0' + rng.below(10) as u8));
        }
    }
    if rng.chance(70) {
        s.push('Z');
    } else {
        let sign = if rng.chance(50) { '+' } else { '-' };
        s.push_str(&format!(
            "{sign}{:02}:{:02}",
            rng.range(0, 14),
            [0, 15, 30, 45][rng.below(4) as usize]
        ));
    }
    s
}

fn random_integer(rng: &mut Rng, node: &Value) -> i64 {
    let min = node
        .get("minimum")
        .and_then(Value::as_f64)
        .map(|m| m.ceil() as i64);
    let max = node
        .get("maximum")
        .and_then(Value::as_f64)
        .map(|m| m.floor() as i64);
    let lo = min.unwrap_or(i32::MIN as i64).max(i32::MIN as i64);
    let hi = max.unwrap_or(i32::MAX as i64).min(i32::MAX as i64);
    match rng.below(10) {
        0 => lo,
        1 => hi,
        2..=6 => rng.range(lo.max(-1000).min(hi), hi.min(lo.max(-1000) + 2000)),
        _ => rng.range(lo, hi),
    }
}

fn random_number(rng: &mut Rng, node: &Value) -> Value {
    let min = node.get("minimum").and_then(Value::as_f64);
    let max = node.get("maximum").and_then(Value::as_f64);
    if let Some(step) = node.get("multipleOf").and_then(Value::as_f64) {
        // The `jsonschema` crate tests multipleOf with exact rational arithmetic on the f64
        // values, so only 0 and step·2^k (exact doublings) pass it for a step like 0.1.
        if rng.chance(20) {
            return json!(0.0);
        }
        let mut x = step;
        for _ in 0..rng.below(12) {
            x *= 2.0;
        }
        return json!(x);
    }
    let lo = min.unwrap_or(-1.0e6);
    let hi = max.unwrap_or(1.0e6);
    let x = match rng.below(8) {
        0 => lo,
        1 => hi,
        2 => (lo + (hi - lo) * (rng.below(1000) as f64 / 1000.0)).round(),
        _ => lo + (hi - lo) * (rng.below(1_000_001) as f64 / 1_000_000.0),
    };
    let x = x.clamp(lo, hi);
    if x.fract() == 0.0 && x.abs() < 1e15 && rng.chance(50) {
        json!(x as i64)
    } else {
        json!(x)
    }
}

/// A schema-valid instance of `node` (with `root` for `$ref`).
pub fn generate(rng: &mut Rng, root: &Value, node: &Value, depth: usize) -> Value {
    let node = resolve(root, node);
    if let Some(values) = node.get("enum").and_then(Value::as_array) {
        return values[rng.below(values.len() as u64) as usize].clone();
    }
    match node.get("type").and_then(Value::as_str) {
        Some("string") => match node.get("format").and_then(Value::as_str) {
            Some("date-time") => json!(random_date_time(rng)),
            Some("uri") => json!(format!("https://example.com/{}", rng.below(100_000))),
            _ => json!(random_string(
                rng,
                node.get("maxLength").and_then(Value::as_u64)
            )),
        },
        Some("integer") => json!(random_integer(rng, node)),
        Some("number") => random_number(rng, node),
        Some("boolean") => json!(rng.chance(50)),
        Some("array") => {
            let min = node.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let max = node
                .get("maxItems")
                .and_then(Value::as_u64)
                .unwrap_or(min + 3)
                .min(min + 3);
            let n = if depth > 4 {
                min
            } else {
                min + rng.below(max - min + 1)
            };
            Value::Array(
                (0..n)
                    .map(|_| generate(rng, root, &node["items"], depth + 1))
                    .collect(),
            )
        }
        Some("object") => {
            let required: Vec<&str> = node
                .get("required")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = Map::new();
            if let Some(props) = node.get("properties").and_then(Value::as_object) {
                for (name, prop) in props {
                    if required.contains(&name.as_str()) || (depth < 6 && rng.chance(50)) {
                        out.insert(name.clone(), generate(rng, root, prop, depth + 1));
                    }
                }
            }
            if node.get("additionalProperties") != Some(&Value::Bool(false)) && rng.chance(30) {
                out.insert(
                    format!("x-vendor-{}", rng.below(10)),
                    json!({"any": [1, "two", null]}),
                );
            }
            Value::Object(out)
        }
        // No type (DataTransfer `data` in 2.x): any JSON.
        _ => match rng.below(4) {
            0 => json!("text"),
            1 => json!(42),
            2 => json!({"nested": {"list": [1, 2.5, "x"]}}),
            _ => json!([true, null]),
        },
    }
}

/// One step of a path into an instance.
#[derive(Debug, Clone)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// A change that makes an instance invalid, and the violation kind strict decoding must report.
#[derive(Debug, Clone)]
pub struct Mutation {
    pub path: Vec<Step>,
    pub change: Change,
    pub expected: ViolationKind,
}

#[derive(Debug, Clone)]
pub enum Change {
    Remove(String),
    Insert(String, Value),
    Replace(Value),
}

/// Every mutation the schema allows at this instance (`value` valid for `node`).
pub fn mutations(
    root: &Value,
    node: &Value,
    value: &Value,
    path: &mut Vec<Step>,
    out: &mut Vec<Mutation>,
) {
    let node = resolve(root, node);
    let ty = node.get("type").and_then(Value::as_str);
    let at = |path: &Vec<Step>, change, expected| Mutation {
        path: path.clone(),
        change,
        expected,
    };
    // wrong JSON type
    let wrong = match ty {
        Some("string") => Some(json!(12345)),
        Some("integer") => Some(if path.len() % 2 == 0 {
            json!("12")
        } else {
            json!(1.5)
        }),
        Some("number") => Some(json!("1.0")),
        Some("boolean") => Some(json!("true")),
        Some("array") => Some(json!({})),
        Some("object") => Some(json!([])),
        _ => None,
    };
    if let Some(w) = wrong {
        let kind = if path.is_empty() {
            ViolationKind::Format
        } else {
            ViolationKind::Type
        };
        out.push(at(path, Change::Replace(w), kind));
    }
    if let Some(values) = node.get("enum").and_then(Value::as_array) {
        let _ = values;
        out.push(at(
            path,
            Change::Replace(json!("NotAValueOfThisEnum")),
            ViolationKind::Property,
        ));
    }
    match ty {
        Some("string") => {
            if let Some(max) = node.get("maxLength").and_then(Value::as_u64) {
                if node.get("enum").is_none() && max < 10_000 {
                    let s: String = "é".repeat(max as usize + 1);
                    out.push(at(path, Change::Replace(json!(s)), ViolationKind::Property));
                }
            }
            match node.get("format").and_then(Value::as_str) {
                Some("date-time") => {
                    for bad in [
                        "2024-02-30T10:00:00Z",
                        "2024-01-01 10:00:00Z",
                        "2024-01-01T10:00:00",
                        "yesterday",
                    ] {
                        out.push(at(path, Change::Replace(json!(bad)), ViolationKind::Format));
                    }
                }
                Some("uri") => out.push(at(
                    path,
                    Change::Replace(json!("not a uri")),
                    ViolationKind::Format,
                )),
                _ => {}
            }
        }
        Some("integer") | Some("number") => {
            if let Some(min) = node.get("minimum").and_then(Value::as_f64) {
                out.push(at(
                    path,
                    Change::Replace(json!(min as i64 - 1)),
                    ViolationKind::Property,
                ));
            }
            if let Some(max) = node.get("maximum").and_then(Value::as_f64) {
                out.push(at(
                    path,
                    Change::Replace(json!(max as i64 + 1)),
                    ViolationKind::Property,
                ));
            }
        }
        Some("array") => {
            let items = value.as_array().cloned().unwrap_or_default();
            if let Some(max) = node.get("maxItems").and_then(Value::as_u64) {
                if let Some(first) = items.first() {
                    let mut more = items.clone();
                    while more.len() as u64 <= max {
                        more.push(first.clone());
                    }
                    out.push(at(
                        path,
                        Change::Replace(Value::Array(more)),
                        ViolationKind::Occurrence,
                    ));
                }
            }
            if let Some(min) = node.get("minItems").and_then(Value::as_u64) {
                if min > 0 {
                    let fewer: Vec<Value> = items.iter().take(min as usize - 1).cloned().collect();
                    out.push(at(
                        path,
                        Change::Replace(Value::Array(fewer)),
                        ViolationKind::Occurrence,
                    ));
                }
            }
            for (i, item) in items.iter().enumerate() {
                path.push(Step::Index(i));
                mutations(root, &node["items"], item, path, out);
                path.pop();
            }
        }
        Some("object") => {
            let object = value.as_object().cloned().unwrap_or_default();
            if let Some(required) = node.get("required").and_then(Value::as_array) {
                for r in required.iter().filter_map(Value::as_str) {
                    out.push(at(
                        path,
                        Change::Remove(r.to_owned()),
                        ViolationKind::Occurrence,
                    ));
                }
            }
            if node.get("additionalProperties") == Some(&Value::Bool(false)) {
                out.push(at(
                    path,
                    Change::Insert("notInTheSchema".into(), json!(1)),
                    ViolationKind::Format,
                ));
            }
            if let Some(props) = node.get("properties").and_then(Value::as_object) {
                for (name, child) in &object {
                    if let Some(prop) = props.get(name) {
                        path.push(Step::Key(name.clone()));
                        mutations(root, prop, child, path, out);
                        path.pop();
                    }
                }
            }
        }
        _ => {}
    }
}

/// Applies a mutation to a copy of `value`.
pub fn apply(value: &Value, m: &Mutation) -> Value {
    let mut out = value.clone();
    let mut cursor = &mut out;
    for step in &m.path {
        cursor = match step {
            Step::Key(k) => &mut cursor[k.as_str()],
            Step::Index(i) => &mut cursor[*i],
        };
    }
    match &m.change {
        Change::Remove(k) => {
            if let Some(o) = cursor.as_object_mut() {
                o.remove(k);
            }
        }
        Change::Insert(k, v) => {
            if let Some(o) = cursor.as_object_mut() {
                o.insert(k.clone(), v.clone());
            }
        }
        Change::Replace(v) => *cursor = v.clone(),
    }
    out
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
pub fn equivalent(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equivalent(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| equivalent(v, w)))
        }
        _ => a == b,
    }
}
