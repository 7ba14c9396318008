use super::*;
use crate::{Credentials, CsmsConfig, SplitCall, SplitEnd};
use ocpp_frame::handshake::BasicCredentials;
use ocpp_messages::v1_6;

fn parse(raw: &[u8]) -> AdminRequest {
    AdminRequest::parse(raw).unwrap().unwrap().0
}

#[test]
fn parses_in_pieces_and_with_a_body() {
    let raw = b"POST /chargepoints/CP1/call/Reset?x=1 HTTP/1.1\r\nContent-Length: 15\r\n\r\n{\"type\":\"Soft\"}";
    for cut in 0..raw.len() {
        assert_eq!(AdminRequest::parse(&raw[..cut]).unwrap(), None, "{cut}");
    }
    let (request, consumed) = AdminRequest::parse(raw).unwrap().unwrap();
    assert_eq!(consumed, raw.len());
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/chargepoints/CP1/call/Reset");
    assert_eq!(request.body, b"{\"type\":\"Soft\"}");
    let big = format!(
        "POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
        MAX_BODY + 1
    );
    assert_eq!(AdminRequest::parse(big.as_bytes()).unwrap_err().status, 413);
}

#[test]
fn routes() {
    let csms = Csms::new(CsmsConfig::default());
    let status = |raw: &[u8]| match route(&csms, &parse(raw)) {
        Route::Respond(response) => response.status,
        Route::Call { .. } | Route::Calls { .. } => 0,
    };
    assert_eq!(status(b"GET /chargepoints HTTP/1.1\r\n\r\n"), 200);
    assert_eq!(status(b"GET /metrics HTTP/1.1\r\n\r\n"), 200);
    assert_eq!(status(b"GET /nothing HTTP/1.1\r\n\r\n"), 404);
    assert_eq!(status(b"DELETE /chargepoints HTTP/1.1\r\n\r\n"), 405);
    assert_eq!(status(b"GET /chargepoints/ HTTP/1.1\r\n\r\n"), 200);
    assert_eq!(
        status(b"POST /chargepoints/CP9/call/Reset HTTP/1.1\r\n\r\n"),
        404
    );
    let identity = ChargePointIdentity::new("CP1".into(), false).unwrap();
    csms.on_connected(&identity, OcppVersion::V1_6);
    assert_eq!(
        status(b"POST /chargepoints/CP1/call/Reset HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"),
        400
    );
    let raw = b"POST /chargepoints/CP1/call/Reset HTTP/1.1\r\nContent-Length: 15\r\n\r\n{\"type\":\"Soft\"}";
    let Route::Call { identity, request } = route(&csms, &parse(raw)) else {
        panic!("expected a call")
    };
    assert_eq!(identity.as_str(), "CP1");
    assert_eq!(request.action(), "Reset");
}

#[test]
fn the_operator_sets_a_password() {
    let respond = |csms: &Csms, method: &str, body: &str| {
        let raw = format!(
            "{method} /chargepoints/CP1/password HTTP/1.1\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        match route(csms, &parse(raw.as_bytes())) {
            Route::Respond(response) => response,
            Route::Call { .. } | Route::Calls { .. } => panic!("not a command"),
        }
    };
    // Without a credentials store: 409, as for the security profile.
    let open = Csms::new(CsmsConfig::default());
    let refused = respond(&open, "PUT", r#"{"password":"new-password-1111"}"#);
    assert_eq!(refused.status, 409);

    let credentials = Credentials::parse("CP1:old-password-0000\n").unwrap();
    let csms = Csms::new(CsmsConfig::default().credentials(Some(credentials)));
    let cp1 = ChargePointIdentity::new("CP1".into(), false).unwrap();
    let set = respond(&csms, "PUT", r#"{"password":"new-password-1111"}"#);
    assert_eq!(set.status, 200);
    let body = String::from_utf8(set.body).unwrap();
    assert!(!body.contains("new-password"), "never echoed: {body}");
    let check = |password: &str| {
        let credentials = csms.credentials.read().unwrap();
        let sent = BasicCredentials::new(b"CP1", password.as_bytes()).unwrap();
        credentials
            .as_ref()
            .unwrap()
            .check(&cp1, Some(&sent))
            .is_ok()
    };
    assert!(check("new-password-1111") && !check("old-password-0000"));
    for bad in [
        r#"{"password":""}"#,
        r#"{"password":"line\nbreak"}"#,
        r#"{"password":42}"#,
        r#"{}"#,
        "not json",
    ] {
        assert_eq!(respond(&csms, "PUT", bad).status, 400, "{bad}");
    }
    let long = format!(r#"{{"password":"{}"}}"#, "x".repeat(65));
    assert_eq!(respond(&csms, "PUT", &long).status, 400);
    assert_eq!(respond(&csms, "GET", "").status, 405);
    assert_eq!(respond(&csms, "DELETE", "").status, 200);
    assert!(!check("new-password-1111"));
}

#[test]
fn call_outcomes() {
    let reset = v1_6::Response::from(v1_6::ResetResponse {
        status: v1_6::ResetStatus::Accepted,
    });
    let ok = call_response(OcppVersion::V1_6, "1", "Reset", &Ok(reset.into()));
    assert_eq!(ok.status, 200);
    let body: Value = serde_json::from_slice(&ok.body).unwrap();
    assert_eq!(body["result"]["status"], "Accepted");
    assert_eq!(
        call_response(OcppVersion::V1_6, "1", "Reset", &Err(CallFailure::Timeout)).status,
        504
    );
    let bytes = ok.to_bytes();
    assert!(bytes.starts_with(b"HTTP/1.1 200 OK\r\n"));
    // Every failure has its status, in this one place for both servers and every path.
    for (failure, status, delivery) in [
        (CallFailure::NotConnected, 404, "not_sent"),
        (CallFailure::QueueFull, 503, "not_sent"),
        (CallFailure::ClosedBeforeSent, 503, "not_sent"),
        (CallFailure::DeadlinePassed, 503, "not_sent"),
        (CallFailure::OwnerUnreachable, 503, "not_sent"),
        (CallFailure::Disconnected, 504, "unknown"),
        (CallFailure::Timeout, 504, "unknown"),
        (
            CallFailure::InvalidResponse {
                description: "x".into(),
            },
            502,
            "answered",
        ),
    ] {
        let local = call_response(OcppVersion::V1_6, "1", "Reset", &Err(failure.clone()));
        assert_eq!(local.status, status);
        let body: Value = serde_json::from_slice(&local.body).unwrap();
        assert_eq!(body["outcome"], failure.name());
        assert_eq!(body["delivery"], delivery);
        // Routed through the cluster: the same status and outcome.
        let routed = remote_call_response("Reset", &Err(failure.clone()));
        assert_eq!(routed.status, status);
        let routed: Value = serde_json::from_slice(&routed.body).unwrap();
        assert_eq!(routed["outcome"], body["outcome"]);
    }
    assert_eq!(HttpResponse::shut_down_before_answer().status, 504);
    assert_eq!(HttpResponse::timeout().status, 504);
}

#[test]
fn commands_through_the_cluster() {
    let (identity, action) = command_target("POST", "/chargepoints/CP%201/call/Reset").unwrap();
    assert_eq!((identity.as_str(), action.as_str()), ("CP 1", "Reset"));
    assert!(command_target("GET", "/chargepoints/CP1/call/Reset").is_none());
    assert!(command_target("POST", "/chargepoints/CP1").is_none());
    assert_eq!(command_body(b"").unwrap(), "{}");
    assert_eq!(command_body(b"{").unwrap_err().status, 400);
    assert_eq!(command_body(&[0xff]).unwrap_err().status, 400);

    let ok = remote_call_response("Reset", &Ok(r#"{"status":"Accepted"}"#.into()));
    assert_eq!(ok.status, 200);
    let body: Value = serde_json::from_slice(&ok.body).unwrap();
    assert_eq!(body["result"]["status"], "Accepted");
    assert_eq!(body["action"], "Reset");
    let error = CallFailure::ErrorResponse {
        code: ocpp_messages::error_code::ErrorCode::NotSupported,
        description: "no".into(),
        details: "{}".into(),
    };
    let failed = remote_call_response("Reset", &Err(error));
    assert_eq!(failed.status, 502);
    let body: Value = serde_json::from_slice(&failed.body).unwrap();
    assert_eq!(body["error"]["code"], "NotSupported");
    assert_eq!(body["delivery"], "answered");
}

#[test]
fn a_retryable_status_is_never_given_to_a_call_that_may_have_run() {
    let every_failure = [
        CallFailure::NotConnected,
        CallFailure::QueueFull,
        CallFailure::WrongVersion,
        CallFailure::ClosedBeforeSent,
        CallFailure::DeadlinePassed,
        CallFailure::OwnerUnreachable,
        CallFailure::Timeout,
        CallFailure::Disconnected,
        CallFailure::InvalidRequest {
            description: "x".into(),
        },
        CallFailure::ErrorResponse {
            code: ocpp_messages::error_code::ErrorCode::InternalError,
            description: "x".into(),
            details: "{}".into(),
        },
        CallFailure::InvalidResponse {
            description: "x".into(),
        },
    ];
    for failure in every_failure {
        let status = http_status(&failure);
        match failure.delivery() {
            Delivery::NotSent => assert!(status < 500 || status == 503, "{failure:?}"),
            Delivery::Unknown => assert_eq!(status, 504, "{failure:?}"),
            Delivery::Answered => assert_eq!(status, 502, "{failure:?}"),
            _ => unreachable!("a delivery this test does not know: {failure:?}"),
        }
    }
}

#[test]
fn a_split_command_gets_one_answer() {
    let entry = r#"{"component":{"name":"C"},"variable":{"name":"V"}}"#;
    let body = format!(r#"{{"getVariableData":[{entry},{entry},{entry}]}}"#);
    let version = OcppVersion::V2_0_1;
    let request = decode_command(version, "GetVariables", &body).unwrap();
    let mut split = SplitCall::plan(version, &request, 2).unwrap().unwrap();
    split.next_request().unwrap();
    let json_of =
        |response: &HttpResponse| -> Value { serde_json::from_slice(&response.body).unwrap() };

    let done = split_response(
        &split,
        &SplitEnd::Done(json!({"getVariableResult": [1, 2]})),
    );
    assert_eq!(done.status, 200);
    let done = json_of(&done);
    assert_eq!(done["result"]["getVariableResult"], json!([1, 2]));
    assert_eq!(
        (&done["action"], &done["chunks"]),
        (&json!("GetVariables"), &json!(2))
    );

    let error = CallFailure::ErrorResponse {
        code: ocpp_messages::error_code::ErrorCode::InternalError,
        description: "boom".into(),
        details: "{}".into(),
    };
    let failed = split_response(&split, &SplitEnd::Failed(error));
    assert_eq!(failed.status, 502);
    let failed = json_of(&failed);
    assert_eq!(failed["error"]["code"], "InternalError");
    assert_eq!(
        (&failed["failed_chunk"], &failed["chunks"]),
        (&json!(1), &json!(2))
    );
    assert_eq!(failed["partial_result"]["getVariableResult"], json!([]));

    let timeout = split_response(&split, &SplitEnd::Failed(CallFailure::Timeout));
    assert_eq!(timeout.status, 504);
    let unreadable = split_response(&split, &SplitEnd::Unreadable("no list".into()));
    assert_eq!(unreadable.status, 502);
    let gone = split_failed(&split, HttpResponse::error(502, "disconnected"));
    assert!(json_of(&gone)["error"].is_string());
    // A text body becomes JSON too.
    let text = split_failed(&split, HttpResponse::text(503, "busy"));
    assert_eq!(
        (text.status, json_of(&text)["error"].clone()),
        (503, json!("busy"))
    );
}

#[test]
fn every_route_is_found_and_a_wrong_method_gets_405_with_allow() {
    for entry in ROUTES {
        let path = entry
            .path
            .replace("{identity}", "CP1")
            .replace("{action}", "Reset");
        let path = path.replace("{token}", "T1");
        match find(entry.method, &path) {
            Matched::Route(found, _) => assert_eq!(found, entry),
            other => panic!("{} {path}: {other:?}", entry.method),
        }
        // Each method and pattern once.
        let same = ROUTES.iter().filter(|r| *r == entry).count();
        assert_eq!(same, 1, "{} {}", entry.method, entry.path);
    }
    let csms = Csms::new(CsmsConfig::default());
    let Route::Respond(response) = route(
        &csms,
        &parse(b"PATCH /chargepoints/CP1/boot HTTP/1.1\r\n\r\n"),
    ) else {
        panic!("expected an answer")
    };
    assert_eq!(
        (response.status, response.allow.as_deref()),
        (405, Some("GET, PUT, DELETE"))
    );
    let wire = String::from_utf8(response.to_bytes()).unwrap();
    assert!(wire.contains("\r\nAllow: GET, PUT, DELETE\r\n"), "{wire}");
    // A router's match falls back to the table when it is not the request's.
    let get = ROUTES
        .iter()
        .find(|r| r.method == "GET" && r.path == "/chargepoints")
        .unwrap();
    let head = parse(b"HEAD /chargepoints HTTP/1.1\r\n\r\n");
    let Route::Respond(response) = route_matched(&csms, &head, get) else {
        panic!("expected an answer")
    };
    assert_eq!(
        (response.status, response.allow.as_deref()),
        (405, Some("GET"))
    );
}
