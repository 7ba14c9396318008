//! The command line of `charge-point`, parsed with clap.
//!
//! [`Cli`] is what clap sees (one field per option, each value checked by its value parser);
//! [`Options::try_parse_from`] parses it, applies the rules between options (`--cert` needs
//! `--key`, `wss://` needs `--ca`, ...) and turns it into the [`Options`] the rest of the binary
//! uses.

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

/// The `charge-point` command line as clap parses it; [`Options`] is what the program uses.
#[derive(Debug, Parser)]
#[command(
    name = "charge-point",
    about = ABOUT,
    long_about = None,
    after_help = AFTER_HELP,
    disable_version_flag = true,
    args_override_self = true
)]
struct Cli {
    /// CSMS endpoint and identity; the identity is the last path segment;
    /// wss:// for TLS (needs --ca)
    #[arg(
        long,
        value_name = "URL",
        value_parser = parse_url,
        default_value = "ws://127.0.0.1:9000/ocpp/CP001",
        allow_hyphen_values = true
    )]
    url: Url,

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
    versions: Vec<OcppVersion>,

    /// Send `Authorization: Basic` (security profiles 1 and 2); also read from the
    /// environment variable OCPP_PASSWORD, whose value is never printed
    #[arg(
        long,
        value_name = "P",
        env = PASSWORD_ENV,
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    password: Option<String>,

    /// wss://: trust the CA certificates of FILE (PEM) for the CSMS's
    /// certificate, which must name the URL's host
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    ca: Option<PathBuf>,

    /// wss://: present this client certificate chain (PEM; security profile 3:
    /// its subject CN should be the identity); needs --key
    #[arg(
        long,
        value_name = "FILE",
        requires = "key",
        allow_hyphen_values = true
    )]
    cert: Option<PathBuf>,

    /// The private key of --cert (PEM); needs --cert
    #[arg(
        long,
        value_name = "FILE",
        requires = "cert",
        allow_hyphen_values = true
    )]
    key: Option<PathBuf>,

    /// Simulate N charge points CP0001..CP000N at once (1 to 100000); with
    /// N > 1 the URL's last segment is replaced by each identity
    #[arg(
        long,
        value_name = "N",
        value_parser = RangedU64ValueParser::<usize>::new().range(1..=100_000),
        default_value = "1",
        allow_hyphen_values = true
    )]
    count: usize,

    /// Connectors (1.6) / EVSEs (2.x) per charge point (1 to 32)
    #[arg(
        long,
        value_name = "N",
        value_parser = RangedU64ValueParser::<u32>::new().range(1..=32),
        default_value = "1",
        allow_hyphen_values = true
    )]
    connectors: u32,

    /// Meter values every S seconds during a transaction (> 0)
    #[arg(
        long = "meter-interval-s",
        value_name = "S",
        value_parser = parse_positive_seconds,
        default_value = "10",
        allow_hyphen_values = true
    )]
    meter_interval: Duration,

    /// Play a charging session after boot (Authorize, start, meter values, stop)
    #[arg(long)]
    session: bool,

    /// Length of a session in seconds
    #[arg(
        long = "session-s",
        value_name = "S",
        value_parser = parse_seconds,
        default_value = "30",
        allow_hyphen_values = true
    )]
    session_length: Duration,

    /// The idTag / idToken of the session (1 to 20 characters)
    #[arg(
        long = "id-tag",
        value_name = "TAG",
        value_parser = parse_id_tag,
        default_value = "SIMTAG0001",
        allow_hyphen_values = true
    )]
    id_tag: String,

    /// Stop after S seconds, print the summary (default: run until Ctrl-C)
    #[arg(
        long = "duration-s",
        value_name = "S",
        value_parser = parse_seconds,
        allow_hyphen_values = true
    )]
    duration: Option<Duration>,

    /// RetryBackOffWaitMinimum in seconds
    #[arg(
        long = "retry-wait-min-s",
        value_name = "S",
        value_parser = parse_seconds,
        default_value = "3",
        allow_hyphen_values = true
    )]
    retry_wait_minimum: Duration,

    /// RetryBackOffRandomRange in seconds
    #[arg(
        long = "retry-random-range-s",
        value_name = "S",
        value_parser = parse_seconds,
        default_value = "10",
        allow_hyphen_values = true
    )]
    retry_random_range: Duration,

    /// RetryBackOffRepeatTimes (0 to 31)
    #[arg(
        long = "retry-repeat-times",
        value_name = "N",
        value_parser = RangedU64ValueParser::<u32>::new().range(0..=31),
        default_value = "5",
        allow_hyphen_values = true
    )]
    retry_repeat_times: u32,

    /// Seed of the random numbers (default: from the clock)
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    seed: Option<u64>,

    /// Keep each station's transactions and offline queue in DIR/IDENTITY.journal: after a
    /// restart, a transaction left open ends with PowerLoss under its id (default: in memory)
    #[arg(long = "state-dir", value_name = "DIR")]
    state_dir: Option<PathBuf>,
}

/// What the command line asked for.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// The URL as given.
    pub(crate) url: String,
    /// `host[:port]` for the TCP connection and the `Host` header.
    pub(crate) host: String,
    /// The endpoint path without the identity, e.g. `/ocpp`.
    pub(crate) endpoint: String,
    /// The identity of the URL's last segment, percent-decoded.
    pub(crate) identity: String,
    /// `wss://`: TLS to `server_name`.
    pub(crate) tls: bool,
    /// The host without port or brackets: the TLS server name (a DNS name or an IP address).
    // Only the tests read it today (the station takes the server name from the URL); before
    // clap, `parse` assigned it through `&mut self`, which kept rustc's dead-code lint quiet.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) server_name: String,
    /// `--ca`.
    pub(crate) ca: Option<PathBuf>,
    /// `--cert` and `--key`.
    pub(crate) client_cert: Option<(PathBuf, PathBuf)>,
    /// `--version`s without repeats, in the order given: the subprotocols offered.
    pub(crate) versions: Vec<OcppVersion>,
    /// `--password` or `OCPP_PASSWORD`.
    pub(crate) password: Option<Password>,
    /// `--count`: how many charge points.
    pub(crate) count: usize,
    /// `--connectors`: connectors (1.6) or EVSEs (2.x) per charge point.
    pub(crate) connectors: u32,
    /// `--meter-interval-s`: never zero.
    pub(crate) meter_interval: Duration,
    /// `--session`: play a charging session after boot.
    pub(crate) session: bool,
    /// `--session-s`.
    pub(crate) session_length: Duration,
    /// `--id-tag`: 1 to 20 bytes.
    pub(crate) id_tag: String,
    /// `--duration-s`; `None`: until Ctrl-C or SIGTERM.
    pub(crate) duration: Option<Duration>,
    /// `--retry-wait-min-s`, `--retry-random-range-s` and `--retry-repeat-times`.
    pub(crate) back_off: RetryBackOff,
    /// `--seed`; `None`: from the clock.
    pub(crate) seed: Option<u64>,
    /// `--state-dir`: where each station's journal is (`None`: in memory).
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

impl Options {
    /// The identities to simulate: the URL's with `--count 1`, CP0001.. otherwise.
    pub(crate) fn identities(&self) -> Vec<String> {
        if self.count == 1 {
            vec![self.identity.clone()]
        } else {
            (1..=self.count).map(|i| format!("CP{i:04}")).collect()
        }
    }

    /// The URL of `identity`: the URL as given for `--count 1`; the same endpoint with
    /// `identity` as its last segment otherwise.
    pub(crate) fn url_of(&self, identity: &str) -> String {
        if self.count == 1 {
            return self.url.clone();
        }
        let scheme = if self.tls { "wss" } else { "ws" };
        format!("{scheme}://{}{}/{identity}", self.host, self.endpoint)
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
        let mut command = Cli::command();
        let matches = command.try_get_matches_from_mut(args)?;
        let cli = Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command))?;
        Options::from_cli(cli).map_err(|(kind, message)| command.error(kind, message))
    }

    /// Applies the rules between options that clap's value parsers cannot see.
    fn from_cli(cli: Cli) -> Result<Options, (ErrorKind, &'static str)> {
        let Cli {
            url,
            versions: given_versions,
            password,
            ca,
            cert,
            key,
            count,
            connectors,
            meter_interval,
            session,
            session_length,
            id_tag,
            duration,
            retry_wait_minimum,
            retry_random_range,
            retry_repeat_times,
            seed,
            state_dir,
        } = cli;
        let mut versions = Vec::with_capacity(given_versions.len());
        for version in given_versions {
            if !versions.contains(&version) {
                versions.push(version);
            }
        }
        // clap's `requires` already insists on both; this keeps the pair together.
        let client_cert = match (cert, key) {
            (Some(cert), Some(key)) => Some((cert, key)),
            (None, None) => None,
            (Some(_), None) => {
                return Err((ErrorKind::MissingRequiredArgument, "--cert needs --key"))
            }
            (None, Some(_)) => {
                return Err((ErrorKind::MissingRequiredArgument, "--key needs --cert"))
            }
        };
        if url.tls && ca.is_none() {
            return Err((
                ErrorKind::MissingRequiredArgument,
                "wss:// needs --ca FILE (the CA of the CSMS's certificate, PEM)",
            ));
        }
        if !url.tls && (ca.is_some() || client_cert.is_some()) {
            return Err((
                ErrorKind::ArgumentConflict,
                "--ca, --cert and --key are for wss:// URLs",
            ));
        }
        Ok(Options {
            url: url.url,
            host: url.host,
            endpoint: url.endpoint,
            identity: url.identity,
            tls: url.tls,
            server_name: url.server_name,
            ca,
            client_cert,
            versions,
            password: password.map(Password),
            count,
            connectors,
            meter_interval,
            session,
            session_length,
            id_tag,
            duration,
            back_off: RetryBackOff {
                wait_minimum: retry_wait_minimum,
                random_range: retry_random_range,
                repeat_times: retry_repeat_times,
            },
            seed,
            state_dir,
        })
    }
}

/// A `--url` taken apart.
#[derive(Debug, Clone)]
struct Url {
    /// The URL as given.
    url: String,
    /// `host[:port]`, with the scheme's default port if it had none.
    host: String,
    /// The path without the last segment (and without query or fragment).
    endpoint: String,
    /// The last path segment, percent-decoded.
    identity: String,
    /// `wss://`.
    tls: bool,
    /// The host without port or brackets.
    server_name: String,
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
mod tests {
    use super::*;

    /// Parses `args` as `charge-point args...`.
    fn parse(args: &[&str]) -> Result<Options, clap::Error> {
        Options::try_parse_from(std::iter::once("charge-point").chain(args.iter().copied()))
    }

    /// Whether `result` is a usage error (clap's exit code 2), not `--help`.
    fn is_usage_error(result: &Result<Options, clap::Error>) -> bool {
        matches!(result, Err(e) if e.exit_code() == 2 && e.use_stderr()
            && e.kind() != ErrorKind::DisplayHelp)
    }

    /// The text `--help` prints.
    fn help_text() -> String {
        match parse(&["--help"]) {
            Ok(o) => panic!("--help parsed: {o:?}"),
            Err(e) => e.render().to_string(),
        }
    }

    /// The error message of `args`, which must not parse.
    fn error_of(args: &[&str]) -> String {
        match parse(args) {
            Ok(o) => panic!("{args:?} parsed: {o:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn defaults_and_url() {
        let o = parse(&[]).unwrap();
        assert_eq!(
            (o.host.as_str(), o.endpoint.as_str()),
            ("127.0.0.1:9000", "/ocpp")
        );
        assert_eq!(o.identities(), vec!["CP001".to_string()]);
        assert_eq!(o.url, "ws://127.0.0.1:9000/ocpp/CP001");
        assert_eq!(o.server_name, "127.0.0.1");
        assert!(!o.tls && o.ca.is_none() && o.client_cert.is_none());
        assert_eq!(
            o.versions,
            vec![OcppVersion::V2_1, OcppVersion::V2_0_1, OcppVersion::V1_6]
        );
        assert_eq!((o.count, o.connectors), (1, 1));
        assert_eq!(o.meter_interval, Duration::from_secs(10));
        assert!(!o.session);
        assert_eq!(o.session_length, Duration::from_secs(30));
        assert_eq!(o.id_tag, "SIMTAG0001");
        assert_eq!((o.duration, o.seed), (None, None));
        // The defaults of the retry options are those of the library.
        assert_eq!(o.back_off, RetryBackOff::default());
        let o = parse(&["--url", "ws://csms.example/a/b/RDAM%7C123?x=1"]).unwrap();
        assert_eq!(o.host, "csms.example:80");
        assert_eq!(o.endpoint, "/a/b");
        assert_eq!(o.identity, "RDAM|123");
        let o = parse(&["--url", "ws://[::1]:9/CP9"]).unwrap();
        assert_eq!((o.host.as_str(), o.endpoint.as_str()), ("[::1]:9", ""));
        assert_eq!(o.server_name, "::1");
        assert!(!o.tls);
    }

    #[test]
    fn wss_and_certificates() {
        let o = parse(&["--url", "wss://csms.example/ocpp/CP1", "--ca", "ca.pem"]).unwrap();
        assert!(o.tls);
        assert_eq!(o.host, "csms.example:443");
        assert_eq!(o.server_name, "csms.example");
        assert_eq!(o.ca, Some(PathBuf::from("ca.pem")));
        let o = parse(&[
            "--url",
            "wss://127.0.0.1:9443/ocpp/CP1",
            "--ca",
            "ca.pem",
            "--cert",
            "cp.pem",
            "--key",
            "cp.key",
            "--password",
            "secret-password-1234",
        ])
        .unwrap();
        assert_eq!(
            (o.host.as_str(), o.server_name.as_str()),
            ("127.0.0.1:9443", "127.0.0.1")
        );
        assert_eq!(
            o.client_cert,
            Some((PathBuf::from("cp.pem"), PathBuf::from("cp.key")))
        );
        assert_eq!(
            o.password.as_ref().map(|p| p.0.as_str()),
            Some("secret-password-1234")
        );
        assert!(!format!("{o:?}").contains("secret-password-1234"));
    }

    #[test]
    fn versions_in_order_and_counts() {
        let o = parse(&[
            "--version",
            "1.6",
            "--version",
            "ocpp2.1",
            "--version",
            "1.6",
        ])
        .unwrap();
        assert_eq!(o.versions, vec![OcppVersion::V1_6, OcppVersion::V2_1]);
        let o = parse(&["--count", "3", "--retry-wait-min-s", "0.25", "--session"]).unwrap();
        assert_eq!(o.identities(), vec!["CP0001", "CP0002", "CP0003"]);
        assert_eq!(
            o.url_of("CP0002"),
            "ws://127.0.0.1:9000/ocpp/CP0002".to_string()
        );
        assert_eq!(o.back_off.wait_minimum, Duration::from_millis(250));
        assert!(o.session);
    }

    #[test]
    fn every_option_and_repeats() {
        let o = parse(&[
            "--connectors",
            "32",
            "--meter-interval-s",
            "0.5",
            "--session-s",
            "1e1",
            "--id-tag",
            "ABCDEFGHIJKLMNOPQRST",
            "--duration-s",
            "0",
            "--retry-random-range-s",
            "0",
            "--retry-repeat-times",
            "0",
            "--seed",
            "18446744073709551615",
            "--count",
            "100000",
        ])
        .unwrap();
        assert_eq!((o.connectors, o.count), (32, 100_000));
        assert_eq!(o.meter_interval, Duration::from_millis(500));
        assert_eq!(o.session_length, Duration::from_secs(10));
        assert_eq!(o.id_tag, "ABCDEFGHIJKLMNOPQRST");
        assert_eq!(o.duration, Some(Duration::ZERO));
        assert_eq!(o.back_off.random_range, Duration::ZERO);
        assert_eq!(o.back_off.repeat_times, 0);
        assert_eq!(o.seed, Some(u64::MAX));
        // As before clap: a repeated option takes its last value, a repeated flag is fine, and
        // a value may start with '-'.
        let o = parse(&[
            "--count",
            "2",
            "--count",
            "4",
            "--session",
            "--session",
            "--password",
            "-secret",
            "--id-tag",
            "-TAG",
        ])
        .unwrap();
        assert_eq!(o.count, 4);
        assert!(o.session);
        assert_eq!(o.password.map(|p| p.0), Some("-secret".to_string()));
        assert_eq!(o.id_tag, "-TAG");
    }

    #[test]
    fn errors() {
        assert_eq!(
            parse(&["--help"]).unwrap_err().kind(),
            ErrorKind::DisplayHelp
        );
        assert_eq!(parse(&["-h"]).unwrap_err().kind(), ErrorKind::DisplayHelp);
        for bad in [
            &["--url", "http://x/y"][..],
            &["--url", "wss://x/y"],
            &["--url", "ws://x/y", "--ca", "ca.pem"],
            &["--url", "wss://x/y", "--ca", "ca.pem", "--cert", "c.pem"],
            &["--url", "wss://x/y", "--ca", "ca.pem", "--key", "k.pem"],
            &["--url", "ws://x/"],
            &["--url", "ws:///CP1"],
            &["--version", "3.0"],
            &["--count", "0"],
            &["--count", "100001"],
            &["--connectors", "33"],
            &["--retry-repeat-times", "32"],
            &["--seed", "-1"],
            &["--meter-interval-s", "-1"],
            &["--meter-interval-s", "0"],
            &["--session-s", "x"],
            &["--duration-s", "inf"],
            &["--id-tag", ""],
            &["--id-tag", "ABCDEFGHIJKLMNOPQRSTU"],
            &["--bogus", "1"],
            &["--url"],
            &["--session", "extra"],
            &["--session=yes"],
        ] {
            assert!(is_usage_error(&parse(bad)), "{bad:?}");
        }
    }

    #[test]
    fn error_messages_name_the_problem() {
        for (args, expected) in [
            (
                &["--url", "http://x/y"][..],
                "expected ws://host[:port]/path",
            ),
            (&["--url", "wss://x/y"], "wss:// needs --ca FILE"),
            (
                &["--url", "ws://x/y", "--ca", "ca.pem"],
                "--ca, --cert and --key are for wss:// URLs",
            ),
            (
                &["--url", "wss://x/y", "--ca", "ca.pem", "--cert", "c.pem"],
                "--key <FILE>",
            ),
            (
                &["--url", "wss://x/y", "--ca", "ca.pem", "--key", "k.pem"],
                "--cert <FILE>",
            ),
            (&["--url", "ws://x/"], "the identity) is empty"),
            (&["--version", "3.0"], "expected 1.6, 2.0.1 or 2.1"),
            (&["--count", "0"], "1..=100000"),
            (&["--meter-interval-s", "0"], "must be > 0"),
            (&["--meter-interval-s", "-1"], "expected seconds >= 0"),
            (&["--id-tag", ""], "needs 1 to 20 characters"),
        ] {
            let message = error_of(args);
            assert!(message.contains(expected), "{args:?}: {message}");
        }
    }

    #[test]
    fn unknown_option_is_a_usage_error() {
        let error = parse(&["--bogus", "1"]).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::UnknownArgument);
        assert_eq!(error.exit_code(), 2);
        assert!(error.use_stderr());
        assert!(error.to_string().contains("--bogus"), "{error}");
    }

    #[test]
    fn help_describes_every_option() {
        // What `charge-point --help` prints.
        let help = help_text();
        assert!(help.starts_with(ABOUT), "{help}");
        assert!(help.contains("Logs go to stderr"), "{help}");
        for option in [
            "--url <URL>",
            "--version <V>",
            "--password <P>",
            "--ca <FILE>",
            "--cert <FILE>",
            "--key <FILE>",
            "--count <N>",
            "--connectors <N>",
            "--meter-interval-s <S>",
            "--session ",
            "--session-s <S>",
            "--id-tag <TAG>",
            "--duration-s <S>",
            "--retry-wait-min-s <S>",
            "--retry-random-range-s <S>",
            "--retry-repeat-times <N>",
            "--seed <N>",
            "--state-dir <DIR>",
            "--help",
        ] {
            assert!(help.contains(option), "{option} missing:\n{help}");
        }
        assert!(help.contains("[env: OCPP_PASSWORD]"), "{help}");
        // Every option has a text of its own.
        for arg in Cli::command().get_arguments() {
            assert!(
                arg.get_help().is_some_and(|h| !h.to_string().is_empty()),
                "{:?} has no help",
                arg.get_id()
            );
        }
        let error = parse(&["--help"]).unwrap_err();
        assert_eq!(error.exit_code(), 0);
        assert!(!error.use_stderr());
    }

    #[test]
    fn documented_invocations_parse() {
        // README.md and the docs of main.rs.
        for line in [
            "--url ws://127.0.0.1:9000/ocpp/CP001 --version 1.6 --session --duration-s 60",
            "--url ws://127.0.0.1:9100/ocpp/CP001 --version 1.6 --session --duration-s 60",
            "--url wss://localhost:9000/ocpp/CP001 --ca ca.pem --cert CP001.pem --key CP001.key \
             --version 1.6 --duration-s 10",
            "--url wss://localhost:9000/ocpp/CP001 --ca ca.pem --cert cp001.pem --key cp001.key",
        ] {
            let args: Vec<&str> = line.split_whitespace().collect();
            if let Err(e) = parse(&args) {
                panic!("{line}: {e}");
            }
        }
    }

    /// Set by [`password_from_environment`] for the child process it runs.
    const CHILD_MARKER: &str = "CHARGE_POINT_CLI_TEST_CHILD";

    /// `--password` from `OCPP_PASSWORD`. clap reads the variable when it builds the command,
    /// and setting it in this process would race the tests running in parallel (and their
    /// `getenv`), so this runs [`password_from_environment_in_child`] in a child process of
    /// this test binary, once with the variable set and once without it.
    #[test]
    fn password_from_environment() {
        let exe = std::env::current_exe().unwrap();
        // The test's path without the crate name: `cli::tests::...`.
        let module = module_path!()
            .split_once("::")
            .map_or(module_path!(), |(_, m)| m);
        let name = format!("{module}::password_from_environment_in_child");
        for value in [Some("from-the-environment-42"), None] {
            let mut child = std::process::Command::new(&exe);
            child.args(["--exact", &name, "--test-threads=1"]);
            match value {
                Some(value) => child.env(CHILD_MARKER, "set").env(PASSWORD_ENV, value),
                None => child.env(CHILD_MARKER, "unset").env_remove(PASSWORD_ENV),
            };
            let out = child.output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && stdout.contains("1 passed"),
                "{value:?}: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    /// The child half of [`password_from_environment`]; passes trivially in a normal run.
    #[test]
    fn password_from_environment_in_child() {
        let Some(marker) = std::env::var_os(CHILD_MARKER) else {
            return;
        };
        let o = parse(&[]).unwrap();
        if marker == "unset" {
            assert!(o.password.is_none());
            return;
        }
        let secret = "from-the-environment-42";
        assert_eq!(o.password.as_ref().map(|p| p.0.as_str()), Some(secret));
        // The command line wins over the environment.
        let o = parse(&["--password", "from-the-command-line"]).unwrap();
        assert_eq!(
            o.password.map(|p| p.0),
            Some("from-the-command-line".to_string())
        );
        // Neither help nor errors print the value.
        let help = help_text();
        assert!(help.contains("[env: OCPP_PASSWORD]"), "{help}");
        assert!(!help.contains(secret), "{help}");
        assert!(!error_of(&["--bogus"]).contains(secret));
    }
}
