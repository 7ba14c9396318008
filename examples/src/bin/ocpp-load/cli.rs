//! The command line of `ocpp-load`, parsed by clap.
//!
//! [`parse`] turns the arguments into [`Options`], the one struct clap derives and the rest of
//! `ocpp-load` reads. Clap checks the spelling of every option and runs each value through one
//! of the small parsers at the end of this file (numbers, seconds, shares, addresses...), so a
//! bad value is reported as clap's error for that option; the help of every option is its doc
//! comment in [`Options`] or [`SoakOptions`]. What depends on several options or turns a 0
//! into "off" or a default is a method (`sources()`, `processes()`, `heartbeat()`...).
//!
//! The coordinator starts its workers with its own command line plus `--worker I/P`, so
//! whatever parses here once parses again in every worker.

use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use clap::{Args, Parser, ValueEnum};
use ocpp_messages::version::OcppVersion;

/// What the swarm does after it has connected.
///
/// The doc comment of each variant is its help in `ocpp-load --help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Scenario {
    /// handshake + BootNotification for every charge point (answers checked)
    Connect,
    /// connect, then hold every connection silent for --duration-s
    Idle,
    /// connect, then Heartbeat every --heartbeat-s, StatusNotification every --status-s and
    /// MeterValues every --meter-s, spread evenly, answers checked
    Heartbeat,
    /// connect, then answer the server's DataTransfer pushes (mio-server --push-interval-ms N);
    /// latency = receive time - the server's stamp, gaps in the sequence counted as loss
    Push,
    /// push, for 1 or 20 clients with the server pushing every 10 ms (the streaming study of
    /// seed 002)
    Stream,
    /// connect, then stop the server (--server-pid) and start it again (--restart-cmd): the
    /// time until every charge point is back and booted
    Reconnect,
    /// connect, then for --duration-s: charging sessions (Authorize, Start, MeterValues every
    /// --meter-s, Stop, StatusNotification), Heartbeat every --heartbeat-s, commands through
    /// the admin API (--admin), churn (clean closes, abrupt drops, reconnects with back-off and
    /// jitter, duplicate identities); then every CALL both ways is reconciled with the
    /// server's /metrics
    Soak,
}

impl Scenario {
    /// The scenario's name on the command line and in the report.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Scenario::Connect => "connect",
            Scenario::Idle => "idle",
            Scenario::Heartbeat => "heartbeat",
            Scenario::Push => "push",
            Scenario::Stream => "stream",
            Scenario::Reconnect => "reconnect",
            Scenario::Soak => "soak",
        }
    }

    /// The phase after `connect`, if any.
    pub(crate) fn run_phase(self) -> Option<&'static str> {
        match self {
            Scenario::Connect => None,
            Scenario::Idle => Some("idle"),
            Scenario::Heartbeat => Some("heartbeat"),
            Scenario::Push | Scenario::Stream => Some("push"),
            Scenario::Reconnect => Some("reconnect"),
            Scenario::Soak => Some("soak"),
        }
    }
}

/// Where the worker processes take their part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WorkerSlot {
    /// 0-based.
    pub(crate) index: usize,
    /// How many workers there are.
    pub(crate) of: usize,
}

/// Whether the charge points offer permessage-deflate.
///
/// The doc comment of each variant is its help in `ocpp-load --help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Deflate {
    /// do not offer it
    Off,
    /// offer it without context takeover
    NoContext,
    /// offer it with context takeover both ways
    Context,
}

/// Where the receive time of a push comes from (`--timestamps`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Timestamps {
    /// the kernel's stamp on the packet (SO_TIMESTAMPNS)
    Kernel,
    /// the wall clock, read in user space when the read returns
    User,
}

/// The first line of `--help`.
const ABOUT: &str =
    "ocpp-load: a swarm of OCPP charge points on mio, for measuring a central system";

/// The end of `--help`.
const NOTES: &str = "\
Notes:
  Times are in seconds (fractions allowed) unless the option says ms; a period of 0 turns
  that message off. Given twice, an option keeps its last value; --sources and
  --source-count replace each other.
  The charge points run in worker processes: ocpp-load itself again, with the same command
  line plus --worker I/P. RUST_LOG filters the log on stderr [default: warn].
  The report is printed and, with --json FILE, written as JSON; bench/run.sh runs every
  scenario against every server.

Example:
  ocpp-load heartbeat --url ws://127.0.0.1:9000/ocpp --count 10000 --server-pid 1234";

/// Everything `ocpp-load` is told: the command line as clap parses it.
///
/// The doc comment of each field is the option's help. Numeric options accept a leading `-`
/// as part of their value so that `--rate -1` is reported by the option's own rule, and the
/// free-text ones so that a password or a label may start with `-`, as before clap.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "ocpp-load",
    about = ABOUT,
    long_about = None,
    after_help = NOTES,
    // `--version` is the OCPP version, not the program's.
    disable_version_flag = true,
    // Scripts append to a common command line (bench/run.sh repeats --label): the last wins.
    args_override_self = true,
)]
pub(crate) struct Options {
    /// what to run after connecting
    #[arg(value_enum, value_name = "SCENARIO")]
    pub(crate) scenario: Scenario,

    /// ws://HOST:PORT/PATH, HOST an IP address or localhost; the identity is appended
    #[arg(long, value_name = "URL", default_value = "ws://127.0.0.1:9000/ocpp", value_parser = url)]
    pub(crate) url: Target,

    /// charge points, at least 1
    #[arg(long, value_name = "N", default_value = "1000")]
    #[arg(value_parser = count, allow_negative_numbers = true)]
    pub(crate) count: usize,

    /// new connections per second, over all processes (> 0)
    #[arg(long, value_name = "N", default_value = "1000")]
    #[arg(value_parser = rate, allow_negative_numbers = true)]
    pub(crate) rate: f64,

    /// 1.6, 2.0.1 or 2.1
    #[arg(long, value_name = "V", default_value = "1.6", value_parser = version)]
    pub(crate) version: OcppVersion,

    /// identities are P000000, P000001, ...
    #[arg(
        long,
        value_name = "P",
        default_value = "LOAD",
        allow_hyphen_values = true
    )]
    pub(crate) prefix: String,

    /// Basic auth password (the same for every charge point); better from the environment
    /// variable OCPP_PASSWORD than on the command line, where ps shows it
    #[arg(
        long,
        value_name = "P",
        env = "OCPP_PASSWORD",
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    pub(crate) password: Option<String>,

    /// source addresses, used in turn (one address reaches at most 28,232 connections to one
    /// port) [default: 127.0.0.1]
    // `std::vec::Vec`, not `Vec`: one value that the parser splits, not a repeated option.
    #[arg(long, value_name = "A,B,...", value_parser = sources, overrides_with = "source_count")]
    sources: Option<std::vec::Vec<IpAddr>>,

    /// shorthand for --sources 127.0.0.2,...,127.0.0.(K+1); K within 1..=250
    #[arg(long, value_name = "K")]
    #[arg(value_parser = source_count, allow_negative_numbers = true, overrides_with = "sources")]
    source_count: Option<u8>,

    /// worker processes (one holds at most ~19,990 sockets), 0 = the default
    /// [default: count / 19,000 rounded up]
    #[arg(long, value_name = "P", value_parser = number::<usize>, allow_negative_numbers = true)]
    processes: Option<usize>,

    /// length of the phase after connect
    #[arg(long = "duration-s", value_name = "S", default_value = "20")]
    #[arg(value_parser = seconds, allow_negative_numbers = true)]
    pub(crate) duration: Duration,

    /// Heartbeat period, 0 = none
    #[arg(long, value_name = "S", default_value = "10")]
    #[arg(value_parser = seconds, allow_negative_numbers = true)]
    pub(crate) heartbeat_s: Duration,

    /// StatusNotification period, 0 = none
    #[arg(long, value_name = "S", default_value = "30")]
    #[arg(value_parser = seconds, allow_negative_numbers = true)]
    pub(crate) status_s: Duration,

    /// MeterValues period, 0 = none
    #[arg(long, value_name = "S", default_value = "30")]
    #[arg(value_parser = seconds, allow_negative_numbers = true)]
    pub(crate) meter_s: Duration,

    /// give up on the connect phase after S seconds, 0 = the default
    #[arg(long, value_name = "S", default_value = "120")]
    #[arg(value_parser = seconds, allow_negative_numbers = true)]
    pub(crate) connect_timeout_s: Duration,

    /// read the server's RSS and CPU time from /proc at each phase boundary (several PIDs are
    /// summed)
    // `std::vec::Vec`, not `Vec`: one value that the parser splits, not a repeated option.
    #[arg(long, value_name = "PID,...", value_parser = pids, allow_negative_numbers = true)]
    pub(crate) server_pid: Option<std::vec::Vec<u32>>,

    /// reconnect (required there): `sh -c CMD` starts the server again after the old one
    /// (--server-pid) was stopped with SIGTERM
    #[arg(
        long,
        value_name = "CMD",
        required_if_eq("scenario", "reconnect"),
        allow_hyphen_values = true
    )]
    pub(crate) restart_cmd: Option<String>,

    /// reconnect: write the restarted server's PID there
    #[arg(long, value_name = "F")]
    pub(crate) restart_pid_file: Option<String>,

    /// idle, heartbeat: a charge point whose connection drops (its node of a cluster killed,
    /// say) connects again to --url with back-off (--retry-min-ms, doubled per failed try up to
    /// 8 s) plus jitter (--retry-random-ms) and boots again (a Pending BootNotification is sent
    /// again after its interval); the phase counts `dropped`, `rebooted` and `not_back`, the
    /// time from the drop to the boot accepted (`reconnect`: p50, p99, max) and
    /// `all_back_after_s`
    #[arg(long)]
    pub(crate) rejoin: bool,

    /// idle, heartbeat: end the phase early once file F exists (a script's word that its
    /// measurement is over); --duration-s stays the longest
    #[arg(long, value_name = "F")]
    pub(crate) end_file: Option<String>,

    /// reconnect, soak, --rejoin: first retry after MS + random(--retry-random-ms)
    #[arg(long = "retry-min-ms", value_name = "MS", default_value = "250")]
    #[arg(value_parser = millis, allow_negative_numbers = true)]
    pub(crate) retry_min: Duration,

    /// reconnect, soak, --rejoin: the longest random delay added to a retry
    #[arg(long = "retry-random-ms", value_name = "MS", default_value = "1000")]
    #[arg(value_parser = millis, allow_negative_numbers = true)]
    pub(crate) retry_random: Duration,

    /// offer permessage-deflate
    #[arg(long, value_enum, value_name = "MODE", default_value = "off")]
    pub(crate) deflate: Deflate,

    // `soak`'s options; clap lists them here, in this order.
    #[command(flatten)]
    pub(crate) soak: SoakOptions,

    /// load both cores to PERCENT (0..=100) with busy threads during the run phase
    #[arg(long = "burn", value_name = "PERCENT", default_value = "0")]
    #[arg(value_parser = percent, allow_negative_numbers = true)]
    pub(crate) burn_percent: u32,

    /// where the receive time of a push comes from
    #[arg(long, value_enum, value_name = "K", default_value = "kernel")]
    timestamps: Timestamps,

    /// the server's name in the report
    #[arg(
        long,
        value_name = "NAME",
        default_value = "server",
        allow_hyphen_values = true
    )]
    pub(crate) label: String,

    /// write the report as JSON there
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<String>,

    /// internal: run as worker I of P (the coordinator starts its workers so)
    #[arg(long, value_name = "I/P", value_parser = worker, hide = true)]
    pub(crate) worker: Option<WorkerSlot>,
}

/// The `soak` scenario's options, flattened into [`Options`] where `--help` lists them.
///
/// As in [`Options`], the doc comment of each field is the option's help.
#[derive(Debug, Clone, Args)]
pub(crate) struct SoakOptions {
    /// soak: the server's admin interface, IP:PORT (commands, /metrics)
    #[arg(long, value_name = "ADDR", value_parser = admin)]
    pub(crate) admin: Option<SocketAddr>,

    /// soak: admin commands per second
    #[arg(long, value_name = "N", default_value = "10")]
    #[arg(value_parser = number::<f64>, allow_negative_numbers = true)]
    pub(crate) commands_per_s: f64,

    /// soak: mean time between disconnects of a charge point, 0 = none
    #[arg(long, value_name = "S", default_value = "600")]
    #[arg(value_parser = seconds, allow_negative_numbers = true)]
    pub(crate) churn_s: Duration,

    /// soak: share of disconnects without a close frame, within 0..=1
    #[arg(long, value_name = "F", default_value = "0.5")]
    #[arg(value_parser = share, allow_negative_numbers = true)]
    pub(crate) drop_share: f64,

    /// soak: extra charge points (share of --count, within 0..=1) that connect with an identity
    /// already connected
    #[arg(long, value_name = "F", default_value = "0.02")]
    #[arg(value_parser = share, allow_negative_numbers = true)]
    pub(crate) duplicate_share: f64,

    /// soak: mean session length, and mean pause between sessions; 0 = 1
    #[arg(long, value_name = "S", default_value = "180")]
    #[arg(value_parser = seconds, allow_negative_numbers = true)]
    pub(crate) session_s: Duration,

    /// soak: the longest back-off before jitter
    #[arg(long = "retry-max-ms", value_name = "MS", default_value = "30000")]
    #[arg(value_parser = millis, allow_negative_numbers = true)]
    pub(crate) retry_max: Duration,

    /// soak: the server's call timeout; a command unanswered 15 s past it counts as hung;
    /// 0 = the default
    #[arg(long, value_name = "S", default_value = "30")]
    #[arg(value_parser = seconds, allow_negative_numbers = true)]
    pub(crate) call_timeout_s: Duration,
}

/// `--url` taken apart.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// `HOST:PORT` as written (the `Host` header).
    pub(crate) host: String,
    /// The port, 80 when the URL has none.
    pub(crate) port: u16,
    /// The host's address.
    pub(crate) ip: IpAddr,
    /// The path without a trailing `/`; the identity is appended.
    pub(crate) endpoint: String,
}

/// Parses the command line, program name first, into the [`Options`].
///
/// `Err` is clap's: an error (exit code 2, for stderr) or the `--help` text (exit code 0, for
/// stdout), to be shown with [`clap::Error::print`].
pub(crate) fn parse<I, T>(args: I) -> Result<Options, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    Options::try_parse_from(args)
}

impl Options {
    /// The source addresses, used in turn: `--sources`, or 127.0.0.2.. for `--source-count`
    /// (whichever came last), else 127.0.0.1.
    pub(crate) fn sources(&self) -> Vec<IpAddr> {
        match (&self.sources, self.source_count) {
            (Some(sources), _) => sources.clone(),
            (None, Some(k)) => (0..k)
                .map(|i| IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2 + i)))
                .collect(),
            (None, None) => vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
        }
    }

    /// Worker processes, 1..=count: `--processes`, or one per 19,000 charge points when it
    /// is missing or 0.
    pub(crate) fn processes(&self) -> usize {
        match self.processes {
            Some(p) if p > 0 => p,
            _ => self.count.div_ceil(19_000),
        }
        .min(self.count)
    }

    /// The Heartbeat period, if any.
    pub(crate) fn heartbeat(&self) -> Option<Duration> {
        nonzero(self.heartbeat_s)
    }

    /// The StatusNotification period, if any.
    pub(crate) fn status(&self) -> Option<Duration> {
        nonzero(self.status_s)
    }

    /// The MeterValues period, if any.
    pub(crate) fn meter(&self) -> Option<Duration> {
        nonzero(self.meter_s)
    }

    /// How long the connect phase may take (0 = 120 s).
    pub(crate) fn connect_timeout(&self) -> Duration {
        nonzero(self.connect_timeout_s).unwrap_or(Duration::from_secs(120))
    }

    /// The server's processes, read from `/proc` at each phase boundary.
    pub(crate) fn server_pids(&self) -> &[u32] {
        self.server_pid.as_deref().unwrap_or_default()
    }

    /// Whether the receive times of pushes come from the kernel (`SO_TIMESTAMPNS`) rather
    /// than user space.
    pub(crate) fn kernel_timestamps(&self) -> bool {
        self.timestamps == Timestamps::Kernel
    }
}

impl SoakOptions {
    /// Mean time between two disconnects of one charge point (exponential), if any.
    pub(crate) fn churn(&self) -> Option<Duration> {
        nonzero(self.churn_s)
    }

    /// Mean length of a charging session (0 = 1 s).
    pub(crate) fn session(&self) -> Duration {
        nonzero(self.session_s).unwrap_or(Duration::from_secs(1))
    }

    /// Mean length of the pause between two sessions: that of a session.
    pub(crate) fn pause(&self) -> Duration {
        self.session()
    }

    /// The server's call timeout (0 = 30 s): a command unanswered 15 s past it counts as hung.
    pub(crate) fn call_timeout(&self) -> Duration {
        nonzero(self.call_timeout_s).unwrap_or(Duration::from_secs(30))
    }
}

/// `None` for a zero length (the option's "off" or "use the default").
fn nonzero(length: Duration) -> Option<Duration> {
    (!length.is_zero()).then_some(length)
}

/// Any number `T` parses.
fn number<T: std::str::FromStr>(value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("`{value}` is not a number"))
}

/// Seconds, fractions allowed, >= 0 and small enough for a [`Duration`].
fn seconds(value: &str) -> Result<Duration, String> {
    let s: f64 = number(value)?;
    if !(s >= 0.0 && s.is_finite()) {
        return Err(format!("`{value}` must be >= 0"));
    }
    Duration::try_from_secs_f64(s).map_err(|_| format!("`{value}` is too long"))
}

/// Whole milliseconds.
fn millis(value: &str) -> Result<Duration, String> {
    number(value).map(Duration::from_millis)
}

/// A share within 0..=1.
fn share(value: &str) -> Result<f64, String> {
    let x: f64 = number(value)?;
    if !(0.0..=1.0).contains(&x) {
        return Err(format!("`{value}` must be within 0..=1"));
    }
    Ok(x)
}

/// `--count`: at least 1.
fn count(value: &str) -> Result<usize, String> {
    match number(value)? {
        0 => Err("must be at least 1".into()),
        n => Ok(n),
    }
}

/// `--rate`: > 0 (not NaN).
fn rate(value: &str) -> Result<f64, String> {
    let rate: f64 = number(value)?;
    if rate.is_nan() || rate <= 0.0 {
        return Err(format!("`{value}` must be > 0"));
    }
    Ok(rate)
}

/// `--burn`: a percentage within 0..=100.
fn percent(value: &str) -> Result<u32, String> {
    let percent: u32 = number(value)?;
    if percent > 100 {
        return Err(format!("`{value}` must be within 0..=100"));
    }
    Ok(percent)
}

/// `--source-count`: within 1..=250, so that 127.0.0.(K+1) exists.
fn source_count(value: &str) -> Result<u8, String> {
    let k: u16 = number(value)?;
    u8::try_from(k)
        .ok()
        .filter(|k| (1..=250).contains(k))
        .ok_or_else(|| format!("`{value}` must be within 1..=250"))
}

/// `--version`: 1.6, 2.0.1 or 2.1, also with `ocpp` in front.
fn version(value: &str) -> Result<OcppVersion, String> {
    match value.trim_start_matches("ocpp") {
        "1.6" => Ok(OcppVersion::V1_6),
        "2.0.1" => Ok(OcppVersion::V2_0_1),
        "2.1" => Ok(OcppVersion::V2_1),
        _ => Err(format!("`{value}` is not 1.6, 2.0.1 or 2.1")),
    }
}

/// `--sources`: IP addresses separated by commas.
fn sources(value: &str) -> Result<Vec<IpAddr>, String> {
    value
        .split(',')
        .map(|a| a.trim().parse().map_err(|_| format!("bad address `{a}`")))
        .collect()
}

/// `--server-pid`: PIDs separated by commas; empty pieces are skipped.
fn pids(value: &str) -> Result<Vec<u32>, String> {
    value
        .split(',')
        .filter(|p| !p.is_empty())
        .map(number)
        .collect()
}

/// `--admin`: IP:PORT.
fn admin(value: &str) -> Result<SocketAddr, String> {
    value
        .parse()
        .map_err(|_| format!("`{value}` is not IP:PORT"))
}

/// `--worker`: I/P with I < P.
fn worker(value: &str) -> Result<WorkerSlot, String> {
    let (index, of) = value
        .split_once('/')
        .ok_or_else(|| format!("`{value}` is not I/P"))?;
    let slot = WorkerSlot {
        index: number(index)?,
        of: number(of)?,
    };
    if slot.index >= slot.of {
        return Err(format!("`{value}`: I must be below P"));
    }
    Ok(slot)
}

/// `--url`: `ws://HOST[:PORT][/PATH]`, HOST an IP address or `localhost`.
fn url(value: &str) -> Result<Target, String> {
    let rest = value
        .strip_prefix("ws://")
        .ok_or("only ws:// URLs (the swarm measures the server, not TLS)")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/"),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse::<u16>()
                .map_err(|_| format!("port `{p}` is not a number"))?,
        ),
        None => (authority, 80),
    };
    let ip = if host == "localhost" {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        host.parse()
            .map_err(|_| format!("`{host}` must be an IP address (loopback)"))?
    };
    Ok(Target {
        host: authority.to_string(),
        port,
        ip,
        endpoint: path.trim_end_matches('/').to_string(),
    })
}

#[cfg(test)]
mod tests;
