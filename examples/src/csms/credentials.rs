//! Security profile 1 (OCPP 1.6 security whitepaper §2.3, OCPP 2.0.1 A00.FR.2xx): HTTP Basic
//! authentication with the charge point's identity as user and its AuthorizationKey as
//! password, checked before the WebSocket upgrade completes.
//!
//! Passwords are kept only as SHA-256 digests and compared in constant time (`subtle`), so
//! neither the time a check takes nor a memory dump gives a password away; the digests have
//! a fixed length, so the comparison does not even stop on a length difference. No
//! password, sent or expected, ever reaches a log line or a `Debug` output.

use std::collections::HashMap;
use std::path::Path;

use ocpp_frame::handshake::BasicCredentials;
use ocpp_server_core::ChargePointIdentity;
use ring::digest::{digest, SHA256};
use subtle::ConstantTimeEq;

/// The SHA-256 digest of a password.
type Digest = [u8; 32];

fn password_digest(password: &[u8]) -> Digest {
    let mut out = [0; 32];
    out.copy_from_slice(digest(&SHA256, password).as_ref());
    out
}

/// Passwords per identity, read from a file of `identity:password` lines.
///
/// ```
/// use ocpp_examples::csms::Credentials;
/// let credentials = Credentials::parse("# comment\nCP001:0123456789abcdef\n").unwrap();
/// assert_eq!(credentials.len(), 1);
/// ```
#[derive(Clone, Default)]
pub struct Credentials {
    /// Identity to the digest of its password.
    passwords: HashMap<String, Digest>,
    /// Identity to the digest of the password we asked it to change to (SetVariables
    /// BasicAuthPassword, ChangeConfiguration AuthorizationKey), until it answers.
    proposed: HashMap<String, Digest>,
}

impl std::fmt::Debug for Credentials {
    /// Lists identities, never passwords.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("identities", &self.passwords.len())
            .field("changes_pending", &self.proposed.len())
            .finish()
    }
}

/// Why a credentials file could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum CredentialsError {
    /// The file could not be read.
    Io(std::io::Error),
    /// A line has no `:` (1-based line number).
    MissingColon(usize),
    /// A line has an empty identity (1-based line number).
    EmptyIdentity(usize),
}

impl std::fmt::Display for CredentialsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CredentialsError::Io(e) => write!(f, "cannot read the credentials file: {e}"),
            CredentialsError::MissingColon(line) => {
                write!(f, "line {line}: expected `identity:password`")
            }
            CredentialsError::EmptyIdentity(line) => write!(f, "line {line}: empty identity"),
        }
    }
}

impl std::error::Error for CredentialsError {}

impl Credentials {
    /// Reads a credentials file (see [`Credentials::parse`]).
    pub fn load(path: &Path) -> Result<Self, CredentialsError> {
        let text = std::fs::read_to_string(path).map_err(CredentialsError::Io)?;
        Self::parse(&text)
    }

    /// Parses `identity:password` lines; the identity ends at the first `:` (a Basic user-id
    /// cannot hold one, RFC 7617 §2), the password is the rest of the line. Blank lines and
    /// lines starting with `#` are skipped.
    pub fn parse(text: &str) -> Result<Self, CredentialsError> {
        let mut passwords = HashMap::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let (identity, password) = line
                .split_once(':')
                .ok_or(CredentialsError::MissingColon(index + 1))?;
            if identity.is_empty() {
                return Err(CredentialsError::EmptyIdentity(index + 1));
            }
            passwords.insert(identity.to_owned(), password_digest(password.as_bytes()));
        }
        Ok(Credentials {
            passwords,
            proposed: HashMap::new(),
        })
    }

    /// Notes a password change we are asking the charge point to make (OCPP 2.0.1 A01,
    /// 1.6 security whitepaper §2.3): kept aside until [`Credentials::settle`].
    pub fn propose(&mut self, identity: &ChargePointIdentity, password: &[u8]) {
        self.proposed
            .insert(identity.as_str().to_owned(), password_digest(password));
    }

    /// The charge point answered the change: with `accepted` the proposed password replaces
    /// the old one from its next connection on (the connection it is on stays open); either
    /// way the proposal is gone. Returns whether a password changed.
    pub fn settle(&mut self, identity: &ChargePointIdentity, accepted: bool) -> bool {
        match self.proposed.remove(identity.as_str()) {
            Some(digest) if accepted => {
                self.passwords.insert(identity.as_str().to_owned(), digest);
                true
            }
            _ => false,
        }
    }

    /// Whether a change is waiting for the charge point's answer.
    pub fn has_proposal(&self, identity: &ChargePointIdentity) -> bool {
        self.proposed.contains_key(identity.as_str())
    }

    /// How many identities have a password.
    pub fn len(&self) -> usize {
        self.passwords.len()
    }

    /// Whether no identity has a password.
    pub fn is_empty(&self) -> bool {
        self.passwords.is_empty()
    }

    /// Checks an upgrade's credentials: sent, user equal to the identity, known identity, same
    /// password. The error says which check failed (for the log; the charge point only sees
    /// 401, so an unknown identity cannot be told from a wrong password).
    pub fn check(
        &self,
        identity: &ChargePointIdentity,
        sent: Option<&BasicCredentials>,
    ) -> Result<(), &'static str> {
        let sent = sent.ok_or("no Basic credentials")?;
        if sent.user_bytes() != identity.as_str().as_bytes() {
            return Err("the Basic user is not the identity");
        }
        let expected = self
            .passwords
            .get(identity.as_str())
            .ok_or("unknown identity")?;
        // Digests of equal length, compared without an early exit: the time taken tells
        // neither how much of a guess was right nor how long the password is.
        if bool::from(expected.ct_eq(&password_digest(sent.password()))) {
            Ok(())
        } else {
            Err("wrong password")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(name: &str) -> ChargePointIdentity {
        ChargePointIdentity::new(name.into(), false).unwrap()
    }

    #[test]
    fn checks_user_and_password() {
        let credentials = Credentials::parse("CP1:secret-password-16\n\n# x\nCP2:a:b\n").unwrap();
        assert_eq!(credentials.len(), 2);
        let good = BasicCredentials::new(b"CP1", b"secret-password-16").unwrap();
        let colon = BasicCredentials::new(b"CP2", b"a:b").unwrap();
        let bad = BasicCredentials::new(b"CP1", b"wrong").unwrap();
        let other = BasicCredentials::new(b"CP2", b"secret-password-16").unwrap();
        assert_eq!(credentials.check(&identity("CP1"), Some(&good)), Ok(()));
        assert_eq!(credentials.check(&identity("CP2"), Some(&colon)), Ok(()));
        assert!(credentials.check(&identity("CP1"), Some(&bad)).is_err());
        assert!(credentials.check(&identity("CP1"), Some(&other)).is_err());
        assert!(credentials.check(&identity("CP1"), None).is_err());
        let unknown = BasicCredentials::new(b"CP9", b"x").unwrap();
        assert!(credentials.check(&identity("CP9"), Some(&unknown)).is_err());
    }

    #[test]
    fn a_proposed_password_counts_once_accepted() {
        let mut credentials = Credentials::parse("CP1:old-password-0000\n").unwrap();
        let cp1 = identity("CP1");
        let old = BasicCredentials::new(b"CP1", b"old-password-0000").unwrap();
        let new = BasicCredentials::new(b"CP1", b"new-password-1111").unwrap();
        credentials.propose(&cp1, b"new-password-1111");
        assert_eq!(credentials.check(&cp1, Some(&old)), Ok(()));
        assert!(!credentials.settle(&cp1, false), "refused: nothing changes");
        assert!(credentials.check(&cp1, Some(&new)).is_err());
        credentials.propose(&cp1, b"new-password-1111");
        assert!(credentials.settle(&cp1, true));
        assert_eq!(credentials.check(&cp1, Some(&new)), Ok(()));
        assert!(credentials.check(&cp1, Some(&old)).is_err());
        assert!(!credentials.settle(&cp1, true), "settled once");
    }

    #[test]
    fn debug_shows_no_password() {
        let credentials = Credentials::parse("CP1:secret-password-16\n").unwrap();
        let shown = format!("{credentials:?}");
        assert!(!shown.contains("secret"), "{shown}");
        let sent = BasicCredentials::new(b"CP1", b"secret-password-16").unwrap();
        assert!(!format!("{sent:?}").contains("secret"));
    }

    #[test]
    fn rejects_malformed_lines() {
        assert!(matches!(
            Credentials::parse("CP1"),
            Err(CredentialsError::MissingColon(1))
        ));
        assert!(matches!(
            Credentials::parse("ok:x\n:pw"),
            Err(CredentialsError::EmptyIdentity(2))
        ));
    }
}
