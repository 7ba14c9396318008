//! Interop of our charge-point side's permessage-deflate (`ocpp-proto`, `DeflatePolicy::Offer`)
//! with a central system on Python `websockets` (`tests/interop/python_deflate_csms.py`), which
//! accepts the extension: the offer, websockets' answer (it limits both windows to 12 bits), and
//! 3 KB DataTransfer CALLs compressed both ways, with and without context takeover.
//!
//! Skipped, with a note on stderr, when `python3` or its `websockets` module is missing; set
//! `OCPP_INTEROP_REQUIRED=1` to make that a failure.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ocpp_frame::deflate::DeflateConfig;
use ocpp_messages::v1_6;
use ocpp_messages::version::OcppVersion;
use ocpp_proto::{
    ChargePointIdentity, ConnectTarget, Connection, ConnectionConfig, DeflatePolicy, Event,
    Request, Response,
};

/// A child process killed by its PID when dropped.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn python_ready() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import websockets"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("OCPP_INTEROP_REQUIRED").is_none(),
            "python3 with the websockets module is required"
        );
        eprintln!("skipped: python3 with `websockets` not found (pip install websockets)");
    }
    ok
}

fn run(config: DeflateConfig) {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop/python_deflate_csms.py");
    let mut csms = Guard(
        Command::new("python3")
            .arg(&script)
            .args(["--timeout", "30"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let (lines_tx, lines) = mpsc::channel::<String>();
    let stdout = csms.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let first = lines.recv_timeout(Duration::from_secs(20)).unwrap();
    let port: u16 = first.strip_prefix("listening ").unwrap().parse().unwrap();

    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let connection_config = ConnectionConfig::default()
        .versions(vec![OcppVersion::V1_6])
        .deflate(DeflatePolicy::Offer(config));
    let identity = ChargePointIdentity::new("CP-DEFLATE".into(), true).unwrap();
    let target = ConnectTarget::new(&format!("127.0.0.1:{port}"), "/ocpp", identity);
    let now = Instant::now();
    let mut cp =
        Connection::connect(now, Arc::new(connection_config), &target, [9; 16], 7).unwrap();

    let data = r#"{"connector":1,"status":"Charging","energy":12345.6}"#.repeat(60);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut answered = 0;
    let mut sent = 0;
    let mut buf = vec![0u8; 64 * 1024];
    while answered < 5 && Instant::now() < deadline {
        let pending = cp.pending_transmit().len();
        if pending > 0 {
            stream.write_all(cp.pending_transmit()).unwrap();
            cp.advance_transmit(pending);
        }
        match stream.read(&mut buf) {
            Ok(0) => panic!("the server closed the connection"),
            Ok(n) => cp.handle_data(Instant::now(), &buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => panic!("{e}"),
        }
        while let Some(event) = cp.poll_event() {
            match event {
                Event::Connected { .. } => {
                    let params = cp.deflate().expect("permessage-deflate negotiated");
                    println!("agreed: {params:?}");
                }
                Event::CallCompleted { outcome, .. } => {
                    let Ok(Response::V1_6(response)) = outcome else {
                        panic!("{outcome:?}");
                    };
                    let v1_6::Response::DataTransfer(transfer) = *response else {
                        panic!("{response:?}");
                    };
                    assert_eq!(transfer.data.as_deref(), Some(data.as_str()));
                    answered += 1;
                }
                Event::Closed(closed) => panic!("{closed:?}"),
                other => panic!("{other:?}"),
            }
        }
        if cp.is_open() && sent == answered && sent < 5 {
            let request = Request::from(v1_6::Request::from(v1_6::DataTransferRequest {
                vendor_id: "ACME".into(),
                message_id: Some(format!("m{sent}")),
                data: Some(data.clone()),
            }));
            cp.call(Instant::now(), request).unwrap();
            // Above the default 128-byte threshold: compressed, RSV1 set.
            assert_eq!(cp.pending_transmit()[0], 0xc1);
            sent += 1;
        }
    }
    assert_eq!(answered, 5, "answers before the deadline");
    let extensions = lines.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(extensions, "extensions permessage-deflate");
    cp.close(Instant::now(), ocpp_frame::CloseCode::NORMAL, "done");
    let pending = cp.pending_transmit().len();
    let _ = stream.write_all(cp.pending_transmit());
    cp.advance_transmit(pending);
}

#[test]
fn charge_point_deflate_against_python_websockets() {
    if !python_ready() {
        return;
    }
    run(DeflateConfig::default());
    run(DeflateConfig::default()
        .server_no_context_takeover(false)
        .client_no_context_takeover(false));
}
