//! Schema conformance, typed side (a): values our types generate (the proptest strategies of
//! feature `proptest`, for every payload of every action of every version) serialize to JSON the
//! official schema accepts, and decode back (strict) to the same value. Deterministic seed.

mod schema_support;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use schema_support::{payload_schema, validator};

/// Generated values per payload.
const CASES: usize = 64;

#[derive(Default, Debug)]
struct Counts {
    payloads: usize,
    values: usize,
    disagreements: usize,
}

macro_rules! typed_test {
    ($name:ident, $module:ident) => {
        #[test]
        fn $name() {
            use ocpp_messages::$module::{decode_call, decode_result, Action, Request, Response};
            let mut runner = TestRunner::new_with_rng(
                Config::default(),
                TestRng::deterministic_rng(RngAlgorithm::ChaCha),
            );
            let mut counts = Counts::default();
            let mut failures: Vec<String> = Vec::new();
            for action in Action::ALL {
                let name = action.as_str();
                for is_request in [true, false] {
                    let Some(schema) = payload_schema(stringify!($module), name, is_request) else {
                        continue;
                    };
                    let validator = validator(&schema.schema);
                    counts.payloads += 1;
                    for _ in 0..CASES {
                        counts.values += 1;
                        let (json, back_equal) = if is_request {
                            let strategy =
                                Request::arbitrary_for(action).expect("request strategy");
                            let value = strategy.new_tree(&mut runner).expect("tree").current();
                            let text = serde_json::to_string(&value).expect("encode");
                            let back = decode_call(name, &text);
                            (text, back.as_ref() == Ok(&value))
                        } else {
                            let strategy =
                                Response::arbitrary_for(action).expect("response strategy");
                            let value = strategy.new_tree(&mut runner).expect("tree").current();
                            let text = serde_json::to_string(&value).expect("encode");
                            let back = decode_result(name, &text);
                            (text, back.as_ref() == Ok(&value))
                        };
                        let doc: serde_json::Value = serde_json::from_str(&json).expect("json");
                        let errors: Vec<String> =
                            validator.iter_errors(&doc).map(|e| e.to_string()).collect();
                        if !errors.is_empty() || !back_equal {
                            counts.disagreements += 1;
                            if failures.len() < 20 {
                                failures.push(format!(
                                    "{} {:?} decodes back: {back_equal}: {json}",
                                    schema.file, errors
                                ));
                            }
                        }
                    }
                }
            }
            println!("{}: {counts:?}", stringify!($module));
            for f in &failures {
                println!("  {}", f.chars().take(600).collect::<String>());
            }
            assert_eq!(counts.disagreements, 0);
        }
    };
}

typed_test!(typed_values_v1_6, v1_6);
typed_test!(typed_values_v2_0_1, v2_0_1);
typed_test!(typed_values_v2_1, v2_1);
