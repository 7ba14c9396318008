//! `uring-server`: mio-server's CSMS (the same `ocpp-proto` connections, the same
//! [`ocpp_reference_csms`] application, the same admin interface) with the charge points'
//! sockets driven by io_uring (Linux only).
//!
//! Each loop queues its work as submission entries and makes one `io_uring_enter` per turn,
//! which submits them all and waits for completions until the earliest connection deadline:
//! a multishot accept on the listener, a multishot receive per connection with buffers picked
//! by the kernel from a provided-buffer ring (an idle connection holds no receive buffer), a
//! send per connection with output, and a multishot poll on the loop's epoll descriptor for
//! the admin sockets and the mailbox. The loop itself is mio-server's
//! (`ocpp_examples::mio_server`, module `uring`). Plain `ws://` only: TLS and the cluster are
//! mio-server's and tokio-server's, and their options are refused.
//!
//! ```text
//! cargo run --release -p ocpp-examples --bin uring-server -- --threads 2 --push-interval-ms 1000
//! # charge points connect to ws://127.0.0.1:9000/ocpp/CP001 (ocpp1.6, ocpp2.0.1, ocpp2.1)
//! curl http://127.0.0.1:9001/chargepoints
//! ```

use std::process::ExitCode;

#[cfg(target_os = "linux")]
fn main() -> ExitCode {
    use ocpp_examples::server_cli;
    let command = server_cli::command(
        "uring-server",
        "A CSMS (OCPP central system) on io_uring loops: mio-server's loop with its charge \
         points' sockets on io_uring. Plain ws:// only (no --tls-*, no --redis).",
        "event loops (threads, one ring each) sharing the port with SO_REUSEPORT",
    );
    // Errors and --help exit here (2 and 0), with the usage or the help.
    let args = server_cli::args_from(command, std::env::args_os()).unwrap_or_else(|e| e.exit());
    if let Some(option) = refused(&args) {
        eprintln!(
            "uring-server: {option} is not supported: uring-server serves plain ws:// on one \
             node; TLS and the cluster are mio-server's and tokio-server's"
        );
        return ExitCode::from(2);
    }
    server_cli::init_logging();
    server_cli::raise_open_files_limit();
    let served = ocpp_examples::mio_server::serve("uring-server", &args, true);
    server_cli::exit_code("uring-server", served)
}

/// The first option given that needs TLS or a cluster.
#[cfg(target_os = "linux")]
fn refused(args: &ocpp_examples::server_cli::Args) -> Option<&'static str> {
    [
        (!args.tls_cert.is_empty(), "--tls-cert"),
        (!args.tls_key.is_empty(), "--tls-key"),
        (args.client_ca.is_some(), "--client-ca"),
        (args.redis.is_some(), "--redis"),
    ]
    .into_iter()
    .find_map(|(given, option)| given.then_some(option))
}

#[cfg(not(target_os = "linux"))]
fn main() -> ExitCode {
    eprintln!("uring-server: io_uring is Linux only; use mio-server or tokio-server");
    ExitCode::FAILURE
}
