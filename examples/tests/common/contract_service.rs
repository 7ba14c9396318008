//! A contract-certificate service for the Plug & Charge tests: a `TcpListener` thread that
//! speaks the JSON protocol of `ocpp_reference_csms::contract_certificate_service` (one POST per
//! connection), records what it was asked, and answers with an EXI response of its own
//! making (`EXI-RES:<action>:<exiRequest>`, base64) or, when told to fail, `Failed`.

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// A running service.
pub struct ContractService {
    /// Its URL (`http://127.0.0.1:PORT/contracts`).
    pub url: String,
    /// The JSON bodies it received.
    pub requests: Arc<Mutex<Vec<serde_json::Value>>>,
}

/// What the service answers: the EXI response it makes for a request.
pub fn exi_response_for(action: &str, exi_request: &str) -> String {
    encode(format!("EXI-RES:{action}:{exi_request}").as_bytes())
}

impl ContractService {
    /// Starts the service; `accept` decides whether it answers Accepted (else Failed).
    pub fn start(accept: bool) -> ContractService {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/contracts", listener.local_addr().expect("addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let Some(body) = read_request(&mut stream) else {
                    continue;
                };
                let Ok(json) = serde_json::from_slice::<serde_json::Value>(&body) else {
                    let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                    continue;
                };
                let action = json["action"].as_str().unwrap_or_default().to_owned();
                let exi = json["exiRequest"].as_str().unwrap_or_default().to_owned();
                seen.lock().expect("lock").push(json);
                let answer = if accept {
                    serde_json::json!({"status": "Accepted", "exiResponse": exi_response_for(&action, &exi)})
                } else {
                    serde_json::json!({"status": "Failed", "exiResponse": ""})
                }
                .to_string();
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                    answer.len()
                );
            }
        });
        ContractService { url, requests }
    }

    /// The requests received so far.
    pub fn received(&self) -> Vec<serde_json::Value> {
        self.requests.lock().expect("lock").clone()
    }
}

fn read_request(stream: &mut std::net::TcpStream) -> Option<Vec<u8>> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut length = 0usize;
    let mut line = String::new();
    let mut first = true;
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        if first {
            if !line.starts_with("POST ") {
                return None;
            }
            first = false;
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((name, value)) = trimmed.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

fn encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
