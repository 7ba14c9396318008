//! The contract-certificate service client against a local service speaking the protocol.

use std::io::{Read, Write};
use std::net::TcpListener;

use super::{forward, ContractRequest, ContractServiceError, TIMEOUT};

#[path = "../../../examples/tests/common/contract_service.rs"]
mod service;

fn request(action: &str) -> ContractRequest {
    ContractRequest {
        action: action.into(),
        iso15118_schema_version: "urn:iso:15118:2:2013:MsgDef".into(),
        exi_request: "gAQ=".into(),
    }
}

#[test]
fn the_service_answer_is_passed_back() {
    let service = service::ContractService::start(true);
    let answer = forward(&service.url, &request("Update"), TIMEOUT).expect("answer");
    assert!(answer.accepted);
    assert_eq!(
        answer.exi_response,
        service::exi_response_for("Update", "gAQ=")
    );
    let received = service.received();
    assert_eq!(received[0]["action"], "Update");
    assert_eq!(
        received[0]["iso15118SchemaVersion"],
        "urn:iso:15118:2:2013:MsgDef"
    );
    assert_eq!(received[0]["exiRequest"], "gAQ=");

    let failing = service::ContractService::start(false);
    let answer = forward(&failing.url, &request("Install"), TIMEOUT).expect("answer");
    assert!(!answer.accepted);
}

#[test]
fn an_unreachable_service_or_a_foreign_answer_is_an_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let error = forward(
        &format!("http://127.0.0.1:{port}/"),
        &request("Install"),
        TIMEOUT,
    )
    .expect_err("nobody listens");
    assert!(
        matches!(error, ContractServiceError::Http { .. }),
        "{error}"
    );

    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming().take(2) {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope",
            );
        }
    });
    let error = forward(&url, &request("Install"), TIMEOUT).expect_err("not JSON");
    assert!(matches!(error, ContractServiceError::Answer(_)), "{error}");
}
