//! The command line, logging and process limits that `mio-server` and `tokio-server` share:
//! the two servers differ only in their I/O loop.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use ocpp_server_core::ConnectionConfig;

use crate::csms::{Credentials, Csms, CsmsConfig};

/// Where charge points connect unless `--listen` says otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9000";
/// Where the admin interface listens unless `--admin` says otherwise.
pub const DEFAULT_ADMIN: &str = "127.0.0.1:9001";

/// The usage text of server `name`: `intro` describes its loop, `threads` what `--threads N`
/// means for it.
pub fn usage(name: &str, intro: &str, threads: &str) -> String {
    format!(
        "Usage: {name} [OPTIONS]

{intro} Charge points connect to
ws://LISTEN/<any path>/<identity> with subprotocol ocpp1.6, ocpp2.0.1 or ocpp2.1.

Options:
  --listen ADDR          address for charge points (default {DEFAULT_LISTEN}; port 0 picks one)
  --admin ADDR|off       admin HTTP interface (default {DEFAULT_ADMIN}; `off` disables it):
                           GET  /chargepoints                       connected charge points (JSON)
                           GET  /chargepoints/ID                    one charge point (JSON)
                           POST /chargepoints/ID/call/ACTION        send a CALL, JSON payload as body
                           GET  /metrics                            Prometheus text
  --threads N            {threads} (default 1)
  --push-interval-ms N   every N ms send each charge point a DataTransfer
                         {{\"vendorId\":\"bench\",\"messageId\":\"ts\",\"data\":\"<seq>:<unix_nanos>\"}}
  --basic-auth FILE      require HTTP Basic auth (security profile 1); FILE has lines
                         `identity:password`; others get 401 before the upgrade
  -h, --help             print this help

Logs go to stderr (RUST_LOG filters them, default `info`: one line per connect and disconnect).
Prints `{name} listening on ADDR (admin on ADDR)` on stdout once it accepts connections.
SIGINT/SIGTERM close every connection with 1001 and exit within a few seconds."
    )
}

/// The parsed command line.
#[derive(Debug)]
pub struct Args {
    /// `--listen`.
    pub listen: SocketAddr,
    /// `--admin`; `None` for `off`.
    pub admin: Option<SocketAddr>,
    /// `--threads`.
    pub threads: usize,
    /// `--push-interval-ms`.
    pub push_interval: Option<Duration>,
    /// `--basic-auth`.
    pub basic_auth: Option<PathBuf>,
}

/// Parses `--flag value` and `--flag=value` by hand: few options, no dependency. `Ok(None)`
/// means `--help`.
pub fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
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

/// Logs to stderr, filtered by `RUST_LOG` (default `info`).
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

/// The CSMS application for these arguments (credentials loaded from `--basic-auth`).
pub fn csms(args: &Args) -> Result<Csms, Box<dyn std::error::Error>> {
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
    Ok(Csms::new(CsmsConfig::default().credentials(credentials)))
}

/// The connection settings both servers use: pings detect dead links, and charge points that
/// only send a Heartbeat every 300 s must not be dropped as idle, so the idle timeout is off.
/// Closing waits at most 3 s for the peer.
pub fn connection_config() -> ConnectionConfig {
    ConnectionConfig::default()
        .idle_timeout(None)
        .close_timeout(Duration::from_secs(3))
}

/// Raises the soft limit of open files to the hard limit: each connection is a descriptor.
pub fn raise_open_files_limit() {
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
