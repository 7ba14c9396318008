//! `tokio-server`: a CSMS on a multi-thread tokio runtime, built on `ocpp-server-core` and the
//! shared [`ocpp_examples::csms`] application; the same behaviour and command line as
//! `mio-server`. See [`ocpp_examples::tokio_server`] for how the tasks work; this file is the
//! command line, logging, limits, the runtime and signals.
//!
//! ```text
//! cargo run --release -p ocpp-examples --bin tokio-server -- --threads 2 --push-interval-ms 1000
//! # charge points connect to ws://127.0.0.1:9000/ocpp/CP001 (ocpp1.6, ocpp2.0.1, ocpp2.1)
//! curl http://127.0.0.1:9001/chargepoints
//! curl -X POST -d '{"type":"Soft"}' http://127.0.0.1:9001/chargepoints/CP001/call/Reset
//! curl http://127.0.0.1:9001/metrics
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use ocpp_examples::csms::{Credentials, Csms, CsmsConfig};
use ocpp_examples::tokio_server::{Server, ServerConfig, ShutdownHandle};
use ocpp_server_core::ConnectionConfig;
use tokio::signal::unix::{signal, SignalKind};

const DEFAULT_LISTEN: &str = "127.0.0.1:9000";
const DEFAULT_ADMIN: &str = "127.0.0.1:9001";

fn usage() -> String {
    format!(
        "Usage: tokio-server [OPTIONS]

A CSMS (OCPP central system) on a tokio runtime, one task per connection. Charge points connect to
ws://LISTEN/<any path>/<identity> with subprotocol ocpp1.6, ocpp2.0.1 or ocpp2.1.

Options:
  --listen ADDR          address for charge points (default {DEFAULT_LISTEN}; port 0 picks one)
  --admin ADDR|off       admin HTTP interface (default {DEFAULT_ADMIN}; `off` disables it):
                           GET  /chargepoints                       connected charge points (JSON)
                           GET  /chargepoints/ID                    one charge point (JSON)
                           POST /chargepoints/ID/call/ACTION        send a CALL, JSON payload as body
                           GET  /metrics                            Prometheus text
  --threads N            worker threads of the multi-thread tokio runtime (default 1)
  --push-interval-ms N   every N ms send each charge point a DataTransfer
                         {{\"vendorId\":\"bench\",\"messageId\":\"ts\",\"data\":\"<seq>:<unix_nanos>\"}}
  --basic-auth FILE      require HTTP Basic auth (security profile 1); FILE has lines
                         `identity:password`; others get 401 before the upgrade
  -h, --help             print this help

Logs go to stderr (RUST_LOG filters them, default `info`: one line per connect and disconnect).
Prints `tokio-server listening on ADDR (admin on ADDR)` on stdout once it accepts connections.
SIGINT/SIGTERM close every connection with 1001 and exit within a few seconds."
    )
}

/// The parsed command line.
#[derive(Debug)]
struct Args {
    listen: SocketAddr,
    admin: Option<SocketAddr>,
    threads: usize,
    push_interval: Option<Duration>,
    basic_auth: Option<PathBuf>,
}

/// Parses `--flag value` and `--flag=value` by hand: few options, no dependency.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut parsed = Args {
        listen: parse_addr(DEFAULT_LISTEN)?,
        admin: Some(parse_addr(DEFAULT_ADMIN)?),
        threads: 1,
        push_interval: None,
        basic_auth: None,
    };
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg, None),
        };
        if flag == "-h" || flag == "--help" {
            return Ok(None);
        }
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--listen" => parsed.listen = parse_addr(&value()?)?,
            "--admin" => {
                let value = value()?;
                parsed.admin = match value.as_str() {
                    "off" | "none" => None,
                    addr => Some(parse_addr(addr)?),
                };
            }
            "--threads" => {
                parsed.threads = value()?
                    .parse()
                    .ok()
                    .filter(|n| (1..=1024).contains(n))
                    .ok_or("--threads takes a number from 1 to 1024")?;
            }
            "--push-interval-ms" => {
                let ms: u64 = value()?
                    .parse()
                    .ok()
                    .filter(|ms| *ms > 0)
                    .ok_or("--push-interval-ms takes a positive number")?;
                parsed.push_interval = Some(Duration::from_millis(ms));
            }
            "--basic-auth" => parsed.basic_auth = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(Some(parsed))
}

fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    text.parse()
        .map_err(|e| format!("invalid address {text:?}: {e}"))
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{}", usage());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("tokio-server: {e}\n\n{}", usage());
            return ExitCode::from(2);
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    raise_open_files_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads)
        .thread_name("tokio-worker")
        .enable_all()
        .build();
    let result = match runtime {
        Ok(runtime) => runtime.block_on(run(args)),
        Err(e) => Err(e.into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("tokio-server: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let credentials = match &args.basic_auth {
        Some(path) => {
            let credentials = Credentials::load(path)?;
            tracing::info!(
                identities = credentials.len(),
                "Basic authentication required"
            );
            Some(credentials)
        }
        None => None,
    };
    let csms = Arc::new(Csms::new(CsmsConfig::default().credentials(credentials)));
    let mut config = ServerConfig::new(args.listen);
    config.admin = args.admin;
    config.push_interval = args.push_interval;
    // As mio-server: pings detect dead links; charge points that only send a Heartbeat every
    // 300 s must not be dropped as idle. Closing waits at most 3 s for the peer.
    config.connection = ConnectionConfig::default()
        .idle_timeout(None)
        .close_timeout(Duration::from_secs(3));
    let server = Server::bind(config, csms)?;

    // Listen for the signals before announcing that we run.
    let interrupt = signal(SignalKind::interrupt())?;
    let terminate = signal(SignalKind::terminate())?;
    tokio::spawn(on_signals(interrupt, terminate, server.shutdown_handle()));

    let admin = server
        .admin_addr()
        .map_or_else(|| "off".to_owned(), |addr| addr.to_string());
    println!(
        "tokio-server listening on {} (admin on {admin})",
        server.local_addr()
    );
    tracing::info!(threads = args.threads, push_interval = ?args.push_interval, "running");
    server.run().await?;
    tracing::info!("stopped");
    Ok(())
}

/// The first SIGINT or SIGTERM shuts the server down gracefully; a second exits at once.
async fn on_signals(
    mut interrupt: tokio::signal::unix::Signal,
    mut terminate: tokio::signal::unix::Signal,
    shutdown: ShutdownHandle,
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

/// Raises the soft limit of open files to the hard limit: each connection is a descriptor.
fn raise_open_files_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    let before = limit.current;
    if limit.current != limit.maximum {
        limit.current = limit.maximum;
        if let Err(e) = setrlimit(Resource::Nofile, limit) {
            tracing::warn!("cannot raise RLIMIT_NOFILE: {e}");
            return;
        }
    }
    tracing::info!(from = ?before, to = ?limit.maximum, "open files limit");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Args>, String> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn defaults_and_flags() {
        let args = parse(&[]).unwrap().unwrap();
        assert_eq!(args.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(args.admin.unwrap().to_string(), DEFAULT_ADMIN);
        let args = parse(&[
            "--listen=127.0.0.1:0",
            "--admin",
            "off",
            "--threads",
            "2",
            "--push-interval-ms",
            "500",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(args.listen.port(), 0);
        assert!(args.admin.is_none());
        assert_eq!(args.threads, 2);
        assert_eq!(args.push_interval, Some(Duration::from_millis(500)));
        assert!(parse(&["--help"]).unwrap().is_none());
        assert!(parse(&["--threads", "0"]).is_err());
        assert!(parse(&["--bogus"]).is_err());
        assert!(parse(&["--listen"]).is_err());
    }
}
