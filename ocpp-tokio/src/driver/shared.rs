//! What every connection task of one server shares: the handler, the registry, the tasks for
//! shutdown.

use std::collections::HashSet;
use std::io;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use ocpp_proto::{CloseCode, Connection, ConnectionConfig};
use tokio::sync::Notify;

use crate::charge_point::{CallReply, LinkCommand, LinkKey, TaskLink};
use crate::hook::{Hook, TlsErrorHook};
use crate::ChargePoints;

/// What every connection task of one server shares.
pub(crate) struct ServerShared<H> {
    pub(crate) handler: Arc<H>,
    pub(crate) config: Arc<ConnectionConfig>,
    pub(crate) registry: ChargePoints,
    pub(crate) hook: Option<Hook>,
    tls_error: Option<TlsErrorHook>,
    mailbox_capacity: usize,
    /// Every connection task, connected or not, for shutdown: its link, one pointer each.
    live: Mutex<HashSet<LinkKey>>,
    /// Set once shutdown began: new connections are closed with 1001 as soon as they open.
    pub(crate) draining: AtomicBool,
    /// Notified when the last task ends.
    all_gone: Notify,
}

impl<H> ServerShared<H> {
    pub(crate) fn new(
        handler: Arc<H>,
        config: Arc<ConnectionConfig>,
        registry: ChargePoints,
        hook: Option<Hook>,
        tls_error: Option<TlsErrorHook>,
        mailbox_capacity: usize,
    ) -> Self {
        ServerShared {
            handler,
            config,
            registry,
            hook,
            tls_error,
            mailbox_capacity,
            live: Mutex::new(HashSet::new()),
            draining: AtomicBool::new(false),
            all_gone: Notify::new(),
        }
    }

    /// The close code and reason of a graceful shutdown: 1001 (going away), or 1012 (service
    /// restart: the charge point reconnects, to another node) on a cluster node.
    pub(crate) fn shutdown_close(&self) -> (CloseCode, &'static str) {
        if self.registry.presence().is_some() {
            return (CloseCode::SERVICE_RESTART, "service restart");
        }
        (CloseCode::GOING_AWAY, "server shutting down")
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashSet<LinkKey>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A connection accepted at `now`, whichever way it is served: its core (its handshake
    /// deadline runs from now, a TLS handshake included) and its task's link, recorded for
    /// shutdown until [`discharge`](Self::discharge).
    pub(crate) fn admit(&self, now: Instant) -> (Connection<CallReply>, Arc<TaskLink>) {
        let conn = Connection::accept_incoming_with_callers(now, self.config.clone());
        let link = TaskLink::new(self.mailbox_capacity);
        self.live().insert(LinkKey(link.clone()));
        (conn, link)
    }

    /// The task of `link` ended.
    pub(crate) fn discharge(&self, link: &Arc<TaskLink>) {
        let mut live = self.live();
        live.remove(&LinkKey(link.clone()));
        if live.is_empty() {
            self.all_gone.notify_waiters();
        }
    }

    /// An admitted connection that ends before a driver took it (a shard could not take it,
    /// its TLS handshake failed): its link closed, its task gone.
    pub(crate) fn abandon(&self, link: &Arc<TaskLink>) {
        link.close();
        self.discharge(link);
    }

    /// The TLS handshake of `link`'s connection failed with `error` (the
    /// [`on_tls_error`](crate::ServerBuilder::on_tls_error) hook hears of it), or timed out
    /// (`None`): the connection is abandoned.
    pub(crate) fn tls_failed(&self, link: &Arc<TaskLink>, error: Option<&io::Error>) {
        match error {
            Some(error) => {
                tracing::debug!(%error, "TLS handshake failed");
                if let Some(hook) = &self.tls_error {
                    hook(error);
                }
            }
            None => tracing::debug!("TLS handshake timed out"),
        }
        self.abandon(link);
    }

    /// How many connection tasks run.
    pub(crate) fn tasks(&self) -> usize {
        self.live().len()
    }

    /// Sends `command` (close or abort) to every task.
    pub(crate) fn broadcast(&self, command: impl Fn() -> LinkCommand) {
        let links: Vec<Arc<TaskLink>> = self.live().iter().map(|e| e.0.clone()).collect();
        for link in links {
            let _ = link.push(command());
        }
    }

    /// Waits until no task runs, or `deadline`; returns whether none runs.
    pub(crate) async fn wait_all_gone(&self, deadline: tokio::time::Instant) -> bool {
        loop {
            let notified = self.all_gone.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.live().is_empty() {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.live().is_empty();
            }
        }
    }
}
