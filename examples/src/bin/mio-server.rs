//! `mio-server`: a CSMS on mio event loops, built on `ocpp-proto` and the shared
//! [`ocpp_reference_csms`] application. See [`ocpp_examples::mio_server`] for how the loop
//! works; this file is the command line, logging, limits and signals.
//!
//! ```text
//! cargo run --release -p ocpp-examples --bin mio-server -- --threads 2 --push-interval-ms 1000
//! # charge points connect to ws://127.0.0.1:9000/ocpp/CP001 (ocpp1.6, ocpp2.0.1, ocpp2.1)
//! curl http://127.0.0.1:9001/chargepoints
//! curl -X POST -d '{"type":"Soft"}' http://127.0.0.1:9001/chargepoints/CP001/call/Reset
//! curl http://127.0.0.1:9001/metrics
//! # two cluster nodes on one Redis: a command through either reaches the charge point
//! cargo run -p ocpp-examples --bin mio-server -- --listen 127.0.0.1:9000 --admin 127.0.0.1:9001 \
//!     --redis redis://127.0.0.1:6379/ --node-id a
//! cargo run -p ocpp-examples --bin mio-server -- --listen 127.0.0.1:9100 --admin 127.0.0.1:9101 \
//!     --redis redis://127.0.0.1:6379/ --node-id b
//! ```

use std::process::ExitCode;

use ocpp_examples::mio_server;
use ocpp_examples::server_cli;

fn main() -> ExitCode {
    let command = server_cli::command(
        "mio-server",
        "A CSMS (OCPP central system) on single-threaded mio event loops.",
        "event loops (threads) sharing the port with SO_REUSEPORT",
    );
    // Errors and --help exit here (2 and 0), with the usage or the help.
    let args = server_cli::args_from(command, std::env::args_os()).unwrap_or_else(|e| e.exit());
    server_cli::init_logging();
    server_cli::raise_open_files_limit();
    match mio_server::serve("mio-server", &args, false) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("mio-server: {e}");
            ExitCode::FAILURE
        }
    }
}
