//! The central system's address as a station is given it: `ws[s]://host[:port]/path/IDENTITY`.

use crate::{ChargePointIdentity, IdentityError};

/// Why a station URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// Neither `ws://` nor `wss://`.
    #[error("{0}: expected ws://host[:port]/path/IDENTITY or wss://...")]
    Scheme(String),
    /// No host before the path.
    #[error("{0}: no host")]
    NoHost(String),
    /// The last path segment is not an identity.
    #[error("{url}: the last path segment is not an identity: {error}")]
    Identity {
        /// The URL.
        url: String,
        /// What is wrong with the segment.
        error: IdentityError,
    },
}

/// A parsed station URL: where to connect, what to ask for, and who we are.
///
/// ```
/// use ocpp_proto::station::StationUrl;
///
/// let url = StationUrl::parse("wss://csms.example.com/ocpp/RDAM%7C123").unwrap();
/// assert!(url.tls());
/// assert_eq!(url.authority(), "csms.example.com:443");
/// assert_eq!(url.server_name(), "csms.example.com");
/// assert_eq!(url.endpoint(), "/ocpp");
/// assert_eq!(url.identity().as_str(), "RDAM|123");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StationUrl {
    tls: bool,
    authority: String,
    server_name: String,
    endpoint: String,
    identity: ChargePointIdentity,
}

impl StationUrl {
    /// Splits `ws[s]://host[:port]/path/IDENTITY` (the identity percent-decoded; a query or
    /// fragment is ignored; the port defaults to 80 or 443).
    ///
    /// # Errors
    /// [`UrlError`] for another scheme, no host, or an empty or invalid last segment.
    pub fn parse(url: &str) -> Result<StationUrl, UrlError> {
        let (rest, tls) = if let Some(rest) = url.strip_prefix("ws://") {
            (rest, false)
        } else if let Some(rest) = url.strip_prefix("wss://") {
            (rest, true)
        } else {
            return Err(UrlError::Scheme(url.into()));
        };
        let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if host.is_empty() {
            return Err(UrlError::NoHost(url.into()));
        }
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let identity =
            ChargePointIdentity::from_path(path, false).map_err(|error| UrlError::Identity {
                url: url.into(),
                error,
            })?;
        let endpoint = path.rsplit_once('/').map_or("", |(endpoint, _)| endpoint);
        // `[v6]:port`, `[v6]`, `name:port`, `name`.
        let (name, has_port) = match host.strip_prefix('[') {
            Some(v6) => {
                let (name, after) = v6.split_once(']').unwrap_or((v6, ""));
                (name, after.starts_with(':'))
            }
            None => (host.split(':').next().unwrap_or(host), host.contains(':')),
        };
        // `ws://:9000/...`, or an IPv6 address without its brackets: no host name to
        // connect to or to check a certificate against.
        if name.is_empty() {
            return Err(UrlError::NoHost(url.into()));
        }
        let authority = if has_port {
            host.to_owned()
        } else {
            format!("{host}:{}", if tls { 443 } else { 80 })
        };
        Ok(StationUrl {
            tls,
            authority,
            server_name: name.to_owned(),
            endpoint: endpoint.to_owned(),
            identity,
        })
    }

    /// `wss://`.
    pub fn tls(&self) -> bool {
        self.tls
    }

    /// `host:port`, to connect to and for the `Host` header.
    pub fn authority(&self) -> &str {
        &self.authority
    }

    /// The host name, as the server's certificate must carry it.
    pub fn server_name(&self) -> &str {
        &self.server_name
    }

    /// The path without the identity, e.g. `/ocpp`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The station's identity (the last path segment, decoded).
    pub fn identity(&self) -> &ChargePointIdentity {
        &self.identity
    }

    /// The central system's URL without the identity, as a network connection profile holds
    /// it (`ocppCsmsUrl`).
    ///
    /// ```
    /// use ocpp_proto::station::StationUrl;
    /// let url = StationUrl::parse("wss://csms.example.com:8443/ocpp/CP%7C1").unwrap();
    /// assert_eq!(url.csms_url(), "wss://csms.example.com:8443/ocpp");
    /// ```
    pub fn csms_url(&self) -> String {
        let scheme = if self.tls { "wss" } else { "ws" };
        format!("{scheme}://{}{}", self.authority, self.endpoint)
    }

    /// The same URL with another identity (e.g. one process simulating many stations).
    pub fn with_identity(mut self, identity: ChargePointIdentity) -> StationUrl {
        self.identity = identity;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hosts_ports_and_identities() {
        let url = StationUrl::parse("ws://127.0.0.1:9000/ocpp/CP001").unwrap();
        assert_eq!(
            (
                url.tls(),
                url.authority(),
                url.endpoint(),
                url.identity().as_str()
            ),
            (false, "127.0.0.1:9000", "/ocpp", "CP001")
        );
        let url = StationUrl::parse("ws://[::1]/CP%201?x=1").unwrap();
        assert_eq!(
            (
                url.authority(),
                url.server_name(),
                url.endpoint(),
                url.identity().as_str()
            ),
            ("[::1]:80", "::1", "", "CP 1")
        );
        assert!(matches!(
            StationUrl::parse("http://x/CP"),
            Err(UrlError::Scheme(_))
        ));
        // Found by the `station_url` fuzz target: a port without a host, and an IPv6 address
        // without brackets, left an empty host name.
        for no_host in ["ws:///CP", "ws://:9000/ocpp/CP", "ws://::1/CP1"] {
            assert!(
                matches!(StationUrl::parse(no_host), Err(UrlError::NoHost(_))),
                "{no_host}"
            );
        }
        assert!(matches!(
            StationUrl::parse("ws://host/ocpp/"),
            Err(UrlError::Identity { .. })
        ));
    }
}
