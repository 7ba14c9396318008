//! GetVariables and SetVariables split by the station's `DeviceDataCtrlr.ItemsPerMessage`
//! (OCPP 2.0.1 / 2.1 Part 2, B06 and B05: the CSMS sends no more `getVariableData` /
//! `setVariableData` entries in one request than the station accepts).
//!
//! - **Learning the limit.** [`Csms::on_call`](super::Csms::on_call) reads every NotifyReport
//!   `reportData` entry of component `DeviceDataCtrlr`, variable `ItemsPerMessage`, instance
//!   `GetVariables` or `SetVariables`, from its `Actual` attribute (an entry without a type
//!   is Actual); [`Csms::on_call_completed`](super::Csms::on_call_completed) reads the
//!   Accepted results of our own GetVariables for the same variable. The last value seen
//!   wins; a value that is not a positive integer is ignored. The admin API shows it as
//!   `items_per_message: {"GetVariables": n|null, "SetVariables": n|null}` in
//!   `GET /chargepoints/ID`.
//! - **Unknown limit: one message.** Until the station has told us, a command goes as the
//!   admin caller wrote it, in one CALL (the station may then answer with a CALLERROR or
//!   reject entries; that is its answer to show), unless the server was given a default
//!   with `--items-per-message N` ([`CsmsConfig::items_per_message`](super::CsmsConfig::items_per_message)),
//!   which counts for every station that has not reported its own. BytesPerMessage is not
//!   taken into account.
//! - **Splitting.** [`SplitCall::plan`] cuts the request's list into consecutive chunks of at
//!   most the limit, in order, each a typed request decoded for the station's version. The
//!   I/O loop sends [`SplitCall::next_request`], one CALL in flight at a time (OCPP-J §4.1.1),
//!   and hands each outcome to [`SplitCall::complete`], which says when to stop and how it
//!   ended ([`SplitEnd`]): the results concatenated in the request's order, or the failure of
//!   the chunk in flight, with [`SplitCall::failed_chunk`] and the
//!   [`SplitCall::partial_result`] of the chunks that succeeded. The admin API turns that
//!   into one answer (its `split_response` and `split_failed`); this module knows no
//!   HTTP.
//! - **Cluster: not split.** A command for a station held by another node travels as one raw
//!   payload with one deadline (the call timeout) and comes back as one outcome; a CALLERROR
//!   there cannot carry the results of the chunks that succeeded, and several chunks may need
//!   longer than the deadline. Without changing the cluster protocol, the holder sends such a
//!   command as one CALL, as before.
//!
//! ```
//! use ocpp_reference_csms::items_per_message::SplitCall;
//! use ocpp_reference_csms::command::decode_command;
//! use ocpp_messages::version::OcppVersion;
//!
//! let entry = r#"{"component":{"name":"C"},"variable":{"name":"V"}}"#;
//! let body = format!(r#"{{"getVariableData":[{entry},{entry},{entry}]}}"#);
//! let request = decode_command(OcppVersion::V2_0_1, "GetVariables", &body).unwrap();
//! let mut split = SplitCall::plan(OcppVersion::V2_0_1, &request, 2).unwrap().unwrap();
//! assert_eq!(split.chunks(), 2);
//! assert!(split.next_request().is_some());
//! ```

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use ocpp_messages::version::OcppVersion;
use ocpp_proto::{CallFailure, CallOutcome, Request};
use serde_json::{json, Value};

use crate::command::decode_command;

/// A station's `DeviceDataCtrlr.ItemsPerMessage`, as far as we know it (`None`: unknown).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ItemsPerMessage {
    /// Instance `GetVariables`: the most `getVariableData` entries in one GetVariables.
    pub get_variables: Option<usize>,
    /// Instance `SetVariables`: the most `setVariableData` entries in one SetVariables.
    pub set_variables: Option<usize>,
}

impl ItemsPerMessage {
    /// The limit for `action` (`None`: unknown, or an action that is not split).
    pub fn limit(&self, action: &str) -> Option<usize> {
        match action {
            "GetVariables" => self.get_variables,
            "SetVariables" => self.set_variables,
            _ => None,
        }
    }

    /// Learns from a NotifyReport payload (its `reportData` entries).
    pub fn learn_from_report(&mut self, payload: &Value) {
        let Some(entries) = payload["reportData"].as_array() else {
            return;
        };
        for entry in entries {
            let Some(attributes) = entry["variableAttribute"].as_array() else {
                continue;
            };
            let actual = attributes
                .iter()
                .find(|a| matches!(a["type"].as_str(), None | Some("Actual")));
            if let Some(value) = actual.and_then(|a| a["value"].as_str()) {
                self.learn(entry, value);
            }
        }
    }

    /// Learns from the CALLRESULT of a GetVariables (its Accepted `getVariableResult`s).
    pub fn learn_from_get_variables(&mut self, payload: &Value) {
        let Some(results) = payload["getVariableResult"].as_array() else {
            return;
        };
        for result in results {
            let accepted = result["attributeStatus"] == "Accepted"
                && matches!(result["attributeType"].as_str(), None | Some("Actual"));
            if let (true, Some(value)) = (accepted, result["attributeValue"].as_str()) {
                self.learn(result, value);
            }
        }
    }

    /// One component/variable pair with its value, if it is ItemsPerMessage.
    fn learn(&mut self, entry: &Value, value: &str) {
        if entry["component"]["name"] != "DeviceDataCtrlr"
            || entry["variable"]["name"] != "ItemsPerMessage"
        {
            return;
        }
        let Some(limit) = value.trim().parse::<usize>().ok().filter(|n| *n > 0) else {
            return;
        };
        match entry["variable"]["instance"].as_str() {
            Some("GetVariables") => self.get_variables = Some(limit),
            Some("SetVariables") => self.set_variables = Some(limit),
            _ => {}
        }
    }

    /// As the admin API shows it.
    pub fn to_json(&self) -> Value {
        json!({ "GetVariables": self.get_variables, "SetVariables": self.set_variables })
    }
}

/// The list a split action carries and the list its answer carries.
fn lists(action: &str) -> Option<(&'static str, &'static str)> {
    match action {
        "GetVariables" => Some(("getVariableData", "getVariableResult")),
        "SetVariables" => Some(("setVariableData", "setVariableResult")),
        _ => None,
    }
}

/// A GetVariables or SetVariables cut into consecutive CALLs of at most the station's
/// limit, and the results of the chunks answered so far.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitCall {
    version: OcppVersion,
    action: &'static str,
    result_key: &'static str,
    pending: VecDeque<Request>,
    chunks: usize,
    /// Chunks sent so far (the one in flight included).
    sent: usize,
    results: Vec<Value>,
    /// A [`SplitCall::sequence`]: each answer kept whole, under `result_key`.
    whole: bool,
}

impl SplitCall {
    /// Cuts `request` into chunks of at most `limit` entries: `Ok(None)` when it need not be
    /// split (another action, or no more entries than the limit), `Err` when a chunk does
    /// not decode (it should: each is a part of a valid request).
    pub fn plan(
        version: OcppVersion,
        request: &Request,
        limit: usize,
    ) -> Result<Option<SplitCall>, String> {
        let action = request.action();
        let Some((list_key, result_key)) = lists(action) else {
            return Ok(None);
        };
        let payload = serde_json::to_value(request).map_err(|e| e.to_string())?;
        let Some(entries) = payload[list_key].as_array() else {
            return Ok(None);
        };
        let limit = limit.max(1);
        if entries.len() <= limit {
            return Ok(None);
        }
        let mut pending = VecDeque::new();
        for chunk in entries.chunks(limit) {
            let mut part = payload.clone();
            part[list_key] = Value::Array(chunk.to_vec());
            let request = decode_command(version, action, &part.to_string())
                .map_err(|e| format!("{action} chunk: {e}"))?;
            pending.push_back(request);
        }
        Ok(Some(SplitCall {
            version,
            action,
            result_key,
            chunks: pending.len(),
            pending,
            sent: 0,
            results: Vec::new(),
            whole: false,
        }))
    }

    /// Several whole CALLs of one action sent one after another as one command (e.g. a
    /// SetChargingProfile per EVSE when the operator changes a site limit,
    /// [`super::smart_charging`]): the answer lists each CALLRESULT's payload in order under
    /// `result.results`; a failure stops the sequence as for chunks. `None` for an empty list.
    pub fn sequence(version: OcppVersion, requests: Vec<Request>) -> Option<SplitCall> {
        let action = requests.first()?.action();
        Some(SplitCall {
            version,
            action,
            result_key: "results",
            chunks: requests.len(),
            pending: requests.into(),
            sent: 0,
            results: Vec::new(),
            whole: true,
        })
    }

    /// How many CALLs in all.
    pub fn chunks(&self) -> usize {
        self.chunks
    }

    /// The whole command's deadline when it starts at `start`: a call timeout per chunk
    /// (each chunk's answer is due within `call_timeout` of its writing, the core's rule, so
    /// the chunks of a station that answers in time always fit). Every chunk is sent with
    /// it: one still queued behind other CALLs then is never written (both servers).
    ///
    /// ```
    /// # use std::time::{Duration, Instant};
    /// # use ocpp_reference_csms::items_per_message::SplitCall;
    /// # fn three_chunks(split: &SplitCall, start: Instant) {
    /// assert_eq!(split.deadline(start, Duration::from_secs(30)), start + Duration::from_secs(90));
    /// # }
    /// ```
    pub fn deadline(&self, start: Instant, call_timeout: Duration) -> Instant {
        let chunks = u32::try_from(self.chunks).unwrap_or(u32::MAX);
        start + call_timeout.saturating_mul(chunks)
    }

    /// The action (`GetVariables` or `SetVariables`; any for a [`SplitCall::sequence`]).
    pub fn action(&self) -> &'static str {
        self.action
    }

    /// The next CALL to send, once the previous one was answered; `None` when all were sent.
    pub fn next_request(&mut self) -> Option<Request> {
        let next = self.pending.pop_front()?;
        self.sent += 1;
        Some(next)
    }

    /// The outcome of the CALL in flight: `None` to send the next one, or how the whole
    /// command ended (all done, or this chunk failed).
    pub fn complete(&mut self, outcome: &CallOutcome) -> Option<SplitEnd> {
        let response = match outcome {
            Ok(response) => response,
            Err(failure) => return Some(SplitEnd::Failed(failure.clone())),
        };
        let payload = serde_json::to_value(response).unwrap_or(Value::Null);
        if self.whole {
            self.results.push(payload);
        } else if let Some(results) = payload[self.result_key].as_array() {
            self.results.extend(results.iter().cloned());
        } else {
            let description = format!("the CALLRESULT has no {}", self.result_key);
            return Some(SplitEnd::Unreadable(description));
        }
        self.pending
            .is_empty()
            .then(|| SplitEnd::Done(self.partial_result()))
    }

    /// The OCPP version the chunks were decoded for.
    pub fn version(&self) -> OcppVersion {
        self.version
    }

    /// The chunk in flight, 1-based (the one that failed when the command stops early).
    pub fn failed_chunk(&self) -> usize {
        self.sent.max(1)
    }

    /// The results of the chunks answered so far, in order: `{list: [...]}` under the
    /// answer's list (`getVariableResult`, `setVariableResult`; `results`, each CALLRESULT
    /// whole, for a [`SplitCall::sequence`]).
    pub fn partial_result(&self) -> Value {
        json!({ self.result_key: self.results })
    }
}

/// How a [`SplitCall`] ended, for the driver to answer its caller.
#[derive(Debug, Clone, PartialEq)]
pub enum SplitEnd {
    /// Every CALL was answered: the results in order ([`SplitCall::partial_result`], now
    /// whole).
    Done(Value),
    /// The CALL in flight failed (CALLERROR, timeout, not sent...): the command stops there.
    Failed(CallFailure),
    /// The CALLRESULT in flight has no list of results: the command stops there.
    Unreadable(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocpp_messages::error_code::ErrorCode;
    use ocpp_messages::v2_0_1;
    use ocpp_proto::CallFailure;

    const V201: OcppVersion = OcppVersion::V2_0_1;

    fn entry(i: usize) -> Value {
        json!({"component": {"name": "C"}, "variable": {"name": format!("V{i}")}})
    }

    fn get_variables(n: usize) -> Request {
        let body = json!({ "getVariableData": (1..=n).map(entry).collect::<Vec<_>>() });
        crate::command::decode_command(V201, "GetVariables", &body.to_string()).unwrap()
    }

    fn names(list: &Value) -> Vec<String> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|e| e["variable"]["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The station's answer to one chunk: each entry Accepted.
    fn answer(request: &Request) -> CallOutcome {
        let payload = serde_json::to_value(request).unwrap();
        let results: Vec<Value> = payload["getVariableData"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                json!({"attributeStatus": "Accepted", "component": d["component"],
                            "variable": d["variable"]})
            })
            .collect();
        let text = json!({ "getVariableResult": results }).to_string();
        let response: v2_0_1::GetVariablesResponse = serde_json::from_str(&text).unwrap();
        Ok(v2_0_1::Response::from(response).into())
    }

    #[test]
    fn plan_cuts_in_order_and_only_past_the_limit() {
        let mut split = SplitCall::plan(V201, &get_variables(5), 2)
            .unwrap()
            .unwrap();
        assert_eq!((split.chunks(), split.action()), (3, "GetVariables"));
        let mut seen = Vec::new();
        while let Some(request) = split.next_request() {
            let payload = serde_json::to_value(&request).unwrap();
            seen.push(names(&payload["getVariableData"]));
        }
        assert_eq!(seen, [vec!["V1", "V2"], vec!["V3", "V4"], vec!["V5"]]);
        assert_eq!(SplitCall::plan(V201, &get_variables(2), 2).unwrap(), None);
        assert_eq!(SplitCall::plan(V201, &get_variables(1), 5).unwrap(), None);
        // A limit of 0 is taken as 1 (the learners never store 0).
        let split = SplitCall::plan(V201, &get_variables(3), 0)
            .unwrap()
            .unwrap();
        assert_eq!(split.chunks(), 3);
        let reset =
            crate::command::decode_command(V201, "Reset", r#"{"type":"Immediate"}"#).unwrap();
        assert_eq!(SplitCall::plan(V201, &reset, 1).unwrap(), None);
    }

    #[test]
    fn complete_merges_the_results_in_order() {
        let mut split = SplitCall::plan(V201, &get_variables(5), 2)
            .unwrap()
            .unwrap();
        let mut answers = 0;
        let end = loop {
            let request = split.next_request().unwrap();
            answers += 1;
            if let Some(end) = split.complete(&answer(&request)) {
                break end;
            }
        };
        assert_eq!(answers, 3);
        let SplitEnd::Done(result) = end else {
            panic!("{end:?}")
        };
        assert_eq!(
            names(&result["getVariableResult"]),
            ["V1", "V2", "V3", "V4", "V5"]
        );
    }

    #[test]
    fn a_failed_chunk_stops_with_the_partial_results() {
        let mut split = SplitCall::plan(V201, &get_variables(5), 2)
            .unwrap()
            .unwrap();
        let first = split.next_request().unwrap();
        assert_eq!(split.complete(&answer(&first)), None);
        split.next_request().unwrap();
        let error = CallFailure::ErrorResponse {
            code: ErrorCode::InternalError,
            description: "boom".into(),
            details: "{}".into(),
        };
        assert_eq!(
            split.complete(&Err(error.clone())),
            Some(SplitEnd::Failed(error))
        );
        assert_eq!((split.failed_chunk(), split.chunks()), (2, 3));
        assert_eq!(
            names(&split.partial_result()["getVariableResult"]),
            ["V1", "V2"]
        );

        let mut split = SplitCall::plan(V201, &get_variables(3), 2)
            .unwrap()
            .unwrap();
        split.next_request().unwrap();
        let timeout = split.complete(&Err(CallFailure::Timeout));
        assert_eq!(timeout, Some(SplitEnd::Failed(CallFailure::Timeout)));
        assert_eq!(split.failed_chunk(), 1);
        assert_eq!(split.partial_result()["getVariableResult"], json!([]));
    }

    #[test]
    fn limits_learned_from_reports_and_results() {
        let item = |instance: &str, kind: Option<&str>, value: &str| {
            let mut attribute = json!({ "value": value });
            if let Some(kind) = kind {
                attribute["type"] = json!(kind);
            }
            json!({"component": {"name": "DeviceDataCtrlr"},
                   "variable": {"name": "ItemsPerMessage", "instance": instance},
                   "variableAttribute": [attribute]})
        };
        let mut limits = ItemsPerMessage::default();
        assert_eq!(limits.limit("GetVariables"), None);
        limits.learn_from_report(&json!({"reportData": [
            item("GetVariables", Some("Actual"), "4"),
            item("SetVariables", None, "7"),
            item("GetVariables", Some("Target"), "9"),
        ]}));
        assert_eq!(
            (limits.get_variables, limits.set_variables),
            (Some(4), Some(7))
        );
        // Not a positive integer, another variable or component: ignored.
        limits.learn_from_report(&json!({"reportData": [
            item("GetVariables", None, "0"),
            item("SetVariables", None, "many"),
            {"component": {"name": "Other"}, "variable": {"name": "ItemsPerMessage",
             "instance": "GetVariables"}, "variableAttribute": [{"value": "1"}]},
        ]}));
        assert_eq!(
            (limits.limit("GetVariables"), limits.limit("SetVariables")),
            (Some(4), Some(7))
        );
        assert_eq!(limits.limit("Reset"), None);
        limits.learn_from_get_variables(&json!({"getVariableResult": [
            {"attributeStatus": "Accepted", "attributeValue": "3",
             "component": {"name": "DeviceDataCtrlr"},
             "variable": {"name": "ItemsPerMessage", "instance": "GetVariables"}},
            {"attributeStatus": "Rejected", "attributeValue": "1",
             "component": {"name": "DeviceDataCtrlr"},
             "variable": {"name": "ItemsPerMessage", "instance": "SetVariables"}},
        ]}));
        assert_eq!(
            limits.to_json(),
            json!({"GetVariables": 3, "SetVariables": 7})
        );
        // Garbage does not panic.
        limits.learn_from_report(&json!({"reportData": 5}));
        limits.learn_from_get_variables(&Value::Null);
    }
}
