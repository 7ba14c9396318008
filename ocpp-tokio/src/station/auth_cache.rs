//! The station feeds its authorization cache by itself ([`StationBuilder::local_auth`]): every
//! answer of the central system that says what a token may do goes into the
//! [`LocalAuthStore`]'s cache, as the version's rules say (1.6 §3.5.1: Authorize,
//! StartTransaction and StopTransaction `idTagInfo`, cache on with `AuthorizationCacheEnabled`;
//! 2.0.1 and 2.1 C10: Authorize and TransactionEvent `idTokenInfo`, cache on with
//! `AuthCacheCtrlr.Enabled` and `Available`). Whether an answer is kept (cache on, token not
//! on the local list, lifetime, size) is [`LocalAuthStore::learn`]'s rule.
//!
//! It watches the station's messages as the message hook sees them and hands them to
//! `ocpp-station-store`'s Sans-IO [`CacheFeed`] (which CALLs carry a token, which answers
//! teach the cache, per version); what an answer teaches is written on a blocking thread
//! (the store writes its file).
//!
//! [`StationBuilder::local_auth`]: super::StationBuilder::local_auth

use std::sync::Mutex;

use ocpp_station_store::auth_cache::CacheFeed;

use super::LocalAuthStore;
use crate::hook::{MessageEvent, Traffic};

/// The station's cache feeder: the message hook's part of [`StationBuilder::local_auth`].
///
/// [`StationBuilder::local_auth`]: super::StationBuilder::local_auth
pub(crate) struct CacheFeeder {
    store: LocalAuthStore,
    feed: Mutex<CacheFeed>,
}

impl CacheFeeder {
    pub(crate) fn new(store: LocalAuthStore) -> Self {
        CacheFeeder {
            store,
            feed: Mutex::new(CacheFeed::default()),
        }
    }

    /// One message of the station, as the hook sees it.
    pub(crate) fn on_message(&self, event: &MessageEvent<'_>) {
        let id = event.id.as_str();
        let mut feed = self.feed.lock().unwrap_or_else(|e| e.into_inner());
        let learnt = match event.message {
            Traffic::CallOut(request) => return feed.on_call_out(id, request),
            Traffic::OutcomeIn(Ok(response)) => feed.on_outcome(id, response),
            Traffic::OutcomeIn(Err(_)) => return feed.forget(id),
            _ => return,
        };
        drop(feed);
        let Some(learnt) = learnt else { return };
        let store = self.store.clone();
        // Learning writes the cache to disk: on a blocking thread.
        tokio::task::spawn_blocking(move || {
            if let Err(error) = learnt.apply(&store) {
                tracing::warn!(%error, "authorization not cached");
            }
        });
    }
}
