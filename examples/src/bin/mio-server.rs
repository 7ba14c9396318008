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
    let args = server_cli::start_process(
        "mio-server",
        "A CSMS (OCPP central system) on single-threaded mio event loops.",
        "event loops (threads) sharing the port with SO_REUSEPORT",
    );
    server_cli::exit_code("mio-server", mio_server::serve("mio-server", &args, false))
}
