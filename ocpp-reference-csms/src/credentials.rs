//! The credentials store and the one decision on an upgrade that both servers' accept paths
//! reach (through `Csms::on_upgrade`): [`decide`].
//!
//! Security profile 1 (OCPP 1.6 security whitepaper §2.3, OCPP 2.0.1 A00.FR.2xx): HTTP Basic
//! authentication with the charge point's identity as user and its AuthorizationKey as
//! password, checked before the WebSocket upgrade completes. Profile 2: the same over TLS.
//! Profile 3: a client certificate, verified by the TLS layer, whose subject CN is the
//! identity.
//!
//! # Security profile per station
//!
//! One listener can serve stations of several profiles (OCPP 2.0.1 A00, A05: a station is
//! migrated from one profile to a higher one, never back). Each station may have a profile of
//! its own ([`Credentials::set_profile`]: `--security-profiles FILE` with lines
//! `identity profile`, or `PUT /chargepoints/ID/security` with `{"profile":3}`); without one
//! it gets the server's: 3 with `--client-ca` alone (certificates required by the TLS layer),
//! 1 (2 over TLS) with `--basic-auth` or `--security-profiles`, none otherwise (every station
//! accepted). What [`decide`] answers:
//!
//! | the station's profile | it comes with | answer |
//! | --- | --- | --- |
//! | any | a verified certificate whose CN is another identity, or has no CN | 403 |
//! | any | a verified certificate whose CN is its identity | accepted as profile 3 |
//! | 3 | no certificate (a password alone, or nothing) | 401 |
//! | 2 | plain TCP (`ws://`) | 403: the transport is below its profile |
//! | 2 | TLS and its Basic password | accepted as profile 2 |
//! | 1 | its Basic password | accepted as profile 1 (2 over TLS) |
//! | 1, 2 | a wrong or missing password, an unknown identity | 401 |
//!
//! 401 is for credentials missing or wrong (the core adds `WWW-Authenticate: Basic`); 403 for
//! a station that proved an identity other than the one it claims, or came on a transport its
//! profile forbids, which no credentials can fix. No downgrade: a station accepted with a
//! certificate is held to profile 3 from then on (`Csms::on_upgrade` records it), so a stolen
//! password no longer opens a connection for it.
//!
//! Passwords are kept only as SHA-256 digests and compared in constant time (`subtle`), so
//! neither the time a check takes nor a memory dump gives a password away; the digests have
//! a fixed length, so the comparison does not even stop on a length difference. No
//! password, sent or expected, ever reaches a log line or a `Debug` output.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ocpp_frame::handshake::BasicCredentials;
use ocpp_proto::{ChargePointIdentity, IncomingUpgrade, Rejection};

use super::{Csms, Transport};
use ring::digest::{digest, SHA256};
use subtle::ConstantTimeEq;

/// The SHA-256 digest of a password.
type Digest = [u8; 32];

pub(super) fn password_digest(password: &[u8]) -> Digest {
    let mut out = [0; 32];
    out.copy_from_slice(digest(&SHA256, password).as_ref());
    out
}

/// An OCPP security profile (1.6 security whitepaper §2, 2.0.1 part 2 A00).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SecurityProfile {
    /// 1: Basic authentication, no TLS.
    Basic,
    /// 2: Basic authentication over TLS.
    TlsBasic,
    /// 3: TLS with a client certificate.
    TlsClientCertificate,
}

impl SecurityProfile {
    /// The profile's number (1, 2, 3).
    pub fn number(self) -> u8 {
        match self {
            SecurityProfile::Basic => 1,
            SecurityProfile::TlsBasic => 2,
            SecurityProfile::TlsClientCertificate => 3,
        }
    }

    /// The profile of a number (1, 2, 3).
    pub fn from_number(number: u64) -> Option<Self> {
        match number {
            1 => Some(SecurityProfile::Basic),
            2 => Some(SecurityProfile::TlsBasic),
            3 => Some(SecurityProfile::TlsClientCertificate),
            _ => None,
        }
    }
}

/// An upgrade refused by [`decide`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpgradeRefusal {
    /// The HTTP status: 401 (credentials missing or wrong) or 403 (see the module docs).
    pub status: u16,
    /// Why, for the log (never a password).
    pub reason: &'static str,
}

/// Decides an upgrade for both servers (the table in the module docs): `store` is the
/// credentials store (`None`: no `--basic-auth` or `--security-profiles`),
/// `certificates_required` whether the TLS listener requires client certificates of every
/// station (`--client-ca` alone). `Ok` carries the profile the connection reached (`None`
/// when no authentication is configured and none was shown).
///
/// ```
/// use ocpp_reference_csms::{credentials, ClientCertificate, Credentials, SecurityProfile, Transport};
/// use ocpp_frame::handshake::BasicCredentials;
/// use ocpp_proto::ChargePointIdentity;
///
/// let mut store = Credentials::parse("CP1:0123456789abcdef\n").unwrap();
/// store.set_profile("CP1", Some(SecurityProfile::TlsClientCertificate));
/// let cp1 = ChargePointIdentity::new("CP1".into(), false).unwrap();
/// let password = BasicCredentials::new(b"CP1", b"0123456789abcdef").unwrap();
/// let tls = |cn: Option<&str>| Transport::Tls {
///     client_certificate: cn.map(|cn| ClientCertificate::new(Some(cn.into()))),
/// };
/// // Profile 3: the password alone is not enough (401), the certificate is.
/// let refused = credentials::decide(Some(&store), false, &cp1, Some(&password), &tls(None));
/// assert_eq!(refused.unwrap_err().status, 401);
/// let accepted = credentials::decide(Some(&store), false, &cp1, None, &tls(Some("CP1")));
/// assert_eq!(accepted, Ok(Some(SecurityProfile::TlsClientCertificate)));
/// ```
pub fn decide(
    store: Option<&Credentials>,
    certificates_required: bool,
    identity: &ChargePointIdentity,
    sent: Option<&BasicCredentials>,
    transport: &Transport,
) -> Result<Option<SecurityProfile>, UpgradeRefusal> {
    let refuse = |status, reason| Err(UpgradeRefusal { status, reason });
    let (tls, certificate) = match transport {
        Transport::Plain => (false, None),
        Transport::Tls { client_certificate } => (true, client_certificate.as_ref()),
    };
    // A certificate the TLS layer verified proves an identity: it must be the one claimed.
    let certified = match certificate.map(|c| c.common_name.as_deref()) {
        None => false,
        Some(None) => return refuse(403, "the client certificate has no subject CN"),
        Some(Some(cn)) if cn == identity.as_str() => true,
        Some(Some(_)) => return refuse(403, "the client certificate's CN is not the identity"),
    };
    let required = store
        .and_then(|store| store.profile(identity.as_str()))
        .or(certificates_required.then_some(SecurityProfile::TlsClientCertificate))
        .or(store.map(|_| SecurityProfile::Basic));
    if certified {
        return Ok(Some(SecurityProfile::TlsClientCertificate));
    }
    let Some(required) = required else {
        return Ok(None);
    };
    match (required, store) {
        (SecurityProfile::TlsClientCertificate, _) => {
            refuse(401, "security profile 3: no client certificate")
        }
        (SecurityProfile::TlsBasic, _) if !tls => {
            refuse(403, "security profile 2: plain TCP is below it")
        }
        (_, None) => refuse(401, "no credentials known"),
        (_, Some(store)) => match store.check(identity, sent) {
            Ok(()) if tls => Ok(Some(SecurityProfile::TlsBasic)),
            Ok(()) => Ok(Some(SecurityProfile::Basic)),
            Err(reason) => refuse(401, reason),
        },
    }
}

/// The credentials store: passwords per identity, read from a file of `identity:password`
/// lines, and security profiles per identity ([`Credentials::parse_profiles`]).
///
/// ```
/// use ocpp_reference_csms::Credentials;
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
    /// Identity to its own security profile (see the module docs).
    profiles: HashMap<String, SecurityProfile>,
}

impl std::fmt::Debug for Credentials {
    /// Lists identities, never passwords.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("identities", &self.passwords.len())
            .field("changes_pending", &self.proposed.len())
            .field("profiles", &self.profiles)
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
    /// A security profiles line is not `identity profile` with profile 1, 2 or 3 (1-based
    /// line number).
    BadProfile(usize),
}

impl std::fmt::Display for CredentialsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CredentialsError::Io(e) => write!(f, "cannot read the credentials file: {e}"),
            CredentialsError::MissingColon(line) => {
                write!(f, "line {line}: expected `identity:password`")
            }
            CredentialsError::EmptyIdentity(line) => write!(f, "line {line}: empty identity"),
            CredentialsError::BadProfile(line) => {
                write!(
                    f,
                    "line {line}: expected `identity profile` (profile 1, 2 or 3)"
                )
            }
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
            profiles: HashMap::new(),
        })
    }

    /// Reads a security profiles file (see [`Credentials::parse_profiles`]) into this store.
    pub fn load_profiles(&mut self, path: &Path) -> Result<(), CredentialsError> {
        let text = std::fs::read_to_string(path).map_err(CredentialsError::Io)?;
        self.parse_profiles(&text)
    }

    /// Parses `identity profile` lines (profile 1, 2 or 3; blank lines and `#` comments
    /// skipped) into per-station profiles.
    ///
    /// ```
    /// use ocpp_reference_csms::{Credentials, SecurityProfile};
    /// let mut store = Credentials::default();
    /// store.parse_profiles("# station profile\nCP001 3\nCP002 2\n").unwrap();
    /// assert_eq!(store.profile("CP001"), Some(SecurityProfile::TlsClientCertificate));
    /// assert!(store.parse_profiles("CP003 4").is_err());
    /// ```
    pub fn parse_profiles(&mut self, text: &str) -> Result<(), CredentialsError> {
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut words = line.split_whitespace();
            let (Some(identity), Some(profile), None) = (words.next(), words.next(), words.next())
            else {
                return Err(CredentialsError::BadProfile(index + 1));
            };
            let profile = profile
                .parse()
                .ok()
                .and_then(SecurityProfile::from_number)
                .ok_or(CredentialsError::BadProfile(index + 1))?;
            self.profiles.insert(identity.to_owned(), profile);
        }
        Ok(())
    }

    /// The station's own security profile, if it has one.
    pub fn profile(&self, identity: &str) -> Option<SecurityProfile> {
        self.profiles.get(identity).copied()
    }

    /// Sets (or with `None` clears) the station's own security profile.
    pub fn set_profile(&mut self, identity: &str, profile: Option<SecurityProfile>) {
        match profile {
            Some(profile) => self.profiles.insert(identity.to_owned(), profile),
            None => self.profiles.remove(identity),
        };
    }

    /// Sets (or with `None` removes) the station's Basic password, from its next connection
    /// on (the operator's word: a change we asked the station to make and it has not answered
    /// yet is dropped, so that its answer cannot overwrite this one).
    ///
    /// ```
    /// use ocpp_reference_csms::Credentials;
    /// let mut store = Credentials::parse("CP001:old-password-0000\n").unwrap();
    /// store.set_password("CP001", Some(b"new-password-1111"));
    /// assert!(store.has_password("CP001"));
    /// store.set_password("CP001", None);
    /// assert!(!store.has_password("CP001"));
    /// ```
    pub fn set_password(&mut self, identity: &str, password: Option<&[u8]>) {
        self.proposed.remove(identity);
        match password {
            Some(password) => self
                .passwords
                .insert(identity.to_owned(), password_digest(password)),
            None => self.passwords.remove(identity),
        };
    }

    /// The password the store kept for the station (its SHA-256 digest; `None`: removed).
    /// Unlike [`Credentials::set_password`], a change asked of the station and not answered
    /// yet stays pending.
    pub fn set_password_digest(&mut self, identity: &str, digest: Option<[u8; 32]>) {
        match digest {
            Some(digest) => self.passwords.insert(identity.to_owned(), digest),
            None => self.passwords.remove(identity),
        };
    }

    /// The SHA-256 digest of the station's password, to keep in a store.
    pub fn password_digest_of(&self, identity: &str) -> Option<[u8; 32]> {
        self.passwords.get(identity).copied()
    }

    /// Whether the station has a password.
    pub fn has_password(&self, identity: &str) -> bool {
        self.passwords.contains_key(identity)
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

/// The limits of [`AuthAttempts`].
///
/// ```
/// use ocpp_reference_csms::credentials::AttemptLimits;
/// let limits = AttemptLimits::default();
/// assert_eq!(limits.max_failures, 5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AttemptLimits {
    /// Failures within [`AttemptLimits::window`] that lock an address or an identity (5).
    pub max_failures: u32,
    /// The window failures are counted in (1 minute).
    pub window: Duration,
    /// The first lockout (10 s); each further failure of a locked-before key doubles it.
    pub first_delay: Duration,
    /// The longest lockout (5 minutes).
    pub max_delay: Duration,
    /// At most this many addresses, and as many identities, are remembered (4096 each); the
    /// oldest go first.
    pub capacity: usize,
}

impl Default for AttemptLimits {
    fn default() -> Self {
        AttemptLimits {
            max_failures: 5,
            window: Duration::from_secs(60),
            first_delay: Duration::from_secs(10),
            max_delay: Duration::from_secs(300),
            capacity: 4096,
        }
    }
}

/// What [`AuthAttempts`] remembers of one address or identity.
#[derive(Debug, Clone, Copy)]
struct Record {
    /// Failures since `window_start`.
    failures: u32,
    window_start: Instant,
    /// Locked until then.
    blocked_until: Option<Instant>,
    /// Lockouts so far: the next one lasts `first_delay * 2^lockouts`.
    lockouts: u32,
    /// The last failure.
    last: Instant,
}

impl Record {
    fn new(now: Instant) -> Self {
        Record {
            failures: 0,
            window_start: now,
            blocked_until: None,
            lockouts: 0,
            last: now,
        }
    }

    /// Still locked: for how long.
    fn blocked(&self, now: Instant) -> Option<Duration> {
        self.blocked_until
            .filter(|&until| until > now)
            .map(|until| until - now)
    }

    /// Whether nothing of it matters any more (no lockout running, and quiet for twice the
    /// longest lockout, and the window): it may be forgotten.
    fn expired(&self, now: Instant, limits: &AttemptLimits) -> bool {
        self.blocked(now).is_none()
            && now.saturating_duration_since(self.last)
                >= limits.window.max(limits.max_delay.saturating_mul(2))
    }

    /// Whether it failed lately: a failure in the window, a lockout running or past.
    fn has_failed(&self, now: Instant, limits: &AttemptLimits) -> bool {
        !self.expired(now, limits)
            && (self.lockouts > 0
                || (self.failures > 0
                    && now.saturating_duration_since(self.window_start) < limits.window))
    }

    fn fail(&mut self, now: Instant, limits: &AttemptLimits) {
        if self.expired(now, limits) {
            *self = Record::new(now);
        }
        if now.saturating_duration_since(self.window_start) >= limits.window {
            self.failures = 0;
            self.window_start = now;
        }
        self.failures = self.failures.saturating_add(1);
        self.last = now;
        // Locked before: the next failure locks again, twice as long (exponential back-off).
        if self.failures >= limits.max_failures || self.lockouts > 0 {
            let factor = 1u32 << self.lockouts.min(16);
            let delay = limits
                .first_delay
                .saturating_mul(factor)
                .min(limits.max_delay);
            self.blocked_until = Some(now + delay);
            self.lockouts = self.lockouts.saturating_add(1);
            self.failures = 0;
            self.window_start = now;
        }
    }
}

/// An address as counted: IPv4 as is, IPv6 by its /64 (one host usually holds a whole /64,
/// so counting single addresses would let it try 2^64 times).
fn address_key(address: IpAddr) -> IpAddr {
    match address.to_canonical() {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(bits.into())
        }
        v4 => v4,
    }
}

/// The limit on failed Basic authentication attempts on the OCPP port (security profiles 1
/// and 2), per source address and per identity, Sans-IO (every call takes `now`). One for
/// both servers, through [`UpgradeGate`].
///
/// - An address with [`AttemptLimits::max_failures`] failures within the window is locked:
///   every attempt from it is answered 429 with `Retry-After`, unchecked, until the lockout
///   passes. The first lockout lasts [`AttemptLimits::first_delay`]; a failure after one
///   locks again for twice as long, up to [`AttemptLimits::max_delay`]; a quiet key is
///   forgotten.
/// - An identity is locked the same way, from failures from any address, but its lockout
///   refuses only attempts from addresses that have failed lately themselves. Refusing
///   every attempt for a locked identity would let an attacker keep a station out for good
///   with a few wrong passwords (a denial of service worse than the guessing); refusing
///   none would let a botnet guess at the per-address rate times its size. This way the
///   station itself, from an address with no failure, still gets in with its password,
///   while each attacking address gets at most one guess at the identity per lockout (its
///   first failure marks it). The rare station that shares an address with an attacker
///   (a NAT) waits out the lockout, which is capped.
/// - Only failures count (401 with Basic credentials sent): a right password is never
///   refused for the identity's lockout, and a success changes nothing, so that a station of
///   the attacker's own cannot clear its record.
/// - Memory is bounded: at most [`AttemptLimits::capacity`] addresses and as many
///   identities; a full table first forgets what has expired, then the record that failed
///   longest ago. An attacker cycling addresses and identities evicts its own records
///   first (the oldest), and a key evicted early only loses its count.
///
/// ```
/// use std::net::IpAddr;
/// use std::time::{Duration, Instant};
/// use ocpp_reference_csms::credentials::{AttemptLimits, AuthAttempts};
/// let mut attempts = AuthAttempts::new(AttemptLimits::default());
/// let (attacker, station): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
/// let now = Instant::now();
/// for _ in 0..5 {
///     assert!(attempts.admit(now, Some(attacker), "CP1").is_ok());
///     attempts.failed(now, Some(attacker), "CP1");
/// }
/// assert_eq!(attempts.admit(now, Some(attacker), "CP1"), Err(Duration::from_secs(10)));
/// // The station's own address has not failed: its attempt is checked.
/// assert!(attempts.admit(now, Some(station), "CP1").is_ok());
/// ```
#[derive(Debug, Clone)]
pub struct AuthAttempts {
    limits: AttemptLimits,
    addresses: HashMap<IpAddr, Record>,
    identities: HashMap<String, Record>,
}

impl AuthAttempts {
    /// No failure yet.
    pub fn new(limits: AttemptLimits) -> Self {
        AuthAttempts {
            limits,
            addresses: HashMap::new(),
            identities: HashMap::new(),
        }
    }

    /// Whether an attempt from `address` (`None`: not known) for `identity` may be checked.
    ///
    /// # Errors
    /// How long the client must wait (`Retry-After`): the address is locked, or the identity
    /// is and the address failed lately.
    pub fn admit(
        &self,
        now: Instant,
        address: Option<IpAddr>,
        identity: &str,
    ) -> Result<(), Duration> {
        let from = address.and_then(|a| self.addresses.get(&address_key(a)));
        if let Some(wait) = from.and_then(|record| record.blocked(now)) {
            return Err(wait);
        }
        let locked = self
            .identities
            .get(identity)
            .and_then(|record| record.blocked(now));
        match (locked, from) {
            (Some(wait), Some(from)) if from.has_failed(now, &self.limits) => Err(wait),
            _ => Ok(()),
        }
    }

    /// An attempt from `address` for `identity` failed (401 with credentials).
    pub fn failed(&mut self, now: Instant, address: Option<IpAddr>, identity: &str) {
        let limits = self.limits;
        if let Some(address) = address {
            let key = address_key(address);
            if !self.addresses.contains_key(&key) {
                make_room(&mut self.addresses, now, &limits);
            }
            self.addresses
                .entry(key)
                .or_insert_with(|| Record::new(now))
                .fail(now, &limits);
        }
        if !self.identities.contains_key(identity) {
            make_room(&mut self.identities, now, &limits);
        }
        if let Some(record) = self.identities.get_mut(identity) {
            record.fail(now, &limits);
        } else {
            let mut record = Record::new(now);
            record.fail(now, &limits);
            self.identities.insert(identity.to_owned(), record);
        }
    }

    /// How many addresses and identities are remembered.
    pub fn len(&self) -> (usize, usize) {
        (self.addresses.len(), self.identities.len())
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.addresses.is_empty() && self.identities.is_empty()
    }
}

/// Before a new key goes into a full `table`: forget what expired, then, if still full, the
/// record that failed longest ago.
fn make_room<K: Clone + Eq + std::hash::Hash>(
    table: &mut HashMap<K, Record>,
    now: Instant,
    limits: &AttemptLimits,
) {
    if table.len() < limits.capacity.max(1) {
        return;
    }
    table.retain(|_, record| !record.expired(now, limits));
    while table.len() >= limits.capacity.max(1) {
        let oldest = table
            .iter()
            .min_by_key(|(_, record)| record.last)
            .map(|(key, _)| key.clone());
        match oldest {
            Some(key) => table.remove(&key),
            None => break,
        };
    }
}

/// Both servers' decision on an upgrade: [`Csms::on_upgrade`] behind the failed-attempt
/// limit ([`AuthAttempts`]). An attempt the limit refuses gets 429 with `Retry-After` and is
/// not checked (`ocpp_auth_throttled_total`); a 401 for credentials that were sent counts as
/// a failure (`ocpp_auth_failures_total`).
#[derive(Debug)]
pub struct UpgradeGate(Mutex<AuthAttempts>);

impl Default for UpgradeGate {
    fn default() -> Self {
        UpgradeGate::new(AttemptLimits::default())
    }
}

impl UpgradeGate {
    /// A gate with these limits.
    pub fn new(limits: AttemptLimits) -> Self {
        UpgradeGate(Mutex::new(AuthAttempts::new(limits)))
    }

    /// Decides `upgrade` from `peer` (its address; `None` when the I/O layer cannot tell),
    /// at `now`.
    ///
    /// # Errors
    /// The refusal to answer with: 429 (with `Retry-After`) from the limit, else
    /// [`Csms::on_upgrade`]'s.
    pub fn decide(
        &self,
        csms: &Csms,
        upgrade: &IncomingUpgrade,
        transport: &Transport,
        peer: Option<IpAddr>,
        now: Instant,
    ) -> Result<(), Rejection> {
        let identity = upgrade.identity.as_str();
        let admitted = self.attempts().admit(now, peer, identity);
        if let Err(wait) = admitted {
            let metrics = csms.metrics();
            metrics.auth_throttled.inc();
            metrics.upgrades_rejected.inc();
            let seconds = u32::try_from(wait.as_secs().saturating_add(1)).unwrap_or(u32::MAX);
            tracing::info!(identity, ?peer, retry_after = seconds, "upgrade throttled");
            return Err(Rejection::new(429, "too many failed attempts").with_retry_after(seconds));
        }
        let decided = csms.on_upgrade(upgrade, transport);
        if let Err(refusal) = &decided {
            if refusal.status == 401 && upgrade.credentials.is_some() {
                csms.metrics().auth_failures.inc();
                self.attempts().failed(now, peer, identity);
            }
        }
        decided
    }

    fn attempts(&self) -> std::sync::MutexGuard<'_, AuthAttempts> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests;
