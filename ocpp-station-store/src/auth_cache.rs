//! Feeding the authorization cache from the central system's answers, Sans-IO: which of the
//! station's CALLs carry a token, and which answer says what that token may do, per version
//! (1.6 §3.5.1: Authorize, StartTransaction and StopTransaction `idTagInfo`; 2.0.1 and 2.1
//! C10: Authorize and TransactionEvent `idTokenInfo`). Whether an answer is kept (cache on,
//! token not on the local list, lifetime, size) is [`LocalAuthStore::learn_v1_6`]'s rule and
//! its siblings'.
//!
//! A driver shows [`CacheFeed`] each CALL it sends ([`CacheFeed::on_call_out`]) and each
//! outcome ([`CacheFeed::on_outcome`]); an outcome that teaches something comes back as a
//! [`Learnt`], which the driver applies to the store ([`Learnt::apply`]: it writes the cache
//! file, so from an async runtime on a blocking thread).

use std::collections::VecDeque;

use ocpp_messages::{v1_6, v2_0_1, v2_1, OcppVersion, Request, Response};
use serde_json::Value;

use crate::{LocalAuthError, LocalAuthStore};

/// CALLs remembered until their outcome; a CALL never answered is forgotten past this many.
const MAX_PENDING: usize = 64;

/// A CALL that carries a token, until its outcome.
#[derive(Debug)]
struct Pending {
    id: String,
    version: OcppVersion,
    token: Value,
}

/// The CALLs of the station that carry a token and wait for their outcome (see the
/// [module documentation](crate::auth_cache)).
///
/// ```
/// use ocpp_messages::{DecodeOptions, OcppVersion, Request, Response};
/// use ocpp_model::local_auth::Settings;
/// use ocpp_station_store::auth_cache::CacheFeed;
/// use ocpp_station_store::LocalAuthStore;
///
/// let v16 = OcppVersion::V1_6;
/// let mut feed = CacheFeed::default();
/// let authorize = Request::decode(v16, "Authorize", r#"{"idTag":"TAG1"}"#, &DecodeOptions::strict())?;
/// feed.on_call_out("m1", &authorize);
/// let accepted = r#"{"idTagInfo":{"status":"Accepted"}}"#;
/// let answer = Response::decode(v16, "Authorize", accepted, &DecodeOptions::strict())?;
/// let learnt = feed.on_outcome("m1", &answer).expect("Authorize teaches the cache");
/// let store = LocalAuthStore::in_memory(Settings::default());
/// learnt.apply(&store)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct CacheFeed {
    pending: VecDeque<Pending>,
}

impl CacheFeed {
    /// The station sent `request` as message `id`: remembered if it carries a token.
    pub fn on_call_out(&mut self, id: &str, request: &Request) {
        let Some(token) = token_of(request) else {
            return;
        };
        if self.pending.len() == MAX_PENDING {
            self.pending.pop_front();
        }
        self.pending.push_back(Pending {
            id: id.to_owned(),
            version: request.version(),
            token,
        });
    }

    /// The answer to message `id`: what it teaches the cache, if anything. Call it for a
    /// failed outcome too (with nothing to pass: [`CacheFeed::forget`]).
    pub fn on_outcome(&mut self, id: &str, response: &Response) -> Option<Learnt> {
        let waiting = self.take(id)?;
        let answer = serde_json::to_value(response).ok()?;
        let field = match waiting.version {
            OcppVersion::V1_6 => "idTagInfo",
            _ => "idTokenInfo",
        };
        let info = answer.get(field)?.clone();
        // The answer was decoded strictly already: these conversions only change the type.
        match waiting.version {
            OcppVersion::V1_6 => Some(Learnt::V1_6 {
                id_tag: waiting.token.as_str()?.to_owned(),
                info: serde_json::from_value(info).ok()?,
            }),
            OcppVersion::V2_0_1 => Some(Learnt::V2_0_1 {
                token: serde_json::from_value(waiting.token).ok()?,
                info: serde_json::from_value(info).ok()?,
            }),
            OcppVersion::V2_1 => Some(Learnt::V2_1 {
                token: serde_json::from_value(waiting.token).ok()?,
                info: serde_json::from_value(info).ok()?,
            }),
        }
    }

    /// Message `id` ended without an answer: nothing to learn.
    pub fn forget(&mut self, id: &str) {
        let _ = self.take(id);
    }

    fn take(&mut self, id: &str) -> Option<Pending> {
        let at = self.pending.iter().position(|p| p.id == id)?;
        self.pending.remove(at)
    }
}

/// What an answer says a token may do, to put in the cache.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Learnt {
    /// OCPP 1.6.
    V1_6 {
        /// The token.
        id_tag: String,
        /// What the central system said of it.
        info: v1_6::IdTagInfo,
    },
    /// OCPP 2.0.1.
    V2_0_1 {
        /// The token.
        token: v2_0_1::IdToken,
        /// What the central system said of it.
        info: v2_0_1::IdTokenInfo,
    },
    /// OCPP 2.1.
    V2_1 {
        /// The token.
        token: v2_1::IdToken,
        /// What the central system said of it.
        info: v2_1::IdTokenInfo,
    },
}

impl Learnt {
    /// Puts it in `store`'s cache, by the cache's rules; whether it was kept. Writes the
    /// cache file.
    ///
    /// # Errors
    /// The store's, when the file could not be written.
    pub fn apply(&self, store: &LocalAuthStore) -> Result<bool, LocalAuthError> {
        match self {
            Learnt::V1_6 { id_tag, info } => store.learn_v1_6(id_tag, info),
            Learnt::V2_0_1 { token, info } => store.learn_v2_0_1(token, info),
            Learnt::V2_1 { token, info } => store.learn_v2_1(token, info),
        }
    }
}

/// The token a CALL carries, as JSON, if it is one the cache learns from.
fn token_of(request: &Request) -> Option<Value> {
    let v16 = request.version() == OcppVersion::V1_6;
    let wanted = match (v16, request.action()) {
        (true, "Authorize" | "StartTransaction" | "StopTransaction") => "idTag",
        (false, "Authorize" | "TransactionEvent") => "idToken",
        _ => return None,
    };
    let payload = serde_json::to_value(request).ok()?;
    payload.get(wanted).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocpp_messages::DecodeOptions;

    fn call(version: OcppVersion, action: &str, json: &str) -> Request {
        Request::decode(version, action, json, &DecodeOptions::strict()).unwrap()
    }

    fn answer(version: OcppVersion, action: &str, json: &str) -> Response {
        Response::decode(version, action, json, &DecodeOptions::strict()).unwrap()
    }

    #[test]
    fn only_calls_with_a_token_are_remembered_until_their_outcome() {
        let v16 = OcppVersion::V1_6;
        let mut feed = CacheFeed::default();
        feed.on_call_out("h", &call(v16, "Heartbeat", "{}"));
        assert!(feed.pending.is_empty());
        feed.on_call_out("a", &call(v16, "Authorize", r#"{"idTag":"T"}"#));
        let accepted = answer(v16, "Authorize", r#"{"idTagInfo":{"status":"Accepted"}}"#);
        assert!(feed.on_outcome("other", &accepted).is_none());
        let learnt = feed.on_outcome("a", &accepted);
        assert!(matches!(learnt, Some(Learnt::V1_6 { ref id_tag, .. }) if id_tag == "T"));
        assert!(feed.on_outcome("a", &accepted).is_none(), "once");
        // An outcome without an answer: forgotten, nothing learnt.
        feed.on_call_out("b", &call(v16, "Authorize", r#"{"idTag":"U"}"#));
        feed.forget("b");
        assert!(feed.pending.is_empty());
    }

    #[test]
    fn a_transaction_event_answer_teaches_the_2_0_1_cache() {
        let v2 = OcppVersion::V2_0_1;
        let mut feed = CacheFeed::default();
        let event = r#"{"eventType":"Started","timestamp":"2026-12-05T10:00:00Z",
            "triggerReason":"Authorized","seqNo":0,"transactionInfo":{"transactionId":"t1"},
            "idToken":{"idToken":"TAG","type":"ISO14443"}}"#;
        feed.on_call_out("e", &call(v2, "TransactionEvent", event));
        let info = r#"{"idTokenInfo":{"status":"Blocked"}}"#;
        let learnt = feed.on_outcome("e", &answer(v2, "TransactionEvent", info));
        assert!(
            matches!(learnt, Some(Learnt::V2_0_1 { ref token, .. }) if token.id_token == "TAG"),
            "{learnt:?}"
        );
        // An answer without idTokenInfo teaches nothing.
        feed.on_call_out("f", &call(v2, "TransactionEvent", event));
        assert!(feed
            .on_outcome("f", &answer(v2, "TransactionEvent", "{}"))
            .is_none());
    }

    #[test]
    fn calls_never_answered_are_forgotten_past_the_bound() {
        let v16 = OcppVersion::V1_6;
        let mut feed = CacheFeed::default();
        for i in 0..MAX_PENDING + 10 {
            feed.on_call_out(
                &format!("m{i}"),
                &call(v16, "Authorize", r#"{"idTag":"T"}"#),
            );
        }
        assert_eq!(feed.pending.len(), MAX_PENDING);
        assert_eq!(feed.pending.front().map(|p| p.id.as_str()), Some("m10"));
    }
}
