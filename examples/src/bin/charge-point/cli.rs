//! The command line of `charge-point`.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use ocpp_messages::version::OcppVersion;

use ocpp_tokio::station::RetryBackOff;

pub(crate) const USAGE: &str = "\
charge-point: an OCPP charge point simulator (OCPP-J 1.6, 2.0.1, 2.1 over ws:// or wss://)

usage: charge-point [options]

  --url URL                   CSMS endpoint and identity (default ws://127.0.0.1:9000/ocpp/CP001);
                              the identity is the last path segment; wss:// for TLS (needs --ca)
  --version V                 1.6, 2.0.1 or 2.1; repeatable, offered in the given order
                              (default: 2.1, 2.0.1, 1.6)
  --password P                send `Authorization: Basic` (security profiles 1 and 2)
  --ca FILE                   wss://: trust the CA certificates of FILE (PEM) for the CSMS's
                              certificate, which must name the URL's host
  --cert FILE                 wss://: present this client certificate chain (PEM; security
                              profile 3: its subject CN should be the identity); needs --key
  --key FILE                  the private key of --cert (PEM)
  --count N                   simulate N charge points CP0001..CP000N at once (default 1); with
                              N > 1 the URL's last segment is replaced by each identity
  --connectors N              connectors (1.6) / EVSEs (2.x) per charge point (default 1)
  --meter-interval-s S        meter values every S seconds during a transaction (default 10)
  --session                   play a charging session after boot (Authorize, start, meter
                              values, stop)
  --session-s S               length of a session (default 30)
  --id-tag TAG                the idTag / idToken of the session (default SIMTAG0001)
  --duration-s S              stop after S seconds, print the summary (default: run until Ctrl-C)
  --retry-wait-min-s S        RetryBackOffWaitMinimum (default 3)
  --retry-random-range-s S    RetryBackOffRandomRange (default 10)
  --retry-repeat-times N      RetryBackOffRepeatTimes (default 5)
  --seed N                    seed of the random numbers (default: from the clock)
  --help                      this text

Seconds may be fractional (e.g. 0.5). Logs go to stderr (RUST_LOG=debug for more), the summary
line to stdout.
";

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
    pub(crate) server_name: String,
    /// `--ca`.
    pub(crate) ca: Option<PathBuf>,
    /// `--cert` and `--key`.
    pub(crate) client_cert: Option<(PathBuf, PathBuf)>,
    pub(crate) versions: Vec<OcppVersion>,
    pub(crate) password: Option<Password>,
    pub(crate) count: usize,
    pub(crate) connectors: u32,
    pub(crate) meter_interval: Duration,
    pub(crate) session: bool,
    pub(crate) session_length: Duration,
    pub(crate) id_tag: String,
    pub(crate) duration: Option<Duration>,
    pub(crate) back_off: RetryBackOff,
    pub(crate) seed: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            url: "ws://127.0.0.1:9000/ocpp/CP001".into(),
            host: "127.0.0.1:9000".into(),
            endpoint: "/ocpp".into(),
            identity: "CP001".into(),
            tls: false,
            server_name: "127.0.0.1".into(),
            ca: None,
            client_cert: None,
            versions: vec![OcppVersion::V2_1, OcppVersion::V2_0_1, OcppVersion::V1_6],
            password: None,
            count: 1,
            connectors: 1,
            meter_interval: Duration::from_secs(10),
            session: false,
            session_length: Duration::from_secs(30),
            id_tag: "SIMTAG0001".into(),
            duration: None,
            back_off: RetryBackOff::default(),
            seed: None,
        }
    }
}

/// The `--password`, whose `Debug` never shows it.
#[derive(Clone)]
pub(crate) struct Password(pub(crate) String);

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(<redacted>)")
    }
}

/// What `parse` found instead of options.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum CliError {
    /// `--help`: print the usage and exit successfully.
    Help,
    /// A bad argument: print this and the usage, exit with status 2.
    Invalid(String),
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

    /// Parses the arguments (without the program name).
    pub(crate) fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Options, CliError> {
        let mut options = Options::default();
        let mut versions = Vec::new();
        let (mut cert, mut key) = (None, None);
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            if flag == "--help" || flag == "-h" {
                return Err(CliError::Help);
            }
            if flag == "--session" {
                options.session = true;
                continue;
            }
            let value = args
                .next()
                .ok_or_else(|| CliError::Invalid(format!("{flag} needs a value")))?;
            match flag.as_str() {
                "--url" => options.set_url(&value)?,
                "--version" => {
                    let version = parse_version(&value)?;
                    if !versions.contains(&version) {
                        versions.push(version);
                    }
                }
                "--password" => options.password = Some(Password(value)),
                "--ca" => options.ca = Some(PathBuf::from(value)),
                "--cert" => cert = Some(PathBuf::from(value)),
                "--key" => key = Some(PathBuf::from(value)),
                "--count" => options.count = parse_number(&flag, &value, 1, 100_000)? as usize,
                "--connectors" => options.connectors = parse_number(&flag, &value, 1, 32)? as u32,
                "--meter-interval-s" => options.meter_interval = parse_seconds(&flag, &value)?,
                "--session-s" => options.session_length = parse_seconds(&flag, &value)?,
                "--id-tag" => options.id_tag = value,
                "--duration-s" => options.duration = Some(parse_seconds(&flag, &value)?),
                "--retry-wait-min-s" => {
                    options.back_off.wait_minimum = parse_seconds(&flag, &value)?;
                }
                "--retry-random-range-s" => {
                    options.back_off.random_range = parse_seconds(&flag, &value)?;
                }
                "--retry-repeat-times" => {
                    options.back_off.repeat_times = parse_number(&flag, &value, 0, 31)? as u32;
                }
                "--seed" => options.seed = Some(parse_number(&flag, &value, 0, u64::MAX)?),
                _ => return Err(CliError::Invalid(format!("unknown option {flag}"))),
            }
        }
        if !versions.is_empty() {
            options.versions = versions;
        }
        options.client_cert = match (cert, key) {
            (Some(cert), Some(key)) => Some((cert, key)),
            (None, None) => None,
            (Some(_), None) => return Err(CliError::Invalid("--cert needs --key".into())),
            (None, Some(_)) => return Err(CliError::Invalid("--key needs --cert".into())),
        };
        if options.tls && options.ca.is_none() {
            return Err(CliError::Invalid(
                "wss:// needs --ca FILE (the CA of the CSMS's certificate, PEM)".into(),
            ));
        }
        if !options.tls && (options.ca.is_some() || options.client_cert.is_some()) {
            return Err(CliError::Invalid(
                "--ca, --cert and --key are for wss:// URLs".into(),
            ));
        }
        if options.meter_interval.is_zero() {
            return Err(CliError::Invalid("--meter-interval-s must be > 0".into()));
        }
        if options.id_tag.is_empty() || options.id_tag.len() > 20 {
            return Err(CliError::Invalid(
                "--id-tag needs 1 to 20 characters".into(),
            ));
        }
        Ok(options)
    }

    /// `ws[s]://host[:port]/path/identity`: splits host, endpoint and (percent-decoded)
    /// identity.
    fn set_url(&mut self, url: &str) -> Result<(), CliError> {
        let (rest, tls) = if let Some(rest) = url.strip_prefix("ws://") {
            (rest, false)
        } else if let Some(rest) = url.strip_prefix("wss://") {
            (rest, true)
        } else {
            return Err(CliError::Invalid(format!(
                "{url}: expected ws://host[:port]/path or wss://host[:port]/path"
            )));
        };
        let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if host.is_empty() {
            return Err(CliError::Invalid(format!("{url}: no host")));
        }
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let (endpoint, segment) = path.rsplit_once('/').unwrap_or(("", ""));
        if segment.is_empty() {
            return Err(CliError::Invalid(format!(
                "{url}: the last path segment (the identity) is empty"
            )));
        }
        let identity = ocpp_server_core::ChargePointIdentity::from_path(path, false)
            .map_err(|e| CliError::Invalid(format!("{url}: {e}")))?;
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
        self.server_name = name.to_owned();
        self.tls = tls;
        self.host = if has_port {
            host.to_owned()
        } else {
            format!("{host}:{}", if tls { 443 } else { 80 })
        };
        self.endpoint = endpoint.to_owned();
        self.identity = identity.as_str().to_owned();
        self.url = url.to_owned();
        Ok(())
    }
}

fn parse_version(value: &str) -> Result<OcppVersion, CliError> {
    OcppVersion::ALL
        .into_iter()
        .find(|v| v.as_str() == value || v.subprotocol() == value)
        .ok_or_else(|| CliError::Invalid(format!("--version {value}: expected 1.6, 2.0.1 or 2.1")))
}

fn parse_number(flag: &str, value: &str, min: u64, max: u64) -> Result<u64, CliError> {
    value
        .parse::<u64>()
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| CliError::Invalid(format!("{flag} {value}: expected {min} to {max}")))
}

fn parse_seconds(flag: &str, value: &str) -> Result<Duration, CliError> {
    value
        .parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| CliError::Invalid(format!("{flag} {value}: expected seconds >= 0")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, CliError> {
        Options::parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn defaults_and_url() {
        let o = parse(&[]).unwrap();
        assert_eq!(
            (o.host.as_str(), o.endpoint.as_str()),
            ("127.0.0.1:9000", "/ocpp")
        );
        assert_eq!(o.identities(), vec!["CP001".to_string()]);
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
        assert_eq!(o.back_off.wait_minimum, Duration::from_millis(250));
        assert!(o.session);
    }

    #[test]
    fn errors() {
        assert_eq!(parse(&["--help"]).unwrap_err(), CliError::Help);
        for bad in [
            &["--url", "http://x/y"][..],
            &["--url", "wss://x/y"],
            &["--url", "ws://x/y", "--ca", "ca.pem"],
            &["--url", "wss://x/y", "--ca", "ca.pem", "--cert", "c.pem"],
            &["--url", "wss://x/y", "--ca", "ca.pem", "--key", "k.pem"],
            &["--url", "ws://x/"],
            &["--version", "3.0"],
            &["--count", "0"],
            &["--meter-interval-s", "-1"],
            &["--meter-interval-s", "0"],
            &["--bogus", "1"],
            &["--url"],
        ] {
            assert!(matches!(parse(bad), Err(CliError::Invalid(_))), "{bad:?}");
        }
    }
}
