//! The command line of `charge-point`, parsed with clap.
//!
//! [`Options`] is what clap sees and what the rest of the binary uses: one field per option,
//! each value checked by its value parser; [`Options::try_parse_from`] parses it and applies
//! the rules between options (`--cert` needs `--key`, `wss://` needs `--ca`, ...).

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::RangedU64ValueParser;
use clap::error::ErrorKind;
use clap::{ArgAction, CommandFactory, FromArgMatches, Parser};

use ocpp_messages::version::OcppVersion;

use ocpp_tokio::station::RetryBackOff;

/// The first line of `--help`.
const ABOUT: &str =
    "charge-point: an OCPP charge point simulator (OCPP-J 1.6, 2.0.1, 2.1 over ws:// or wss://)";

/// The notes after the options in `--help`.
const AFTER_HELP: &str = "\
Seconds may be fractional (e.g. 0.5). Logs go to stderr (RUST_LOG=debug for more), the summary
line to stdout.";

/// The environment variable `--password` falls back to.
const PASSWORD_ENV: &str = "OCPP_PASSWORD";

/// What the command line asked for, as clap parses it ([`Options::try_parse_from`]).
#[derive(Debug, Clone, Parser)]
#[command(
    name = "charge-point",
    about = ABOUT,
    long_about = None,
    after_help = AFTER_HELP,
    disable_version_flag = true,
    args_override_self = true
)]
pub(crate) struct Options {
    /// CSMS endpoint and identity; the identity is the last path segment;
    /// wss:// for TLS (needs --ca)
    #[arg(
        long,
        value_name = "URL",
        value_parser = parse_url,
        default_value = "ws://127.0.0.1:9000/ocpp/CP001",
        allow_hyphen_values = true
    )]
    pub(crate) url: Url,

    /// 1.6, 2.0.1 or 2.1 (or ocpp1.6, ocpp2.0.1, ocpp2.1); repeatable,
    /// offered in the given order
    #[arg(
        long = "version",
        value_name = "V",
        value_parser = parse_version,
        action = ArgAction::Append,
        default_values = ["2.1", "2.0.1", "1.6"],
        allow_hyphen_values = true
    )]
    pub(crate) versions: Vec<OcppVersion>,

    /// Send `Authorization: Basic` (security profiles 1 and 2); also read from the
    /// environment variable OCPP_PASSWORD, whose value is never printed
    #[arg(
        long,
        value_name = "P",
        env = PASSWORD_ENV,
        hide_env_values = true,
        allow_hyphen_values = true,
        value_parser = parse_password
    )]
    pub(crate) password: Option<Password>,

    /// wss://: trust the CA certificates of FILE (PEM) for the CSMS's
    /// certificate, which must name the URL's host
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    pub(crate) ca: Option<PathBuf>,

    /// wss://: present this client certificate chain (PEM; security profile 3:
    /// its subject CN should be the identity); needs --key
    #[arg(
        long,
        value_name = "FILE",
        requires = "key",
        allow_hyphen_values = true
    )]
    pub(crate) cert: Option<PathBuf>,

    /// The private key of --cert (PEM); needs --cert
    #[arg(
        long,
        value_name = "FILE",
        requires = "cert",
        allow_hyphen_values = true
    )]
    pub(crate) key: Option<PathBuf>,

    /// Simulate N charge points CP0001..CP000N at once (1 to 100000); with
    /// N > 1 the URL's last segment is replaced by each identity
    #[arg(
        long,
        value_name = "N",
        value_parser = RangedU64ValueParser::<usize>::new().range(1..=100_000),
        default_value = "1",
        allow_hyphen_values = true
    )]
    pub(crate) count: usize,

    /// Connectors (1.6) / EVSEs (2.x) per charge point (1 to 32)
    #[arg(
        long,
        value_name = "N",
        value_parser = RangedU64ValueParser::<u32>::new().range(1..=32),
        default_value = "1",
        allow_hyphen_values = true
    )]
    pub(crate) connectors: u32,

    /// Meter values every S seconds during a transaction (> 0)
    #[arg(
        long = "meter-interval-s",
        value_name = "S",
        value_parser = parse_positive_seconds,
        default_value = "10",
        allow_hyphen_values = true
    )]
    pub(crate) meter_interval: Duration,

    /// Play a charging session after boot (Authorize, start, meter values, stop)
    #[arg(long)]
    pub(crate) session: bool,

    /// Length of a session in seconds
    #[arg(
        long = "session-s",
        value_name = "S",
        value_parser = parse_seconds,
        default_value = "30",
        allow_hyphen_values = true
    )]
    pub(crate) session_length: Duration,

    /// The idTag / idToken of the session (1 to 20 characters)
    #[arg(
        long = "id-tag",
        value_name = "TAG",
        value_parser = parse_id_tag,
        default_value = "SIMTAG0001",
        allow_hyphen_values = true
    )]
    pub(crate) id_tag: String,

    /// Stop after S seconds, print the summary (default: run until Ctrl-C)
    #[arg(
        long = "duration-s",
        value_name = "S",
        value_parser = parse_seconds,
        allow_hyphen_values = true
    )]
    pub(crate) duration: Option<Duration>,

    /// RetryBackOffWaitMinimum in seconds
    #[arg(
        long = "retry-wait-min-s",
        value_name = "S",
        value_parser = parse_seconds,
        default_value = "3",
        allow_hyphen_values = true
    )]
    pub(crate) retry_wait_minimum: Duration,

    /// RetryBackOffRandomRange in seconds
    #[arg(
        long = "retry-random-range-s",
        value_name = "S",
        value_parser = parse_seconds,
        default_value = "10",
        allow_hyphen_values = true
    )]
    pub(crate) retry_random_range: Duration,

    /// RetryBackOffRepeatTimes (0 to 31)
    #[arg(
        long = "retry-repeat-times",
        value_name = "N",
        value_parser = RangedU64ValueParser::<u32>::new().range(0..=31),
        default_value = "5",
        allow_hyphen_values = true
    )]
    pub(crate) retry_repeat_times: u32,

    /// Seed of the random numbers (default: from the clock)
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub(crate) seed: Option<u64>,

    /// Keep each station's transactions and offline queue in DIR/IDENTITY.journal: after a
    /// restart, a transaction left open ends with PowerLoss under its id (default: in memory)
    #[arg(long = "state-dir", value_name = "DIR")]
    pub(crate) state_dir: Option<PathBuf>,
}

/// The `--password`, whose `Debug` never shows it.
#[derive(Clone)]
pub(crate) struct Password(pub(crate) String);

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(<redacted>)")
    }
}

/// `--password`.
fn parse_password(value: &str) -> Result<Password, String> {
    Ok(Password(value.to_owned()))
}

impl Options {
    /// `--cert` and `--key`.
    pub(crate) fn client_cert(&self) -> Option<(PathBuf, PathBuf)> {
        self.cert.clone().zip(self.key.clone())
    }

    /// `--retry-wait-min-s`, `--retry-random-range-s` and `--retry-repeat-times`.
    pub(crate) fn back_off(&self) -> RetryBackOff {
        RetryBackOff {
            wait_minimum: self.retry_wait_minimum,
            random_range: self.retry_random_range,
            repeat_times: self.retry_repeat_times,
        }
    }

    /// The identities to simulate: the URL's with `--count 1`, CP0001.. otherwise.
    pub(crate) fn identities(&self) -> Vec<String> {
        if self.count == 1 {
            vec![self.url.identity.clone()]
        } else {
            (1..=self.count).map(|i| format!("CP{i:04}")).collect()
        }
    }

    /// The URL of `identity`: the URL as given for `--count 1`; the same endpoint with
    /// `identity` as its last segment otherwise.
    pub(crate) fn url_of(&self, identity: &str) -> String {
        if self.count == 1 {
            return self.url.url.clone();
        }
        let scheme = if self.url.tls { "wss" } else { "ws" };
        format!(
            "{scheme}://{}{}/{identity}",
            self.url.host, self.url.endpoint
        )
    }

    /// Parses a command line (the program name first, as in [`std::env::args_os`]).
    ///
    /// `--help` / `-h` comes back as an error of kind [`ErrorKind::DisplayHelp`] (exit code 0,
    /// printed to stdout by [`clap::Error::exit`]); every bad argument as an error with exit
    /// code 2, printed to stderr.
    pub(crate) fn try_parse_from<I, T>(args: I) -> Result<Options, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let mut command = Options::command();
        let matches = command.try_get_matches_from_mut(args)?;
        let mut options =
            Options::from_arg_matches(&matches).map_err(|e| e.format(&mut command))?;
        options
            .check()
            .map_err(|(kind, message)| command.error(kind, message))?;
        Ok(options)
    }

    /// Applies the rules between options that clap's value parsers cannot see, and drops
    /// repeated `--version`s (the first one given counts).
    fn check(&mut self) -> Result<(), (ErrorKind, &'static str)> {
        let mut versions = Vec::with_capacity(self.versions.len());
        for version in self.versions.drain(..) {
            if !versions.contains(&version) {
                versions.push(version);
            }
        }
        self.versions = versions;
        // clap's `requires` already insists on both; this keeps the pair together.
        match (&self.cert, &self.key) {
            (Some(_), None) => {
                return Err((ErrorKind::MissingRequiredArgument, "--cert needs --key"))
            }
            (None, Some(_)) => {
                return Err((ErrorKind::MissingRequiredArgument, "--key needs --cert"))
            }
            _ => {}
        }
        if self.url.tls && self.ca.is_none() {
            return Err((
                ErrorKind::MissingRequiredArgument,
                "wss:// needs --ca FILE (the CA of the CSMS's certificate, PEM)",
            ));
        }
        if !self.url.tls && (self.ca.is_some() || self.cert.is_some()) {
            return Err((
                ErrorKind::ArgumentConflict,
                "--ca, --cert and --key are for wss:// URLs",
            ));
        }
        Ok(())
    }
}

/// A `--url` taken apart.
#[derive(Debug, Clone)]
pub(crate) struct Url {
    /// The URL as given.
    pub(crate) url: String,
    /// `host[:port]`, with the scheme's default port if it had none (the TCP connection and
    /// the `Host` header).
    pub(crate) host: String,
    /// The path without the last segment (and without query or fragment), e.g. `/ocpp`.
    pub(crate) endpoint: String,
    /// The last path segment, percent-decoded.
    pub(crate) identity: String,
    /// `wss://`: TLS to `server_name`.
    pub(crate) tls: bool,
    /// The host without port or brackets: the TLS server name (a DNS name or an IP address).
    // Only the tests read it today (the station takes the server name from the URL).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) server_name: String,
}

/// `ws[s]://host[:port]/path/identity`: splits host, endpoint and (percent-decoded) identity.
fn parse_url(url: &str) -> Result<Url, String> {
    let (rest, tls) = if let Some(rest) = url.strip_prefix("ws://") {
        (rest, false)
    } else if let Some(rest) = url.strip_prefix("wss://") {
        (rest, true)
    } else {
        return Err("expected ws://host[:port]/path or wss://host[:port]/path".into());
    };
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if host.is_empty() {
        return Err("no host".into());
    }
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let (endpoint, segment) = path.rsplit_once('/').unwrap_or(("", ""));
    if segment.is_empty() {
        return Err("the last path segment (the identity) is empty".into());
    }
    let identity =
        ocpp_proto::ChargePointIdentity::from_path(path, false).map_err(|e| e.to_string())?;
    // `[v6]:port`, `[v6]`, `name:port`, `name`.
    let (name, has_port) = match host.strip_prefix('[') {
        Some(v6) => {
            let (name, after) = v6.split_once(']').unwrap_or((v6, ""));
            (name, after.starts_with(':'))
        }
        None => {
            let name = host.split(':').next().unwrap_or(host);
            (name, host.contains(':'))
        }
    };
    Ok(Url {
        url: url.to_owned(),
        host: if has_port {
            host.to_owned()
        } else {
            format!("{host}:{}", if tls { 443 } else { 80 })
        },
        endpoint: endpoint.to_owned(),
        identity: identity.as_str().to_owned(),
        tls,
        server_name: name.to_owned(),
    })
}

/// `1.6`, `2.0.1`, `2.1` or their subprotocol names (`ocpp1.6`, ...).
fn parse_version(value: &str) -> Result<OcppVersion, String> {
    OcppVersion::ALL
        .into_iter()
        .find(|v| v.as_str() == value || v.subprotocol() == value)
        .ok_or_else(|| "expected 1.6, 2.0.1 or 2.1".to_owned())
}

/// Seconds `>= 0`, fractions allowed.
fn parse_seconds(value: &str) -> Result<Duration, String> {
    value
        .parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| "expected seconds >= 0".to_owned())
}

/// Seconds `> 0`, fractions allowed.
fn parse_positive_seconds(value: &str) -> Result<Duration, String> {
    match parse_seconds(value)? {
        zero if zero.is_zero() => Err("must be > 0".to_owned()),
        seconds => Ok(seconds),
    }
}

/// An idTag / idToken: 1 to 20 bytes (OCPP's `CiString20`).
fn parse_id_tag(value: &str) -> Result<String, String> {
    if value.is_empty() || value.len() > 20 {
        Err("needs 1 to 20 characters".to_owned())
    } else {
        Ok(value.to_owned())
    }
}

#[cfg(test)]
mod tests;
