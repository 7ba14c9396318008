//! Schema conformance of the typed messages, for every action of every version, against the
//! official JSON schemas (validated with the `jsonschema` crate, drafts 4 and 6, formats on):
//!
//! - (b) schema-valid documents generated from each schema (seeded, deterministic; at least
//!   1,000 per action) decode in strict mode, decode the same in lenient mode, and re-encode to
//!   an equivalent document;
//! - (c) documents mutated to break one rule (drop a required property, wrong JSON type,
//!   over-long string, value outside the enumeration, too many or too few items, number out of
//!   range, bad date-time or URI, property not in the schema) are refused by the schema and by
//!   strict decoding, with the expected violation kind.
//!
//! Each version prints its counts and asserts zero disagreements.

mod schema_support;

use ocpp_messages::{DecodeError, DecodeOptions};
use schema_support::{
    apply, equivalent, generate, mutations, payload_schema, validator, PayloadSchema, Rng,
};
use serde_json::Value;

/// Valid documents per payload (request and response: 2 × this per action with a response).
const VALID_PER_PAYLOAD: usize = 500;
/// Mutated documents per payload.
const MUTATED_PER_PAYLOAD: usize = 150;

type Decode = fn(&str, &str, &DecodeOptions, bool) -> Result<Value, DecodeError>;

#[derive(Default, Debug)]
struct Counts {
    actions: usize,
    payloads: usize,
    valid_documents: usize,
    mutated_documents: usize,
    /// Mutations the schema itself accepts (not counted as tests).
    mutations_schema_accepts: usize,
    disagreements: usize,
}

fn report(failures: &mut Vec<String>, message: String) {
    if failures.len() < 30 {
        failures.push(message);
    }
}

fn check_payload(
    version: &str,
    p: &PayloadSchema,
    n_valid: usize,
    decode: Decode,
    counts: &mut Counts,
    failures: &mut Vec<String>,
) {
    let validator = validator(&p.schema);
    let seed = p.file.bytes().fold(0x00C0_FFEE_u64, |h, b| {
        h.wrapping_mul(31).wrapping_add(u64::from(b))
    });
    let mut rng = Rng::new(seed);
    let strict = DecodeOptions::strict();
    let lenient = DecodeOptions::lenient();
    let mut valid_docs = Vec::with_capacity(n_valid);
    for _ in 0..n_valid {
        let doc = generate(&mut rng, &p.schema, &p.schema, 0);
        counts.valid_documents += 1;
        if let Some(e) = validator.iter_errors(&doc).next() {
            counts.disagreements += 1;
            report(
                failures,
                format!(
                    "{version} {}: generator made an invalid document ({e}): {doc}",
                    p.file
                ),
            );
            continue;
        }
        let text = serde_json::to_string(&doc).expect("serialize");
        match decode(&p.action, &text, &strict, p.is_request) {
            Ok(back) => {
                if !equivalent(&doc, &back) {
                    counts.disagreements += 1;
                    report(
                        failures,
                        format!(
                            "{version} {}: round trip differs:\n  in:  {doc}\n  out: {back}",
                            p.file
                        ),
                    );
                }
                match decode(&p.action, &text, &lenient, p.is_request) {
                    Ok(l) if l == back => {}
                    other => {
                        counts.disagreements += 1;
                        report(
                            failures,
                            format!(
                                "{version} {}: lenient differs from strict: {other:?}",
                                p.file
                            ),
                        );
                    }
                }
            }
            Err(e) => {
                counts.disagreements += 1;
                report(
                    failures,
                    format!("{version} {}: valid document refused ({e}): {text}", p.file),
                );
            }
        }
        valid_docs.push(doc);
    }
    let mut done = 0;
    let mut attempts = 0;
    while done < MUTATED_PER_PAYLOAD && attempts < MUTATED_PER_PAYLOAD * 4 && !valid_docs.is_empty()
    {
        attempts += 1;
        let doc = &valid_docs[rng.below(valid_docs.len() as u64) as usize];
        let mut sites = Vec::new();
        mutations(&p.schema, &p.schema, doc, &mut Vec::new(), &mut sites);
        if sites.is_empty() {
            break;
        }
        let m = &sites[rng.below(sites.len() as u64) as usize];
        let bad = apply(doc, m);
        if validator.is_valid(&bad) {
            counts.mutations_schema_accepts += 1;
            continue;
        }
        done += 1;
        counts.mutated_documents += 1;
        let text = serde_json::to_string(&bad).expect("serialize");
        match decode(&p.action, &text, &strict, p.is_request) {
            Err(DecodeError::Violation(v)) if v.kind() == m.expected => {}
            other => {
                counts.disagreements += 1;
                report(
                    failures,
                    format!(
                        "{version} {}: mutation {m:?} expected {:?}, got {other:?}\n  doc: {text}",
                        p.file, m.expected
                    ),
                );
            }
        }
    }
}

fn run(version: &str, actions: &[&str], decode: Decode) {
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    for action in actions {
        counts.actions += 1;
        let request = payload_schema(version, action, true).expect("request schema");
        let response = payload_schema(version, action, false);
        // A SEND-only action has no response: all its documents are requests.
        let n = if response.is_some() {
            VALID_PER_PAYLOAD
        } else {
            2 * VALID_PER_PAYLOAD
        };
        for p in std::iter::once(request).chain(response) {
            counts.payloads += 1;
            check_payload(version, &p, n, decode, &mut counts, &mut failures);
        }
    }
    println!("{version}: {counts:?}");
    for f in &failures {
        let short: String = f.chars().take(700).collect();
        println!("  {short}");
    }
    assert!(counts.valid_documents >= 1000 * counts.actions);
    assert_eq!(
        counts.disagreements, 0,
        "{version}: {} disagreements",
        counts.disagreements
    );
}

macro_rules! version_test {
    ($name:ident, $module:ident, $expected_actions:expr) => {
        #[test]
        fn $name() {
            use ocpp_messages::$module::{decode_call_with, decode_result_with, Action};
            let actions: Vec<&str> = Action::ALL.iter().map(|a| a.as_str()).collect();
            assert_eq!(actions.len(), $expected_actions);
            fn decode(
                action: &str,
                payload: &str,
                options: &DecodeOptions,
                is_request: bool,
            ) -> Result<Value, DecodeError> {
                if is_request {
                    decode_call_with(action, payload, options)
                        .map(|r| serde_json::to_value(&r).expect("encode"))
                } else {
                    decode_result_with(action, payload, options)
                        .map(|r| serde_json::to_value(&r).expect("encode"))
                }
            }
            run(stringify!($module), &actions, decode);
        }
    };
}

version_test!(conformance_v1_6, v1_6, 39);
version_test!(conformance_v2_0_1, v2_0_1, 64);
version_test!(conformance_v2_1, v2_1, 91);
