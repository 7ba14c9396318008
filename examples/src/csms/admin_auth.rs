//! Who may use the admin interface: bearer tokens (RFC 6750 §2.1, `Authorization: Bearer
//! TOKEN`). The admin API starts charging sessions, resets stations and changes passwords,
//! so a server that listens for it beyond loopback must hold at least one token
//! ([`crate::server_cli`] refuses to start otherwise).
//!
//! - Without tokens ([`AdminAuth::open`], the default on a loopback address) every request is
//!   let in.
//! - With tokens every request must carry one of them, `/metrics` included unless
//!   [`AdminAuth::metrics_public`]; others get 401 with `WWW-Authenticate: Bearer` (plus
//!   `error="invalid_token"` when a token was given and is wrong).
//! - A token is kept only as its SHA-256 digest and compared digest to digest in constant
//!   time, against every token (no early exit): the time taken tells neither how much of a
//!   token matched nor its length. Tokens are never logged: [`Authorization`]'s `Debug`
//!   prints no value and [`AdminAuth`]'s only a count.
//!
//! ```
//! use ocpp_examples::csms::admin::AdminRequest;
//! use ocpp_examples::csms::admin_auth::AdminAuth;
//! let auth = AdminAuth::from_tokens(["s3cret-token-0123"]).unwrap();
//! let ask = |head: &str| AdminRequest::parse(head.as_bytes()).unwrap().unwrap().0;
//! let refused = auth.check(&ask("GET /chargepoints HTTP/1.1\r\n\r\n")).unwrap_err();
//! assert_eq!(refused.status, 401);
//! assert_eq!(refused.www_authenticate, Some("Bearer realm=\"ocpp-admin\""));
//! let request = ask("GET /chargepoints HTTP/1.1\r\nAuthorization: Bearer s3cret-token-0123\r\n\r\n");
//! assert!(auth.check(&request).is_ok());
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use ring::digest::{digest, SHA256};
use subtle::{Choice, ConstantTimeEq};

use super::admin::{AdminRequest, HttpResponse};

/// The `WWW-Authenticate` challenge of a request without a token.
const CHALLENGE: &str = "Bearer realm=\"ocpp-admin\"";
/// The challenge of a request whose token is not one of ours (RFC 6750 §3.1).
const CHALLENGE_INVALID: &str = "Bearer realm=\"ocpp-admin\", error=\"invalid_token\"";

/// The value of a request's `Authorization` header. Its `Debug` never shows the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Authorization(Vec<u8>);

impl Authorization {
    /// The header's value as received.
    pub fn new(value: impl Into<Vec<u8>>) -> Self {
        Authorization(value.into())
    }

    /// The token of `Bearer TOKEN` (the scheme is case-insensitive, RFC 9110 §11.1); `None`
    /// for another scheme or no token.
    fn bearer(&self) -> Option<&[u8]> {
        let value = self.0.trim_ascii();
        let scheme = value.get(..6)?;
        let rest = value.get(6..)?;
        if !scheme.eq_ignore_ascii_case(b"bearer") || !rest.first()?.is_ascii_whitespace() {
            return None;
        }
        let token = rest.trim_ascii();
        (!token.is_empty()).then_some(token)
    }
}

impl fmt::Debug for Authorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Authorization(..)")
    }
}

/// Why the admin tokens could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdminAuthError {
    /// The token file could not be read.
    #[error("{}: cannot read the admin tokens: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The file system's error.
        error: std::io::Error,
    },
    /// A token is not usable: it must be 16 to 4096 visible ASCII characters (RFC 6750's
    /// b64token, long enough not to be guessed).
    #[error("{source_name}: the admin token on line {line} {reason}")]
    BadToken {
        /// The file, or the environment variable.
        source_name: String,
        /// Its line (1-based).
        line: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// No token at all: an empty file would lock everyone out (or, read as "no tokens",
    /// let everyone in).
    #[error("{0}: no admin token in it (one per line)")]
    Empty(String),
}

/// The shortest token accepted: 16 characters.
pub const MIN_TOKEN_LEN: usize = 16;
/// The longest token accepted.
pub const MAX_TOKEN_LEN: usize = 4096;

/// Who may use the admin interface (see the [module](self)).
#[derive(Clone, Default)]
pub struct AdminAuth {
    /// The SHA-256 digests of the tokens; empty: the interface is open.
    tokens: Vec<[u8; 32]>,
    metrics_public: bool,
}

impl fmt::Debug for AdminAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdminAuth")
            .field("tokens", &self.tokens.len())
            .field("metrics_public", &self.metrics_public)
            .finish()
    }
}

impl AdminAuth {
    /// No tokens: every request is let in (for an interface on a loopback address).
    pub fn open() -> Self {
        AdminAuth::default()
    }

    /// These tokens, each checked as a line of a token file would be.
    ///
    /// # Errors
    /// A token shorter than [`MIN_TOKEN_LEN`], longer than [`MAX_TOKEN_LEN`] or with
    /// characters other than visible ASCII; no token at all.
    pub fn from_tokens<T: AsRef<str>>(
        tokens: impl IntoIterator<Item = T>,
    ) -> Result<Self, AdminAuthError> {
        let mut auth = AdminAuth::open();
        for (index, token) in tokens.into_iter().enumerate() {
            auth.add("the admin tokens", index + 1, token.as_ref())?;
        }
        auth.not_empty("the admin tokens")
    }

    /// The tokens of `path`, one per line; blank lines and lines starting with `#` are
    /// skipped, surrounding whitespace is trimmed.
    ///
    /// # Errors
    /// The file cannot be read, holds a bad token ([`AdminAuth::from_tokens`]) or none.
    pub fn load(path: &Path) -> Result<Self, AdminAuthError> {
        let text = std::fs::read_to_string(path).map_err(|error| AdminAuthError::Read {
            path: path.to_owned(),
            error,
        })?;
        let name = path.display().to_string();
        let mut auth = AdminAuth::open();
        auth.add_lines(&name, &text)?;
        auth.not_empty(&name)
    }

    /// Adds the tokens of `text` (lines, as in a token file) read from `source_name` (an
    /// environment variable's name, for the errors).
    ///
    /// # Errors
    /// As [`AdminAuth::load`], for a bad token.
    pub fn add_lines(&mut self, source_name: &str, text: &str) -> Result<(), AdminAuthError> {
        for (index, line) in text.lines().enumerate() {
            let token = line.trim();
            if token.is_empty() || token.starts_with('#') {
                continue;
            }
            self.add(source_name, index + 1, token)?;
        }
        Ok(())
    }

    /// Whether `/metrics` answers without a token (for a Prometheus that scrapes without
    /// one); every other route still needs one.
    pub fn metrics_public(mut self, public: bool) -> Self {
        self.metrics_public = public;
        self
    }

    /// Whether every request is let in (no token).
    pub fn is_open(&self) -> bool {
        self.tokens.is_empty()
    }

    /// How many tokens are accepted.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether no token is accepted (the same as [`AdminAuth::is_open`]).
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Lets `request` in, or gives the 401 to answer.
    ///
    /// # Errors
    /// The 401 response: no `Authorization: Bearer` token, or not one of ours.
    pub fn check(&self, request: &AdminRequest) -> Result<(), HttpResponse> {
        if self.is_open()
            || (self.metrics_public && request.method == "GET" && request.path == "/metrics")
        {
            return Ok(());
        }
        let Some(token) = request
            .authorization
            .as_ref()
            .and_then(Authorization::bearer)
        else {
            return Err(unauthorized(
                CHALLENGE,
                "this admin interface needs `Authorization: Bearer TOKEN`",
            ));
        };
        let presented = sha256(token);
        let known = self.tokens.iter().fold(Choice::from(0), |known, token| {
            known | token.ct_eq(&presented)
        });
        if bool::from(known) {
            Ok(())
        } else {
            Err(unauthorized(
                CHALLENGE_INVALID,
                "the admin token is not valid",
            ))
        }
    }

    fn add(&mut self, source_name: &str, line: usize, token: &str) -> Result<(), AdminAuthError> {
        let reason = if token.len() < MIN_TOKEN_LEN {
            Some("is shorter than 16 characters")
        } else if token.len() > MAX_TOKEN_LEN {
            Some("is longer than 4096 characters")
        } else if !token.bytes().all(|b| b.is_ascii_graphic()) {
            Some("has characters other than visible ASCII")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(AdminAuthError::BadToken {
                source_name: source_name.to_owned(),
                line,
                reason,
            });
        }
        self.tokens.push(sha256(token.as_bytes()));
        Ok(())
    }

    fn not_empty(self, source_name: &str) -> Result<Self, AdminAuthError> {
        if self.is_open() {
            return Err(AdminAuthError::Empty(source_name.to_owned()));
        }
        Ok(self)
    }
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    let mut out = [0; 32];
    out.copy_from_slice(digest(&SHA256, bytes).as_ref());
    out
}

fn unauthorized(challenge: &'static str, message: &str) -> HttpResponse {
    let mut response = HttpResponse::error(401, message);
    response.www_authenticate = Some(challenge);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef-token";

    fn request(method: &str, path: &str, authorization: Option<&str>) -> AdminRequest {
        AdminRequest {
            method: method.into(),
            path: path.into(),
            body: Vec::new(),
            authorization: authorization.map(Authorization::new),
        }
    }

    #[test]
    fn open_lets_everyone_in() {
        let auth = AdminAuth::open();
        assert!(auth.is_open());
        assert!(auth.check(&request("POST", "/tokens/X", None)).is_ok());
    }

    #[test]
    fn a_token_is_needed_and_must_be_one_of_ours() {
        let auth = AdminAuth::from_tokens([TOKEN, "another-token-of-16"]).unwrap();
        assert_eq!(auth.len(), 2);
        let missing = auth
            .check(&request("GET", "/chargepoints", None))
            .unwrap_err();
        assert_eq!(missing.status, 401);
        assert_eq!(missing.www_authenticate, Some(CHALLENGE));
        for wrong in [
            "Bearer 0123456789abcdef-tokeN",
            "Bearer 0123456789abcdef-token-and-more",
            "Bearer 0123456789abcdef",
            "Basic MDEyMzQ1Njc4OWFiY2RlZi10b2tlbg==",
            "Bearer",
            "Bearer ",
            "Bearer0123456789abcdef-token",
            "",
        ] {
            let refused = auth
                .check(&request("GET", "/chargepoints", Some(wrong)))
                .unwrap_err();
            assert_eq!(refused.status, 401, "{wrong:?}");
        }
        let wrong = auth
            .check(&request("GET", "/", Some("Bearer wrong-token-wrong-token")))
            .unwrap_err();
        assert_eq!(wrong.www_authenticate, Some(CHALLENGE_INVALID));
        for right in [
            "Bearer 0123456789abcdef-token",
            "bearer 0123456789abcdef-token",
            "BEARER   0123456789abcdef-token  ",
            "Bearer another-token-of-16",
        ] {
            assert!(
                auth.check(&request("GET", "/", Some(right))).is_ok(),
                "{right:?}"
            );
        }
    }

    #[test]
    fn metrics_may_be_public_and_nothing_else() {
        let auth = AdminAuth::from_tokens([TOKEN]).unwrap();
        assert!(auth.check(&request("GET", "/metrics", None)).is_err());
        let auth = auth.metrics_public(true);
        assert!(auth.check(&request("GET", "/metrics", None)).is_ok());
        assert!(auth.check(&request("POST", "/metrics", None)).is_err());
        assert!(auth.check(&request("GET", "/metrics/x", None)).is_err());
        assert!(auth.check(&request("GET", "/chargepoints", None)).is_err());
    }

    #[test]
    fn token_files_and_their_errors() {
        let dir = std::env::temp_dir().join(format!("admin-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("tokens");
        std::fs::write(
            &file,
            format!("# operators\n\n  {TOKEN}  \nsecond-token-0123456\n"),
        )
        .unwrap();
        assert_eq!(AdminAuth::load(&file).unwrap().len(), 2);
        std::fs::write(&file, "# nothing\n\n").unwrap();
        let error = AdminAuth::load(&file).unwrap_err().to_string();
        assert!(error.contains("no admin token"), "{error}");
        std::fs::write(&file, format!("{TOKEN}\nshort\n")).unwrap();
        let error = AdminAuth::load(&file).unwrap_err().to_string();
        assert!(
            error.contains("line 2") && error.contains("shorter"),
            "{error}"
        );
        std::fs::write(&file, "token with spaces inside\n").unwrap();
        let error = AdminAuth::load(&file).unwrap_err().to_string();
        assert!(error.contains("visible ASCII"), "{error}");
        let error = AdminAuth::load(&dir.join("missing"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("missing: cannot read"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn debug_shows_no_secret() {
        let auth = AdminAuth::from_tokens([TOKEN]).unwrap();
        let shown = format!("{auth:?} {:?}", request("GET", "/", Some(TOKEN)));
        assert!(!shown.contains(TOKEN), "{shown}");
        assert!(!shown.contains("0123456789"), "{shown}");
    }
}
