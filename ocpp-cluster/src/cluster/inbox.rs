//! The node's inbox: its subscription (kept across pings and failovers), and the commands,
//! replies and takeover notices that arrive on it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{Fuse, FusedFuture};
use futures_util::FutureExt;

use super::{lock, unix_ms, ClusterShared};
use crate::{wire, CallFailure, ClusterError};

/// How long a command id is remembered past its deadline, to drop a duplicate delivery.
const SEEN_GRACE_MS: u64 = 60_000;
/// The first wait before the inbox subscribes again after a failed attempt or a lost
/// connection; it doubles up to [`INBOX_BACKOFF_MAX`], and a move of the Redis master cuts it
/// short.
const INBOX_BACKOFF_MIN: Duration = Duration::from_millis(50);
/// The longest wait between two inbox subscription attempts.
const INBOX_BACKOFF_MAX: Duration = Duration::from_secs(1);
/// How often the inbox connection is pinged, one ping at a time. A ping answered late is
/// alive: only one left unanswered for the node TTL counts the connection lost (a dead Redis
/// that keeps the socket open is so noticed within this plus the node TTL). Cutting it at the
/// Redis timeout made a busy Redis look dead: at a million charge points on 63 nodes each node
/// dropped its inbox every 11 s, and each resubscription ran a refresh round that made Redis
/// busier still (2026-12-05).
const INBOX_PING: Duration = Duration::from_secs(1);

impl ClusterShared {
    pub(super) async fn inbox_loop(self: Arc<Self>) {
        let channel = format!("{}{}", self.config.inbox_prefix(), self.config.node_id);
        let mut backoff = INBOX_BACKOFF_MIN;
        loop {
            // Fires when the link leaves the master this attempt uses (a failover): the next
            // attempt goes to the new master at once, whatever is left of the backoff
            // (PROTOCOL.md 1.1).
            let moves = self.redis.moves();
            match self.subscribe(&channel).await {
                Ok((mut inbox, moved)) => {
                    // The link followed a failover: subscribe on the new master.
                    let moved = moved.wait();
                    tokio::pin!(moved);
                    backoff = INBOX_BACKOFF_MIN;
                    self.inbox_up.store(true, Ordering::Release);
                    self.refresh_now.notify_one();
                    tracing::info!(node = %self.config.node_id, "inbox subscribed");
                    let mut ping = tokio::time::interval(INBOX_PING);
                    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    ping.tick().await;
                    // The ping in flight, if any, bounded by the node TTL.
                    let mut pong = std::pin::pin!(Fuse::terminated());
                    let alive = self.config.node_ttl.max(self.config.redis_timeout);
                    loop {
                        tokio::select! {
                            message = inbox.next() => match message {
                                Some(message) => self.dispatch(&message),
                                None => break,
                            },
                            _ = &mut moved => break,
                            _ = ping.tick(), if pong.is_terminated() => {
                                let check = tokio::time::timeout(alive, inbox.pinger().ping());
                                pong.set(check.fuse());
                            }
                            answer = &mut pong, if !pong.is_terminated() => {
                                if !matches!(answer, Ok(Ok(_))) {
                                    break;
                                }
                            }
                        }
                    }
                    self.inbox_up.store(false, Ordering::Release);
                    self.redis.suspect();
                    tracing::warn!(node = %self.config.node_id, "inbox connection lost");
                }
                Err(e) => {
                    tracing::debug!(node = %self.config.node_id, error = %e, "inbox subscribe failed");
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {
                    backoff = (backoff * 2).min(INBOX_BACKOFF_MAX);
                }
                _ = moves.wait() => {
                    tracing::debug!(node = %self.config.node_id, "the Redis master moved: subscribing there");
                    backoff = INBOX_BACKOFF_MIN;
                }
            }
        }
    }

    async fn subscribe(
        &self,
        channel: &str,
    ) -> Result<(crate::link::Inbox, crate::link::MasterMoved), ClusterError> {
        let (mut inbox, moved) = self.bounded(self.redis.inbox()).await?;
        self.bounded(inbox.subscribe(channel)).await?;
        Ok((inbox, moved))
    }

    fn dispatch(self: &Arc<Self>, bytes: &[u8]) {
        let Ok(text) = std::str::from_utf8(bytes) else {
            tracing::warn!("inbox message is not UTF-8");
            return;
        };
        let Ok(head) = serde_json::from_str::<wire::WireHead<'_>>(text) else {
            tracing::warn!(message = text, "inbox message without a type");
            return;
        };
        match &*head.kind {
            "reply" => match serde_json::from_str::<wire::WireReply<'_>>(text) {
                Ok(reply) => {
                    if let Some(pending) = lock(&self.pending).remove(&*reply.id) {
                        let _ = pending.reply.send(reply.outcome());
                    }
                }
                Err(e) => tracing::warn!(error = %e, "bad reply"),
            },
            "command" => {
                let shared = Arc::clone(self);
                let text = text.to_owned();
                tokio::spawn(async move { shared.run_command(&text).await });
            }
            "superseded" => match serde_json::from_str::<wire::WireSuperseded<'_>>(text) {
                Ok(msg) => self.superseded(msg),
                Err(e) => tracing::warn!(error = %e, "bad superseded message"),
            },
            // A node's check of its own sharded subscription (Redis Cluster, PROTOCOL.md 3).
            "ping" => {}
            other => tracing::warn!(kind = other, "unknown inbox message"),
        }
    }

    /// A `superseded` message (PROTOCOL.md 5.3); [`ClaimTable::superseded`] decides.
    fn superseded(&self, msg: wire::WireSuperseded<'_>) {
        let lost =
            lock(&self.claims).superseded(&msg.identity, msg.epoch, &msg.by_node, msg.by_epoch);
        if let Some(lost) = lost {
            self.emit(lost);
        }
    }

    async fn run_command(&self, text: &str) {
        let command = match serde_json::from_str::<wire::WireCommand<'_>>(text) {
            Ok(command) => command,
            Err(e) => {
                tracing::warn!(error = %e, "bad command message");
                return;
            }
        };
        {
            let mut seen = lock(&self.seen);
            if seen.contains_key(&*command.id) {
                tracing::warn!(id = %command.id, "duplicate command dropped");
                return;
            }
            seen.insert(
                command.id.to_string(),
                command.deadline_ms.saturating_add(SEEN_GRACE_MS),
            );
        }
        let outcome = if unix_ms() >= command.deadline_ms {
            tracing::info!(id = %command.id, "command past its deadline: not executed");
            Err(CallFailure::DeadlinePassed)
        } else if !self.holds(&command.identity) {
            Err(CallFailure::NotConnected)
        } else if self.wrong_version(&command.identity, command.version.as_deref()) {
            // As a local connection refuses a request of another version: not sent.
            Err(CallFailure::WrongVersion)
        } else {
            self.execute_local(
                &command.identity,
                &command.action,
                command.payload.get(),
                command.deadline_ms,
            )
            .await
        };
        let reply = wire::encode_reply(&command.id, &outcome);
        let channel = format!("{}{}", self.config.inbox_prefix(), command.reply_to);
        let mut redis = self.redis.clone();
        let sent = self
            .bounded(
                redis::cmd(self.redis.publish_command())
                    .arg(channel)
                    .arg(reply)
                    .query_async::<i64>(&mut redis),
            )
            .await;
        if let Err(e) = sent {
            tracing::warn!(id = %command.id, error = %e, "reply not sent");
        }
    }
}
