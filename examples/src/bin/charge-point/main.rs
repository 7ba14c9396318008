//! `charge-point`: an OCPP charge point simulator (OCPP-J 1.6, 2.0.1 and 2.1 over `ws://` or
//! `wss://`).
//!
//! It connects to a CSMS (identity in the URL's last segment, the versions offered as
//! subprotocols in order, `Authorization: Basic` with `--password`), boots, reports its
//! connectors, heartbeats at the interval the CSMS gives, optionally plays a charging session
//! (`--session`), answers the CSMS's commands, and reconnects with the back-off of OCPP 2.0.1
//! Part 4 §5.3 after any loss. On exit (`--duration-s`, Ctrl-C or SIGTERM) it prints one
//! summary line on stdout.
//!
//! ```sh
//! cargo run --release -p ocpp-examples --bin charge-point -- \
//!     --url ws://127.0.0.1:9000/ocpp/CP001 --version 1.6 --session --duration-s 60
//! # security profile 3: TLS with a client certificate whose subject CN is CP001
//! cargo run --release -p ocpp-examples --bin charge-point -- \
//!     --url wss://localhost:9000/ocpp/CP001 --ca ca.pem --cert cp001.pem --key cp001.key
//! ```
//!
//! How it is built: each simulated charge point is an [`ocpp_tokio::station::Station`] (the
//! client: connection, TLS, Basic auth, boot, heartbeat, reconnect back-off, offline queue of
//! transaction messages) with a router and tasks of [`station`] (what the simulated station
//! answers and sends), on one current-thread tokio runtime.

mod cli;
mod settings;
mod station;
mod stats;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ocpp_proto::ChargePointIdentity;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::{info, warn};

use cli::Options;
use stats::Stats;

/// How long the charge points get to close their connections after the stop command.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(6);

fn main() -> ExitCode {
    // `--help`: the help on stdout, exit code 0; a bad argument: the error on stderr, 2.
    let options = Options::try_parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit());
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    // OCPP 2.x identities: at most 48 characters, no ':' (OCPP 2.0.1 Part 4 §3.1.1).
    let strict = options.versions.iter().any(|v| v.is_2x());
    let mut identities = Vec::new();
    for name in options.identities() {
        match ChargePointIdentity::new(name.clone(), strict) {
            Ok(identity) => identities.push(identity.as_str().to_owned()),
            Err(error) => {
                eprintln!("charge-point: identity {name:?}: {error}");
                return ExitCode::from(2);
            }
        }
    }
    let tls = match tls_config(&options) {
        Ok(tls) => tls,
        Err(message) => {
            eprintln!("charge-point: {message}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("charge-point: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(options, tls, identities));
    ExitCode::SUCCESS
}

/// `wss://`: the TLS client configuration from `--ca`, `--cert` and `--key`.
fn tls_config(options: &Options) -> Result<Option<Arc<rustls::ClientConfig>>, String> {
    let Some(ca) = options.ca.as_deref().filter(|_| options.url.tls) else {
        return Ok(None);
    };
    let client_cert = options.client_cert();
    let identity = client_cert
        .as_ref()
        .map(|(cert, key)| (cert.as_path(), key.as_path()));
    ocpp_examples::tls::client_config(ca, identity)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// Runs every charge point until the duration passes or a signal comes, stops them, and prints
/// the summary line.
async fn run(options: Options, tls: Option<Arc<rustls::ClientConfig>>, identities: Vec<String>) {
    let stats = Arc::new(Mutex::new(Stats::new(identities.len())));
    let seed = options.seed.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
            ^ u64::from(std::process::id())
    });
    let mut rng = fastrand::Rng::with_seed(seed);
    let options = Arc::new(options);
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    info!(
        count = identities.len(),
        host = %options.url.host,
        versions = ?options.versions,
        "starting"
    );
    // Many charge points start spread over up to a second rather than all at once.
    let spread_ms = (identities.len() as u64).min(1000);
    for identity in identities {
        let start_after = Duration::from_millis(if spread_ms > 1 {
            rng.u64(..spread_ms)
        } else {
            0
        });
        let url = options.url_of(&identity);
        let simulate = station::run(
            options.clone(),
            identity,
            url,
            tls.clone(),
            stats.clone(),
            stop_rx.clone(),
            rng.u64(..),
        );
        let mut stop = stop_rx.clone();
        tasks.spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(start_after) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            simulate.await;
        });
    }
    let duration = options.duration;
    let elapsed = async move {
        match duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = elapsed => info!("duration reached"),
        _ = shutdown_signal() => info!("signal received"),
    }
    let _ = stop_tx.send(true);
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        warn!("some charge points did not close in time");
        tasks.abort_all();
    }
    // The connections' last callbacks (counters) run before the summary.
    for _ in 0..4 {
        tokio::task::yield_now().await;
    }
    let summary = stats.lock().unwrap_or_else(|e| e.into_inner()).to_string();
    println!("{summary}");
}

/// Ctrl-C, or SIGTERM on Unix.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
