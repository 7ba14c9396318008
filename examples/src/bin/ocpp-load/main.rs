//! `ocpp-load`: a swarm of OCPP charge points on mio, to measure a central system.
//!
//! ```text
//! ocpp-load heartbeat --url ws://127.0.0.1:9000/ocpp --count 10000 --server-pid 1234
//! ```
//!
//! It runs its charge points in worker processes (one process holds at most about 19,990
//! sockets here), each a single mio loop driving the charge-point side of `ocpp-server-core`,
//! and coordinates them phase by phase: `connect` (handshake + BootNotification, checked),
//! then the scenario's phase (`idle`, `heartbeat`, `push`, `reconnect`). At each boundary it
//! reads the server's RSS and CPU time from `/proc` (`--server-pid`) and its own workers' CPU
//! time, so every figure comes with what it cost. Latencies go into HdrHistograms that the
//! workers send to the coordinator and that merge exactly. The report is printed and, with
//! `--json FILE`, written as JSON (percentiles, percentile curves, counters, CPU, RSS).
//!
//! See `ocpp-load --help` and `bench/run.sh`, which runs it against every server.

use std::process::ExitCode;

mod admin;
mod cli;
mod coordinator;
mod phase;
mod procfs;
mod worker;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match cli::parse(args.iter().cloned()) {
        Ok(Some(options)) => options,
        Ok(None) => {
            print!("{}", cli::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("ocpp-load: {e}\n\n{}", cli::USAGE);
            return ExitCode::from(2);
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
    match coordinator::run(options.clone(), &args) {
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
