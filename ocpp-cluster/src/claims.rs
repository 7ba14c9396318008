//! The local claim table of one node (PROTOCOL.md 5.3, 6.1-6.3): which charge points it holds,
//! under which epoch, and what each script answer or `superseded` message does to them.
//!
//! Pure: no I/O, no lock, no clock. `cluster::ClusterShared` keeps the table behind its mutex,
//! runs the scripts it asks for and acts on what it decides (emit, release, refresh); the model
//! test (`claims/model.rs`) drives it against a Redis modelled in plain Rust.
//!
//! The rule every decision rests on: a node holds one connection per identity, and every claim
//! of this node in Redis belongs to its current connection (`refresh.lua`'s ownership is the
//! node, not the epoch); epochs grow (the counter is seeded from Redis's clock when it is gone).
//! So the newest epoch Redis holds for this node is the current connection's, whatever epoch the
//! node has read so far, and a newer claim by another node supersedes the current connection.

use std::collections::HashMap;

use ocpp_proto::OcppVersion;

use crate::cluster::{Claim, ClaimTicket, LostClaim};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClaimState {
    /// No epoch known: not registered (Redis down), or its `claim.lua` failed or timed out on
    /// this side (it may have run in Redis); the next refresh round claims it.
    Pending,
    /// `claim.lua` in flight.
    Registering,
    /// Registered; the newest epoch of this node's claim this node has read.
    Held(u64),
}

/// A `superseded` message that arrived while `claim.lua` was in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Early {
    epoch: u64,
    by_node: String,
    by_epoch: u64,
}

#[derive(Debug)]
struct LocalClaim {
    ticket: ClaimTicket,
    state: ClaimState,
    /// The newest `superseded` message kept while `claim.lua` ran.
    early: Option<Early>,
    /// A refresh round passed over this claim while `claim.lua` ran: once registered it is
    /// refreshed, for the round it missed (a takeover whose message this node's inbox dropped
    /// would otherwise go unseen until the next round).
    recheck: bool,
    /// The OCPP version of the connection, recorded with the claim for the other nodes.
    version: Option<OcppVersion>,
}

/// What to do for one claim in a refresh round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Work {
    /// Run `claim.lua` (through [`ClaimTable::begin_register`]).
    Register,
    /// Run `refresh.lua`; hand its answer to [`ClaimTable::refresh_done`] with this epoch.
    Refresh(u64),
}

/// What [`ClaimTable::begin_register`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Begin {
    /// Now `Registering`: run `claim.lua`, then [`ClaimTable::register_done`].
    Run,
    /// Another registration of this claim is in flight.
    InFlight,
    /// Already registered under this epoch.
    Held(u64),
    /// Not this node's current claim (released, or replaced by a newer connection), or the
    /// node is leaving the cluster.
    Gone,
}

/// What a `claim.lua` answer (or failure) means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Registered {
    /// Registered under `epoch`. `recheck`: run `refresh.lua` for it now (a round missed it).
    Held { epoch: u64, recheck: bool },
    /// A newer claim superseded it while `claim.lua` ran: it is gone; tell the server.
    Lost(LostClaim),
    /// Pending again (no epoch known): the next refresh round claims it.
    Pending,
    /// The claim was released meanwhile and this node holds nothing else for the identity:
    /// release this epoch in Redis.
    GiveBack(u64),
    /// The answer named this node's claim under an epoch other than the one held (a script of
    /// an earlier connection): run `refresh.lua` for the claim held (`ticket`) under `epoch`,
    /// the newer of the two, so that Redis holds it ([`Settle`]).
    Again {
        /// The claim held.
        ticket: ClaimTicket,
        /// The epoch it now holds.
        epoch: u64,
    },
    /// Nothing to do.
    Nothing,
}

/// A `refresh.lua` answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RefreshReply {
    /// Still this node's, under this epoch.
    Held(u64),
    /// The key was gone: this node's again under this new epoch.
    Restored(u64),
    /// Another claim (`node`, `epoch`) or a release of it (`node` empty) replaced ours.
    Lost { node: String, epoch: u64 },
}

/// What a `refresh.lua` answer means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refreshed {
    /// Nothing more to do.
    Done,
    /// The claim is gone: tell the server.
    Lost(LostClaim),
    /// The claim was released meanwhile and this node holds nothing else for the identity:
    /// release this epoch in Redis.
    GiveBack(u64),
    /// Redis names a claim older than the one held (`epoch`, made with `ticket`): a write of
    /// this node's was lost (Redis lost its data, or a failover promoted a replica without
    /// it). Run `refresh.lua` again under `epoch`, which makes the claim again.
    Again {
        /// The claim held.
        ticket: ClaimTicket,
        /// Its epoch.
        epoch: u64,
    },
}

/// The claims of one node, by identity.
#[derive(Debug, Default)]
pub(crate) struct ClaimTable {
    claims: HashMap<String, LocalClaim>,
    /// The node is leaving the cluster (a drain, PROTOCOL.md 6.6): it registers nothing more.
    leaving: bool,
}

impl ClaimTable {
    /// A connection for `identity` was accepted: its claim replaces any earlier one, pending.
    pub(crate) fn hold(
        &mut self,
        identity: &str,
        ticket: ClaimTicket,
        version: Option<OcppVersion>,
    ) {
        self.claims.insert(
            identity.to_owned(),
            LocalClaim {
                ticket,
                state: ClaimState::Pending,
                early: None,
                recheck: false,
                version,
            },
        );
    }

    /// The OCPP version recorded with the claim on `identity`.
    pub(crate) fn version_of(&self, identity: &str) -> Option<OcppVersion> {
        self.claims.get(identity).and_then(|c| c.version)
    }

    /// The connection with `ticket` closed: drops its claim if it is still the current one;
    /// the epoch to release if it was registered.
    pub(crate) fn forget(&mut self, identity: &str, ticket: ClaimTicket) -> Option<u64> {
        match self.claims.get(identity) {
            Some(c) if c.ticket == ticket => match self.claims.remove(identity)?.state {
                ClaimState::Held(epoch) => Some(epoch),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether this node holds `identity`.
    pub(crate) fn contains(&self, identity: &str) -> bool {
        self.claims.contains_key(identity)
    }

    /// The claim on `identity`, if held.
    pub(crate) fn claim(&self, identity: &str) -> Option<Claim> {
        self.claims.get(identity).map(|c| public(identity, c))
    }

    /// Every claim held.
    pub(crate) fn all(&self) -> Vec<Claim> {
        self.claims
            .iter()
            .map(|(identity, c)| public(identity, c))
            .collect()
    }

    /// Whether the claim made with `ticket` is current and its `claim.lua` in flight.
    pub(crate) fn is_registering(&self, identity: &str, ticket: ClaimTicket) -> bool {
        self.claims
            .get(identity)
            .is_some_and(|c| c.ticket == ticket && c.state == ClaimState::Registering)
    }

    /// The state of the current claim on `identity` (tests and the model).
    #[cfg(test)]
    pub(crate) fn state(&self, identity: &str) -> Option<(ClaimTicket, ClaimState)> {
        self.claims.get(identity).map(|c| (c.ticket, c.state))
    }

    /// The node leaves the cluster (a drain): no registration begins from now on
    /// ([`Self::begin_register`] answers [`Begin::Gone`]); a claim held afterwards stays local.
    pub(crate) fn leave(&mut self) {
        self.leaving = true;
    }

    /// Whether a round marked the claim on `identity` to be refreshed once registered (tests).
    #[cfg(test)]
    pub(crate) fn marked_recheck(&self, identity: &str) -> bool {
        self.claims.get(identity).is_some_and(|c| c.recheck)
    }

    /// Before `claim.lua` for the claim made with `ticket`: `Pending` becomes `Registering`;
    /// none begins once the node leaves ([`Self::leave`]).
    pub(crate) fn begin_register(&mut self, identity: &str, ticket: ClaimTicket) -> Begin {
        if self.leaving {
            return Begin::Gone;
        }
        match self.claims.get_mut(identity) {
            Some(c) if c.ticket == ticket => match c.state {
                ClaimState::Pending => {
                    c.state = ClaimState::Registering;
                    c.early = None;
                    c.recheck = false;
                    Begin::Run
                }
                ClaimState::Registering => Begin::InFlight,
                ClaimState::Held(epoch) => Begin::Held(epoch),
            },
            _ => Begin::Gone,
        }
    }

    /// `claim.lua` for the claim made with `ticket` answered `Some(epoch)`, or failed (`None`:
    /// an error or a timeout; it may have run in Redis all the same).
    pub(crate) fn register_done(
        &mut self,
        identity: &str,
        ticket: ClaimTicket,
        answer: Option<u64>,
    ) -> Registered {
        let Some(claim) = self
            .claims
            .get_mut(identity)
            .filter(|c| c.ticket == ticket && c.state == ClaimState::Registering)
        else {
            return match answer.map(|epoch| self.foreign(identity, epoch)) {
                Some(Settle::GiveBack(epoch)) => Registered::GiveBack(epoch),
                Some(Settle::Again { ticket, epoch }) => Registered::Again { ticket, epoch },
                Some(Settle::Nothing) | None => Registered::Nothing,
            };
        };
        let early = claim.early.take();
        let recheck = std::mem::take(&mut claim.recheck);
        match (answer, early) {
            // A claim newer than ours took over one of this node's claims, which is this
            // connection's (the module's rule), or an older one restored late: the newest
            // connection wins. Older than ours: our claim.lua ran after that takeover and is
            // the newest; the message is stale.
            (Some(epoch), Some(early)) if epoch < early.by_epoch => {
                self.claims.remove(identity);
                Registered::Lost(lost(identity, ticket, early))
            }
            (Some(epoch), _) => {
                claim.state = ClaimState::Held(epoch);
                Registered::Held { epoch, recheck }
            }
            // No epoch known, and a newer claim took over one of this node's claims, which is
            // this connection's: as a `Pending` claim would, yield.
            (None, Some(early)) => {
                self.claims.remove(identity);
                Registered::Lost(lost(identity, ticket, early))
            }
            (None, None) => {
                claim.state = ClaimState::Pending;
                Registered::Pending
            }
        }
    }

    /// The `claim.lua` of the claim made with `ticket` will not answer (its future was
    /// dropped): as a failure. The superseded claim to report, if a kept message says so.
    pub(crate) fn register_abandoned(
        &mut self,
        identity: &str,
        ticket: ClaimTicket,
    ) -> Option<LostClaim> {
        match self.register_done(identity, ticket, None) {
            Registered::Lost(lost) => Some(lost),
            _ => None,
        }
    }

    /// `claim.lua` answered `epoch` for this node's claim on `identity` and no registration
    /// waits for the answer (its future was dropped, [`Self::register_abandoned`]): read as
    /// [`Self::register_done`] reads an answer for a claim no longer registering.
    pub(crate) fn claimed_unawaited(&mut self, identity: &str, epoch: u64) -> Settle {
        self.foreign(identity, epoch)
    }

    /// A `superseded` message: this node's claim on `identity` under `epoch` was replaced by
    /// `by_node`'s claim under `by_epoch` (PROTOCOL.md 5.3). The claim to report as gone, if the
    /// message applies to the current one.
    ///
    /// - `Held(e)` with `e < by_epoch`: a claim newer than this connection's took over one of
    ///   this node's claims (this connection's, or one an earlier connection's refresh restored
    ///   late): gone. Epochs grow with time, so the newest connection wins whichever of this
    ///   node's epochs the message names. `e > by_epoch`: a stale message about an earlier
    ///   claim, older than this connection's; ignored.
    /// - `Registering`: kept (the newest one) until `claim.lua` answers ([`Self::register_done`]).
    /// - `Pending` (no epoch known): gone too. The message was published after this connection
    ///   was accepted (bar one in flight at that very moment: an inbox that is down drops what
    ///   is published meanwhile), so the newer claim is a newer connection's; registering ours
    ///   at the next round would close that one instead.
    pub(crate) fn superseded(
        &mut self,
        identity: &str,
        epoch: u64,
        by_node: &str,
        by_epoch: u64,
    ) -> Option<LostClaim> {
        let claim = self.claims.get_mut(identity)?;
        let early = Early {
            epoch,
            by_node: by_node.to_owned(),
            by_epoch,
        };
        match claim.state {
            ClaimState::Held(held) if held > by_epoch => None,
            ClaimState::Held(_) | ClaimState::Pending => {
                let ticket = claim.ticket;
                self.claims.remove(identity);
                Some(lost(identity, ticket, early))
            }
            ClaimState::Registering => {
                if claim
                    .early
                    .as_ref()
                    .is_none_or(|kept| kept.by_epoch < by_epoch)
                {
                    claim.early = Some(early);
                }
                None
            }
        }
    }

    /// A refresh round: the work for every claim. A claim whose `claim.lua` is in flight is
    /// marked to be refreshed once registered, and registered by the round too: its
    /// registration waits for the one in flight ([`Begin::InFlight`]) and runs `claim.lua`
    /// itself if that one fails, so that the round counts the claim registered (`synced`,
    /// PROTOCOL.md 6.3 step 3) only if it is.
    pub(crate) fn round(&mut self) -> Vec<(String, ClaimTicket, Work)> {
        self.claims
            .iter_mut()
            .map(|(identity, c)| match c.state {
                ClaimState::Pending => (identity.clone(), c.ticket, Work::Register),
                ClaimState::Registering => {
                    c.recheck = true;
                    (identity.clone(), c.ticket, Work::Register)
                }
                ClaimState::Held(epoch) => (identity.clone(), c.ticket, Work::Refresh(epoch)),
            })
            .collect()
    }

    /// `refresh.lua` answered `reply` for the claim made with `ticket`, sent while it was held
    /// under `epoch`. The local claim may have changed meanwhile (a message, a release, a newer
    /// connection, another refresh); the answer is read against what is there now.
    pub(crate) fn refresh_done(
        &mut self,
        identity: &str,
        ticket: ClaimTicket,
        epoch: u64,
        reply: RefreshReply,
    ) -> Refreshed {
        match reply {
            RefreshReply::Held(now) | RefreshReply::Restored(now) => {
                match self.claims.get_mut(identity) {
                    Some(c) if c.ticket == ticket && c.state == ClaimState::Held(epoch) => {
                        c.state = ClaimState::Held(now);
                        Refreshed::Done
                    }
                    _ => match self.foreign(identity, now) {
                        Settle::GiveBack(epoch) => Refreshed::GiveBack(epoch),
                        Settle::Again { ticket, epoch } => Refreshed::Again { ticket, epoch },
                        Settle::Nothing => Refreshed::Done,
                    },
                }
            }
            RefreshReply::Lost {
                node,
                epoch: by_epoch,
            } => {
                let Some(claim) = self.claims.get(identity) else {
                    return Refreshed::Done;
                };
                // Redis named another claim (or its tombstone) under `by_epoch`. It replaced
                // ours if it is not older than the one held now (epochs grow with time: the
                // newest connection wins). Older: the refresh was sent under an earlier epoch
                // of ours, and Redis lost the write of the one held now; refreshing under it
                // makes it again. A claim not registered yet is settled by its own claim.lua.
                let ClaimState::Held(held) = claim.state else {
                    return Refreshed::Done;
                };
                if by_epoch < held {
                    return Refreshed::Again {
                        ticket: claim.ticket,
                        epoch: held,
                    };
                }
                let ticket = claim.ticket;
                self.claims.remove(identity);
                Refreshed::Lost(LostClaim {
                    identity: identity.to_owned(),
                    ticket,
                    epoch: held,
                    by_node: node,
                    by_epoch,
                })
            }
        }
    }

    /// Drain: every claim goes; the epochs to release.
    pub(crate) fn drain(&mut self) -> Vec<(String, Option<u64>)> {
        self.claims
            .drain()
            .map(|(identity, c)| match c.state {
                ClaimState::Held(epoch) => (identity, Some(epoch)),
                _ => (identity, None),
            })
            .collect()
    }

    /// Redis has this node's claim on `identity` under `epoch`, from a script of a connection
    /// that is no longer current (or of a state that changed meanwhile). It is the current
    /// connection's (the module's rule). A claim not registered yet is settled by its own
    /// claim.lua. A held claim under another epoch keeps the newer of the two and refreshes
    /// under it: Redis may have lost the newer write since (data lost, a failover), and an
    /// epoch held but no longer in Redis would make this node ignore the `superseded` message
    /// of a claim that restored over an older one of its own, so that two nodes hold the
    /// charge point (the model test found it). With no claim at all, the epoch to give back.
    fn foreign(&mut self, identity: &str, epoch: u64) -> Settle {
        match self.claims.get_mut(identity) {
            None => Settle::GiveBack(epoch),
            Some(c) => match c.state {
                ClaimState::Held(held) if held != epoch => {
                    let newer = held.max(epoch);
                    c.state = ClaimState::Held(newer);
                    Settle::Again {
                        ticket: c.ticket,
                        epoch: newer,
                    }
                }
                _ => Settle::Nothing,
            },
        }
    }
}

/// What an answer about this node's claim from another script than the current one asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Settle {
    /// No claim on the identity here: release this epoch in Redis.
    GiveBack(u64),
    /// Refresh the claim held (`ticket`) under `epoch` now.
    Again {
        /// The claim held.
        ticket: ClaimTicket,
        /// The epoch it now holds.
        epoch: u64,
    },
    /// Nothing to do.
    Nothing,
}

fn public(identity: &str, c: &LocalClaim) -> Claim {
    Claim {
        identity: identity.to_owned(),
        ticket: c.ticket,
        epoch: match c.state {
            ClaimState::Held(epoch) => Some(epoch),
            _ => None,
        },
    }
}

fn lost(identity: &str, ticket: ClaimTicket, early: Early) -> LostClaim {
    LostClaim {
        identity: identity.to_owned(),
        ticket,
        epoch: early.epoch,
        by_node: early.by_node,
        by_epoch: early.by_epoch,
    }
}

#[cfg(test)]
mod model;
