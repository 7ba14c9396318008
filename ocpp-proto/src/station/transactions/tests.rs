//! The transactions' tests: every version's messages, decoded strictly, and a property test of the
//! state.

use super::*;
use ocpp_messages::{v1_6, v2_0_1, v2_1, Decimal, DecodeOptions};
use proptest::prelude::*;
use serde_json::Value;
use std::collections::HashMap;

fn at(s: i64) -> DateTime {
    DateTime::from_unix_timestamp(1_780_000_000 + s).unwrap()
}

fn token() -> IdToken {
    IdToken::new("TAG-1", IdTokenType::Iso14443)
}

/// The payload as JSON, after checking that it decodes strictly as its version's message.
fn payload(message: &TransactionMessage) -> Value {
    let request = &message.request;
    let text = serde_json::to_string(request).unwrap();
    Request::decode(
        request.version(),
        request.action(),
        &text,
        &DecodeOptions::strict(),
    )
    .unwrap_or_else(|e| panic!("{text}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// Snapshots and payloads as the station wrote them before its `IdToken` was `ocpp-model`'s
/// (taken from journals the former code wrote: `ocpp-station-store/tests/journals/`): the
/// version, the start's token kind, the `state` and the `push` payload of the journal line.
const BEFORE: [(OcppVersion, &str, &str, &str); 3] = [
    (
        OcppVersion::V2_0_1,
        "ISO14443",
        r#"{"version":"2.0.1","prefix":"CP001-","next_number":2,"open":{"1":{"evse":{"id":1,"connector":1},"version":"2.0.1","id":{"id":"CP001-1"},"next_seq_no":1,"id_token":{"id":"04A1B2C3","kind":"ISO14443"},"meter_start_wh":1000,"meter_wh":1000,"started_at":"2026-05-28T20:26:40Z"}},"ended":[]}"#,
        r#"{"eventType":"Started","meterValue":[{"sampledValue":[{"value":1000,"context":"Transaction.Begin","measurand":"Energy.Active.Import.Register"}],"timestamp":"2026-05-28T20:26:40Z"}],"timestamp":"2026-05-28T20:26:40Z","triggerReason":"Authorized","seqNo":0,"transactionInfo":{"transactionId":"CP001-1"},"evse":{"id":1,"connectorId":1},"idToken":{"idToken":"04A1B2C3","type":"ISO14443"}}"#,
    ),
    (
        OcppVersion::V1_6,
        "",
        r#"{"version":"1.6","prefix":"CP001-","next_number":1,"open":{"1":{"evse":{"id":1,"connector":1},"version":"1.6","id":{"pending":1},"next_seq_no":1,"id_token":{"id":"04A1B2C3","kind":""},"meter_start_wh":1000,"meter_wh":1000,"started_at":"2026-05-28T20:26:40Z"}},"ended":[]}"#,
        r#"{"connectorId":1,"idTag":"04A1B2C3","meterStart":1000,"timestamp":"2026-05-28T20:26:40Z"}"#,
    ),
    (
        OcppVersion::V2_1,
        "DirectPayment",
        r#"{"version":"2.1","prefix":"CP001-","next_number":2,"open":{"1":{"evse":{"id":1,"connector":1},"version":"2.1","id":{"id":"CP001-1"},"next_seq_no":1,"id_token":{"id":"04A1B2C3","kind":"DirectPayment"},"meter_start_wh":1000,"meter_wh":1000,"started_at":"2026-05-28T20:26:40Z"}},"ended":[]}"#,
        r#"{"eventType":"Started","meterValue":[{"sampledValue":[{"value":1000,"measurand":"Energy.Active.Import.Register","context":"Transaction.Begin"}],"timestamp":"2026-05-28T20:26:40Z"}],"timestamp":"2026-05-28T20:26:40Z","triggerReason":"Authorized","seqNo":0,"transactionInfo":{"transactionId":"CP001-1"},"evse":{"id":1,"connectorId":1},"idToken":{"idToken":"04A1B2C3","type":"DirectPayment"}}"#,
    ),
];

#[test]
fn snapshots_of_the_former_id_token_read_and_are_written_the_same() {
    for (version, kind, state, _) in BEFORE {
        let transactions = Transactions::from_snapshot(state).unwrap();
        let open = transactions.open().next().unwrap();
        assert_eq!(open.version, version);
        assert_eq!(open.id_token, IdToken::new("04A1B2C3", kind));
        assert_eq!(open.id_token.value, "04A1B2C3");
        assert_eq!(open.id_token.kind.as_str(), kind);
        // Written back byte for byte.
        assert_eq!(transactions.to_snapshot(), state);
    }
    let kinds: Vec<IdTokenType> = BEFORE
        .iter()
        .map(|(_, _, state, _)| {
            let t = Transactions::from_snapshot(state).unwrap();
            t.open().next().unwrap().id_token.kind.clone()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            IdTokenType::Iso14443,
            IdTokenType::Other(String::new()),
            IdTokenType::Other("DirectPayment".into()),
        ]
    );
}

#[test]
fn the_started_message_is_what_it_was() {
    // 1.6 idTag = the value; 2.x idToken + type = the value + the kind's wire string.
    for (version, kind, state, payload) in BEFORE {
        let mut transactions = Transactions::new(version, "CP001-");
        let evse = Evse::new(1).with_connector(1);
        let start = Start::new(evse, IdToken::new("04A1B2C3", kind), 1_000, at(0));
        let started = transactions.start(start, 1).unwrap();
        assert_eq!(serde_json::to_string(&started.request).unwrap(), payload);
        assert_eq!(transactions.to_snapshot(), state);
    }
}

#[test]
fn id_tokens_round_trip_through_a_snapshot() {
    for kind in [
        IdTokenType::Central,
        IdTokenType::EMaid,
        IdTokenType::Iso14443,
        IdTokenType::Iso15693,
        IdTokenType::KeyCode,
        IdTokenType::Local,
        IdTokenType::MacAddress,
        IdTokenType::NoAuthorization,
        IdTokenType::Other("DirectPayment".into()),
        IdTokenType::Other(String::new()),
    ] {
        let mut transactions = Transactions::new(OcppVersion::V2_1, "CP-");
        let token = IdToken::new("A1", kind);
        let start = Start::new(Evse::new(1), token.clone(), 0, at(0));
        transactions.start(start, 1).unwrap();
        let again = Transactions::from_snapshot(&transactions.to_snapshot()).unwrap();
        assert_eq!(again, transactions);
        assert_eq!(again.open().next().unwrap().id_token, token);
    }
}

#[test]
fn v2_transaction_seq_nos_and_payloads() {
    for version in [OcppVersion::V2_0_1, OcppVersion::V2_1] {
        let mut t = Transactions::new(version, "CP1-x-");
        let evse = Evse::new(2).with_connector(1);
        let start = Start::new(evse, token(), 1_000, at(0)).with_remote_start_id(7);
        let started = payload(&t.start(start.clone(), 1).unwrap());
        assert_eq!(started["eventType"], "Started");
        assert_eq!(started["seqNo"], 0);
        assert_eq!(started["triggerReason"], "RemoteStart");
        assert_eq!(started["transactionInfo"]["transactionId"], "CP1-x-1");
        assert_eq!(started["transactionInfo"]["remoteStartId"], 7);
        assert_eq!(
            started["evse"],
            serde_json::json!({"id": 2, "connectorId": 1})
        );
        assert_eq!(started["idToken"]["idToken"], "TAG-1");
        let sampled = &started["meterValue"][0]["sampledValue"][0];
        assert_eq!(sampled["value"], 1000);
        assert_eq!(sampled["measurand"], "Energy.Active.Import.Register");
        assert_eq!(sampled["context"], "Transaction.Begin");
        assert_eq!(t.start(start, 2), Err(TransactionError::Busy(2)));

        let updated = payload(&t.meter(2, 1_250, at(60)).unwrap());
        assert_eq!(updated["eventType"], "Updated");
        assert_eq!(updated["seqNo"], 1);
        assert_eq!(updated["triggerReason"], "MeterValuePeriodic");
        assert_eq!(updated["meterValue"][0]["sampledValue"][0]["value"], 1250);

        // A restart: the state from its snapshot, the transaction ended on power loss.
        let mut t = Transactions::from_snapshot(&t.to_snapshot()).unwrap();
        assert_eq!(t.transaction_id(2).as_deref(), Some("CP1-x-1"));
        let ended = payload(&t.end_after_power_loss(2, at(120)).unwrap());
        assert_eq!(ended["eventType"], "Ended");
        assert_eq!(ended["seqNo"], 2);
        assert_eq!(ended["triggerReason"], "AbnormalCondition");
        assert_eq!(ended["transactionInfo"]["stoppedReason"], "PowerLoss");
        assert_eq!(ended["meterValue"][0]["sampledValue"][0]["value"], 1250);
        assert_eq!(t.meter(2, 1, at(1)), Err(TransactionError::NotOpen(2)));

        // The next transaction has the next id.
        let next = payload(&t.start(Start::new(evse, token(), 0, at(200)), 5).unwrap());
        assert_eq!(next["transactionInfo"]["transactionId"], "CP1-x-2");
        assert_eq!(next["triggerReason"], "Authorized");
    }
}

#[test]
fn v1_6_transaction_learns_its_id() {
    let mut t = Transactions::new(OcppVersion::V1_6, "");
    let start = t
        .start(Start::new(Evse::new(1), token(), 10, at(0)), 41)
        .unwrap();
    let start = payload(&start);
    assert_eq!(start["connectorId"], 1);
    assert_eq!(start["idTag"], "TAG-1");
    assert_eq!(start["meterStart"], 10);
    assert_eq!(t.transaction_id(1), None);
    let meter = t.meter(1, 20, at(60)).unwrap();
    assert_eq!(meter.transaction_of, Some(41));
    let values = payload(&meter);
    assert_eq!(values["meterValue"][0]["sampledValue"][0]["value"], "20");
    assert_eq!(values["meterValue"][0]["sampledValue"][0]["unit"], "Wh");
    assert_eq!(t.on_transaction_id(40, 9), None);
    assert_eq!(t.on_transaction_id(41, 4711), Some(1));
    assert_eq!(t.transaction_id(1).as_deref(), Some("4711"));
    let mut t = Transactions::from_snapshot(&t.to_snapshot()).unwrap();
    let stop = t.end_after_power_loss(1, at(90)).unwrap();
    assert_eq!(stop.transaction_of, None);
    let stop = payload(&stop);
    assert_eq!(stop["transactionId"], 4711);
    assert_eq!(stop["meterStop"], 20);
    assert_eq!(stop["reason"], "PowerLoss");
    // 1.6 Wh are 32-bit integers.
    let big = Start::new(Evse::new(1), token(), i64::from(i32::MAX) + 1, at(0));
    assert_eq!(
        t.start(big, 44),
        Err(TransactionError::OutOfRange("meter value (Wh)"))
    );
    assert!(t.open().next().is_none());
}

#[test]
fn sampled_values_go_with_the_energy_register_in_every_version() {
    let reading = || {
        Reading::new(1_500)
            .with_sampled_value(SampledValue::power_w(Decimal::new(110_005, 1)))
            .with_sampled_value(SampledValue::current_a(16).with_phase("L1"))
            .with_sampled_value(SampledValue::soc_percent(64))
    };
    for version in OcppVersion::ALL {
        let mut t = Transactions::new(version, "CP-");
        let start = Start::new(Evse::new(1), token(), 1_000, at(0))
            .with_sampled_value(SampledValue::power_w(0));
        let started = payload(&t.start(start, 1).unwrap());
        let updated = payload(&t.meter_reading(1, reading(), at(60)).unwrap());
        let triggered = payload(&t.meter_reading(1, reading().triggered(), at(61)).unwrap());
        // The reading is kept, with its values: a restart keeps them too.
        let mut t = Transactions::from_snapshot(&t.to_snapshot()).unwrap();
        assert_eq!(t.get(1).unwrap().sampled, reading().sampled);
        let ended = payload(
            &t.stop_with(1, reading(), at(90), StationStopReason::Local)
                .unwrap(),
        );
        let (values, stop_values) = match version {
            OcppVersion::V1_6 => {
                assert_eq!(
                    triggered["meterValue"][0]["sampledValue"][0]["context"],
                    "Trigger"
                );
                (
                    updated["meterValue"][0]["sampledValue"].clone(),
                    ended["transactionData"][0]["sampledValue"].clone(),
                )
            }
            _ => {
                assert_eq!(
                    started["meterValue"][0]["sampledValue"][1]["measurand"],
                    "Power.Active.Import"
                );
                assert_eq!(triggered["triggerReason"], "Trigger");
                assert_eq!(triggered["seqNo"], 2);
                (
                    updated["meterValue"][0]["sampledValue"].clone(),
                    ended["meterValue"][0]["sampledValue"].clone(),
                )
            }
        };
        for values in [&values, &stop_values] {
            let measurands: Vec<&str> = values
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["measurand"].as_str().unwrap())
                .collect();
            assert_eq!(
                measurands,
                [
                    "Energy.Active.Import.Register",
                    "Power.Active.Import",
                    "Current.Import",
                    "SoC"
                ],
                "{version}"
            );
            assert_eq!(values[2]["phase"], "L1");
            assert_eq!(values[3]["location"], "EV");
        }
        // The exact digits, as the version types them (1.6 a string, 2.x a number).
        let power = &values[1]["value"];
        assert_eq!(power.to_string().trim_matches('"'), "11000.5", "{version}");
        let unit = match version {
            OcppVersion::V1_6 => values[3]["unit"].clone(),
            _ => values[3]["unitOfMeasure"]["unit"].clone(),
        };
        assert_eq!(unit, "Percent");

        // A name the version does not know is refused, nothing changed.
        let mut t = Transactions::new(version, "CP-");
        t.start(Start::new(Evse::new(1), token(), 0, at(0)), 1)
            .unwrap();
        let before = t.clone();
        let odd = Reading::new(1).with_sampled_value(SampledValue::new("Joy", 1, "W"));
        assert_eq!(
            t.meter_reading(1, odd, at(1)),
            Err(TransactionError::UnknownValue("measurand", "Joy".into()))
        );
        assert_eq!(t, before);
    }
}

#[test]
fn every_trigger_and_reason_is_a_value_of_the_version() {
    let reasons = [
        StationStopReason::Local,
        StationStopReason::Remote,
        StationStopReason::EVDisconnected,
        StationStopReason::PowerLoss,
        StationStopReason::EmergencyStop,
        StationStopReason::DeAuthorized,
        StationStopReason::Reboot,
        StationStopReason::HardReset,
        StationStopReason::SoftReset,
        StationStopReason::Other,
    ];
    for reason in reasons {
        assert!(v1_6::Reason::from_wire(reason.as_str_in(OcppVersion::V1_6)).is_recognized());
        assert!(
            v2_0_1::ReasonEnum::from_wire(reason.as_str_in(OcppVersion::V2_0_1)).is_recognized()
        );
        assert!(v2_1::ReasonEnum::from_wire(reason.as_str_in(OcppVersion::V2_1)).is_recognized());
        assert!(v2_0_1::TriggerReasonEnum::from_wire(reason.trigger_reason()).is_recognized());
        assert!(v2_1::TriggerReasonEnum::from_wire(reason.trigger_reason()).is_recognized());
    }
}

#[test]
fn long_prefix_is_cut() {
    let prefix = "ü".repeat(20);
    let mut t = Transactions::new(OcppVersion::V2_0_1, &prefix);
    let started = t
        .start(Start::new(Evse::new(1), token(), 0, at(0)), 1)
        .unwrap();
    let id = payload(&started)["transactionInfo"]["transactionId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(id.len() <= MAX_TRANSACTION_ID, "{id}");
}

#[derive(Debug, Clone)]
enum Op {
    Start {
        evse: i32,
        remote: bool,
    },
    Meter {
        evse: i32,
        wh: u16,
    },
    Stop {
        evse: i32,
    },
    /// 1.6: the central system answers the oldest StartTransaction not answered yet.
    Answer,
    /// The process is killed: the state comes back from its snapshot; each open
    /// transaction is ended after the power loss, or resumed.
    Restart {
        end: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1..4i32, any::<bool>()).prop_map(|(evse, remote)| Op::Start { evse, remote }),
        4 => (1..4i32, any::<u16>()).prop_map(|(evse, wh)| Op::Meter { evse, wh }),
        2 => (1..4i32).prop_map(|evse| Op::Stop { evse }),
        2 => Just(Op::Answer),
        1 => any::<bool>().prop_map(|end| Op::Restart { end }),
    ]
}

/// What the central system would see of one transaction.
#[derive(Debug, Default)]
struct Seen {
    kinds: Vec<String>,
    seq_nos: Vec<i64>,
}

/// Files a message under its transaction (2.x: its id; 1.6: its StartTransaction's seq).
fn record(
    version: OcppVersion,
    message: TransactionMessage,
    seq: u64,
    given: &HashMap<u64, i32>,
    seen: &mut BTreeMap<String, Seen>,
) -> Result<(), TestCaseError> {
    let value = payload(&message);
    let key = match version {
        OcppVersion::V1_6 => {
            let start = match (message.request.action(), message.transaction_of) {
                ("StartTransaction", _) => seq,
                (_, Some(start)) => start,
                (_, None) => {
                    // The id must be one given.
                    let id = value["transactionId"].as_i64().unwrap() as i32;
                    let start = given.iter().find(|&(_, &g)| g == id).map(|(s, _)| *s);
                    prop_assert!(start.is_some(), "id {} was never given", id);
                    start.unwrap()
                }
            };
            start.to_string()
        }
        _ => value["transactionInfo"]["transactionId"]
            .as_str()
            .unwrap()
            .to_owned(),
    };
    let entry = seen.entry(key).or_default();
    match message.request.action() {
        "StartTransaction" => entry.kinds.push("Started".into()),
        "MeterValues" => entry.kinds.push("Updated".into()),
        "StopTransaction" => entry.kinds.push("Ended".into()),
        _ => {
            entry
                .kinds
                .push(value["eventType"].as_str().unwrap().to_owned());
            entry.seq_nos.push(value["seqNo"].as_i64().unwrap());
        }
    }
    Ok(())
}

fn run(version: OcppVersion, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut t = Transactions::new(version, "CP-");
    let mut queue_seq = 0u64;
    // 1.6: StartTransactions not answered, in order; ids given by their seq.
    let mut unanswered: Vec<u64> = Vec::new();
    let mut given: HashMap<u64, i32> = HashMap::new();
    // By transaction key: 2.x id, 1.6 start seq.
    let mut seen: BTreeMap<String, Seen> = BTreeMap::new();
    let mut meter = 0i64;
    for op in ops {
        match op {
            Op::Start { evse, remote } => {
                queue_seq += 1;
                let mut start = Start::new(Evse::new(evse), token(), meter, at(queue_seq as i64));
                if remote {
                    start = start.with_remote_start_id(evse);
                }
                let open_before = t.get(evse).is_some();
                match t.start(start, queue_seq) {
                    Ok(message) => {
                        prop_assert!(!open_before);
                        if version == OcppVersion::V1_6 {
                            unanswered.push(queue_seq);
                        }
                        record(version, message, queue_seq, &given, &mut seen)?;
                    }
                    Err(e) => prop_assert_eq!(e, TransactionError::Busy(evse)),
                }
            }
            Op::Meter { evse, wh } => {
                queue_seq += 1;
                meter += i64::from(wh);
                match t.meter(evse, meter, at(queue_seq as i64)) {
                    Ok(message) => record(version, message, queue_seq, &given, &mut seen)?,
                    Err(e) => prop_assert_eq!(e, TransactionError::NotOpen(evse)),
                }
            }
            Op::Stop { evse } => {
                queue_seq += 1;
                match t.stop(evse, meter, at(queue_seq as i64), StationStopReason::Local) {
                    Ok(message) => record(version, message, queue_seq, &given, &mut seen)?,
                    Err(e) => prop_assert_eq!(e, TransactionError::NotOpen(evse)),
                }
            }
            Op::Answer => {
                if !unanswered.is_empty() {
                    let start = unanswered.remove(0);
                    let id = 1000 + start as i32;
                    given.insert(start, id);
                    let given_to = TransactionRef::Given(id);
                    match t.on_transaction_id(start, id) {
                        Some(evse) if t.get(evse).is_some_and(|o| o.id == given_to) => {
                            prop_assert_eq!(t.transaction_id(evse), Some(id.to_string()));
                        }
                        // Ended before its answer: the id is kept with it.
                        Some(_) => prop_assert!(t.ended().any(|e| e.id == given_to)),
                        // Ended longer ago than what is kept.
                        None => prop_assert!(t.ended().count() == MAX_ENDED),
                    }
                }
            }
            Op::Restart { end } => {
                let known: Vec<(i32, Option<String>)> = t
                    .open()
                    .map(|o| (o.evse.id, t.transaction_id(o.evse.id)))
                    .collect();
                let ended: Vec<TransactionRef> = t.ended().map(|e| e.id.clone()).collect();
                t = Transactions::from_snapshot(&t.to_snapshot()).unwrap();
                // 1.6 ids once known are kept, of ended transactions too.
                prop_assert_eq!(ended, t.ended().map(|e| e.id.clone()).collect::<Vec<_>>());
                for (evse, id) in known {
                    // 1.6 ids once known are kept.
                    prop_assert_eq!(t.transaction_id(evse), id);
                    if end {
                        queue_seq += 1;
                        let message = t.end_after_power_loss(evse, at(queue_seq as i64)).unwrap();
                        record(version, message, queue_seq, &given, &mut seen)?;
                    }
                }
            }
        }
    }
    // The last restart ends everything.
    let open: Vec<i32> = t.open().map(|o| o.evse.id).collect();
    for evse in open {
        queue_seq += 1;
        let message = t.end_after_power_loss(evse, at(queue_seq as i64)).unwrap();
        record(version, message, queue_seq, &given, &mut seen)?;
    }
    for (key, s) in &seen {
        // Started once, first; Ended once, last; Updated between.
        prop_assert_eq!(
            s.kinds.first().map(String::as_str),
            Some("Started"),
            "{}",
            key
        );
        prop_assert_eq!(s.kinds.last().map(String::as_str), Some("Ended"), "{}", key);
        prop_assert_eq!(s.kinds.iter().filter(|k| *k == "Started").count(), 1);
        prop_assert_eq!(s.kinds.iter().filter(|k| *k == "Ended").count(), 1);
        if version != OcppVersion::V1_6 {
            let expected: Vec<i64> = (0..s.kinds.len() as i64).collect();
            prop_assert_eq!(&s.seq_nos, &expected, "{}", key);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn transactions_start_once_end_once_seq_nos_count(
        version in 0..3usize,
        ops in proptest::collection::vec(op(), 0..60),
    ) {
        run(OcppVersion::ALL[version], ops)?;
    }
}
