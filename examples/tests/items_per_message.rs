//! Issue 14: GetVariables / SetVariables split by the station's
//! `DeviceDataCtrlr.ItemsPerMessage`, end to end on loopback sockets against both servers.
//! A 2.0.1 station (the wire-level client of `octt/mod.rs`) reports its limits in a
//! NotifyReport; admin commands with more entries than the limit arrive as several CALLs
//! (checked on the wire), and the admin caller gets one answer.

mod common;
#[macro_use]
mod octt;

use common::*;
use octt::*;
use serde_json::json;

const V201: &str = "ocpp2.0.1";

/// Connects `identity` and boots it (Accepted).
fn booted(server: &ServerProcess, identity: &str) -> Ws {
    let mut ws = connect(server, identity, V201);
    let station = json!({"vendorName": "ACME", "model": "AC-22"});
    let boot = ws.result(
        "BootNotification",
        json!({"reason": "PowerUp", "chargingStation": station}),
    );
    assert_eq!(boot["status"], "Accepted");
    ws
}

/// A NotifyReport entry of `DeviceDataCtrlr.ItemsPerMessage[instance]` with Actual `value`.
fn items_entry(instance: &str, value: &str) -> Value {
    json!({
        "component": {"name": "DeviceDataCtrlr"},
        "variable": {"name": "ItemsPerMessage", "instance": instance},
        "variableAttribute": [{"type": "Actual", "value": value, "mutability": "ReadOnly"}],
    })
}

/// The station reports GetVariables=2 and SetVariables=3 (and one unrelated variable).
fn report_limits(ws: &mut Ws) {
    let other = json!({
        "component": {"name": "DeviceDataCtrlr"},
        "variable": {"name": "BytesPerMessage", "instance": "GetVariables"},
        "variableAttribute": [{"value": "4096"}],
    });
    let payload = json!({
        "requestId": 1, "generatedAt": T0, "seqNo": 0, "tbc": false,
        "reportData": [items_entry("GetVariables", "2"), other, items_entry("SetVariables", "3")],
    });
    assert_eq!(ws.result("NotifyReport", payload), json!({}));
}

fn get_data(i: usize) -> Value {
    json!({"component": {"name": "Ctrlr"}, "variable": {"name": format!("V{i}")}})
}

fn set_data(i: usize) -> Value {
    json!({"component": {"name": "Ctrlr"}, "variable": {"name": format!("V{i}")},
           "attributeValue": format!("{i}")})
}

/// The station's result for one getVariableData entry.
fn get_result(data: &Value) -> Value {
    let name = data["variable"]["name"].as_str().unwrap_or_default();
    json!({"attributeStatus": "Accepted", "component": data["component"],
           "variable": data["variable"], "attributeValue": format!("value of {name}")})
}

fn set_result(data: &Value) -> Value {
    json!({"attributeStatus": "Accepted", "component": data["component"],
           "variable": data["variable"]})
}

/// How the station answers chunk `n` (0-based): a CALLRESULT, or a CALLERROR.
enum Chunk {
    Answer,
    Fail(&'static str),
}

/// `POST /chargepoints/{identity}/call/{action}` with `entries` in `list`; the station takes
/// every CALL, checks it is `action`, answers each entry with `result` (or the chunk's
/// CALLERROR), and stops after a failed chunk. Returns the entries of each CALL as received,
/// and the admin status and body.
fn run(
    server: &ServerProcess,
    ws: &mut Ws,
    identity: &str,
    action: &str,
    entries: Vec<Value>,
    answers: &[Chunk],
) -> (Vec<Vec<Value>>, u16, Value) {
    let (list, results) = match action {
        "GetVariables" => ("getVariableData", "getVariableResult"),
        _ => ("setVariableData", "setVariableResult"),
    };
    let admin = server.admin;
    let path = format!("/chargepoints/{identity}/call/{action}");
    let text = json!({ list: entries }).to_string();
    let request = std::thread::spawn(move || http(admin, "POST", &path, &text));
    let mut received = Vec::new();
    for answer in answers {
        let (id, got, payload) = ws.expect_call();
        assert_eq!(got, action);
        let chunk = payload[list].as_array().cloned().unwrap_or_default();
        received.push(chunk.clone());
        match answer {
            Chunk::Answer => {
                let answered: Vec<Value> = chunk
                    .iter()
                    .map(|d| match action {
                        "GetVariables" => get_result(d),
                        _ => set_result(d),
                    })
                    .collect();
                ws.reply(&id, json!({ results: answered }));
            }
            Chunk::Fail(code) => {
                ws.reply_error(&id, code);
                break;
            }
        }
    }
    let (status, text) = request.join().expect("the admin request");
    (received, status, json(&text))
}

fn names(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .map(|e| {
            e["variable"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

fn get_variables_split_2_2_1(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CS-IPM-GET");
    report_limits(&mut ws);
    let state = charge_point_state(&server, "CS-IPM-GET");
    assert_eq!(
        state["items_per_message"],
        json!({"GetVariables": 2, "SetVariables": 3})
    );
    let entries: Vec<Value> = (1..=5).map(get_data).collect();
    let answers = [Chunk::Answer, Chunk::Answer, Chunk::Answer];
    let (received, status, body) = run(
        &server,
        &mut ws,
        "CS-IPM-GET",
        "GetVariables",
        entries.clone(),
        &answers,
    );
    let sizes: Vec<usize> = received.iter().map(Vec::len).collect();
    assert_eq!(sizes, [2, 2, 1]);
    assert_eq!(
        received.concat(),
        entries,
        "the entries, in order, once each"
    );
    assert_eq!(status, 200, "{body}");
    let results = body["result"]["getVariableResult"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(names(&results), ["V1", "V2", "V3", "V4", "V5"], "{body}");
    assert_eq!(results[4]["attributeValue"], "value of V5");
    assert_eq!(body["chunks"], 3);
    ws.close();
}

fn set_variables_split_3_2(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CS-IPM-SET");
    report_limits(&mut ws);
    let entries: Vec<Value> = (1..=5).map(set_data).collect();
    let (received, status, body) = run(
        &server,
        &mut ws,
        "CS-IPM-SET",
        "SetVariables",
        entries.clone(),
        &[Chunk::Answer, Chunk::Answer],
    );
    let sizes: Vec<usize> = received.iter().map(Vec::len).collect();
    assert_eq!(sizes, [3, 2]);
    assert_eq!(received.concat(), entries);
    assert_eq!(status, 200, "{body}");
    let results = body["result"]["setVariableResult"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(names(&results), ["V1", "V2", "V3", "V4", "V5"], "{body}");
    ws.close();
}

fn failed_chunk_gives_partial_results(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CS-IPM-ERR");
    report_limits(&mut ws);
    let entries: Vec<Value> = (1..=5).map(get_data).collect();
    let answers = [Chunk::Answer, Chunk::Fail("InternalError")];
    let (received, status, body) = run(
        &server,
        &mut ws,
        "CS-IPM-ERR",
        "GetVariables",
        entries,
        &answers,
    );
    assert_eq!(received.len(), 2, "no CALL after the failed chunk");
    // As a single CALL answered with a CALLERROR: 502 with the error.
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], "InternalError", "{body}");
    assert_eq!(body["failed_chunk"], 2, "{body}");
    assert_eq!(body["chunks"], 3, "{body}");
    let partial = body["partial_result"]["getVariableResult"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(names(&partial), ["V1", "V2"], "{body}");
    // The station is still usable: the next command goes.
    let (received, status, _) = run(
        &server,
        &mut ws,
        "CS-IPM-ERR",
        "GetVariables",
        vec![get_data(9)],
        &[Chunk::Answer],
    );
    assert_eq!((received.len(), status), (1, 200));
    ws.close();
}

/// The station disconnects with the second chunk unanswered: the admin caller gets what a
/// disconnect gives (504, the second chunk may have run) with the first chunk's results.
fn disconnect_during_a_split(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CS-IPM-GONE");
    report_limits(&mut ws);
    let entries: Vec<Value> = (1..=5).map(get_data).collect();
    let admin = server.admin;
    let text = json!({ "getVariableData": entries }).to_string();
    let request = std::thread::spawn(move || {
        http(
            admin,
            "POST",
            "/chargepoints/CS-IPM-GONE/call/GetVariables",
            &text,
        )
    });
    let (id, _, payload) = ws.expect_call();
    let first: Vec<Value> = payload["getVariableData"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let answered: Vec<Value> = first.iter().map(get_result).collect();
    ws.reply(&id, json!({ "getVariableResult": answered }));
    let (_, action, payload) = ws.expect_call();
    assert_eq!(action, "GetVariables");
    assert_eq!(
        names(payload["getVariableData"].as_array().unwrap()),
        ["V3", "V4"]
    );
    ws.close();
    let (status, text) = request.join().expect("the admin request");
    let body = json(&text);
    assert_eq!(status, 504, "{body}");
    assert_eq!(body["outcome"], "disconnected", "{body}");
    assert_eq!(body["failed_chunk"], 2, "{body}");
    let partial = body["partial_result"]["getVariableResult"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(names(&partial), ["V1", "V2"], "{body}");
}

fn no_limit_known_one_call(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CS-IPM-NONE");
    let state = charge_point_state(&server, "CS-IPM-NONE");
    assert_eq!(
        state["items_per_message"],
        json!({"GetVariables": null, "SetVariables": null})
    );
    let entries: Vec<Value> = (1..=5).map(get_data).collect();
    let (received, status, body) = run(
        &server,
        &mut ws,
        "CS-IPM-NONE",
        "GetVariables",
        entries.clone(),
        &[Chunk::Answer],
    );
    assert_eq!(received, [entries]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["result"]["getVariableResult"].as_array().map(Vec::len),
        Some(5)
    );
    assert!(body.get("chunks").is_none(), "not split: {body}");
    ws.close();
}

/// `--items-per-message 2`: the default for a station that reported nothing; its own report
/// wins once it comes.
fn default_limit_from_the_command_line(binary: &str) {
    let server = ServerProcess::start(binary, &["--items-per-message", "2"]);
    let mut ws = booted(&server, "CS-IPM-DEFAULT");
    let entries: Vec<Value> = (1..=5).map(get_data).collect();
    let (received, status, _) = run(
        &server,
        &mut ws,
        "CS-IPM-DEFAULT",
        "GetVariables",
        entries.clone(),
        &[Chunk::Answer, Chunk::Answer, Chunk::Answer],
    );
    let sizes: Vec<usize> = received.iter().map(Vec::len).collect();
    assert_eq!((sizes, status), (vec![2, 2, 1], 200));
    let payload = json!({
        "requestId": 1, "generatedAt": T0, "seqNo": 0,
        "reportData": [items_entry("GetVariables", "4")],
    });
    assert_eq!(ws.result("NotifyReport", payload), json!({}));
    let (received, status, _) = run(
        &server,
        &mut ws,
        "CS-IPM-DEFAULT",
        "GetVariables",
        entries,
        &[Chunk::Answer, Chunk::Answer],
    );
    let sizes: Vec<usize> = received.iter().map(Vec::len).collect();
    assert_eq!((sizes, status), (vec![4, 1], 200));
    ws.close();
}

/// The limit learned from the result of our own GetVariables of ItemsPerMessage.
fn limit_learned_from_get_variables(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CS-IPM-LEARN");
    let data = json!({"component": {"name": "DeviceDataCtrlr"},
                      "variable": {"name": "ItemsPerMessage", "instance": "SetVariables"}});
    let admin = server.admin;
    let text = json!({"getVariableData": [data]}).to_string();
    let request = std::thread::spawn(move || {
        http(
            admin,
            "POST",
            "/chargepoints/CS-IPM-LEARN/call/GetVariables",
            &text,
        )
    });
    let (id, action, _) = ws.expect_call();
    assert_eq!(action, "GetVariables");
    let mut result = get_result(&data);
    result["attributeValue"] = json!("2");
    ws.reply(&id, json!({"getVariableResult": [result]}));
    let (status, _) = request.join().expect("the admin request");
    assert_eq!(status, 200);
    let state = charge_point_state(&server, "CS-IPM-LEARN");
    assert_eq!(
        state["items_per_message"],
        json!({"GetVariables": null, "SetVariables": 2})
    );
    let entries: Vec<Value> = (1..=3).map(set_data).collect();
    let (received, status, _) = run(
        &server,
        &mut ws,
        "CS-IPM-LEARN",
        "SetVariables",
        entries,
        &[Chunk::Answer, Chunk::Answer],
    );
    let sizes: Vec<usize> = received.iter().map(Vec::len).collect();
    assert_eq!((sizes, status), (vec![2, 1], 200));
    ws.close();
}

/// `--call-timeout-s 2` with a split command: each chunk's answer is due within the call
/// timeout of its writing, the command has one per chunk in all, and a chunk that is not
/// answered in time ends the command. The station answers the first chunk after 1.5 s and
/// leaves the second unanswered: the admin caller gets 504 (`timeout`, chunk 2) by 3.5 s and
/// a little, and the third chunk is never sent.
fn a_split_command_has_one_deadline(binary: &str) {
    let server = ServerProcess::start(
        binary,
        &["--items-per-message", "1", "--call-timeout-s", "2"],
    );
    let mut ws = booted(&server, "CS-IPM-DEADLINE");
    let entries: Vec<Value> = (1..=3).map(set_data).collect();
    let admin = server.admin;
    let text = json!({ "setVariableData": entries }).to_string();
    let request = std::thread::spawn(move || {
        let asked = Instant::now();
        let path = "/chargepoints/CS-IPM-DEADLINE/call/SetVariables";
        let answer = http(admin, "POST", path, &text);
        (answer, asked.elapsed())
    });
    let (id, action, payload) = ws.expect_call();
    assert_eq!(action, "SetVariables");
    std::thread::sleep(Duration::from_millis(1_500));
    let chunk = payload["setVariableData"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let answered: Vec<Value> = chunk.iter().map(set_result).collect();
    ws.reply(&id, json!({ "setVariableResult": answered }));
    let (_, action, payload) = ws.expect_call();
    assert_eq!(action, "SetVariables");
    assert_eq!(
        names(payload["setVariableData"].as_array().unwrap()),
        ["V2"]
    );
    let ((status, body), took) = request.join().expect("the admin request");
    assert_eq!(status, 504, "{body}");
    assert_eq!(json(&body)["outcome"], "timeout", "{body}");
    assert_eq!(json(&body)["failed_chunk"], 2, "{body}");
    assert!(
        took <= Duration::from_millis(4_200),
        "answered after {took:?}: {body}"
    );
    // Nothing more for this command: the next message is the answer to our Heartbeat.
    std::thread::sleep(Duration::from_millis(500));
    ws.result("Heartbeat", json!({}));
    ws.close();
}

on_both_servers!(
    a_split_command_has_one_deadline,
    get_variables_split_2_2_1,
    set_variables_split_3_2,
    failed_chunk_gives_partial_results,
    disconnect_during_a_split,
    no_limit_known_one_call,
    limit_learned_from_get_variables,
    default_limit_from_the_command_line,
);
