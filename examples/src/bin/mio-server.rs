//! `mio-server`: a CSMS on mio event loops, built on `ocpp-server-core` and the shared
//! [`ocpp_examples::csms`] application. See [`ocpp_examples::mio_server`] for how the loop
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
use std::sync::Arc;
use std::time::Duration;

use ocpp_cluster::ClusterConfig;
use ocpp_examples::mio_server::{Server, ServerConfig};
use ocpp_examples::server_cli::{self, parse_args, Args};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

fn usage() -> String {
    let mut usage = server_cli::usage(
        "mio-server",
        "A CSMS (OCPP central system) on single-threaded mio event loops.",
        "event loops (threads) sharing the port with SO_REUSEPORT",
    );
    usage.push_str(
        "

Cluster (with --redis and --node-id): SIGINT/SIGTERM close with 1012 and leave the cluster.
  --cluster-ttl-s N      the claim and node record TTL in seconds (default 90; refreshed
                         every third of it): how long a killed node's charge points stay
                         claimed by it",
    );
    usage
}

/// Takes `--cluster-ttl-s N` (mio-server only) out of the arguments.
fn take_cluster_ttl(args: Vec<String>) -> Result<(Vec<String>, Option<Duration>), String> {
    let mut rest = Vec::with_capacity(args.len());
    let mut ttl = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let value = if arg == "--cluster-ttl-s" {
            args.next().ok_or("--cluster-ttl-s needs a value")?
        } else if let Some(value) = arg.strip_prefix("--cluster-ttl-s=") {
            value.to_owned()
        } else {
            rest.push(arg);
            continue;
        };
        let seconds: u64 = value
            .parse()
            .ok()
            .filter(|s| *s > 0)
            .ok_or("--cluster-ttl-s takes a positive number of seconds")?;
        ttl = Some(Duration::from_secs(seconds));
    }
    Ok((rest, ttl))
}

fn main() -> ExitCode {
    let parsed = take_cluster_ttl(std::env::args().skip(1).collect())
        .and_then(|(args, ttl)| Ok(parse_args(args.into_iter())?.map(|args| (args, ttl))));
    let (args, cluster_ttl) = match parsed {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{}", usage());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("mio-server: {e}\n\n{}", usage());
            return ExitCode::from(2);
        }
    };
    server_cli::init_logging();
    server_cli::raise_open_files_limit();
    match run(args, cluster_ttl) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("mio-server: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args, cluster_ttl: Option<Duration>) -> Result<(), Box<dyn std::error::Error>> {
    let csms = Arc::new(server_cli::csms(&args)?);
    let mut config = ServerConfig::new(args.listen);
    config.admin = args.admin;
    config.threads = args.threads;
    config.push_interval = args.push_interval;
    config.connection = server_cli::connection_config(&args);
    config.tls = server_cli::tls_config(&args)?;
    if let (Some(redis), Some(node_id)) = (&args.redis, &args.node_id) {
        let mut cluster = ClusterConfig::new(redis.as_str(), node_id.as_str());
        if let Some(admin) = args.admin {
            cluster = cluster.with_address(format!("http://{admin}"));
        }
        if let Some(ttl) = cluster_ttl {
            cluster = cluster.with_claim_ttl(ttl).with_node_ttl(ttl);
        }
        tracing::info!(node_id, redis, "cluster node");
        config.cluster = Some(cluster);
    } else if cluster_ttl.is_some() {
        return Err("--cluster-ttl-s needs --redis and --node-id".into());
    }
    let server = Server::bind(config, csms)?;

    // Signals are read on their own thread, which asks the loops to shut down.
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    let shutdown = server.shutdown_handle();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut signals = signals.forever();
            if let Some(signal) = signals.next() {
                tracing::info!(signal, "signal received, shutting down");
                shutdown.shutdown();
            }
            // A second signal does not wait for the graceful shutdown.
            if let Some(signal) = signals.next() {
                tracing::warn!(signal, "second signal, exiting at once");
                std::process::exit(130);
            }
        })?;

    let admin = server
        .admin_addr()
        .map_or_else(|| "off".to_owned(), |addr| addr.to_string());
    println!(
        "mio-server listening on {} (admin on {admin})",
        server.local_addr()
    );
    tracing::info!(threads = args.threads, push_interval = ?args.push_interval, "running");
    server.run()?;
    tracing::info!("stopped");
    Ok(())
}
