//! Counters and gauges, lock-free, rendered in the Prometheus text format (version 0.0.4).

use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use super::admin_auth::AdminRefused;

/// A monotonically increasing count.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds one.
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// The current value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A value that goes up and down.
#[derive(Debug, Default)]
pub struct Gauge(AtomicI64);

impl Gauge {
    /// Adds one.
    pub fn inc(&self) {
        self.add(1);
    }

    /// Subtracts one.
    pub fn dec(&self) {
        self.add(-1);
    }

    /// Adds `n` (negative to subtract).
    pub fn add(&self, n: i64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// Sets the value (a count another structure keeps, e.g. the boot admission's).
    pub fn set(&self, n: i64) {
        self.0.store(n, Ordering::Relaxed);
    }

    /// The current value.
    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A count kept by another layer, read when the metrics are rendered.
#[derive(Default)]
pub struct CountSource(std::sync::OnceLock<Box<dyn Fn() -> usize + Send + Sync>>);

impl CountSource {
    /// Where the count comes from (set once; later calls are ignored).
    pub fn set(&self, source: impl Fn() -> usize + Send + Sync + 'static) {
        let _ = self.0.set(Box::new(source));
    }

    /// The count now (0 when not set).
    pub fn get(&self) -> usize {
        self.0.get().map_or(0, |source| source())
    }
}

impl std::fmt::Debug for CountSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CountSource").field(&self.get()).finish()
    }
}

/// What `GET /metrics` reports. The application ([`super::Csms`]) counts OCPP things; the I/O
/// loop counts sockets.
///
/// ```
/// use ocpp_reference_csms::Metrics;
/// let metrics = Metrics::default();
/// metrics.messages_in.inc();
/// assert!(metrics.render().contains("ocpp_messages_in_total 1\n"));
/// ```
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Metrics {
    /// TCP connections accepted (I/O loop).
    pub sockets_accepted: Counter,
    /// Connections the accept loop kept waiting in the listen backlog at the accept rate
    /// (`--accept-rate`): found waiting when it resumed after a pause for the next slot
    /// (I/O loop).
    pub accepts_deferred: Counter,
    /// TCP connections open now, in any state (I/O loop).
    pub sockets_open: Gauge,
    /// Open TCP connections that another layer counts, added to `sockets_open` when rendered
    /// (tokio-server: those `ocpp-tokio` serves).
    pub sockets_open_elsewhere: CountSource,
    /// WebSocket sessions opened since start.
    pub sessions_total: Counter,
    /// Charge points with an open session now.
    pub charge_points_connected: Gauge,
    /// Upgrades refused by the application (401...).
    pub upgrades_rejected: Counter,
    /// OCPP messages received: CALLs, SENDs, answers to our CALLs.
    pub messages_in: Counter,
    /// OCPP messages sent: answers to CALLs, our CALLs.
    pub messages_out: Counter,
    /// CALLERRORs we answered with.
    pub call_errors_sent: Counter,
    /// CALLERRORs (or unreadable CALLRESULTs) the charge points answered our CALLs with.
    pub call_errors_received: Counter,
    /// Our CALLs that got no answer in time.
    pub call_timeouts: Counter,
    /// Our CALLs awaiting an answer (in flight or queued).
    pub calls_pending: Gauge,
    /// Connections ended because the peer broke RFC 6455.
    pub protocol_errors: Counter,
    /// TLS connections ended by a TLS error: a failed handshake (no client certificate, an
    /// untrusted one, no common version) or a bad record (I/O loop).
    pub tls_failures: Counter,
    /// Push CALLs (`--push-interval-ms`) skipped because the previous one was unanswered (each
    /// still takes its sequence number, so the charge point sees the gap).
    pub pushes_skipped: Counter,
    /// Admin HTTP requests served.
    pub admin_requests: Counter,
    /// OCPP 2.x TransactionEvent seqNo gaps and repeats noticed (events lost or sent again).
    pub seq_no_gaps: Counter,
    /// SignCertificate requests answered Accepted: a CSR signed by the CA.
    pub certificates_signed: Counter,
    /// SignCertificate requests answered Rejected (no CA, or a CSR that failed a check).
    pub certificate_requests_rejected: Counter,
    /// Peer CALLs handed to the application.
    pub calls_received: Counter,
    /// Answers to peer CALLs taken by their connection (mio-server's I/O loop): with
    /// `calls_unanswered_at_close`, every received CALL is counted once.
    pub calls_answered: Counter,
    /// Peer CALLs left unanswered when their connection ended (`Closed::unanswered_incoming`).
    pub calls_unanswered_at_close: Counter,
    /// Our CALLs sent (admin commands, pushes).
    pub calls_sent: Counter,
    /// Connections ended because the handshake did not finish in time.
    pub handshake_timeouts: Counter,
    /// Upgrades refused 401 that carried Basic credentials (a wrong password, a user that is
    /// not the identity, an unknown identity): `ocpp_auth_failures_total`.
    pub auth_failures: Counter,
    /// Upgrades answered 429 by the failed-attempt limit: `ocpp_auth_throttled_total`.
    pub auth_throttled: Counter,
    /// BootNotifications answered Pending because the boot rate was reached
    /// ([`CsmsConfig::boot_rate`](crate::CsmsConfig::boot_rate)).
    pub boots_deferred: Counter,
    /// Charge points answered Pending by the boot rate that have not booted again.
    pub boots_waiting: Gauge,
    /// Admin requests and connections refused, by [`AdminRefused`]:
    /// `ocpp_admin_refused_total{reason="..."}`.
    admin_refused: [Counter; AdminRefused::ALL.len()],
}

/// One metric in the Prometheus text format: its HELP and TYPE (`counter`, `gauge`) lines,
/// then its value.
fn write_metric(out: &mut String, kind: &str, name: &str, help: &str, value: impl fmt::Display) {
    let _ = write!(
        out,
        "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"
    );
}

impl Metrics {
    /// The counter of admin refusals for `reason`.
    pub fn admin_refused(&self, reason: AdminRefused) -> &Counter {
        &self.admin_refused[reason.index()]
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(2048);
        let mut counter = |name: &str, help: &str, value: u64| {
            write_metric(&mut out, "counter", name, help, value)
        };
        counter(
            "ocpp_sockets_accepted_total",
            "TCP connections accepted.",
            self.sockets_accepted.get(),
        );
        counter(
            "ocpp_accepts_deferred_total",
            "Connections kept waiting in the listen backlog by the accept rate.",
            self.accepts_deferred.get(),
        );
        counter(
            "ocpp_sessions_total",
            "WebSocket sessions opened.",
            self.sessions_total.get(),
        );
        counter(
            "ocpp_upgrades_rejected_total",
            "Upgrade requests refused (e.g. 401).",
            self.upgrades_rejected.get(),
        );
        counter(
            "ocpp_messages_in_total",
            "OCPP messages received.",
            self.messages_in.get(),
        );
        counter(
            "ocpp_messages_out_total",
            "OCPP messages sent.",
            self.messages_out.get(),
        );
        counter(
            "ocpp_call_errors_sent_total",
            "CALLERRORs sent.",
            self.call_errors_sent.get(),
        );
        counter(
            "ocpp_call_errors_received_total",
            "CALLERRORs or invalid CALLRESULTs received.",
            self.call_errors_received.get(),
        );
        counter(
            "ocpp_boots_deferred_total",
            "BootNotifications answered Pending because the boot rate was reached.",
            self.boots_deferred.get(),
        );
        counter(
            "ocpp_call_timeouts_total",
            "CALLs of ours that timed out.",
            self.call_timeouts.get(),
        );
        counter(
            "ocpp_protocol_errors_total",
            "Connections ended by a WebSocket protocol error.",
            self.protocol_errors.get(),
        );
        counter(
            "ocpp_tls_failures_total",
            "TLS connections ended by a failed handshake or a bad record.",
            self.tls_failures.get(),
        );
        counter(
            "ocpp_transaction_seq_no_gaps_total",
            "TransactionEvent seqNo gaps and repeats noticed (OCPP 2.x E).",
            self.seq_no_gaps.get(),
        );
        counter(
            "ocpp_certificates_signed_total",
            "SignCertificate requests Accepted (CSR signed by the CA).",
            self.certificates_signed.get(),
        );
        counter(
            "ocpp_certificate_requests_rejected_total",
            "SignCertificate requests Rejected.",
            self.certificate_requests_rejected.get(),
        );
        counter(
            "ocpp_pushes_skipped_total",
            "Push CALLs skipped while the previous CALL was unanswered.",
            self.pushes_skipped.get(),
        );
        counter(
            "ocpp_admin_requests_total",
            "Admin HTTP requests.",
            self.admin_requests.get(),
        );
        for (name, help, value) in [
            (
                "ocpp_calls_received_total",
                "Peer CALLs received.",
                &self.calls_received,
            ),
            (
                "ocpp_calls_answered_total",
                "Peer CALLs answered.",
                &self.calls_answered,
            ),
            (
                "ocpp_calls_unanswered_at_close_total",
                "Peer CALLs unanswered when their connection ended.",
                &self.calls_unanswered_at_close,
            ),
            (
                "ocpp_calls_sent_total",
                "CALLs of ours sent.",
                &self.calls_sent,
            ),
            (
                "ocpp_handshake_timeouts_total",
                "Handshakes that did not finish in time.",
                &self.handshake_timeouts,
            ),
            (
                "ocpp_auth_failures_total",
                "Upgrades refused 401 with Basic credentials that did not match.",
                &self.auth_failures,
            ),
            (
                "ocpp_auth_throttled_total",
                "Upgrades answered 429 by the failed-attempt limit.",
                &self.auth_throttled,
            ),
        ] {
            counter(name, help, value.get());
        }
        let name = "ocpp_admin_refused_total";
        let _ = write!(
            out,
            "# HELP {name} Admin requests and connections refused, by reason.\n# TYPE {name} counter\n"
        );
        for reason in AdminRefused::ALL {
            let _ = writeln!(
                out,
                "{name}{{reason=\"{}\"}} {}",
                reason.label(),
                self.admin_refused(reason).get()
            );
        }
        let mut gauge =
            |name: &str, help: &str, value: i64| write_metric(&mut out, "gauge", name, help, value);
        gauge(
            "ocpp_boots_waiting",
            "Charge points answered Pending by the boot rate, not booted again yet.",
            self.boots_waiting.get(),
        );
        gauge(
            "ocpp_sockets_open",
            "TCP connections open.",
            self.sockets_open.get() + self.sockets_open_elsewhere.get() as i64,
        );
        gauge(
            "ocpp_charge_points_connected",
            "Charge points with an open session.",
            self.charge_points_connected.get(),
        );
        gauge(
            "ocpp_calls_pending",
            "CALLs of ours awaiting an answer.",
            self.calls_pending.get(),
        );
        out
    }
}
