//! Which messages are transaction-related: those a station keeps in its offline queue and
//! delivers in order once the CSMS is reachable again (OCPP 1.6 §4.7, §4.8 and §4.10 with
//! "Transaction-related messages" in §3.16; OCPP 2.0.1 and 2.1 E and the
//! `MessageAttempts` rules of Part 2 §"Transaction-related message").
//!
//! OCPP 1.6: StartTransaction, StopTransaction, and MeterValues that belong to a transaction
//! (with a `transactionId`). OCPP 2.0.1 and 2.1: TransactionEvent.
//!
//! A 1.6 station queues a StartTransaction while offline and learns the transaction's id only
//! from its answer; [`transaction_id_of`] reads it there, and [`with_transaction_id`] puts it
//! into the queued StopTransaction and MeterValues that used a provisional id.

use ocpp_messages::{OcppVersion, Request, RequestRef, Response};

#[cfg(feature = "v1_6")]
use ocpp_messages::ResponseRef;

#[cfg(feature = "v1_6")]
use ocpp_messages::v1_6;
#[cfg(feature = "v2_0_1")]
use ocpp_messages::v2_0_1;
#[cfg(feature = "v2_1")]
use ocpp_messages::v2_1;

/// Whether `request` is a transaction-related message: 1.6 StartTransaction, StopTransaction,
/// or MeterValues with a `transactionId`; 2.0.1 and 2.1 TransactionEvent.
///
/// ```
/// use ocpp_proto::station::is_transaction_message;
/// use ocpp_proto::{v1_6, Request};
///
/// let sampled = vec![v1_6::SampledValue::new("12.5")];
/// let time = ocpp_proto::DateTime::from_unix_timestamp(1_780_000_000).unwrap();
/// let meter = v1_6::MeterValuesRequest::new(1, vec![v1_6::MeterValue::new(time, sampled)]);
/// assert!(!is_transaction_message(&Request::from(meter.clone())));
/// assert!(is_transaction_message(&Request::from(meter.with_transaction_id(42))));
/// ```
pub fn is_transaction_message(request: &Request) -> bool {
    match request.view() {
        #[cfg(feature = "v1_6")]
        RequestRef::V1_6(
            v1_6::Request::StartTransaction(_) | v1_6::Request::StopTransaction(_),
        ) => true,
        #[cfg(feature = "v1_6")]
        RequestRef::V1_6(v1_6::Request::MeterValues(meter)) => meter.transaction_id.is_some(),
        #[cfg(feature = "v2_0_1")]
        RequestRef::V2_0_1(v2_0_1::Request::TransactionEvent(_)) => true,
        #[cfg(feature = "v2_1")]
        RequestRef::V2_1(v2_1::Request::TransactionEvent(_)) => true,
        _ => false,
    }
}

/// Whether a CALL of `action` may be transaction-related on `version`, when only the action is
/// known: 1.6 StartTransaction, StopTransaction and MeterValues (true for every MeterValues,
/// though only those with a `transactionId` are: see [`is_transaction_message`]); 2.0.1 and 2.1
/// TransactionEvent.
pub fn is_transaction_action(version: OcppVersion, action: &str) -> bool {
    match version {
        OcppVersion::V1_6 => matches!(
            action,
            "StartTransaction" | "StopTransaction" | "MeterValues"
        ),
        OcppVersion::V2_0_1 | OcppVersion::V2_1 => action == "TransactionEvent",
    }
}

/// A copy of a 1.6 StopTransaction, or of a 1.6 MeterValues that has a `transactionId`, with
/// the `transactionId` replaced by `transaction_id`; `None` for any other message (a MeterValues
/// without a `transactionId` does not belong to a transaction and is not given one).
pub fn with_transaction_id(request: &Request, transaction_id: i32) -> Option<Request> {
    let _ = transaction_id;
    match request.view() {
        #[cfg(feature = "v1_6")]
        RequestRef::V1_6(v1_6::Request::StopTransaction(stop)) => {
            let mut stop = stop.clone();
            stop.transaction_id = transaction_id;
            Some(stop.into())
        }
        #[cfg(feature = "v1_6")]
        RequestRef::V1_6(v1_6::Request::MeterValues(meter)) if meter.transaction_id.is_some() => {
            let mut meter = meter.clone();
            meter.transaction_id = Some(transaction_id);
            Some(meter.into())
        }
        _ => None,
    }
}

/// The `transactionId` of a 1.6 StartTransactionResponse; `None` for any other response.
pub fn transaction_id_of(response: &Response) -> Option<i32> {
    match response.view() {
        #[cfg(feature = "v1_6")]
        ResponseRef::V1_6(v1_6::Response::StartTransaction(start)) => Some(start.transaction_id),
        _ => None,
    }
}

#[cfg(all(test, feature = "v1_6", feature = "v2_0_1", feature = "v2_1"))]
mod tests {
    use super::*;
    use ocpp_messages::DateTime;

    fn time() -> DateTime {
        DateTime::from_unix_timestamp(1_780_000_000).unwrap()
    }

    fn meter(transaction_id: Option<i32>) -> Request {
        let values = vec![v1_6::MeterValue::new(
            time(),
            vec![v1_6::SampledValue::new("1")],
        )];
        let mut meter = v1_6::MeterValuesRequest::new(1, values);
        meter.transaction_id = transaction_id;
        meter.into()
    }

    fn stop(transaction_id: i32) -> Request {
        v1_6::StopTransactionRequest::new(100, time(), transaction_id).into()
    }

    fn decode(version: OcppVersion, action: &str, payload: &str) -> Request {
        let options = ocpp_messages::DecodeOptions::strict();
        Request::decode(version, action, payload, &options).unwrap()
    }

    #[test]
    fn transaction_messages_v1_6() {
        let start = v1_6::StartTransactionRequest::new(1, "TAG", 0, time());
        assert!(is_transaction_message(&start.into()));
        assert!(is_transaction_message(&stop(7)));
        assert!(is_transaction_message(&meter(Some(7))));
        assert!(!is_transaction_message(&meter(None)));
        let heartbeat = Request::from(v1_6::HeartbeatRequest::default());
        assert!(!is_transaction_message(&heartbeat));
    }

    #[test]
    fn transaction_messages_v2() {
        let payload = r#"{"eventType":"Started","timestamp":"2026-01-01T00:00:00Z","triggerReason":"Authorized","seqNo":0,"transactionInfo":{"transactionId":"tx-1"}}"#;
        for version in [OcppVersion::V2_0_1, OcppVersion::V2_1] {
            let event = decode(version, "TransactionEvent", payload);
            assert!(is_transaction_message(&event));
            let meter = decode(
                version,
                "MeterValues",
                r#"{"evseId":1,"meterValue":[{"timestamp":"2026-01-01T00:00:00Z","sampledValue":[{"value":1}]}]}"#,
            );
            assert!(!is_transaction_message(&meter));
        }
    }

    #[test]
    fn transaction_actions_per_version() {
        let v16 = OcppVersion::V1_6;
        assert!(is_transaction_action(v16, "StartTransaction"));
        assert!(is_transaction_action(v16, "StopTransaction"));
        assert!(is_transaction_action(v16, "MeterValues"));
        assert!(!is_transaction_action(v16, "TransactionEvent"));
        assert!(!is_transaction_action(v16, "Heartbeat"));
        for version in [OcppVersion::V2_0_1, OcppVersion::V2_1] {
            assert!(is_transaction_action(version, "TransactionEvent"));
            assert!(!is_transaction_action(version, "MeterValues"));
            assert!(!is_transaction_action(version, "StartTransaction"));
        }
    }

    #[test]
    fn with_transaction_id_replaces_the_id() {
        assert_eq!(with_transaction_id(&stop(-1), 42), Some(stop(42)));
        assert_eq!(
            with_transaction_id(&meter(Some(-1)), 42),
            Some(meter(Some(42)))
        );
        assert_eq!(with_transaction_id(&meter(None), 42), None);
        let start = Request::from(v1_6::StartTransactionRequest::new(1, "TAG", 0, time()));
        assert_eq!(with_transaction_id(&start, 42), None);
        let heartbeat = Request::from(v2_0_1::HeartbeatRequest::default());
        assert_eq!(with_transaction_id(&heartbeat, 42), None);
    }

    #[test]
    fn transaction_id_of_start_transaction_response() {
        let info = v1_6::IdTagInfo::new(v1_6::AuthorizationStatus::Accepted);
        let start = Response::from(v1_6::StartTransactionResponse::new(info, 4711));
        assert_eq!(transaction_id_of(&start), Some(4711));
        let heartbeat = Response::from(v1_6::HeartbeatResponse::new(time()));
        assert_eq!(transaction_id_of(&heartbeat), None);
    }
}
