//! Which central system a station tries next: network connection profiles in priority order,
//! a number of attempts on each, failing over and back (OCPP 2.0.1 B09, B10; a URL list on 1.6).
//!
//! OCPP 2.x keeps the ways to reach a CSMS in numbered *configuration slots*, each holding a
//! `NetworkConnectionProfile` (`ocppCsmsUrl`, `securityProfile`, `ocppVersion`,
//! `messageTimeout`, `ocppInterface`), and the order to try them in
//! `OCPPCommCtrlr.NetworkConfigurationPriority`. The rules implemented here:
//!
//! - **B10.FR.04** (errata 2025-06): after a reboot, and after a change of profiles or
//!   priority (B10.FR.01, B09.FR.01), connecting begins with the first entry of the priority
//!   list ([`NetworkProfiles::on_restart`]).
//! - **B10.FR.03** (errata 2025-06): after a reboot or when the connection to the CSMS is lost,
//!   the station makes `NetworkProfileConnectionAttempts` attempts per entry of the priority
//!   list, then moves to the next entry; after the last entry it wraps around to the first
//!   (2.1 B10.FR.09: a station should not stop trying). A lost connection starts again from the
//!   first entry ([`NetworkProfiles::on_lost`]): this is how a station that failed over comes
//!   back to the higher-priority CSMS. While connected to a lower-priority CSMS the
//!   specification has the station stay (nothing in B10 asks it to leave a working
//!   connection); [`NetworkProfiles::with_return_after`] is an extension that does leave it
//!   after a time, for the 1.6 policy below.
//! - **B10.FR.07**: when every entry was tried without success, the station falls back to the
//!   profile of its last successful connection. Here that fallback is one more entry at the end
//!   of the cycle, and only when that slot is no longer in the priority list (otherwise the
//!   cycle tries it anyway); then the cycle starts again from the first entry.
//! - **B10.FR.10** (errata 2025-06): after switching to another profile, the station boots
//!   again. (The drivers send a BootNotification on every connection.)
//! - **B09.FR.01 to B09.FR.04** ([`NetworkProfiles::set_profile`]): SetNetworkProfile stores a
//!   validated profile in its slot (Accepted); invalid content is Rejected
//!   (`InvalidNetworkConf`, B09.FR.02); a profile whose `securityProfile` is lower than the
//!   currently active one is Rejected (`NoSecurityDowngrade`, B09.FR.04); a store that fails
//!   answers Failed (B09.FR.03, the driver's persistence).
//! - **A05.FR.04**: a new `NetworkConfigurationPriority` is refused when one of its slots holds a
//!   profile with a lower security profile than the active one ([`NetworkProfiles::set_priority`]).
//!
//! **OCPP 1.6** has no standard mechanism. The policy for a list of URLs (each one profile, in
//! the order given): `attempts` tries on each URL, then the next; after the last, back to the
//! first (a full cycle); after a connection that was accepted and then lost, back to the first
//! too; and, if [`NetworkProfiles::with_return_after`] is set, a connection to any URL but the
//! first is left after that time so that the first is tried again.
//!
//! Nothing here reads a clock or sleeps: the back-off between attempts ([`Reconnect`]) stays in
//! force, the two are asked side by side before every attempt.
//!
//! [`Reconnect`]: super::Reconnect

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// `OCPPCommCtrlr.NetworkProfileConnectionAttempts`'s default (the device model's, 3).
pub const DEFAULT_CONNECTION_ATTEMPTS: u32 = 3;

/// How many configuration slots a station offers by default (slots `0..4`).
pub const DEFAULT_SLOT_COUNT: i32 = 4;

/// One way to reach a central system: the version-neutral part of a 2.x
/// `NetworkConnectionProfileType` (or one URL of a 1.6 list), in its configuration slot.
///
/// ```
/// use ocpp_proto::station::NetworkProfile;
///
/// let backup = NetworkProfile::new(1, "wss://backup.example.com/ocpp").with_security_profile(2);
/// assert_eq!(backup.slot, 1);
/// assert!(backup.validate().is_ok());
/// // Profile 2 and 3 are TLS: a ws:// URL does not go with them.
/// assert!(NetworkProfile::new(1, "ws://x/ocpp").with_security_profile(2).validate().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct NetworkProfile {
    /// The configuration slot.
    pub slot: i32,
    /// `ocppCsmsUrl`: the central system's URL without the station's identity (the station
    /// appends `/IDENTITY`).
    pub csms_url: String,
    /// `securityProfile`: 0 (none), 1 (password), 2 (TLS and password), 3 (TLS client
    /// certificate).
    pub security_profile: u8,
    /// `ocppVersion` as the CSMS sent it (e.g. `OCPP20`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ocpp_version: Option<String>,
    /// `messageTimeout` in seconds, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_timeout: Option<u32>,
    /// `ocppInterface` (e.g. `Wired0`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ocpp_interface: Option<String>,
}

impl NetworkProfile {
    /// A profile in `slot` for `csms_url`, security profile 0, nothing else.
    pub fn new(slot: i32, csms_url: impl Into<String>) -> Self {
        NetworkProfile {
            slot,
            csms_url: csms_url.into(),
            security_profile: 0,
            ocpp_version: None,
            message_timeout: None,
            ocpp_interface: None,
        }
    }

    /// With this `securityProfile`.
    #[must_use]
    pub fn with_security_profile(mut self, security_profile: u8) -> Self {
        self.security_profile = security_profile;
        self
    }

    /// With this `ocppVersion` (e.g. `OCPP20`).
    #[must_use]
    pub fn with_ocpp_version(mut self, version: impl Into<String>) -> Self {
        self.ocpp_version = Some(version.into());
        self
    }

    /// With this `messageTimeout` (seconds).
    #[must_use]
    pub fn with_message_timeout(mut self, seconds: u32) -> Self {
        self.message_timeout = Some(seconds);
        self
    }

    /// With this `ocppInterface`.
    #[must_use]
    pub fn with_ocpp_interface(mut self, interface: impl Into<String>) -> Self {
        self.ocpp_interface = Some(interface.into());
        self
    }

    /// Whether the content holds together (B09.FR.02): a `ws://` or `wss://` URL with a host,
    /// security profile 0 to 3, TLS (`wss://`) exactly for profiles 2 and 3.
    ///
    /// # Errors
    /// [`ProfileRejected::InvalidUrl`], [`ProfileRejected::InvalidSecurityProfile`].
    pub fn validate(&self) -> Result<(), ProfileRejected> {
        let (rest, tls) = if let Some(rest) = self.csms_url.strip_prefix("ws://") {
            (rest, false)
        } else if let Some(rest) = self.csms_url.strip_prefix("wss://") {
            (rest, true)
        } else {
            return Err(ProfileRejected::InvalidUrl);
        };
        let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(ProfileRejected::InvalidUrl);
        }
        match self.security_profile {
            0 | 1 if !tls => Ok(()),
            2 | 3 if tls => Ok(()),
            0..=3 => Err(ProfileRejected::InvalidUrl),
            _ => Err(ProfileRejected::InvalidSecurityProfile),
        }
    }
}

/// Why a profile or a priority list was refused: a SetNetworkProfile answered Rejected
/// (B09.FR.02, B09.FR.04), a `NetworkConfigurationPriority` refused (A05.FR.04).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileRejected {
    /// The slot is not one of the station's configuration slots.
    #[error("configuration slot {0} does not exist")]
    SlotOutOfRange(i32),
    /// The URL is not `ws[s]://host...`, or its scheme does not go with the security profile.
    #[error("the CSMS URL is invalid (or does not match the security profile)")]
    InvalidUrl,
    /// The security profile is not 0 to 3.
    #[error("the security profile is invalid")]
    InvalidSecurityProfile,
    /// The security profile is lower than the active one (B09.FR.04, A05.FR.04).
    #[error("security profile {offered} is lower than the active {active}")]
    SecurityDowngrade {
        /// The profile's.
        offered: u8,
        /// The active one.
        active: u8,
    },
    /// A priority list with no slot, or the same slot twice.
    #[error("the priority list is empty or repeats a slot")]
    InvalidPriority,
}

impl ProfileRejected {
    /// The `statusInfo.reasonCode` to answer with (B09.FR.02, B09.FR.04).
    ///
    /// ```
    /// use ocpp_proto::station::ProfileRejected;
    /// assert_eq!(ProfileRejected::InvalidUrl.reason_code(), "InvalidNetworkConf");
    /// let downgrade = ProfileRejected::SecurityDowngrade { offered: 1, active: 2 };
    /// assert_eq!(downgrade.reason_code(), "NoSecurityDowngrade");
    /// ```
    pub fn reason_code(&self) -> &'static str {
        match self {
            ProfileRejected::SecurityDowngrade { .. } => "NoSecurityDowngrade",
            _ => "InvalidNetworkConf",
        }
    }
}

/// What the station tries for one attempt ([`NetworkProfiles::begin_attempt`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The profile to connect with.
    pub profile: NetworkProfile,
    /// The attempt on this profile, from 1 to the attempts per profile.
    pub attempt: u32,
    /// This is B10.FR.07's fallback to the last successful profile.
    pub fallback: bool,
}

/// The station's network connection profiles and where it stands in trying them, in the
/// Sans-IO shape: the driver asks [`begin_attempt`](Self::begin_attempt) which profile the next
/// attempt uses, and tells it [`on_accepted`](Self::on_accepted) (the BootNotification was
/// accepted), [`on_lost`](Self::on_lost) (the attempt or its connection ended),
/// [`on_restart`](Self::on_restart) (a reboot). Serialisable as JSON (without the time of the
/// current connection), for the application or its store to keep across restarts.
///
/// ```
/// use std::time::Instant;
/// use ocpp_proto::station::{NetworkProfile, NetworkProfiles};
///
/// let mut profiles = NetworkProfiles::new([
///     NetworkProfile::new(0, "ws://primary.example.com/ocpp"),
///     NetworkProfile::new(1, "ws://backup.example.com/ocpp"),
/// ])
/// .with_attempts(2);
/// let now = Instant::now();
/// // The primary is down: two attempts on it, then the backup.
/// let slots: Vec<i32> = (0..3)
///     .map(|_| {
///         let slot = profiles.begin_attempt().unwrap().profile.slot;
///         profiles.on_lost(now);
///         slot
///     })
///     .collect();
/// assert_eq!(slots, [0, 0, 1]);
/// // The backup accepts: it is the current central system.
/// profiles.begin_attempt();
/// profiles.on_accepted(now);
/// assert_eq!(profiles.current().unwrap().slot, 1);
/// // When that connection is lost, the primary is tried first again (B10.FR.03).
/// profiles.on_lost(now);
/// assert_eq!(profiles.begin_attempt().unwrap().profile.slot, 0);
/// let json = serde_json::to_string(&profiles).unwrap();
/// let again: NetworkProfiles = serde_json::from_str(&json).unwrap();
/// assert_eq!(again.priority(), profiles.priority());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkProfiles {
    /// The profiles, by slot (ascending).
    profiles: Vec<NetworkProfile>,
    /// `NetworkConfigurationPriority`: slots, first tried first.
    priority: Vec<i32>,
    /// `NetworkProfileConnectionAttempts` (at least 1 is made).
    attempts_per_profile: u32,
    /// Slots are `0..slot_count`.
    slot_count: i32,
    /// Leave a connection to a lower-priority profile after this long (1.6 policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    return_after_secs: Option<u64>,
    /// The security profile of the active (last accepted) connection.
    active_security_profile: u8,
    /// The slot of the last successful connection (B10.FR.07).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_connected: Option<i32>,
    /// The entry of the cycle being tried.
    #[serde(default)]
    position: usize,
    /// Attempts made on that entry.
    #[serde(default)]
    attempts: u32,
    /// The profile of the attempt in progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    trying: Option<i32>,
    /// Whether the attempt in progress was accepted, and when (not persisted).
    #[serde(skip)]
    accepted_at: Option<Instant>,
}

impl NetworkProfiles {
    /// These profiles, tried in the order given (the priority list is their slots in that
    /// order; a later profile in the same slot replaces an earlier one),
    /// [`DEFAULT_CONNECTION_ATTEMPTS`] on each, [`DEFAULT_SLOT_COUNT`] slots (or more if a
    /// profile's slot needs them).
    pub fn new(profiles: impl IntoIterator<Item = NetworkProfile>) -> Self {
        let mut this = NetworkProfiles {
            profiles: Vec::new(),
            priority: Vec::new(),
            attempts_per_profile: DEFAULT_CONNECTION_ATTEMPTS,
            slot_count: DEFAULT_SLOT_COUNT,
            return_after_secs: None,
            active_security_profile: 0,
            last_connected: None,
            position: 0,
            attempts: 0,
            trying: None,
            accepted_at: None,
        };
        for profile in profiles {
            this.slot_count = this.slot_count.max(profile.slot.saturating_add(1));
            if !this.priority.contains(&profile.slot) {
                this.priority.push(profile.slot);
            }
            this.store(profile);
        }
        this
    }

    /// A 1.6 list of central system URLs (without the identity), in priority order, in slots
    /// 0, 1, 2...; the security profile follows the scheme (`ws://` 0, `wss://` 2).
    ///
    /// ```
    /// use ocpp_proto::station::NetworkProfiles;
    /// let profiles = NetworkProfiles::from_urls(["ws://a/ocpp", "wss://b/ocpp"]);
    /// assert_eq!(profiles.priority(), [0, 1]);
    /// assert_eq!(profiles.profile(1).unwrap().security_profile, 2);
    /// ```
    pub fn from_urls<U: Into<String>>(urls: impl IntoIterator<Item = U>) -> Self {
        Self::new(urls.into_iter().zip(0..).map(|(url, slot)| {
            let url: String = url.into();
            let security = if url.starts_with("wss://") { 2 } else { 0 };
            NetworkProfile::new(slot, url).with_security_profile(security)
        }))
    }

    /// With `NetworkProfileConnectionAttempts` (0 is taken as 1: an entry is always tried).
    #[must_use]
    pub fn with_attempts(mut self, attempts: u32) -> Self {
        self.attempts_per_profile = attempts;
        self
    }

    /// With `count` configuration slots (`0..count`), at least those of the profiles held.
    #[must_use]
    pub fn with_slot_count(mut self, count: i32) -> Self {
        let needed = self.profiles.iter().map(|p| p.slot + 1).max().unwrap_or(0);
        self.slot_count = count.max(needed);
        self
    }

    /// With the security profile active now (e.g. of the configuration the station was
    /// installed with): no profile below it is accepted (B09.FR.04). Each accepted connection
    /// sets it to its profile's.
    #[must_use]
    pub fn with_active_security_profile(mut self, security_profile: u8) -> Self {
        self.active_security_profile = security_profile;
        self
    }

    /// Leave a connection to any profile but the first of the priority list after `after`,
    /// to try the first ones again (the 1.6 policy; not a 2.x rule: B10 keeps a working
    /// connection). [`poll_timeout`](Self::poll_timeout) says when.
    #[must_use]
    pub fn with_return_after(mut self, after: Duration) -> Self {
        self.return_after_secs = Some(after.as_secs().max(1));
        self
    }

    // Getters.

    /// `NetworkConfigurationPriority`.
    pub fn priority(&self) -> &[i32] {
        &self.priority
    }

    /// The profile in `slot`.
    pub fn profile(&self, slot: i32) -> Option<&NetworkProfile> {
        self.profiles.iter().find(|p| p.slot == slot)
    }

    /// Every profile held, by slot.
    pub fn profiles(&self) -> &[NetworkProfile] {
        &self.profiles
    }

    /// `NetworkProfileConnectionAttempts` (at least 1).
    pub fn attempts_per_profile(&self) -> u32 {
        self.attempts_per_profile.max(1)
    }

    /// The number of configuration slots.
    pub fn slot_count(&self) -> i32 {
        self.slot_count
    }

    /// The security profile of the active connection (or the one configured).
    pub fn active_security_profile(&self) -> u8 {
        self.active_security_profile
    }

    /// The slot of the last successful connection.
    pub fn last_connected(&self) -> Option<i32> {
        self.last_connected
    }

    /// The profile of the attempt in progress, or of the current connection.
    pub fn current(&self) -> Option<&NetworkProfile> {
        self.trying.and_then(|slot| self.profile(slot))
    }

    /// The attempts made on the current entry of the cycle (from 1; 0 before any).
    pub fn attempt(&self) -> u32 {
        self.attempts
    }

    /// Whether the attempt in progress was accepted.
    pub fn is_connected(&self) -> bool {
        self.accepted_at.is_some()
    }

    // Mutators.

    /// SetNetworkProfile: validates `profile` and stores it in its slot (B09.FR.01), replacing
    /// what the slot held; it is used from the next attempt that reaches its slot (the current
    /// connection stays).
    ///
    /// ```
    /// use ocpp_proto::station::{NetworkProfile, NetworkProfiles, ProfileRejected};
    ///
    /// let mut profiles = NetworkProfiles::new([NetworkProfile::new(0, "ws://a/ocpp").with_security_profile(1)])
    ///     .with_active_security_profile(1);
    /// assert!(profiles.set_profile(NetworkProfile::new(1, "ws://b/ocpp").with_security_profile(1)).is_ok());
    /// assert_eq!(profiles.set_profile(NetworkProfile::new(9, "ws://b/ocpp")), Err(ProfileRejected::SlotOutOfRange(9)));
    /// assert!(matches!(
    ///     profiles.set_profile(NetworkProfile::new(2, "ws://c/ocpp")),
    ///     Err(ProfileRejected::SecurityDowngrade { offered: 0, active: 1 })
    /// ));
    /// ```
    ///
    /// # Errors
    /// [`ProfileRejected`]: the slot is out of range, the content is invalid (B09.FR.02), the
    /// security profile lower than the active one (B09.FR.04). Nothing changed.
    pub fn set_profile(&mut self, profile: NetworkProfile) -> Result<(), ProfileRejected> {
        if !(0..self.slot_count).contains(&profile.slot) {
            return Err(ProfileRejected::SlotOutOfRange(profile.slot));
        }
        profile.validate()?;
        if profile.security_profile < self.active_security_profile {
            return Err(ProfileRejected::SecurityDowngrade {
                offered: profile.security_profile,
                active: self.active_security_profile,
            });
        }
        self.store(profile);
        Ok(())
    }

    /// A new `NetworkConfigurationPriority`: from the next reboot or lost connection on, the
    /// cycle follows it (B10.FR.01, B10.FR.04). A slot without a profile yet is skipped until
    /// one is stored in it.
    ///
    /// # Errors
    /// [`ProfileRejected::InvalidPriority`] (empty, a slot twice),
    /// [`ProfileRejected::SlotOutOfRange`], [`ProfileRejected::SecurityDowngrade`] when a slot
    /// holds a profile below the active security profile (A05.FR.04). Nothing changed.
    pub fn set_priority(&mut self, priority: &[i32]) -> Result<(), ProfileRejected> {
        if priority.is_empty() {
            return Err(ProfileRejected::InvalidPriority);
        }
        for (i, slot) in priority.iter().enumerate() {
            if priority[..i].contains(slot) {
                return Err(ProfileRejected::InvalidPriority);
            }
            if !(0..self.slot_count).contains(slot) {
                return Err(ProfileRejected::SlotOutOfRange(*slot));
            }
            if let Some(profile) = self.profile(*slot) {
                if profile.security_profile < self.active_security_profile {
                    return Err(ProfileRejected::SecurityDowngrade {
                        offered: profile.security_profile,
                        active: self.active_security_profile,
                    });
                }
            }
        }
        self.priority = priority.to_vec();
        Ok(())
    }

    /// Sets `NetworkProfileConnectionAttempts` (0 is taken as 1); the attempts made on the
    /// current entry are kept.
    pub fn set_attempts(&mut self, attempts: u32) {
        self.attempts_per_profile = attempts;
    }

    /// An attempt begins: the profile to use (`None`: no profile at all). Moves to the next
    /// entry of the cycle once the current one had its attempts, wrapping around after the
    /// last (and, after a whole cycle without success, B10.FR.07's fallback).
    pub fn begin_attempt(&mut self) -> Option<Attempt> {
        self.accepted_at = None;
        let cycle = self.cycle();
        if cycle.is_empty() {
            self.trying = None;
            return None;
        }
        if self.position >= cycle.len() {
            self.position = 0;
            self.attempts = 0;
        }
        if self.attempts >= self.attempts_per_profile() {
            self.position = (self.position + 1) % cycle.len();
            self.attempts = 0;
        }
        self.attempts += 1;
        let (slot, fallback) = cycle[self.position];
        self.trying = Some(slot);
        let profile = self.profile(slot)?.clone();
        Some(Attempt {
            profile,
            attempt: self.attempts,
            fallback,
        })
    }

    /// The BootNotification of the current attempt was accepted at `now`: it is the active
    /// connection (its security profile is the active one, its slot the last successful).
    pub fn on_accepted(&mut self, now: Instant) {
        let Some(slot) = self.trying else { return };
        self.accepted_at.get_or_insert(now);
        self.last_connected = Some(slot);
        if let Some(security) = self.profile(slot).map(|p| p.security_profile) {
            self.active_security_profile = security;
        }
    }

    /// The attempt failed, or its connection ended, at `now`. After an accepted connection the
    /// next attempt starts from the first entry again (B10.FR.03: attempts per entry after a
    /// lost connection); a failed attempt counts on its entry.
    pub fn on_lost(&mut self, _now: Instant) {
        if self.accepted_at.take().is_some() {
            self.position = 0;
            self.attempts = 0;
        }
    }

    /// The station reboots (or leaves a lower-priority connection): the next attempt is the
    /// first entry of the priority list (B10.FR.04).
    pub fn on_restart(&mut self) {
        self.accepted_at = None;
        self.position = 0;
        self.attempts = 0;
    }

    /// When the current connection should be left to try the higher-priority profiles again
    /// ([`with_return_after`](Self::with_return_after)): `None` without that setting, while not
    /// connected, or while connected to the first profile of the cycle.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let after = Duration::from_secs(self.return_after_secs?);
        let at = self.accepted_at?;
        let first = self.cycle().first().map(|(slot, _)| *slot);
        if first == self.trying {
            return None;
        }
        Some(at.checked_add(after).unwrap_or(at))
    }

    /// Whether, at `now`, the current connection is to be left for the higher-priority
    /// profiles ([`poll_timeout`](Self::poll_timeout) passed); the driver closes it and calls
    /// [`on_restart`](Self::on_restart).
    pub fn handle_timeout(&self, now: Instant) -> bool {
        self.poll_timeout().is_some_and(|at| at <= now)
    }

    /// The entries of one cycle: the priority list's slots that hold a profile, then B10.FR.07's
    /// fallback to the last successful slot when the list no longer has it.
    fn cycle(&self) -> Vec<(i32, bool)> {
        let mut cycle: Vec<(i32, bool)> = self
            .priority
            .iter()
            .filter(|slot| self.profile(**slot).is_some())
            .map(|slot| (*slot, false))
            .collect();
        if let Some(last) = self.last_connected {
            if !self.priority.contains(&last) && self.profile(last).is_some() {
                cycle.push((last, true));
            }
        }
        cycle
    }

    /// Stores `profile` in its slot.
    fn store(&mut self, profile: NetworkProfile) {
        match self
            .profiles
            .binary_search_by_key(&profile.slot, |p| p.slot)
        {
            Ok(i) => self.profiles[i] = profile,
            Err(i) => self.profiles.insert(i, profile),
        }
    }
}

#[cfg(test)]
mod tests;
