//! Every `"type": "number"` field of every schema of OCPP 1.6, 2.0.1 and 2.1 keeps its digits:
//! a schema-valid document whose number fields hold texts like `2935.600`, `-0.125` or `0.000`
//! decodes (strict) into the typed message, and the typed message encodes to JSON whose
//! number tokens are exactly those of the input (compared as a multiset, since encoding
//! reorders properties). Deterministic; the fields the generator does not reach are printed.

mod schema_support;

use std::collections::BTreeSet;

use ocpp_messages::Decimal;
use schema_support::{generate, payload_schema, resolve, Rng};
use serde_json::Value;

/// Documents per payload.
const DOCS: usize = 300;

/// Number texts tried in number fields (those within a field's bounds and steps are used).
const LITERALS: &[&str] = &[
    "2935.600",
    "-0.125",
    "0.000",
    "0",
    "12.50",
    "0.100",
    "99.9",
    "1",
    "-7.0000",
    "0.001",
    "100.00",
    "3.0",
    "123456789.123456789",
    "204.8",
];

fn bound(node: &Value, key: &str) -> Option<Decimal> {
    // The schemas' bounds are small (0, 1, 3, 100, 0.1): their shortest f64 digits are exact.
    node.get(key)
        .and_then(Value::as_f64)
        .map(|x| Decimal::try_from(x).expect("bound"))
}

fn fits(node: &Value, x: Decimal) -> bool {
    let multiple = |step: Decimal| {
        let s = x.scale().max(step.scale());
        let at = |d: Decimal| i128::from(d.mantissa()) * 10i128.pow(s - d.scale());
        at(x) % at(step) == 0
    };
    bound(node, "minimum").is_none_or(|m| x >= m)
        && bound(node, "maximum").is_none_or(|m| x <= m)
        && bound(node, "multipleOf").is_none_or(multiple)
}

/// Replaces every number of `value` (an instance of `node`) by a marker string, noting the
/// literal chosen for it and the schema location (`file` + pointer) it belongs to.
fn mark(
    rng: &mut Rng,
    root: &Value,
    node: &Value,
    value: &mut Value,
    at: &str,
    literals: &mut Vec<&'static str>,
    seen: &mut BTreeSet<String>,
) {
    let node = resolve(root, node);
    match node.get("type").and_then(Value::as_str) {
        Some("number") if node.get("enum").is_none() => {
            let choices: Vec<&'static str> = LITERALS
                .iter()
                .copied()
                .filter(|t| fits(node, t.parse().expect("literal")))
                .collect();
            assert!(!choices.is_empty(), "no literal fits {at}: {node}");
            let literal = choices[rng.below(choices.len() as u64) as usize];
            *value = Value::String(format!("@@number{}@@", literals.len()));
            literals.push(literal);
            seen.insert(at.to_owned());
        }
        Some("array") => {
            if let Value::Array(items) = value {
                for item in items {
                    let at = format!("{at}/items");
                    mark(rng, root, &node["items"], item, &at, literals, seen);
                }
            }
        }
        Some("object") => {
            if let (Value::Object(map), Some(props)) =
                (value, node.get("properties").and_then(Value::as_object))
            {
                for (name, prop) in props {
                    if let Some(v) = map.get_mut(name) {
                        let at = format!("{at}/{name}");
                        mark(rng, root, prop, v, &at, literals, seen);
                    }
                }
            }
        }
        _ => {}
    }
}

/// Every schema location of a number field, as `mark` names them.
fn number_locations(
    root: &Value,
    node: &Value,
    at: &str,
    depth: usize,
    out: &mut BTreeSet<String>,
) {
    if depth > 12 {
        return;
    }
    let node = resolve(root, node);
    match node.get("type").and_then(Value::as_str) {
        Some("number") if node.get("enum").is_none() => {
            out.insert(at.to_owned());
        }
        Some("array") => {
            number_locations(root, &node["items"], &format!("{at}/items"), depth + 1, out)
        }
        Some("object") => {
            if let Some(props) = node.get("properties").and_then(Value::as_object) {
                for (name, prop) in props {
                    number_locations(root, prop, &format!("{at}/{name}"), depth + 1, out);
                }
            }
        }
        _ => {}
    }
}

/// The number tokens of a JSON text, in order (strings skipped).
fn number_tokens(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                out.push(text[start..i].to_owned());
            }
            _ => i += 1,
        }
    }
    out.sort();
    out
}

macro_rules! numbers_test {
    ($name:ident, $module:ident) => {
        #[test]
        fn $name() {
            use ocpp_messages::$module::{decode_call, decode_result, Action};
            let version = stringify!($module);
            let mut failures: Vec<String> = Vec::new();
            let (mut documents, mut numbers) = (0usize, 0usize);
            let mut all = BTreeSet::new();
            let mut seen = BTreeSet::new();
            for action in Action::ALL {
                let name = action.as_str();
                for is_request in [true, false] {
                    let Some(p) = payload_schema(version, name, is_request) else {
                        continue;
                    };
                    number_locations(&p.schema, &p.schema, &p.file, 0, &mut all);
                    let seed = p.file.bytes().fold(0x0DEC_u64, |h, b| {
                        h.wrapping_mul(31).wrapping_add(u64::from(b))
                    });
                    let mut rng = Rng::new(seed);
                    for _ in 0..DOCS {
                        let mut doc = generate(&mut rng, &p.schema, &p.schema, 0);
                        let mut literals = Vec::new();
                        mark(&mut rng, &p.schema, &p.schema, &mut doc, &p.file, &mut literals, &mut seen);
                        if literals.is_empty() {
                            continue; // no number field in this document
                        }
                        documents += 1;
                        numbers += literals.len();
                        let mut text = serde_json::to_string(&doc).expect("encode");
                        for (k, literal) in literals.iter().enumerate() {
                            text = text.replace(&format!("\"@@number{k}@@\""), literal);
                        }
                        let out = if is_request {
                            decode_call(name, &text).map(|v| serde_json::to_string(&v).expect("encode"))
                        } else {
                            decode_result(name, &text).map(|v| serde_json::to_string(&v).expect("encode"))
                        };
                        match out {
                            Ok(out) if number_tokens(&out) == number_tokens(&text) => {}
                            Ok(out) if failures.len() < 20 => {
                                failures.push(format!("{}: digits changed\n  in:  {text}\n  out: {out}", p.file))
                            }
                            Err(e) if failures.len() < 20 => {
                                failures.push(format!("{}: refused ({e}): {text}", p.file))
                            }
                            _ => {}
                        }
                    }
                }
            }
            let missed: Vec<&String> = all.difference(&seen).collect();
            println!(
                "{version}: {documents} documents, {numbers} numbers, {} of {} number fields reached",
                seen.len(),
                all.len()
            );
            assert!(failures.is_empty(), "{}", failures.join("\n"));
            // The generator leaves optional properties out below depth 6: some deep number
            // fields are never reached (listed; reaching them all is left for later).
            println!("{version}: not reached: {missed:?}");
            assert!(seen.len() * 2 >= all.len(), "too few number fields reached");
        }
    };
}

#[cfg(feature = "v1_6")]
numbers_test!(v1_6_numbers_keep_their_digits, v1_6);
#[cfg(feature = "v2_0_1")]
numbers_test!(v2_0_1_numbers_keep_their_digits, v2_0_1);
#[cfg(feature = "v2_1")]
numbers_test!(v2_1_numbers_keep_their_digits, v2_1);
