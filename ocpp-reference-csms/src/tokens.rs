//! Authorization (OCPP 1.6 §4.1 and §5.x idTagInfo, OCPP 2.0.1 C01-C16): which idTags /
//! idTokens may charge, answered from a token store.
//!
//! A store is read from a file of lines `idToken status [groupIdToken|-] [expiry]` (`#`
//! starts a comment; the expiry is an RFC 3339 date-time) and edited through the admin API
//! (`GET/PUT/DELETE /tokens/ID`). Without a store (the default) every token is accepted, as
//! this CSMS always did, so load tests need no configuration.
//!
//! ```
//! use ocpp_model::AuthorizationStatus;
//! use ocpp_reference_csms::TokenStore;
//! let store = TokenStore::parse("# comment\nTAG1 Accepted G1\nTAG2 Blocked\n").unwrap();
//! let now = ocpp_messages::DateTime::from_unix_timestamp(0).unwrap();
//! assert_eq!(store.authorize("TAG1", &now).status, AuthorizationStatus::Accepted);
//! assert_eq!(store.authorize("TAG2", &now).status, AuthorizationStatus::Blocked);
//! assert_eq!(store.authorize("NOPE", &now).status, AuthorizationStatus::Unknown);
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use ocpp_messages::DateTime;
use ocpp_model::{Authorization, AuthorizationStatus, IdToken, IdTokenType};

/// One token of the store.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TokenEntry {
    /// Its status (an `Accepted` token past its expiry answers `Expired`).
    pub status: AuthorizationStatus,
    /// 1.6 `parentIdTag` / 2.x `groupIdToken`.
    pub group: Option<String>,
    /// 1.6 `expiryDate` / 2.x `cacheExpiryDateTime`.
    pub expiry: Option<DateTime>,
}

impl TokenEntry {
    /// A token with this status, no group, no expiry.
    pub fn new(status: AuthorizationStatus) -> Self {
        TokenEntry {
            status,
            group: None,
            expiry: None,
        }
    }

    /// With a group (parentIdTag / groupIdToken).
    pub fn with_group(mut self, group: impl Into<String>) -> Self {
        self.group = Some(group.into());
        self
    }

    /// With an expiry.
    pub fn with_expiry(mut self, expiry: DateTime) -> Self {
        self.expiry = Some(expiry);
        self
    }
}

/// Why a token file could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum TokenStoreError {
    /// The file could not be read.
    Io(std::io::Error),
    /// A line is not `idToken status [groupIdToken|-] [expiry]` (1-based line number, why).
    Line(usize, String),
}

impl std::fmt::Display for TokenStoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenStoreError::Io(e) => write!(f, "cannot read the token file: {e}"),
            TokenStoreError::Line(line, why) => write!(f, "token file line {line}: {why}"),
        }
    }
}

impl std::error::Error for TokenStoreError {}

/// Tokens by idToken, plus an optional master pass group.
///
/// The master pass (OCPP 2.0.1 C16, `MasterPassGroupId`): a token that is the master pass
/// group id, or whose group is, is answered Accepted with that group as its `groupIdToken`
/// (1.6: `parentIdTag`), which is how a station recognises it and lets it stop any
/// transaction (C16.FR.01-02). Tokens are compared exactly (OCPP 2.0.1 C01: case-insensitive
/// comparison is the station's business for some types; the CSMS keeps what it was given).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TokenStore {
    tokens: BTreeMap<String, TokenEntry>,
    master_pass: Option<String>,
}

impl TokenStore {
    /// Reads a token file (see [`TokenStore::parse`]).
    pub fn load(path: &Path) -> Result<Self, TokenStoreError> {
        let text = std::fs::read_to_string(path).map_err(TokenStoreError::Io)?;
        Self::parse(&text)
    }

    /// Parses lines `idToken status [groupIdToken|-] [expiry]`; blank lines and `#` comments
    /// are skipped. The idToken is at most 36 characters (the 2.x limit; 1.6 allows 20).
    pub fn parse(text: &str) -> Result<Self, TokenStoreError> {
        let mut store = TokenStore::default();
        for (index, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = |why: String| TokenStoreError::Line(index + 1, why);
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (token, status, group, expiry) = match fields.as_slice() {
                [token, status] => (*token, *status, None, None),
                [token, status, group] => (*token, *status, Some(*group), None),
                [token, status, group, expiry] => (*token, *status, Some(*group), Some(*expiry)),
                _ => {
                    return Err(bad(
                        "expected `idToken status [groupIdToken|-] [expiry]`".into()
                    ))
                }
            };
            let status = AuthorizationStatus::from_wire(status)
                .ok_or_else(|| bad(format!("unknown status `{status}`")))?;
            let mut entry = TokenEntry::new(status);
            if let Some(group) = group.filter(|g| *g != "-") {
                entry = entry.with_group(group);
            }
            if let Some(expiry) = expiry {
                let expiry = DateTime::parse(expiry)
                    .map_err(|_| bad(format!("`{expiry}` is not an RFC 3339 date-time")))?;
                entry = entry.with_expiry(expiry);
            }
            store.insert(token, entry).map_err(bad)?;
        }
        Ok(store)
    }

    /// With this master pass group id.
    pub fn with_master_pass(mut self, master_pass: Option<String>) -> Self {
        self.master_pass = master_pass;
        self
    }

    /// The master pass group id, if any.
    pub fn master_pass(&self) -> Option<&str> {
        self.master_pass.as_deref()
    }

    /// Adds or replaces a token; `Err` for an empty token or one over 36 characters.
    pub fn insert(&mut self, token: &str, entry: TokenEntry) -> Result<(), String> {
        if token.is_empty() || token.chars().count() > 36 {
            return Err(format!("idToken `{token}` must have 1 to 36 characters"));
        }
        self.tokens.insert(token.to_owned(), entry);
        Ok(())
    }

    /// Removes a token; whether it was there.
    pub fn remove(&mut self, token: &str) -> bool {
        self.tokens.remove(token).is_some()
    }

    /// One token.
    pub fn get(&self, token: &str) -> Option<&TokenEntry> {
        self.tokens.get(token)
    }

    /// Every token, sorted.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &TokenEntry)> {
        self.tokens.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// How many tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The answer for `token` at `now`: the master pass first, then the store (an Accepted
    /// token past its expiry is Expired), else Unknown (1.6 spells it Invalid:
    /// [`AuthorizationStatus::for_1_6`]). A group is a `Central` token.
    pub fn authorize(&self, token: &str, now: &DateTime) -> Authorization {
        let group = |group: &str| IdToken::new(group, IdTokenType::Central);
        let entry = self.tokens.get(token);
        if let Some(master) = &self.master_pass {
            let in_group = entry.and_then(|e| e.group.as_deref()) == Some(master.as_str());
            let usable = entry.is_none_or(|e| e.status == AuthorizationStatus::Accepted);
            if (token == master || in_group) && usable {
                let mut answer = Authorization::new(AuthorizationStatus::Accepted);
                answer.group = Some(group(master));
                return answer;
            }
        }
        let Some(entry) = entry else {
            return Authorization::new(AuthorizationStatus::Unknown);
        };
        let expired = entry
            .expiry
            .as_ref()
            .is_some_and(|e| e.unix_timestamp() <= now.unix_timestamp());
        let mut answer = Authorization::new(
            if expired && entry.status == AuthorizationStatus::Accepted {
                AuthorizationStatus::Expired
            } else {
                entry.status
            },
        );
        answer.group = entry.group.as_deref().map(group);
        answer.expiry = entry.expiry.clone();
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime {
        DateTime::from_unix_timestamp(secs).unwrap()
    }

    #[test]
    fn parses_and_authorizes() {
        let store = TokenStore::parse(
            "A Accepted\nB Blocked G\nC Accepted - 2000-01-01T00:00:00Z\n\
             D Accepted MASTER\n E  NoCredit  # trailing comment\n",
        )
        .unwrap()
        .with_master_pass(Some("MASTER".into()));
        assert_eq!(store.len(), 5);
        let now = at(1_700_000_000);
        use AuthorizationStatus::{Accepted, Blocked, Expired, Invalid, NoCredit, Unknown};
        let status = |token: &str, at: &DateTime| store.authorize(token, at).status;
        assert_eq!(store.authorize("A", &now), Authorization::new(Accepted));
        let blocked = store.authorize("B", &now);
        assert_eq!(blocked.status, Blocked);
        assert_eq!(blocked.group.map(|g| g.value).as_deref(), Some("G"));
        assert_eq!(status("C", &now), Expired);
        assert_eq!(status("C", &at(0)), Accepted);
        let master = store.authorize("D", &now);
        assert_eq!(master.group.map(|g| g.value).as_deref(), Some("MASTER"));
        assert_eq!(status("MASTER", &now), Accepted);
        assert_eq!(status("E", &now), NoCredit);
        assert_eq!(NoCredit.for_1_6(), Invalid);
        assert_eq!(status("Z", &now), Unknown);
        assert_eq!(Unknown.for_1_6(), Invalid);
    }

    #[test]
    fn refuses_bad_lines() {
        for bad in [
            "A",
            "A Maybe",
            "A Accepted G notadate",
            "A Accepted G 2020 x",
        ] {
            assert!(TokenStore::parse(bad).is_err(), "{bad}");
        }
        let long = "x".repeat(37);
        assert!(TokenStore::parse(&format!("{long} Accepted")).is_err());
    }
}
