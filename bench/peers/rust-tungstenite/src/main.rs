//! Benchmark peer: a minimal OCPP 1.6 central system on tokio + tokio-tungstenite, with a
//! hand-written OCPP-J envelope (serde_json::Value) and one task per connection.
//!
//! Usage: peer-rust-tungstenite LISTEN_ADDR PUSH_INTERVAL_MS [default|tuned]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

static NEXT_TRANSACTION: AtomicI64 = AtomicI64::new(1);

/// A push CALL left without an answer this long is forgotten (the charge point may be slow;
/// the peer does not close the connection for it).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Default,
    Tuned,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!(
            "usage: {} LISTEN_ADDR PUSH_INTERVAL_MS [default|tuned]",
            args[0]
        );
        std::process::exit(2);
    }
    let addr: SocketAddr = args[1].parse().expect("LISTEN_ADDR");
    let push_ms: u64 = args[2].parse().expect("PUSH_INTERVAL_MS");
    let mode_name = args
        .get(3)
        .cloned()
        .or_else(|| std::env::var("PEER_MODE").ok())
        .unwrap_or_else(|| "default".into());
    let mode = match mode_name.as_str() {
        "default" => Mode::Default,
        "tuned" => Mode::Tuned,
        other => {
            eprintln!("unknown mode {other:?} (default|tuned)");
            std::process::exit(2);
        }
    };
    // Soft RLIMIT_NOFILE up to the hard limit (20,000 on these machines).
    if let Err(error) = rlimit::increase_nofile_limit(u64::MAX) {
        eprintln!("could not raise RLIMIT_NOFILE: {error}");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(serve(addr, push_ms, mode));
}

fn ws_config(mode: Mode) -> WebSocketConfig {
    match mode {
        Mode::Default => WebSocketConfig::default(),
        // 4 KiB read buffer instead of 128 KiB, and every message written at once.
        Mode::Tuned => WebSocketConfig::default()
            .read_buffer_size(4 * 1024)
            .write_buffer_size(0),
    }
}

async fn serve(addr: SocketAddr, push_ms: u64, mode: Mode) {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .expect("socket");
    socket.set_reuseaddr(true).expect("SO_REUSEADDR");
    socket.bind(addr).expect("bind");
    let listener = socket.listen(4096).expect("listen");
    eprintln!("rust-tungstenite peer ({mode:?}) listening on {addr}, push every {push_ms} ms");
    let config = ws_config(mode);
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                // EMFILE and friends: wait a little rather than spin.
                eprintln!("accept: {error}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection(stream, push_ms, config));
    }
}

async fn connection(stream: TcpStream, push_ms: u64, config: WebSocketConfig) {
    let mut identity = String::new();
    let callback = |request: &Request, mut response: Response| {
        identity = request
            .uri()
            .path()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_owned();
        let offered = request
            .headers()
            .get_all("sec-websocket-protocol")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|p| p.trim() == "ocpp1.6");
        if offered {
            response.headers_mut().insert(
                "sec-websocket-protocol",
                HeaderValue::from_static("ocpp1.6"),
            );
        }
        Ok(response)
    };
    let mut ws =
        match tokio_tungstenite::accept_hdr_async_with_config(stream, callback, Some(config)).await
        {
            Ok(ws) => ws,
            Err(_) => return,
        };
    let _ = identity; // the identity is known; this minimal CSMS keeps no per-identity state

    let mut push = (push_ms > 0).then(|| {
        let period = Duration::from_millis(push_ms);
        let mut timer = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        timer
    });
    let mut seq: u64 = 0;
    // Our CALLs waiting for a CALLRESULT: message id -> when it was sent.
    let mut pending: HashMap<String, Instant> = HashMap::new();

    loop {
        tokio::select! {
            message = ws.next() => {
                let text = match message {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                    Some(Ok(_)) => continue, // ping (answered by tungstenite), pong, binary
                };
                if let Some(reply) = on_text(text.as_str(), &mut pending) {
                    if ws.send(Message::text(reply)).await.is_err() {
                        break;
                    }
                }
            }
            _ = async { push.as_mut().expect("checked").tick().await }, if push.is_some() => {
                seq += 1;
                let id = format!("p{seq}");
                // Stamp taken right before this connection's frame is encoded and written.
                let nanos = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                let frame = json!([2, id, "DataTransfer", {
                    "vendorId": "bench",
                    "messageId": "ts",
                    "data": format!("{seq}:{nanos}"),
                }])
                .to_string();
                if ws.send(Message::text(frame)).await.is_err() {
                    break;
                }
                let now = Instant::now();
                if pending.len() >= 16 {
                    pending.retain(|_, sent| now.duration_since(*sent) < CALL_TIMEOUT);
                }
                pending.insert(id, now);
            }
        }
    }
}

/// Handles one text frame; returns the frame to answer with, if any.
fn on_text(text: &str, pending: &mut HashMap<String, Instant>) -> Option<String> {
    let Ok(Value::Array(frame)) = serde_json::from_str::<Value>(text) else {
        return None; // not OCPP-J: a real CSMS would answer a CALLERROR when it can
    };
    match frame.first().and_then(Value::as_u64) {
        Some(2) => {
            let id = frame.get(1)?.as_str()?.to_owned();
            let action = frame.get(2).and_then(Value::as_str).unwrap_or_default();
            let payload = frame.get(3).cloned().unwrap_or(Value::Null);
            Some(match answer(action, &payload) {
                Some(result) => json!([3, id, result]).to_string(),
                None => json!([4, id, "NotImplemented", "", {}]).to_string(),
            })
        }
        // The answer to one of our CALLs (CALLRESULT or CALLERROR).
        Some(3) | Some(4) => {
            if let Some(id) = frame.get(1).and_then(Value::as_str) {
                pending.remove(id);
            }
            None
        }
        _ => None,
    }
}

fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn answer(action: &str, _payload: &Value) -> Option<Value> {
    let accepted = json!({ "status": "Accepted" });
    Some(match action {
        "BootNotification" => json!({
            "status": "Accepted",
            "currentTime": now_rfc3339(),
            "interval": 300,
        }),
        "Heartbeat" => json!({ "currentTime": now_rfc3339() }),
        "StatusNotification" | "MeterValues" => json!({}),
        "Authorize" | "StopTransaction" => json!({ "idTagInfo": accepted }),
        "StartTransaction" => json!({
            "transactionId": NEXT_TRANSACTION.fetch_add(1, Ordering::Relaxed),
            "idTagInfo": accepted,
        }),
        "DataTransfer" => json!({ "status": "Accepted" }),
        _ => return None,
    })
}
