//! `tokio-server`: a CSMS on a multi-thread tokio runtime, built on `ocpp-tokio` (the tokio
//! driver of `ocpp-proto`) and the shared [`ocpp_reference_csms`] application, with its
//! admin interface on axum; the same behaviour and command line as `mio-server`. See
//! [`ocpp_examples::tokio_server`] for the wiring; this file is the command line, logging,
//! limits, the runtime and signals.
//!
//! ```text
//! cargo run --release -p ocpp-examples --bin tokio-server -- --threads 2 --push-interval-ms 1000
//! # charge points connect to ws://127.0.0.1:9000/ocpp/CP001 (ocpp1.6, ocpp2.0.1, ocpp2.1)
//! curl http://127.0.0.1:9001/chargepoints
//! curl -X POST -d '{"type":"Soft"}' http://127.0.0.1:9001/chargepoints/CP001/call/Reset
//! curl http://127.0.0.1:9001/metrics
//! # a cluster node on Redis, with mio-server or tokio-server nodes: one protocol
//! cargo run -p ocpp-examples --bin tokio-server -- --listen 127.0.0.1:9100 --admin 127.0.0.1:9101 \
//!     --redis redis://127.0.0.1:6379/ --node-id b
//! ```

use std::process::ExitCode;

use ocpp_examples::server_cli::{self, Args};
use ocpp_examples::tokio_server::{TokioServer, TokioShutdownHandle};
use tokio::signal::unix::{signal, SignalKind};

fn main() -> ExitCode {
    let args = server_cli::start_process(
        "tokio-server",
        "A CSMS (OCPP central system) on a tokio runtime, its connections on ocpp-tokio shards (or a task each with --shards 0).",
        "worker threads of the multi-thread tokio runtime",
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads)
        .thread_name("tokio-worker")
        .enable_all()
        .build();
    let result = match runtime {
        Ok(runtime) => runtime.block_on(run(args)),
        Err(e) => Err(e.into()),
    };
    server_cli::exit_code("tokio-server", result)
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    // The configuration first: it refuses what must not start before anything is opened.
    let config = server_cli::server_config(&args)?;
    let csms = server_cli::csms(&args)?;
    let server = TokioServer::bind(config, std::sync::Arc::clone(&csms))?;

    // Listen for the signals before announcing that we run.
    let interrupt = signal(SignalKind::interrupt())?;
    let terminate = signal(SignalKind::terminate())?;
    tokio::spawn(on_signals(interrupt, terminate, server.shutdown_handle()));

    server_cli::announce_listening("tokio-server", server.local_addr(), server.admin_addr());
    tracing::info!(threads = args.threads, shards = args.shards(), push_interval = ?args.push_interval, "running");
    server.run().await?;
    // The meter values queued for the database are written before the process ends.
    csms.flush();
    tracing::info!("stopped");
    Ok(())
}

/// The first SIGINT or SIGTERM shuts the server down gracefully; a second exits at once.
async fn on_signals(
    mut interrupt: tokio::signal::unix::Signal,
    mut terminate: tokio::signal::unix::Signal,
    shutdown: TokioShutdownHandle,
) {
    for first in [true, false] {
        let name = tokio::select! {
            _ = interrupt.recv() => "SIGINT",
            _ = terminate.recv() => "SIGTERM",
        };
        if first {
            tracing::info!(signal = name, "signal received, shutting down");
            shutdown.shutdown();
        } else {
            tracing::warn!(signal = name, "second signal, exiting at once");
            std::process::exit(130);
        }
    }
}
