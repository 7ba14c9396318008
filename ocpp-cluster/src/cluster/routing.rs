//! Commands to a charge point: run here when this node holds it, routed through Redis to the
//! holder's inbox otherwise, and the replies lost when the Redis master moves.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use super::{lock, millis, unix_ms, ClusterShared};
use crate::{wire, CallFailure, ClusterError, JsonCallOutcome};

/// A remote call waiting for its reply.
pub(super) struct PendingReply {
    /// The master the link used when the command was routed ([`RedisLink::generation`]): once
    /// the link moves from it, the reply may be lost in the switch.
    generation: Option<u64>,
    pub(super) reply: oneshot::Sender<JsonCallOutcome>,
}

/// Why a command was not routed ([`ClusterShared::route`]): the error, and whether the script
/// that publishes the command may have run all the same (it got no answer in time), so that
/// the holder may run it.
///
/// An error other than a timeout counts as not sent, a connection that dropped included: with
/// Redis down that is what every call meets until the inbox notices (then step 2 answers
/// `owner_unreachable` at once), and there the script did not run. A connection that drops
/// after Redis ran the script and before its answer is the one case this reads wrong; the
/// client cannot tell it from the other here (PROTOCOL.md 6.4).
struct Unrouted {
    error: ClusterError,
    maybe_sent: bool,
}

impl Unrouted {
    /// A failure of a script that publishes the command (`route.lua` on one Redis,
    /// `deliver.lua` on Redis Cluster).
    fn publishing(error: ClusterError) -> Self {
        let maybe_sent = error.is_timeout();
        Self { error, maybe_sent }
    }

    /// A failure before anything was published.
    fn unsent(error: ClusterError) -> Self {
        Self {
            error,
            maybe_sent: false,
        }
    }
}

/// Removes a pending call's reply slot however the call ends (answer, timeout, cancel).
pub(super) struct PendingSlot<'a> {
    shared: &'a ClusterShared,
    id: String,
}

impl Drop for PendingSlot<'_> {
    fn drop(&mut self) {
        lock(&self.shared.pending).remove(&self.id);
    }
}

impl ClusterShared {
    pub(super) async fn execute_local(
        &self,
        identity: &str,
        action: &str,
        payload_json: &str,
        deadline_ms: u64,
    ) -> JsonCallOutcome {
        let now = unix_ms();
        if now >= deadline_ms {
            return Err(CallFailure::DeadlinePassed);
        }
        let left = Duration::from_millis(deadline_ms - now);
        // A panicking executor is the server's bug; the caller still gets one answer.
        let work = std::panic::AssertUnwindSafe(async {
            self.executor
                .execute(identity, action, payload_json, left)
                .await
        })
        .catch_unwind();
        match tokio::time::timeout(left, work).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => {
                // Nothing says whether it wrote the CALL: an answer that may have run.
                tracing::error!(identity, action, "the executor panicked");
                Err(CallFailure::Timeout)
            }
            Err(_) => Err(CallFailure::Timeout),
        }
    }

    /// Whether this node holds `identity` on a connection of another OCPP version than
    /// `version` (a subprotocol name); `false` when either is not known.
    pub(super) fn wrong_version(&self, identity: &str, version: Option<&str>) -> bool {
        let held = lock(&self.claims).version_of(identity);
        matches!((held, version), (Some(held), Some(asked)) if held.subprotocol() != asked)
    }

    pub(super) async fn call(
        &self,
        identity: &str,
        version: Option<&str>,
        action: &str,
        payload_json: &str,
        deadline: Instant,
        deadline_ms: u64,
    ) -> Result<String, CallFailure> {
        for attempt in 0..2 {
            if self.holds(identity) {
                if self.wrong_version(identity, version) {
                    return Err(CallFailure::WrongVersion);
                }
                return self
                    .execute_local(identity, action, payload_json, deadline_ms)
                    .await;
            }
            let Ok(payload) = serde_json::from_str::<&RawValue>(payload_json) else {
                return Err(CallFailure::InvalidRequest {
                    description: "the command's payload is not valid JSON".to_owned(),
                });
            };
            if !self.inbox_up.load(Ordering::Acquire) {
                // Redis is down, or our inbox is: no answer could come back.
                return Err(CallFailure::OwnerUnreachable);
            }
            let id = format!(
                "{}-{}-{}",
                self.config.node_id,
                self.instance,
                self.next_request.fetch_add(1, Ordering::Relaxed)
            );
            let message = serde_json::to_string(&wire::WireCommand {
                kind: "command".into(),
                id: id.as_str().into(),
                reply_to: self.config.node_id.as_str().into(),
                identity: identity.into(),
                action: action.into(),
                payload,
                deadline_ms,
                version: version.map(Into::into),
            })
            .map_err(|_| CallFailure::OwnerUnreachable)?;
            let (tx, rx) = oneshot::channel();
            let generation = self.redis.generation();
            lock(&self.pending).insert(
                id.clone(),
                PendingReply {
                    generation,
                    reply: tx,
                },
            );
            let _slot = PendingSlot {
                shared: self,
                id: id.clone(),
            };
            let routed = match self.route(identity, &message).await {
                Ok(routed) => routed,
                // The command may be on its way to the holder, which may run it: not a status
                // a client retries (PROTOCOL.md 6.4 step 3).
                Err(Unrouted {
                    error,
                    maybe_sent: true,
                }) => {
                    tracing::warn!(identity, %error, "routing got no answer: the command may run");
                    return Err(CallFailure::Timeout);
                }
                Err(Unrouted { error, .. }) => {
                    tracing::warn!(identity, %error, "routing failed");
                    return Err(CallFailure::OwnerUnreachable);
                }
            };
            match routed.first().map(String::as_str) {
                Some("none") => return Err(CallFailure::NotConnected),
                // Redis names us but we hold nothing: a stale claim of ours (its release failed).
                Some("self") => return Err(CallFailure::NotConnected),
                // Presence cannot know (Redis lost its data moments ago, or the holder stopped
                // refreshing): the charge point may be connected; the CALL was not sent.
                Some("unknown") => return Err(CallFailure::OwnerUnreachable),
                Some("dead") | Some("unreachable") => return Err(CallFailure::OwnerUnreachable),
                Some("sent") => {}
                _ => return Err(CallFailure::OwnerUnreachable),
            }
            let outcome = match tokio::time::timeout_at(deadline.into(), rx).await {
                Ok(Ok(outcome)) => outcome,
                // The slot was dropped (cannot happen while we hold it) or the deadline passed.
                _ => return Err(CallFailure::Timeout),
            };
            // Not sent because the holder no longer held it (it left or moved between our
            // lookup and its delivery): look again once.
            let moved = matches!(
                outcome,
                Err(CallFailure::NotConnected | CallFailure::ClosedBeforeSent)
            );
            if moved && attempt == 0 {
                continue;
            }
            return outcome;
        }
        Err(CallFailure::NotConnected)
    }

    /// Delivers `message` (a command for `identity`) to the holder's inbox: `route.lua` in one
    /// round trip on one Redis; on Redis Cluster `route.lua` on the claim's slot, then
    /// `absent.lua` (no claim) or `deliver.lua` (another node's live claim) on the node-level
    /// slot (PROTOCOL.md 1.2). The answer is `route.lua`'s on one Redis.
    async fn route(&self, identity: &str, message: &str) -> Result<Vec<String>, Unrouted> {
        let config = &self.config;
        let cluster = self.redis.is_cluster();
        let mut redis = self.redis.clone();
        let mut route = self.scripts.route.key(config.claim_key(identity));
        if !cluster {
            route.key(config.since_key()).key(config.nodes_key());
        }
        route
            .arg(config.node_prefix())
            .arg(config.inbox_prefix())
            .arg(&config.node_id)
            .arg(if cluster { "" } else { message })
            .arg(millis(config.node_ttl));
        // On one Redis route.lua publishes the command; on Redis Cluster deliver.lua does.
        let routed: Vec<String> =
            self.bounded(route.invoke_async(&mut redis))
                .await
                .map_err(if cluster {
                    Unrouted::unsent
                } else {
                    Unrouted::publishing
                })?;
        match routed.first().map(String::as_str) {
            Some("absent") => {
                let mut absent = self.scripts.absent.key(config.since_key());
                absent
                    .key(config.nodes_key())
                    .arg(config.node_prefix())
                    .arg(millis(config.node_ttl));
                self.bounded(absent.invoke_async(&mut redis))
                    .await
                    .map_err(Unrouted::unsent)
            }
            Some("holder") => {
                let (node, epoch) = match (routed.get(1), routed.get(2)) {
                    (Some(node), Some(epoch)) => (node, epoch),
                    _ => {
                        return Err(Unrouted::unsent(ClusterError::Protocol(format!(
                            "route.lua answered {routed:?}"
                        ))))
                    }
                };
                let mut deliver = self
                    .scripts
                    .deliver
                    .key(format!("{}{node}", config.node_prefix()));
                deliver
                    .arg(format!("{}{node}", config.inbox_prefix()))
                    .arg(message);
                let delivered: Vec<String> = self
                    .bounded(deliver.invoke_async(&mut redis))
                    .await
                    .map_err(Unrouted::publishing)?;
                let verdict = delivered.into_iter().next().unwrap_or_default();
                Ok(vec![verdict, node.clone(), epoch.clone()])
            }
            _ => Ok(routed),
        }
    }

    /// On every move of the Redis master (Sentinel; never on a plain URL), answers the remote
    /// calls routed on an earlier master ([`ClusterShared::replies_lost_in_move`]).
    pub(super) async fn moves_loop(self: Arc<Self>) {
        loop {
            self.redis.moves().wait().await;
            self.replies_lost_in_move();
        }
    }

    /// The link moved to another master: a remote call routed on an earlier one may have lost
    /// its reply in the switch (a reply is a pub/sub message of the master it was published on,
    /// and both nodes leave it), so it is answered now with `timeout` (may have run), not at
    /// its deadline. A reply that still comes is dropped (PROTOCOL.md 1.1).
    fn replies_lost_in_move(&self) {
        let Some(current) = self.redis.generation() else {
            return;
        };
        let lost: Vec<PendingReply> = {
            let mut pending = lock(&self.pending);
            let ids: Vec<String> = pending
                .iter()
                .filter(|(_, p)| p.generation.is_some_and(|g| g != current))
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| pending.remove(id)).collect()
        };
        if !lost.is_empty() {
            tracing::warn!(
                calls = lost.len(),
                "the Redis master moved: remote calls routed before may have lost their reply"
            );
        }
        for pending in lost {
            let _ = pending.reply.send(Err(CallFailure::Timeout));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use crate::cluster::tests::started;
    use crate::test_redis::RedisServer;
    use crate::{CallFailure, Cluster, ClusterConfig};

    /// A caller whose `route.lua` gets no answer within the Redis timeout cannot tell whether
    /// it ran: if it did, it published the command and the holder runs it. The answer says
    /// the CALL may have run (`timeout`), never `owner_unreachable` (not sent, a status a
    /// client retries). Before, it was `owner_unreachable`, and the holder ran the command:
    /// a client that retried ran it twice.
    #[tokio::test]
    async fn a_command_whose_route_got_no_answer_in_time_may_have_run() {
        let server = RedisServer::start();
        let runs = Arc::new(AtomicUsize::new(0));
        let executor = {
            let runs = Arc::clone(&runs);
            move |_: &str,
                  _: &str,
                  _: &str,
                  _: Duration|
                  -> crate::BoxFuture<crate::JsonCallOutcome> {
                runs.fetch_add(1, Ordering::SeqCst);
                Box::pin(async { Ok("{}".to_owned()) })
            }
        };
        let (holder, _events) =
            Cluster::start(ClusterConfig::new(server.url(), "b"), executor).expect("start");
        assert!(holder.claim("X").await.epoch.is_some(), "b holds X");
        server.wait_inbox("b");
        let config =
            ClusterConfig::new(server.url(), "a").with_redis_timeout(Duration::from_millis(100));
        let (caller, _events) = started(config).await;
        // With Redis quick, the command reaches b (once b's first round made it readable).
        let start = Instant::now();
        loop {
            let quick = caller
                .call("X", "Reset", r#"{"type":"Soft"}"#, Duration::from_secs(5))
                .await;
            if quick.is_ok() {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "never reached b: {quick:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let before = runs.load(Ordering::SeqCst);
        // Redis holds every command for 250 ms (a busy Redis): route.lua runs after the
        // caller's Redis timeout, 100 ms (and before the `redis` crate's own, 400 ms).
        assert_eq!(server.query("CLIENT PAUSE 250 ALL").as_deref(), Some("+OK"));
        let answer = caller
            .call("X", "Reset", r#"{"type":"Soft"}"#, Duration::from_secs(5))
            .await;
        // Once Redis serves again, the command reaches b.
        let start = Instant::now();
        while runs.load(Ordering::SeqCst) == before && start.elapsed() < Duration::from_secs(3) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            runs.load(Ordering::SeqCst),
            before + 1,
            "the holder ran the command"
        );
        assert!(
            answer
                .as_ref()
                .is_err_and(CallFailure::may_have_reached_peer),
            "the caller answered {answer:?} for a command that ran"
        );
    }
}
