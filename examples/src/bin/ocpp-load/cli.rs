//! The command line of `ocpp-load`, parsed by clap.
//!
//! [`parse`] turns the arguments into [`Options`]. Clap checks the spelling of every option and
//! runs each value through one of the small parsers at the end of this file (numbers, seconds,
//! shares, addresses...), so a bad value is reported as clap's error for that option; the
//! help of every option is its doc comment in [`Cli`].
//!
//! The coordinator starts its workers with its own command line plus `--worker I/P`, so
//! whatever parses here once parses again in every worker.

use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use clap::{Parser, ValueEnum};
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

/// Everything `ocpp-load` is told.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// What to run after connecting.
    pub(crate) scenario: Scenario,
    /// `HOST:PORT` of `--url`, as written (the `Host` header).
    pub(crate) host: String,
    /// The port of `--url` (80 when it has none).
    pub(crate) port: u16,
    /// The address of `--url`'s host.
    pub(crate) target_ip: IpAddr,
    /// The path of `--url` without a trailing `/`; the identity is appended.
    pub(crate) endpoint: String,
    /// How many charge points, at least 1.
    pub(crate) count: usize,
    /// New connections per second over all processes, > 0.
    pub(crate) rate: f64,
    /// The OCPP version every charge point speaks.
    pub(crate) version: OcppVersion,
    /// The identities' prefix.
    pub(crate) prefix: String,
    /// source addresses, used in turn.
    pub(crate) sources: Vec<IpAddr>,
    /// Worker processes, 1..=count.
    pub(crate) processes: usize,
    /// Length of the phase after connect.
    pub(crate) duration: Duration,
    /// Heartbeat period, if any.
    pub(crate) heartbeat: Option<Duration>,
    /// StatusNotification period, if any.
    pub(crate) status: Option<Duration>,
    /// MeterValues period, if any.
    pub(crate) meter: Option<Duration>,
    /// How long the connect phase may take.
    pub(crate) connect_timeout: Duration,
    /// The Basic auth password of every charge point.
    pub(crate) password: Option<String>,
    /// The server's processes, read from `/proc` at each phase boundary.
    pub(crate) server_pids: Vec<u32>,
    /// `reconnect`: the shell command that starts the server again.
    pub(crate) restart_cmd: Option<String>,
    /// `reconnect`: where to write the restarted server's PID.
    pub(crate) restart_pid_file: Option<String>,
    /// Load both cores to this percentage during the run phase (0 = off).
    pub(crate) burn_percent: u32,
    /// Where to write the report as JSON.
    pub(crate) json: Option<String>,
    /// The server's name in the report.
    pub(crate) label: String,
    /// Receive times of pushes from the kernel (`SO_TIMESTAMPNS`) rather than user space.
    pub(crate) kernel_timestamps: bool,
    /// The first retry after a disconnect, before jitter.
    pub(crate) retry_min: Duration,
    /// The most jitter added to a retry.
    pub(crate) retry_random: Duration,
    /// Whether permessage-deflate is offered.
    pub(crate) deflate: Deflate,
    /// The `soak` scenario's settings.
    pub(crate) soak: SoakOptions,
    /// Set in a worker process: which part of the swarm it runs.
    pub(crate) worker: Option<WorkerSlot>,
}

/// The `soak` scenario's settings.
#[derive(Debug, Clone)]
pub(crate) struct SoakOptions {
    /// The admin interface of the server: commands go there, and `/metrics` is read.
    pub(crate) admin: Option<SocketAddr>,
    /// Admin commands per second, over all charge points.
    pub(crate) commands_per_s: f64,
    /// Mean time between two disconnects of one charge point (exponential).
    pub(crate) churn: Option<Duration>,
    /// The share of those disconnects that shut the socket without a close frame.
    pub(crate) drop_share: f64,
    /// Extra charge points, as a share of `--count`, that connect now and then with the
    /// identity of another one.
    pub(crate) duplicate_share: f64,
    /// Mean length of a charging session.
    pub(crate) session: Duration,
    /// Mean length of the pause between two sessions.
    pub(crate) pause: Duration,
    /// The longest back-off before a reconnect (before jitter).
    pub(crate) retry_max: Duration,
    /// The server's call timeout: a command unanswered 15 s past it counts as hung.
    pub(crate) call_timeout: Duration,
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

/// The command line as clap sees it; [`Cli::into_options`] makes it the [`Options`].
///
/// The doc comment of each field is the option's help. Numeric options accept a leading `-`
/// as part of their value so that `--rate -1` is reported by the option's own rule, and the
/// free-text ones so that a password or a label may start with `-`, as before clap.
#[derive(Debug, Parser)]
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
struct Cli {
    /// what to run after connecting
    #[arg(value_enum, value_name = "SCENARIO")]
    scenario: Scenario,

    /// ws://HOST:PORT/PATH, HOST an IP address or localhost; the identity is appended
    #[arg(long, value_name = "URL", default_value = "ws://127.0.0.1:9000/ocpp", value_parser = url)]
    url: Target,

    /// charge points, at least 1
    #[arg(long, value_name = "N", default_value = "1000")]
    #[arg(value_parser = count, allow_negative_numbers = true)]
    count: usize,

    /// new connections per second, over all processes (> 0)
    #[arg(long, value_name = "N", default_value = "1000")]
    #[arg(value_parser = rate, allow_negative_numbers = true)]
    rate: f64,

    /// 1.6, 2.0.1 or 2.1
    #[arg(long, value_name = "V", default_value = "1.6", value_parser = version)]
    version: OcppVersion,

    /// identities are P000000, P000001, ...
    #[arg(
        long,
        value_name = "P",
        default_value = "LOAD",
        allow_hyphen_values = true
    )]
    prefix: String,

    /// Basic auth password (the same for every charge point); better from the environment
    /// variable OCPP_PASSWORD than on the command line, where ps shows it
    #[arg(
        long,
        value_name = "P",
        env = "OCPP_PASSWORD",
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    password: Option<String>,

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
    #[arg(long, value_name = "S", default_value = "20")]
    #[arg(value_parser = seconds, allow_negative_numbers = true)]
    duration_s: Duration,

    /// Heartbeat period, 0 = none
    #[arg(long, value_name = "S", default_value = "10")]
    #[arg(value_parser = seconds, allow_negative_numbers = true)]
    heartbeat_s: Duration,

    /// StatusNotification period, 0 = none
    #[arg(long, value_name = "S", default_value = "30")]
    #[arg(value_parser = seconds, allow_negative_numbers = true)]
    status_s: Duration,

    /// MeterValues period, 0 = none
    #[arg(long, value_name = "S", default_value = "30")]
    #[arg(value_parser = seconds, allow_negative_numbers = true)]
    meter_s: Duration,

    /// give up on the connect phase after S seconds, 0 = the default
    #[arg(long, value_name = "S", default_value = "120")]
    #[arg(value_parser = seconds, allow_negative_numbers = true)]
    connect_timeout_s: Duration,

    /// read the server's RSS and CPU time from /proc at each phase boundary (several PIDs are
    /// summed)
    // `std::vec::Vec`, not `Vec`: one value that the parser splits, not a repeated option.
    #[arg(long, value_name = "PID,...", value_parser = pids, allow_negative_numbers = true)]
    server_pid: Option<std::vec::Vec<u32>>,

    /// reconnect (required there): `sh -c CMD` starts the server again after the old one
    /// (--server-pid) was stopped with SIGTERM
    #[arg(
        long,
        value_name = "CMD",
        required_if_eq("scenario", "reconnect"),
        allow_hyphen_values = true
    )]
    restart_cmd: Option<String>,

    /// reconnect: write the restarted server's PID there
    #[arg(long, value_name = "F")]
    restart_pid_file: Option<String>,

    /// reconnect, soak: first retry after MS + random(--retry-random-ms)
    #[arg(long, value_name = "MS", default_value = "250")]
    #[arg(value_parser = millis, allow_negative_numbers = true)]
    retry_min_ms: Duration,

    /// reconnect, soak: the longest random delay added to a retry
    #[arg(long, value_name = "MS", default_value = "1000")]
    #[arg(value_parser = millis, allow_negative_numbers = true)]
    retry_random_ms: Duration,

    /// offer permessage-deflate
    #[arg(long, value_enum, value_name = "MODE", default_value = "off")]
    deflate: Deflate,

    /// soak: the server's admin interface, IP:PORT (commands, /metrics)
    #[arg(long, value_name = "ADDR", value_parser = admin)]
    admin: Option<SocketAddr>,

    /// soak: admin commands per second
    #[arg(long, value_name = "N", default_value = "10")]
    #[arg(value_parser = number::<f64>, allow_negative_numbers = true)]
    commands_per_s: f64,

    /// soak: mean time between disconnects of a charge point, 0 = none
    #[arg(long, value_name = "S", default_value = "600")]
    #[arg(value_parser = seconds, allow_negative_numbers = true)]
    churn_s: Duration,

    /// soak: share of disconnects without a close frame, within 0..=1
    #[arg(long, value_name = "F", default_value = "0.5")]
    #[arg(value_parser = share, allow_negative_numbers = true)]
    drop_share: f64,

    /// soak: extra charge points (share of --count, within 0..=1) that connect with an identity
    /// already connected
    #[arg(long, value_name = "F", default_value = "0.02")]
    #[arg(value_parser = share, allow_negative_numbers = true)]
    duplicate_share: f64,

    /// soak: mean session length, and mean pause between sessions; 0 = 1
    #[arg(long, value_name = "S", default_value = "180")]
    #[arg(value_parser = seconds, allow_negative_numbers = true)]
    session_s: Duration,

    /// soak: the longest back-off before jitter
    #[arg(long, value_name = "MS", default_value = "30000")]
    #[arg(value_parser = millis, allow_negative_numbers = true)]
    retry_max_ms: Duration,

    /// soak: the server's call timeout; a command unanswered 15 s past it counts as hung;
    /// 0 = the default
    #[arg(long, value_name = "S", default_value = "30")]
    #[arg(value_parser = seconds, allow_negative_numbers = true)]
    call_timeout_s: Duration,

    /// load both cores to PERCENT (0..=100) with busy threads during the run phase
    #[arg(long, value_name = "PERCENT", default_value = "0")]
    #[arg(value_parser = percent, allow_negative_numbers = true)]
    burn: u32,

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
    label: String,

    /// write the report as JSON there
    #[arg(long, value_name = "FILE")]
    json: Option<String>,

    /// internal: run as worker I of P (the coordinator starts its workers so)
    #[arg(long, value_name = "I/P", value_parser = worker, hide = true)]
    worker: Option<WorkerSlot>,
}

/// `--url` taken apart.
#[derive(Debug, Clone)]
struct Target {
    /// `HOST:PORT` as written.
    host: String,
    /// The port, 80 when the URL has none.
    port: u16,
    /// The host's address.
    ip: IpAddr,
    /// The path without a trailing `/`.
    endpoint: String,
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
    Ok(Cli::try_parse_from(args)?.into_options())
}

impl Cli {
    /// The options the rest of `ocpp-load` works with: every value is checked already, what
    /// is left is defaults that depend on other options.
    fn into_options(self) -> Options {
        let sources = match (self.sources, self.source_count) {
            (Some(sources), _) => sources,
            (None, Some(k)) => (0..k)
                .map(|i| IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2 + i)))
                .collect(),
            (None, None) => vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
        };
        let processes = match self.processes {
            Some(p) if p > 0 => p,
            _ => self.count.div_ceil(19_000),
        }
        .min(self.count);
        let session = nonzero(self.session_s).unwrap_or(Duration::from_secs(1));
        Options {
            scenario: self.scenario,
            host: self.url.host,
            port: self.url.port,
            target_ip: self.url.ip,
            endpoint: self.url.endpoint,
            count: self.count,
            rate: self.rate,
            version: self.version,
            prefix: self.prefix,
            sources,
            processes,
            duration: self.duration_s,
            heartbeat: nonzero(self.heartbeat_s),
            status: nonzero(self.status_s),
            meter: nonzero(self.meter_s),
            connect_timeout: nonzero(self.connect_timeout_s).unwrap_or(Duration::from_secs(120)),
            password: self.password,
            server_pids: self.server_pid.unwrap_or_default(),
            restart_cmd: self.restart_cmd,
            restart_pid_file: self.restart_pid_file,
            burn_percent: self.burn,
            json: self.json,
            label: self.label,
            kernel_timestamps: self.timestamps == Timestamps::Kernel,
            retry_min: self.retry_min_ms,
            retry_random: self.retry_random_ms,
            deflate: self.deflate,
            soak: SoakOptions {
                admin: self.admin,
                commands_per_s: self.commands_per_s,
                churn: nonzero(self.churn_s),
                drop_share: self.drop_share,
                duplicate_share: self.duplicate_share,
                session,
                pause: session,
                retry_max: self.retry_max_ms,
                call_timeout: nonzero(self.call_timeout_s).unwrap_or(Duration::from_secs(30)),
            },
            worker: self.worker,
        }
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
mod tests {
    use clap::error::ErrorKind;
    use clap::CommandFactory;

    use super::*;

    /// Parses `line` (words separated by blanks) as `ocpp-load`'s arguments.
    fn parse_line(line: &str) -> Result<Options, clap::Error> {
        parse_words(&line.split_whitespace().collect::<Vec<_>>())
    }

    /// Parses `words` as `ocpp-load`'s arguments.
    fn parse_words(words: &[&str]) -> Result<Options, clap::Error> {
        parse(std::iter::once("ocpp-load").chain(words.iter().copied()))
    }

    /// The kind of error `line` gives; panics (the test fails) if it parses.
    fn error(line: &str) -> clap::Error {
        match parse_line(line) {
            Ok(o) => panic!("`{line}` parsed: {o:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn defaults() {
        let o = parse_line("heartbeat").unwrap();
        assert_eq!(o.scenario, Scenario::Heartbeat);
        assert_eq!(o.host, "127.0.0.1:9000");
        assert_eq!(o.target_ip, IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(o.port, 9000);
        assert_eq!(o.endpoint, "/ocpp");
        assert_eq!(o.count, 1000);
        assert_eq!(o.rate, 1000.0);
        assert_eq!(o.version, OcppVersion::V1_6);
        assert_eq!(o.prefix, "LOAD");
        assert_eq!(o.sources, vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]);
        assert_eq!(o.processes, 1);
        assert_eq!(o.duration, Duration::from_secs(20));
        assert_eq!(o.heartbeat, Some(Duration::from_secs(10)));
        assert_eq!(o.status, Some(Duration::from_secs(30)));
        assert_eq!(o.meter, Some(Duration::from_secs(30)));
        assert_eq!(o.connect_timeout, Duration::from_secs(120));
        assert!(o.server_pids.is_empty());
        assert_eq!(o.restart_cmd, None);
        assert_eq!(o.burn_percent, 0);
        assert_eq!(o.json, None);
        assert_eq!(o.label, "server");
        assert!(o.kernel_timestamps);
        assert_eq!(o.retry_min, Duration::from_millis(250));
        assert_eq!(o.retry_random, Duration::from_millis(1000));
        assert_eq!(o.deflate, Deflate::Off);
        assert_eq!(o.soak.admin, None);
        assert_eq!(o.soak.commands_per_s, 10.0);
        assert_eq!(o.soak.churn, Some(Duration::from_secs(600)));
        assert_eq!(o.soak.drop_share, 0.5);
        assert_eq!(o.soak.duplicate_share, 0.02);
        assert_eq!(o.soak.session, Duration::from_secs(180));
        assert_eq!(o.soak.pause, Duration::from_secs(180));
        assert_eq!(o.soak.retry_max, Duration::from_secs(30));
        assert_eq!(o.soak.call_timeout, Duration::from_secs(30));
        assert_eq!(o.worker, None);
    }

    #[test]
    fn flags() {
        let o = parse_line(
            "push --url ws://127.0.0.1:9100/ --count 50000 --source-count 3 --version 2.0.1 \
             --status-s 0 --server-pid 1,2 --worker 1/3",
        )
        .unwrap();
        assert_eq!(o.endpoint, "");
        assert_eq!(o.processes, 3);
        assert_eq!(o.sources.len(), 3);
        assert_eq!(o.sources[0], IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)));
        assert_eq!(o.version, OcppVersion::V2_0_1);
        assert_eq!(o.status, None);
        assert_eq!(o.server_pids, vec![1, 2]);
        assert_eq!(o.worker, Some(WorkerSlot { index: 1, of: 3 }));
    }

    #[test]
    fn every_value() {
        let o = parse_line(
            "soak --url ws://localhost/x/ --rate 2.5 --version ocpp2.1 --prefix -P- \
             --password -secret --sources 127.0.0.3,::1 --processes 0 --count 7 \
             --duration-s 1.5 --heartbeat-s 0 --meter-s 0.25 --connect-timeout-s 0 \
             --server-pid 4,,5 --restart-cmd true --restart-pid-file pid --retry-min-ms 1 \
             --retry-random-ms 2 --deflate no-context --admin 127.0.0.1:9001 \
             --commands-per-s 0 --churn-s 0 --drop-share 1 --duplicate-share 0 --session-s 0 \
             --retry-max-ms 3 --call-timeout-s 0 --burn 100 --timestamps user --label -x \
             --json out.json",
        )
        .unwrap();
        assert_eq!(o.scenario, Scenario::Soak);
        assert_eq!(o.host, "localhost");
        assert_eq!(o.port, 80);
        assert_eq!(o.target_ip, IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(o.endpoint, "/x");
        assert_eq!(o.rate, 2.5);
        assert_eq!(o.version, OcppVersion::V2_1);
        assert_eq!(o.prefix, "-P-");
        assert_eq!(o.password.as_deref(), Some("-secret"));
        assert_eq!(o.sources.len(), 2);
        assert_eq!(o.processes, 1);
        assert_eq!(o.duration, Duration::from_millis(1500));
        assert_eq!(o.heartbeat, None);
        assert_eq!(o.meter, Some(Duration::from_millis(250)));
        assert_eq!(o.connect_timeout, Duration::from_secs(120));
        assert_eq!(o.server_pids, vec![4, 5]);
        assert_eq!(o.restart_cmd.as_deref(), Some("true"));
        assert_eq!(o.restart_pid_file.as_deref(), Some("pid"));
        assert_eq!(o.retry_min, Duration::from_millis(1));
        assert_eq!(o.retry_random, Duration::from_millis(2));
        assert_eq!(o.deflate, Deflate::NoContext);
        assert_eq!(o.soak.admin, Some(SocketAddr::from(([127, 0, 0, 1], 9001))));
        assert_eq!(o.soak.commands_per_s, 0.0);
        assert_eq!(o.soak.churn, None);
        assert_eq!(o.soak.drop_share, 1.0);
        assert_eq!(o.soak.duplicate_share, 0.0);
        assert_eq!(o.soak.session, Duration::from_secs(1));
        assert_eq!(o.soak.pause, Duration::from_secs(1));
        assert_eq!(o.soak.retry_max, Duration::from_millis(3));
        assert_eq!(o.soak.call_timeout, Duration::from_secs(30));
        assert_eq!(o.burn_percent, 100);
        assert!(!o.kernel_timestamps);
        assert_eq!(o.label, "-x");
        assert_eq!(o.json.as_deref(), Some("out.json"));
    }

    #[test]
    fn processes_are_at_most_one_per_charge_point() {
        assert_eq!(parse_line("idle --count 40000").unwrap().processes, 3);
        assert_eq!(
            parse_line("idle --count 2 --processes 5")
                .unwrap()
                .processes,
            2
        );
        assert_eq!(
            parse_line("idle --count 9 --processes 4")
                .unwrap()
                .processes,
            4
        );
    }

    #[test]
    fn the_last_of_a_repeated_option_wins() {
        let o = parse_line("idle --label a --count 5 --label b --count 6").unwrap();
        assert_eq!(o.label, "b");
        assert_eq!(o.count, 6);
        let o = parse_line("idle --sources 127.0.0.9 --source-count 2").unwrap();
        assert_eq!(o.sources.len(), 2);
        assert_eq!(o.sources[1], IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3)));
        let o = parse_line("idle --source-count 2 --sources 127.0.0.9").unwrap();
        assert_eq!(o.sources, vec![IpAddr::V4(Ipv4Addr::new(127, 0, 0, 9))]);
    }

    #[test]
    fn errors() {
        assert_eq!(
            error("").kind(),
            ErrorKind::MissingRequiredArgument,
            "missing SCENARIO"
        );
        assert_eq!(error("fly").kind(), ErrorKind::InvalidValue);
        assert_eq!(
            error("idle --url wss://h/x").kind(),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            error("idle --url ws://h:1/x").kind(),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            error("idle --url ws://1.2.3.4:x/").kind(),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            error("reconnect").kind(),
            ErrorKind::MissingRequiredArgument
        );
        assert!(error("reconnect").to_string().contains("--restart-cmd"));
        assert_eq!(
            error("soak --drop-share 2").kind(),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            error("soak --duplicate-share nan").kind(),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            error("soak --admin nowhere").kind(),
            ErrorKind::ValueValidation
        );
        assert_eq!(error("idle --count").kind(), ErrorKind::InvalidValue);
        for line in [
            "idle --count 0",
            "idle --count -1",
            "idle --rate 0",
            "idle --rate -5",
            "idle --rate nan",
            "idle --version 3",
            "idle --sources 127.0.0.1,nowhere",
            "idle --source-count 0",
            "idle --source-count 251",
            "idle --duration-s -1",
            "idle --heartbeat-s inf",
            "idle --meter-s 1e300",
            "idle --server-pid 1,x",
            "idle --retry-min-ms 1.5",
            "idle --burn 101",
            "idle --worker 1",
            "idle --worker 2/2",
            "idle --worker 0/0",
        ] {
            assert_eq!(error(line).kind(), ErrorKind::ValueValidation, "{line}");
        }
        assert_eq!(error("idle --deflate on").kind(), ErrorKind::InvalidValue);
        assert_eq!(
            error("idle --timestamps wall").kind(),
            ErrorKind::InvalidValue
        );
        assert_eq!(error("idle extra").kind(), ErrorKind::UnknownArgument);
    }

    #[test]
    fn an_unknown_option_is_clap_s_error() {
        let e = error("idle --cout 5");
        assert_eq!(e.kind(), ErrorKind::UnknownArgument);
        assert_eq!(e.exit_code(), 2);
        assert!(e.use_stderr());
        let text = e.to_string();
        assert!(text.contains("--cout"), "{text}");
        // clap suggests the option meant.
        assert!(text.contains("--count"), "{text}");
        // `--version` is the OCPP version's, and it needs a value: no program version flag.
        assert_eq!(error("idle --version").kind(), ErrorKind::InvalidValue);
        assert_eq!(error("idle -V").kind(), ErrorKind::UnknownArgument);
    }

    #[test]
    fn a_bad_number_names_the_option_and_the_value() {
        let e = error("idle --count x");
        assert_eq!(e.kind(), ErrorKind::ValueValidation);
        assert_eq!(e.exit_code(), 2);
        assert!(e.use_stderr());
        let text = e.to_string();
        assert!(text.contains("--count"), "{text}");
        assert!(text.contains("`x` is not a number"), "{text}");
        let text = error("idle --duration-s -2").to_string();
        assert!(
            text.contains("--duration-s") && text.contains("must be >= 0"),
            "{text}"
        );
        let text = error("soak --drop-share 1.5").to_string();
        assert!(
            text.contains("--drop-share") && text.contains("within 0..=1"),
            "{text}"
        );
    }

    /// The `--help` text, as `ocpp-load --help` prints it.
    fn help() -> clap::Error {
        match parse_line("--help") {
            Ok(o) => panic!("--help parsed: {o:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn help_goes_to_stdout_with_exit_code_0() {
        let e = help();
        assert_eq!(e.kind(), ErrorKind::DisplayHelp);
        assert_eq!(e.exit_code(), 0);
        assert!(!e.use_stderr());
        // Also after a scenario and among options, as before.
        assert_eq!(error("idle --count 5 -h").kind(), ErrorKind::DisplayHelp);
    }

    /// Whether the help lists `flag`: a line starts with it (after `-h, ` for `--help`).
    fn listed(help: &str, flag: &str) -> bool {
        help.lines().any(|line| {
            let line = line.trim_start();
            line.strip_prefix("-h, ")
                .unwrap_or(line)
                .split_whitespace()
                .next()
                == Some(flag)
        })
    }

    #[test]
    fn help_names_and_explains_every_option() {
        let text = help().to_string();
        let mut command = Cli::command();
        // With clap's own --help among the arguments.
        command.build();
        let mut named = 0;
        for arg in command.get_arguments() {
            let id = arg.get_id().as_str();
            if arg.is_hide_set() {
                assert_eq!(id, "worker");
                continue;
            }
            if let Some(long) = arg.get_long() {
                assert!(
                    listed(&text, &format!("--{long}")),
                    "--{long} not in\n{text}"
                );
                named += 1;
            }
            assert!(
                arg.get_help().is_some_and(|h| !h.to_string().is_empty()),
                "{id} has no help"
            );
        }
        // The options of the hand-written parser, and --help.
        for flag in [
            "--url",
            "--count",
            "--rate",
            "--version",
            "--prefix",
            "--password",
            "--sources",
            "--source-count",
            "--processes",
            "--duration-s",
            "--heartbeat-s",
            "--status-s",
            "--meter-s",
            "--connect-timeout-s",
            "--server-pid",
            "--restart-cmd",
            "--restart-pid-file",
            "--retry-min-ms",
            "--retry-random-ms",
            "--deflate",
            "--admin",
            "--commands-per-s",
            "--churn-s",
            "--drop-share",
            "--duplicate-share",
            "--session-s",
            "--retry-max-ms",
            "--call-timeout-s",
            "--burn",
            "--timestamps",
            "--label",
            "--json",
            "--help",
        ] {
            assert!(listed(&text, flag), "{flag} not in\n{text}");
        }
        assert_eq!(named, 33, "{text}");
        assert!(!listed(&text, "--worker"), "{text}");
        for scenario in Scenario::value_variants() {
            assert!(text.contains(scenario.name()), "{}", scenario.name());
        }
        assert!(text.contains("OCPP_PASSWORD"), "{text}");
    }

    #[test]
    fn the_password_also_comes_from_ocpp_password_never_shown() {
        // Checked on the definition, so the test needs no change to the process environment.
        let command = Cli::command();
        let password = command
            .get_arguments()
            .find(|arg| arg.get_id() == "password")
            .expect("--password");
        assert_eq!(
            password.get_env(),
            Some(std::ffi::OsStr::new("OCPP_PASSWORD"))
        );
        assert!(password.is_hide_env_values_set());
        // The command line still sets it.
        let o = parse_line("idle --password s3cret").unwrap();
        assert_eq!(o.password.as_deref(), Some("s3cret"));
    }

    #[test]
    fn the_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn a_worker_parses_the_coordinator_s_command_line() {
        // The coordinator passes its own arguments on and appends --worker I/P (coordinator.rs).
        let line = "heartbeat --url ws://127.0.0.1:9000/ocpp --count 40 --processes 2 \
                    --rate 400 --duration-s 2 --heartbeat-s 0.5 --json /tmp/r.json";
        let coordinator = parse_line(line).unwrap();
        assert_eq!(coordinator.worker, None);
        for index in 0..coordinator.processes {
            let worker = parse_line(&format!(
                "{line} --worker {index}/{}",
                coordinator.processes
            ))
            .unwrap();
            assert_eq!(
                worker.worker,
                Some(WorkerSlot {
                    index,
                    of: coordinator.processes
                })
            );
            assert_eq!(worker.count, coordinator.count);
            assert_eq!(worker.heartbeat, coordinator.heartbeat);
        }
    }

    /// The command lines of bench/, scripts/ and the documentation, with their shell variables
    /// filled in (the same words, quoted arguments as one word).
    #[test]
    fn the_documented_command_lines_parse() {
        let lines = [
            // README.md
            "heartbeat --count 10000 --server-pid 4242",
            // BENCHMARKS.md
            "heartbeat --count 1000 --duration-s 6 --heartbeat-s 1 --status-s 2 --meter-s 2 \
             --deflate no-context",
            "heartbeat --count 1000 --duration-s 6 --heartbeat-s 1 --status-s 2 --meter-s 2 \
             --deflate context",
            "idle --url ws://127.0.0.1:9480/ocpp --count 10000 --rate 2000 --source-count 2 \
             --duration-s 10 --server-pid 4242 --json /tmp/mem-idle.json",
            "idle --count 19000 --source-count 4",
            // RELIABILITY.md
            "soak --url ws://127.0.0.1:9500/ocpp --admin 127.0.0.1:9501 --count 5000 --rate 500 \
             --duration-s 1800 --heartbeat-s 60 --meter-s 30 --session-s 180 --churn-s 600 \
             --drop-share 0.5 --duplicate-share 0.02 --commands-per-s 10 --retry-min-ms 500 \
             --retry-random-ms 1000 --retry-max-ms 30000 --server-pid 4242 --json soak.json",
            // bench/run.sh (run ... idle, heartbeat, push, stream, deflate)
            "idle --url ws://127.0.0.1:9400/ocpp --count 1000 --rate 1000 --source-count 1 \
             --server-pid 4242,4243 --label mio-1 --json out/idle.json --duration-s 20",
            "heartbeat --url ws://127.0.0.1:9400/ocpp --count 50000 --rate 1000 --source-count 10 \
             --server-pid 4242 --label mio-1 --json out/hb.json --duration-s 60 --heartbeat-s 10 \
             --status-s 30 --meter-s 30",
            "push --url ws://127.0.0.1:9400/ocpp --count 1000 --rate 1000 --source-count 1 \
             --server-pid 4242 --label tokio --json out/push.json --duration-s 20",
            "stream --url ws://127.0.0.1:9400/ocpp --count 20 --rate 1000 --source-count 1 \
             --server-pid 4242 --label mio-1 --json out/stream.json --duration-s 20 --burn 80",
            "heartbeat --url ws://127.0.0.1:9400/ocpp --count 10000 --rate 1000 --source-count 2 \
             --server-pid 4242 --label mio-1 --json out/d.json --duration-s 60 --heartbeat-s 10 \
             --status-s 30 --meter-s 30 --deflate no-context --label mio-1-deflate",
            // bench/cluster.sh
            "heartbeat --url ws://127.0.0.1:9600/ocpp --count 40000 --rate 1000 --source-count 8 \
             --processes 3 --server-pid 1,2,3 --label mio-cluster-3 --json out/c.json \
             --duration-s 60 --heartbeat-s 30 --status-s 0 --meter-s 0 --connect-timeout-s 280",
            // bench/cache_sim.sh
            "heartbeat --url ws://127.0.0.1:9700/ocpp --count 2000 --rate 250 --source-count 2 \
             --duration-s 70 --heartbeat-s 60 --status-s 0 --meter-s 0 --json out/load.json",
            // bench/callgrind_servers.sh
            "heartbeat --url ws://127.0.0.1:9700/ocpp --count 200 --rate 100 --duration-s 40 \
             --heartbeat-s 1 --status-s 3 --meter-s 3",
            // scripts/soak.sh (soak)
            "soak --url ws://127.0.0.1:9500/ocpp --admin 127.0.0.1:9501 --count 5000 --rate 500 \
             --duration-s 1800 --heartbeat-s 60 --meter-s 30 --session-s 180 --churn-s 600 \
             --drop-share 0.5 --duplicate-share 0.02 --commands-per-s 10 --retry-min-ms 500 \
             --retry-random-ms 1000 --retry-max-ms 30000 --server-pid 4242 --label mio-server \
             --json out/soak.json",
        ];
        for line in lines {
            if let Err(e) = parse_line(line) {
                panic!("`{line}`: {e}");
            }
        }
        // The lines with a quoted --restart-cmd: RELIABILITY.md, bench/run.sh, scripts/soak.sh.
        let quoted: [&[&str]; 3] = [
            &[
                "reconnect",
                "--url",
                "ws://127.0.0.1:9502/ocpp",
                "--count",
                "19000",
                "--source-count",
                "4",
                "--rate",
                "1000",
                "--connect-timeout-s",
                "300",
                "--server-pid",
                "4242",
                "--restart-cmd",
                "exec mio-server --listen 127.0.0.1:9502 --admin 127.0.0.1:9503",
                "--restart-pid-file",
                "restarted.pid",
                "--retry-min-ms",
                "250",
                "--retry-random-ms",
                "1000",
            ],
            &[
                "reconnect",
                "--url",
                "ws://127.0.0.1:9400/ocpp",
                "--count",
                "1000",
                "--rate",
                "1000",
                "--source-count",
                "1",
                "--server-pid",
                "4242",
                "--label",
                "mio-1",
                "--json",
                "out/r.json",
                "--restart-cmd",
                "exec taskset -c 0 sh -c 'target/release/mio-server --listen 127.0.0.1:9400' \
                 >>out/server.log 2>&1",
                "--restart-pid-file",
                "out/restarted.pid",
                "--connect-timeout-s",
                "120",
            ],
            &[
                "reconnect",
                "--url",
                "ws://127.0.0.1:9502/ocpp",
                "--count",
                "19000",
                "--source-count",
                "4",
                "--rate",
                "1000",
                "--connect-timeout-s",
                "300",
                "--server-pid",
                "4242",
                "--restart-cmd",
                "exec bin/mio-server --listen 127.0.0.1:9502 --admin 127.0.0.1:9503 \
                 >>out/restart-server.log 2>&1",
                "--restart-pid-file",
                "out/restarted.pid",
                "--retry-min-ms",
                "250",
                "--retry-random-ms",
                "1000",
                "--label",
                "mio-server",
                "--json",
                "out/restart.json",
            ],
        ];
        for words in quoted {
            match parse_words(words) {
                Ok(o) => assert!(o.restart_cmd.is_some_and(|c| c.starts_with("exec "))),
                Err(e) => panic!("`{words:?}`: {e}"),
            }
        }
        // bench/run.sh's deflate runs give --label twice: the second is the one.
        let o = parse_line(lines[10]).unwrap();
        assert_eq!(o.label, "mio-1-deflate");
        assert_eq!(o.deflate, Deflate::NoContext);
    }
}
