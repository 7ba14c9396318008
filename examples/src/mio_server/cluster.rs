//! The cluster node (`--redis URL --node-id NAME`): the [`ClusterBridge`] of `ocpp-cluster`
//! (its own thread and tokio runtime; every call here returns at once) wired into the loops.
//!
//! - **Presence**: `Event::Connected` claims the identity (the socket keeps the
//!   [`ClaimTicket`]) and the socket waits in `SocketStage::Claiming`, its 101 held in the
//!   output, until [`BridgeOutput::Registered`] (at most
//!   [`claim_wait`](ocpp_cluster::ClusterConfig::claim_wait), with Redis down): once a charge
//!   point has its handshake, every node finds it (PROTOCOL.md 6.1).
//!   `Event::Closed` releases that ticket (the bridge refreshes claims itself).
//! - **Takeover**: a [`ClusterEvent::Superseded`] closes the socket holding that ticket with
//!   1008 ([`CLOSE_SUPERSEDED`](ocpp_cluster::CLOSE_SUPERSEDED)): it leaves the identity table at once, is sent nothing more,
//!   and its claim is not released (it is no longer ours).
//! - **Routing**: an admin command for an identity that is not local goes to
//!   [`ClusterBridge::call`]; its [`BridgeOutput::CallDone`] answers the admin socket. A command
//!   forwarded to us ([`BridgeOutput::Execute`]) is decoded with the charge point's version,
//!   sent on its connection, and answered with [`ClusterBridge::complete`] exactly once
//!   ([`JobAnswer`] answers for itself if it is dropped unanswered).
//! - **Several loops**: loop 0's waker is the bridge's wake; loop 0 reads every output and
//!   forwards jobs and takeovers to the loop holding the identity as [`LoopCommand`]s.
//! - **Shutdown**: sockets close with 1012; loop 0 then calls [`ClusterBridge::drain`] (once
//!   the identity table is empty, or shortly before the shutdown deadline) and exits on
//!   [`BridgeOutput::Drained`] or at the deadline.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ocpp_cluster::{
    command_request, BridgeOutput, ClaimTicket, ClusterBridge, ClusterEvent, Job, JobId,
    JsonCallOutcome, RequestId,
};
use ocpp_proto::{CallFailure, ChargePointIdentity, Refused, Superseded};

use super::admin_socket::{AdminStage, ADMIN_CALL_GRACE};
use super::event_loop::{Entry, EventLoop};
use super::ocpp_socket::{SocketStage, Waiter};
use super::slab::Key;
use super::{Handle, LoopCommand};
use ocpp_reference_csms::admin::{self, HttpResponse};

/// How often loop 0 looks whether every charge point is gone, during a shutdown, before it
/// drains the cluster node.
const DRAIN_CHECK: Duration = Duration::from_millis(20);
/// The part of the shutdown deadline kept for the drain (the releases in Redis), whatever
/// sockets are still closing.
const DRAIN_RESERVE: Duration = Duration::from_secs(1);

/// The process's cluster bridge, behind a lock: it is `Send` but not `Sync` (its output
/// receiver), and every loop calls it (claim, release). Each call returns at once, so the lock
/// is held for a moment; never hold the guard while calling something that may lock it again
/// (a [`JobAnswer`] dropped, for one).
#[derive(Debug)]
pub(super) struct ClusterNode {
    bridge: Mutex<ClusterBridge>,
}

impl ClusterNode {
    pub(super) fn new(bridge: ClusterBridge) -> Self {
        ClusterNode {
            bridge: Mutex::new(bridge),
        }
    }

    pub(super) fn bridge(&self) -> MutexGuard<'_, ClusterBridge> {
        self.bridge
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The charge point of `ticket` left: its claim goes (locally at once, in Redis soon; a
    /// drain waits for it, bounded).
    pub(super) fn release(&self, identity: &str, ticket: ClaimTicket) {
        if let Err(e) = self.bridge().release(identity, ticket) {
            tracing::warn!(identity, "release: {e} (the claim expires with its TTL)");
        }
    }
}

/// The one answer a forwarded command gets: [`JobAnswer::complete`], or, when it is dropped
/// unanswered, `NotConnected` before its CALL was handed to a connection (a loop that exited,
/// a command that never reached its socket) and `Disconnected` after (it may have run).
#[derive(Debug)]
pub(super) struct JobAnswer {
    node: Arc<ClusterNode>,
    id: JobId,
    done: bool,
    sent: bool,
}

impl JobAnswer {
    fn new(node: Arc<ClusterNode>, id: JobId) -> Self {
        JobAnswer {
            node,
            id,
            done: false,
            sent: false,
        }
    }

    /// Answers the job; `false` if the cluster no longer waits for it (past its deadline).
    pub(super) fn complete(mut self, outcome: JsonCallOutcome) -> bool {
        self.done = true;
        self.node.bridge().complete(self.id, outcome)
    }
}

impl Drop for JobAnswer {
    fn drop(&mut self) {
        if !self.done {
            let unanswered = if self.sent {
                CallFailure::Disconnected
            } else {
                CallFailure::NotConnected
            };
            self.node.bridge().complete(self.id, Err(unanswered));
        }
    }
}

/// An admin command routed through the cluster, waiting for its [`BridgeOutput::CallDone`].
#[derive(Debug)]
pub(super) struct RemoteAdminCall {
    admin: Key,
    identity: String,
    action: String,
}

/// An admin read waiting for the cluster's presence records ([`BridgeOutput::Located`],
/// [`BridgeOutput::Listed`]).
#[derive(Debug)]
pub(super) struct RemoteRead {
    admin: Key,
    /// For one charge point: this node's answer when no node holds it (its record, or 404).
    local: Option<HttpResponse>,
}

/// Where loop 0 is with leaving the cluster during a shutdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DrainState {
    /// Not asked yet (or no cluster, or not loop 0).
    Idle,
    /// `drain()` sent; waiting for `Drained`.
    Waiting(RequestId),
    /// Drained (after the releases in flight, which the drain waits for).
    Done,
    /// Given up at the shutdown deadline.
    GaveUp,
}

impl EventLoop {
    /// The admin command `POST /chargepoints/ID/call/ACTION` for an identity no loop of ours
    /// holds, when clustered: `Some(identity, action)`.
    pub(super) fn remote_command(
        &self,
        method: &str,
        path: &str,
    ) -> Option<(ChargePointIdentity, String)> {
        self.shared.cluster.as_ref()?;
        let (identity, action) = admin::command_target(method, path)?;
        if self.shared.identities().get(identity.as_str()).is_some() {
            return None; // local: as without a cluster
        }
        Some((identity, action))
    }

    /// On a cluster node, a read answered from the cluster's presence records too
    /// ([`admin::cluster_read`]): asks the cluster thread, and the admin socket `key` waits.
    /// `false`: not such a read (or not a cluster node).
    pub(super) fn admin_cluster_read(
        &mut self,
        key: Key,
        request: &admin::AdminRequest,
        now: Instant,
    ) -> bool {
        let Some(node) = self.shared.cluster.clone() else {
            return false;
        };
        let csms = &self.shared.csms;
        let Some(read) = admin::cluster_read(csms, &request.method, &request.path) else {
            return false;
        };
        let (asked, local) = match read {
            admin::ClusterRead::List => {
                csms.metrics().admin_requests.inc();
                (node.bridge().list(admin::CLUSTER_LIST_LIMIT), None)
            }
            admin::ClusterRead::One(identity) => {
                let local = match admin::route(csms, request) {
                    admin::Route::Respond(response) => response,
                    _ => HttpResponse::error(500, "a read routed as a command"),
                };
                (node.bridge().locate(identity.as_str()), Some(local))
            }
        };
        match asked {
            Ok(request) => {
                if let Some(Entry::Admin(a)) = self.sockets.get_mut(key) {
                    a.stage = AdminStage::Waiting;
                    a.deadline = now + ADMIN_CALL_GRACE;
                    self.timers
                        .schedule(key, Some(a.deadline), &mut a.scheduled);
                }
                self.remote_reads
                    .insert(request, RemoteRead { admin: key, local });
            }
            Err(e) => {
                let response = HttpResponse::error(503, &format!("cluster: {e}"));
                self.admin_respond(key, response, now);
            }
        }
        true
    }

    /// Sends an admin command for a charge point held elsewhere (or nowhere) through the
    /// cluster; the admin socket `key` waits for the answer.
    pub(super) fn admin_remote_call(
        &mut self,
        key: Key,
        identity: ChargePointIdentity,
        action: String,
        body: &[u8],
        timeout: Duration,
        now: Instant,
    ) {
        let Some(node) = self.shared.cluster.clone() else {
            return;
        };
        self.shared.csms.metrics().admin_requests.inc();
        let body = match admin::command_body(body) {
            Ok(body) => body,
            Err(response) => {
                self.admin_respond(key, response, now);
                return;
            }
        };
        let called = node
            .bridge()
            .call(identity.as_str(), &action, body, timeout);
        let request = match called {
            Ok(request) => request,
            Err(e) => {
                tracing::warn!(%identity, action, "cluster call refused: {e}");
                let response = HttpResponse::error(503, &format!("cluster: {e}"));
                self.admin_respond(key, response, now);
                return;
            }
        };
        tracing::info!(%identity, action, "admin CALL routed through the cluster");
        let Some(Entry::Admin(a)) = self.sockets.get_mut(key) else {
            return;
        };
        a.stage = AdminStage::Waiting;
        a.deadline = now + timeout + ADMIN_CALL_GRACE;
        self.timers
            .schedule(key, Some(a.deadline), &mut a.scheduled);
        self.remote_calls.insert(
            request,
            RemoteAdminCall {
                admin: key,
                identity: identity.as_str().to_owned(),
                action,
            },
        );
    }

    /// The answer to an admin read, if its socket still waits for it.
    fn admin_answer_read(&mut self, admin: Key, response: HttpResponse, now: Instant) {
        if let Some(Entry::Admin(a)) = self.sockets.get_mut(admin) {
            if a.stage == AdminStage::Waiting {
                self.admin_respond(admin, response, now);
            }
        }
    }

    /// Loop 0, on its waker: everything the cluster thread handed back.
    pub(super) fn cluster_outputs(&mut self, now: Instant) {
        let Some(node) = self.shared.cluster.clone() else {
            return;
        };
        loop {
            // The guard must not live through the handling (a JobAnswer locks it).
            let next = node.bridge().try_recv();
            let Some(output) = next else {
                return;
            };
            match output {
                BridgeOutput::Registered {
                    identity,
                    ticket,
                    epoch,
                } => {
                    tracing::debug!(identity, ?epoch, "claim registered");
                    // The connection of that claim answers its handshake now.
                    let handle = self.shared.identities().get(identity.as_str()).copied();
                    match handle {
                        Some(Handle { loop_index, key }) if loop_index == self.index => {
                            self.claimed(key, ticket, now)
                        }
                        Some(Handle { loop_index, key }) => self.shared.send(
                            loop_index,
                            LoopCommand::Claimed {
                                target: key,
                                ticket,
                            },
                        ),
                        None => {}
                    }
                }
                BridgeOutput::Released { result, .. } => {
                    if let Err(e) = result {
                        tracing::warn!("release: {e} (the claim expires with its TTL)");
                    }
                }
                BridgeOutput::Listed { request, result } => {
                    if let Some(read) = self.remote_reads.remove(&request) {
                        let node_id = node.bridge().config().node_id.clone();
                        let csms = &self.shared.csms;
                        let response = admin::cluster_list_response(csms, &node_id, &result);
                        self.admin_answer_read(read.admin, response, now);
                    }
                }
                BridgeOutput::Located { request, result } => {
                    if let Some(read) = self.remote_reads.remove(&request) {
                        let local = read.local.unwrap_or_else(|| {
                            HttpResponse::error(500, "a read without its local answer")
                        });
                        let response = admin::cluster_one_response(local, &result);
                        self.admin_answer_read(read.admin, response, now);
                    }
                }
                BridgeOutput::CallDone { request, result } => {
                    let Some(call) = self.remote_calls.remove(&request) else {
                        continue;
                    };
                    let response = admin::remote_call_response(&call.action, &result);
                    tracing::info!(
                        identity = call.identity,
                        action = call.action,
                        status = response.status,
                        "cluster CALL completed"
                    );
                    if let Some(Entry::Admin(a)) = self.sockets.get_mut(call.admin) {
                        if a.stage == AdminStage::Waiting {
                            self.admin_respond(call.admin, response, now);
                        }
                    }
                }
                BridgeOutput::Drained { request, result } => {
                    if self.drain_state == DrainState::Waiting(request) {
                        self.drain_state = DrainState::Done;
                    }
                    match result {
                        Ok(released) => tracing::info!(released, "left the cluster"),
                        Err(e) => tracing::warn!("drain: {e} (the claims expire with their TTL)"),
                    }
                }
                BridgeOutput::Execute(job) => {
                    let answer = JobAnswer::new(Arc::clone(&node), job.id);
                    let handle = self.shared.identities().get(job.identity.as_str()).copied();
                    match handle {
                        None => {
                            answer.complete(Err(CallFailure::NotConnected));
                        }
                        Some(Handle { loop_index, key }) if loop_index == self.index => {
                            self.run_job(key, job, answer, now)
                        }
                        Some(Handle { loop_index, key }) => self.shared.send(
                            loop_index,
                            LoopCommand::ClusterJob {
                                target: key,
                                job,
                                answer,
                            },
                        ),
                    }
                }
                BridgeOutput::Event(ClusterEvent::Superseded(lost)) => {
                    tracing::info!(
                        identity = lost.identity,
                        by_node = lost.by_node,
                        "superseded by another node"
                    );
                    let handle = self
                        .shared
                        .identities()
                        .get(lost.identity.as_str())
                        .copied();
                    if let Some(Handle { loop_index, key }) = handle {
                        self.shared.send(
                            loop_index,
                            LoopCommand::Superseded {
                                target: key,
                                ticket: lost.ticket,
                            },
                        );
                    }
                }
                other => tracing::debug!(?other, "cluster output"),
            }
        }
    }

    /// A forwarded command for the socket `target` of this loop: decode it with the charge
    /// point's version and send the CALL; the answer goes out on `CallCompleted` (or on
    /// close). Not sent (gone, closing, shutting down): `NotConnected`; not decodable for its
    /// version: `InvalidRequest`.
    pub(super) fn run_job(&mut self, target: Key, job: Job, answer: JobAnswer, now: Instant) {
        let shutting_down = self.shutdown_deadline.is_some();
        let Some(Entry::Ocpp(s)) = self.sockets.get_mut(target) else {
            answer.complete(Err(CallFailure::NotConnected));
            return;
        };
        let held = s.stage.is_open()
            && s.connection.is_open()
            && s.claim.is_some()
            && s.identity.as_ref().map(ChargePointIdentity::as_str) == Some(job.identity.as_str());
        let (true, false, Some(version)) = (held, shutting_down, s.version) else {
            answer.complete(Err(CallFailure::NotConnected));
            return;
        };
        // Decoded strictly, as on every node and every path (ocpp_proto::command_request).
        let request = match command_request(version, &job.action, &job.payload_json) {
            Ok(request) => request,
            Err(failure) => {
                answer.complete(Err(failure));
                return;
            }
        };
        let action = request.action();
        // The command's deadline goes with the CALL: still queued behind another then, it is
        // never written (the core's rule); written, its answer is due by then.
        let mut answer = answer;
        answer.sent = true;
        let deadline = now + job.timeout;
        match s.connection.call_for(
            now,
            request,
            Some(Box::new(Waiter::Job(answer))),
            Some(deadline),
        ) {
            Ok(id) => {
                if let Some(identity) = &s.identity {
                    self.shared.csms.on_call_sent(identity, action);
                    tracing::info!(%identity, action, %id, "cluster CALL sent");
                }
                self.service(target, now);
            }
            Err(Refused { reason, message }) => {
                let failure = CallFailure::from(reason);
                if let Some(identity) = &s.identity {
                    self.shared
                        .csms
                        .on_call_not_sent(identity, action, &failure);
                }
                if let Some(Waiter::Job(mut answer)) = message.1.map(|waiter| *waiter) {
                    answer.sent = false;
                    answer.complete(Err(failure));
                }
            }
        }
    }

    /// Another node claimed the identity of socket `target` (if it still holds `ticket`):
    /// out of the identity table, closed with 1008, its claim not released.
    pub(super) fn superseded(&mut self, target: Key, ticket: ClaimTicket, now: Instant) {
        let Some(Entry::Ocpp(s)) = self.sockets.get_mut(target) else {
            return;
        };
        if s.claim != Some(ticket) {
            return;
        }
        s.claim = None;
        if let Some(identity) = &s.identity {
            let handle = Handle {
                loop_index: self.index,
                key: target,
            };
            self.shared.identities().remove(identity, &handle);
            tracing::info!(%identity, "connected to another node: closing with 1008");
        }
        if s.stage.is_open() {
            s.connection.close_superseded(now, Superseded::OtherNode);
        }
        self.service(target, now);
    }

    /// The claim `ticket` of socket `target` is registered, or its attempt is over without
    /// Redis (then it stays pending): the 101 and what followed it go out now.
    pub(super) fn claimed(&mut self, target: Key, ticket: ClaimTicket, now: Instant) {
        let Some(Entry::Ocpp(s)) = self.sockets.get_mut(target) else {
            return;
        };
        if s.claim != Some(ticket) || !matches!(s.stage, SocketStage::Claiming { .. }) {
            return;
        }
        s.stage = SocketStage::Live;
        self.service(target, now);
    }

    /// Loop 0 during a shutdown: drain the cluster node once every charge point is gone (or
    /// shortly before the deadline).
    pub(super) fn cluster_shutdown_tick(&mut self, now: Instant) {
        let (Some(node), Some(deadline)) = (&self.shared.cluster, self.shutdown_deadline) else {
            return;
        };
        if self.index != 0 || self.drain_state != DrainState::Idle {
            return;
        }
        let reserve = deadline.checked_sub(DRAIN_RESERVE).unwrap_or(deadline);
        if !self.shared.identities().is_empty() && now < reserve {
            return;
        }
        let drained = node.bridge().drain();
        self.drain_state = match drained {
            Ok(request) => DrainState::Waiting(request),
            Err(e) => {
                tracing::warn!("drain: {e}");
                DrainState::Done
            }
        };
    }

    /// When loop 0 must look again whether it can drain.
    pub(super) fn drain_check_at(&self, now: Instant) -> Option<Instant> {
        let waiting = self.index == 0
            && self.shared.cluster.is_some()
            && self.shutdown_deadline.is_some()
            && self.drain_state == DrainState::Idle;
        waiting.then_some(now + DRAIN_CHECK)
    }

    /// Whether this loop may exit once its sockets are gone: loop 0 of a cluster node waits
    /// for the drain (bounded by the shutdown deadline).
    pub(super) fn cluster_done(&self) -> bool {
        if self.shared.cluster.is_none() {
            return true;
        }
        match self.drain_state {
            _ if self.index != 0 => true,
            DrainState::GaveUp | DrainState::Done => true,
            DrainState::Idle | DrainState::Waiting(_) => false,
        }
    }
}
