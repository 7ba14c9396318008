//! `ocpp-load`: a swarm of OCPP charge points on mio, to measure a central system.
//!
//! ```text
//! ocpp-load heartbeat --url ws://127.0.0.1:9000/ocpp --count 10000 --server-pid 1234
//! ```
//!
//! It runs its charge points in worker processes (one process holds at most about 19,990
//! sockets here), each a single mio loop driving the charge-point side of `ocpp-proto`,
//! and coordinates them phase by phase: `connect` (handshake + BootNotification, checked),
//! then the scenario's phase (`idle`, `heartbeat`, `push`, `reconnect`). At each boundary it
//! reads the server's RSS and CPU time from `/proc` (`--server-pid`) and its own workers' CPU
//! time, so every figure comes with what it cost. Latencies go into HdrHistograms that the
//! workers send to the coordinator and that merge exactly. The report is printed and, with
//! `--json FILE`, written as JSON (percentiles, percentile curves, counters, CPU, RSS).
//!
//! See `ocpp-load --help` and `bench/run.sh`, which runs it against every server.

use std::ffi::OsString;
use std::process::ExitCode;

mod admin;
mod cli;
mod coordinator;
mod phase;
mod procfs;
mod worker;

fn main() -> ExitCode {
    // As `OsString`s: clap reports an argument that is not UTF-8 instead of a panic here.
    let args: Vec<OsString> = std::env::args_os().collect();
    let options = match cli::parse(args.iter().cloned()) {
        Ok(options) => options,
        Err(e) => {
            // clap's own output: `--help` on stdout with exit code 0, an error on stderr with 2.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    ocpp_examples::server_cli::raise_open_files_limit();
    if let Some(slot) = options.worker {
        return match worker::run(options, slot) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ocpp-load worker {}: {e}", slot.index);
                ExitCode::FAILURE
            }
        };
    }
    // The workers get the same arguments, without the program name.
    match coordinator::run(options.clone(), args.get(1..).unwrap_or_default()) {
        Ok(report) => {
            if let Some(path) = &options.json {
                let text = serde_json::to_string_pretty(&report).unwrap_or_default();
                if let Err(e) = std::fs::write(path, text + "\n") {
                    eprintln!("ocpp-load: cannot write {path}: {e}");
                    return ExitCode::FAILURE;
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ocpp-load: {e}");
            ExitCode::FAILURE
        }
    }
}
