//! The station feeds its authorization cache by itself ([`StationBuilder::local_auth`]): every
//! answer of the central system that says what a token may do goes into the
//! [`LocalAuthStore`]'s cache, as the version's rules say (1.6 §3.5.1: Authorize,
//! StartTransaction and StopTransaction `idTagInfo`, cache on with `AuthorizationCacheEnabled`;
//! 2.0.1 and 2.1 C10: Authorize and TransactionEvent `idTokenInfo`, cache on with
//! `AuthCacheCtrlr.Enabled` and `Available`). Whether an answer is kept (cache on, token not
//! on the local list, lifetime, size) is [`LocalAuthStore::learn`]'s rule.
//!
//! It watches the station's messages as the message hook sees them: a CALL that carries a
//! token is remembered by its message id until its outcome; a CALLRESULT with the token's
//! info is learnt in a task of its own (the store writes its file).
//!
//! [`StationBuilder::local_auth`]: super::StationBuilder::local_auth

use std::collections::VecDeque;
use std::sync::Mutex;

use ocpp_proto::{v1_6, v2_0_1, v2_1, OcppVersion};
use serde_json::Value;

use super::LocalAuthStore;
use crate::hook::{Message, MessageEvent};

/// How many CALLs with a token may wait for their outcome (older ones are forgotten: their
/// answer is then not learnt).
const MAX_PENDING: usize = 64;

/// A CALL with a token, waiting for its answer.
struct Pending {
    id: String,
    version: OcppVersion,
    /// 1.6 the `idTag` (a string), 2.x the `idToken` object.
    token: Value,
}

/// Learns the answers on tokens into a [`LocalAuthStore`].
pub(crate) struct CacheFeeder {
    store: LocalAuthStore,
    pending: Mutex<VecDeque<Pending>>,
}

impl CacheFeeder {
    pub(crate) fn new(store: LocalAuthStore) -> Self {
        CacheFeeder {
            store,
            pending: Mutex::new(VecDeque::new()),
        }
    }

    /// One message of the station (the hook's view).
    pub(crate) fn on_message(&self, event: &MessageEvent<'_>) {
        match event.message {
            Message::CallOut(request) => {
                let Some(token) = token_of(request.action(), request) else {
                    return;
                };
                let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
                if pending.len() == MAX_PENDING {
                    pending.pop_front();
                }
                pending.push_back(Pending {
                    id: event.id.as_str().to_owned(),
                    version: request.version(),
                    token,
                });
            }
            Message::OutcomeIn(outcome) => {
                let waiting = {
                    let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
                    let at = pending.iter().position(|p| p.id == event.id.as_str());
                    at.and_then(|at| pending.remove(at))
                };
                let (Some(waiting), Ok(response)) = (waiting, outcome) else {
                    return;
                };
                let Ok(answer) = serde_json::to_value(response) else {
                    return;
                };
                let store = self.store.clone();
                // Learning writes the cache to disk: on a blocking thread.
                tokio::task::spawn_blocking(move || {
                    if let Err(error) = learn(&store, waiting, &answer) {
                        tracing::warn!(%error, "authorization not cached");
                    }
                });
            }
            _ => {}
        }
    }
}

/// The token a CALL presents, if its answer says what the token may do.
fn token_of(action: &str, request: &ocpp_messages::Request) -> Option<Value> {
    let v16 = request.version() == OcppVersion::V1_6;
    let wanted = match (v16, action) {
        (true, "Authorize" | "StartTransaction" | "StopTransaction") => "idTag",
        (false, "Authorize" | "TransactionEvent") => "idToken",
        _ => return None,
    };
    let payload = serde_json::to_value(request).ok()?;
    payload.get(wanted).cloned()
}

/// Learns the answer's info on the token (none in the answer: nothing to learn).
fn learn(
    store: &LocalAuthStore,
    waiting: Pending,
    answer: &Value,
) -> Result<bool, super::LocalAuthError> {
    let field = match waiting.version {
        OcppVersion::V1_6 => "idTagInfo",
        _ => "idTokenInfo",
    };
    let Some(info) = answer.get(field).cloned() else {
        return Ok(false);
    };
    // The answer was decoded strictly already: these conversions only change the type.
    match waiting.version {
        OcppVersion::V1_6 => {
            let (Some(id_tag), Ok(info)) = (
                waiting.token.as_str(),
                serde_json::from_value::<v1_6::IdTagInfo>(info),
            ) else {
                return Ok(false);
            };
            store.learn_v1_6(id_tag, &info)
        }
        OcppVersion::V2_0_1 => {
            let (Ok(token), Ok(info)) = (
                serde_json::from_value::<v2_0_1::IdToken>(waiting.token),
                serde_json::from_value::<v2_0_1::IdTokenInfo>(info),
            ) else {
                return Ok(false);
            };
            store.learn_v2_0_1(&token, &info)
        }
        OcppVersion::V2_1 => {
            let (Ok(token), Ok(info)) = (
                serde_json::from_value::<v2_1::IdToken>(waiting.token),
                serde_json::from_value::<v2_1::IdTokenInfo>(info),
            ) else {
                return Ok(false);
            };
            store.learn_v2_1(&token, &info)
        }
    }
}
