//! The `charge-point` binary over wss, with a client certificate or a password.

use super::*;

/// A `charge-point` process, killed by its PID when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs the `charge-point` binary with `args` until CP001 is booted on `server` (bounded).
fn charge_point_boots(server: &ServerProcess, args: &[String]) {
    let _cp = Process(
        Command::new(env!("CARGO_BIN_EXE_charge-point"))
            .args(args)
            .args(["--version", "2.0.1", "--duration-s", "20"])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, body) = http(server.admin, "GET", "/chargepoints/CP001", "");
        if status == 200 && json(&body)["status"] == "Accepted" {
            assert_eq!(json(&body)["version"], "2.0.1");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "CP001 did not boot: {status} {body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn charge_point_binary_boots_over_wss_with_a_client_certificate() {
    let pki = Pki::new("cp-binary-3");
    let server = start_profile(MIO, &pki, 3);
    let url = format!("wss://localhost:{}/ocpp/CP001", server.ocpp.port());
    let args = ["--url", &url, "--ca", &pki.path("ca.pem")]
        .into_iter()
        .map(str::to_owned)
        .chain(["--cert".into(), pki.path("CP001.pem")])
        .chain(["--key".into(), pki.path("CP001.key")])
        .collect::<Vec<_>>();
    charge_point_boots(&server, &args);
}

#[test]
fn charge_point_binary_boots_over_wss_with_a_password() {
    let pki = Pki::new("cp-binary-2");
    let server = start_profile(TOKIO, &pki, 2);
    let url = format!("wss://127.0.0.1:{}/ocpp/CP001", server.ocpp.port());
    let args = ["--url", &url, "--ca", &pki.path("ca.pem")]
        .into_iter()
        .map(str::to_owned)
        .chain(["--password".into(), "0123456789abcdef".into()])
        .collect::<Vec<_>>();
    charge_point_boots(&server, &args);
}
