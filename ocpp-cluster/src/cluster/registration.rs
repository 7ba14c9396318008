//! Registering a claim: its `claim.lua` (PROTOCOL.md 6.1), a registration of it already in
//! flight waited for rather than run twice, and on Redis Cluster the `superseded` message to
//! the previous holder, which the script sends itself on one Redis (PROTOCOL.md 1.2, 5.3).

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{lock, parse_epoch, ClaimTicket, ClusterShared};
use crate::claims::{Begin, Registered};
use crate::ClusterError;

/// Puts a claim whose `claim.lua` did not complete (the future was dropped) back to
/// `Pending`, so that the next refresh round registers it (or drops it, if a `superseded`
/// message kept meanwhile says so: [`ClaimTable::register_done`]), and wakes the
/// registrations that wait on it, as a registration that ends does: nothing else would.
/// Counts the registration in flight until it ends, however it ends.
///
/// [`ClaimTable::register_done`]: crate::claims::ClaimTable::register_done
pub(super) struct InFlight<'a> {
    shared: &'a ClusterShared,
    identity: &'a str,
    ticket: ClaimTicket,
    armed: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.armed {
            let lost = lock(&self.shared.claims).register_abandoned(self.identity, self.ticket);
            self.shared.settled.notify_waiters();
            if let Some(lost) = lost {
                self.shared.emit(lost);
            }
        }
        if self.shared.registrations.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.shared.settled.notify_waiters();
        }
    }
}

impl ClusterShared {
    /// Runs `claim.lua` for a local claim in state `Pending` (moved to `Registering` for the
    /// time it runs; back to `Pending` if this future is dropped or Redis fails). A registration
    /// of it already in flight (a refresh round's, the bridge's) is waited for instead; if it
    /// left the claim pending (it failed, or was abandoned), this one runs `claim.lua` itself,
    /// so that its caller has an answer of its own: a round that took another's failure for
    /// an `Ok` announced every claim registered (`synced`, PROTOCOL.md 6.3 step 3) with that
    /// one pending. `patience` bounds that wait (a round's: a registration whose future is
    /// held but no longer polled never settles, and must not hold up the node's rounds); past
    /// it the claim is not known registered ([`ClusterError::RedisTimeout`]). `Ok(None)`: no
    /// epoch (released, or replaced by a newer connection). What the answer means is
    /// [`ClaimTable::register_done`]'s.
    ///
    /// [`ClaimTable::register_done`]: crate::claims::ClaimTable::register_done
    pub(super) async fn register(
        &self,
        identity: &str,
        ticket: ClaimTicket,
        patience: Option<Duration>,
    ) -> Result<Option<u64>, ClusterError> {
        let start = tokio::time::Instant::now();
        let deadline = patience.map(|patience| start + patience);
        loop {
            let begin = {
                let mut claims = lock(&self.claims);
                let begin = claims.begin_register(identity, ticket);
                if begin == Begin::Run {
                    // Counted under the lock it began under: a drain that begins after it
                    // (`ClaimTable::leave`) waits for it.
                    self.registrations.fetch_add(1, Ordering::AcqRel);
                }
                begin
            };
            match begin {
                Begin::Run => break,
                // Another registration of this claim is in flight: wait for it rather than run
                // claim.lua twice, then look again.
                Begin::InFlight => {
                    if !self.registration_settled(identity, ticket, deadline).await {
                        return Err(ClusterError::RedisTimeout {
                            waited: start.elapsed(),
                            stalled: Duration::ZERO,
                        });
                    }
                }
                Begin::Held(epoch) => return Ok(Some(epoch)),
                Begin::Gone => return Ok(None),
            }
        }
        let mut in_flight = InFlight {
            shared: self,
            identity,
            ticket,
            armed: true,
        };
        let version = lock(&self.claims).version_of(identity);
        let answer = self.claim_script(identity, version).await;
        // The previous holder, told on Redis Cluster once the claim is settled here.
        let mut previous = None;
        let epoch = answer.and_then(|answer| {
            let field = |i: usize| answer.get(i).cloned().unwrap_or_default();
            let epoch = parse_epoch(&field(0))?;
            previous = Some((field(1), field(2)));
            Ok(epoch)
        });
        in_flight.armed = false;
        let then = lock(&self.claims).register_done(identity, ticket, epoch.as_ref().ok().copied());
        // Wake a registration waiting on this one, now that the state is settled.
        self.settled.notify_waiters();
        if let (Ok(epoch), Some((node, node_epoch))) = (&epoch, &previous) {
            self.notify_superseded(identity, node, node_epoch, *epoch)
                .await;
        }
        match then {
            Registered::Held { epoch, recheck } => {
                if recheck {
                    // A refresh round passed over this claim while claim.lua ran: refresh it
                    // now, for a takeover whose message the inbox may have dropped.
                    if let Err(e) = self.refresh_claim(identity, ticket, epoch).await {
                        tracing::debug!(identity, error = %e, "refresh after registration failed");
                    }
                }
            }
            Registered::Lost(lost) => self.emit(lost),
            Registered::Pending => {
                if let Err(e) = &epoch {
                    tracing::warn!(identity, error = %e, "claim not registered; retried when Redis answers");
                }
            }
            Registered::GiveBack(epoch) => {
                let _ = self.release_epoch(identity, epoch).await;
            }
            Registered::Again { ticket, epoch } => {
                // An earlier connection's claim.lua named another epoch of this node's than
                // the one held: refresh the current claim under the newer, so Redis holds it.
                if let Err(e) = self.refresh_claim(identity, ticket, epoch).await {
                    tracing::debug!(identity, error = %e, "refresh of a settled epoch failed");
                }
            }
            Registered::Nothing => {}
        }
        epoch.map(Some)
    }

    /// On Redis Cluster, after `claim.lua` or a `refresh.lua` that restored a claim: tells
    /// `old_node` (if another node's claim was replaced) that its claim under `old_epoch` is
    /// superseded by this node's under `by_epoch`, as the script does on one Redis. A failure
    /// is logged: that node finds the loss at its next refresh (PROTOCOL.md 1.2).
    pub(super) async fn notify_superseded(
        &self,
        identity: &str,
        old_node: &str,
        old_epoch: &str,
        by_epoch: u64,
    ) {
        if !self.redis.is_cluster() || old_node.is_empty() || old_node == self.config.node_id {
            return;
        }
        let message = crate::wire::WireSuperseded {
            kind: "superseded".into(),
            identity: identity.into(),
            epoch: old_epoch.parse().unwrap_or(0),
            by_node: self.config.node_id.as_str().into(),
            by_epoch,
        };
        let Ok(message) = serde_json::to_string(&message) else {
            return;
        };
        let channel = format!("{}{old_node}", self.config.inbox_prefix());
        let mut redis = self.redis.clone();
        let sent = self
            .bounded(
                redis::cmd(self.redis.publish_command())
                    .arg(channel)
                    .arg(message)
                    .query_async::<i64>(&mut redis),
            )
            .await;
        if let Err(e) = sent {
            tracing::warn!(identity, node = old_node, error = %e, "superseded message not sent");
        }
    }

    /// Waits until the registration in flight of the claim made with `ticket` is settled
    /// (at most until `deadline`, if there is one: whether it settled). Its `claim.lua` may
    /// wait in the claim queue for the call in flight, then run in the next, each bounded by
    /// the Redis timeout and the node's stall ([`Bound`]), so a bound of one Redis timeout gave
    /// up on registrations about to succeed. Every registration that settles, or is abandoned
    /// ([`InFlight`]), wakes every waiter, so a waiter looks again at its own claim each time
    /// (a round registers a batch's worth at once: the first to settle is seldom this one).
    ///
    /// [`Bound`]: crate::bound::Bound
    async fn registration_settled(
        &self,
        identity: &str,
        ticket: ClaimTicket,
        deadline: Option<tokio::time::Instant>,
    ) -> bool {
        self.settled_until(deadline, || {
            !lock(&self.claims).is_registering(identity, ticket)
        })
        .await
    }
}
