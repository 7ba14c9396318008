//! `--push-interval-ms`: a numbered DataTransfer ([`crate::csms::push`] builds it) to each
//! connected charge point every interval, from a task of its own started when it connects.
//!
//! One task per charge point rather than one ticker for all: the push is stamped when it is
//! built, so the stamp is only close to the moment the connection encodes it if nothing runs
//! in between. A push task hands its CALL to the connection and lets it run at once: on a
//! shard the connection is driven right there, on the pusher's thread (`ocpp_tokio`'s
//! `handing`); a task per connection is woken and run next (tokio's LIFO slot). A ticker
//! stamping 10,000 pushes in one go made the last ones wait for all the others (push p99
//! 322 ms at 10,000 charge points against 15 us for the peers, see BENCHMARKS.md). The push's
//! outcome goes back through `ChargePoint::call_raw_then`, run by the connection, so a pusher
//! wakes once per push, for its tick. The tasks exist only with `--push-interval-ms`, so an
//! idle server holds none; their timers start at connect time, so the pushes are spread like
//! the connects.

use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ocpp_tokio::ChargePoint;
use tokio::time::{sleep_until, Instant};

use super::handler::{call_ended, App};
use crate::csms::{push, Csms};

/// What a push's outcome needs, shared by all the pushes to one charge point.
struct Pushing {
    csms: Arc<Csms>,
    cp: ChargePoint,
    /// A push is unanswered.
    in_flight: AtomicBool,
}

impl Pushing {
    /// A push ended (run by the connection, [`ChargePoint::call_raw_then`]).
    fn ended(&self, outcome: &ocpp_server_core::CallOutcome) {
        call_ended(&self.csms, &self.cp, "DataTransfer", outcome);
        if outcome
            .as_ref()
            .is_err_and(|failure| !failure.may_have_reached_peer())
        {
            self.csms.metrics().pushes_skipped.inc();
        }
        self.in_flight.store(false, Ordering::Release);
    }
}

/// Pushes to `cp` until its connection is over. A tick while the previous push is
/// unanswered is skipped but takes its sequence number, so the skip shows as a gap (as
/// [`crate::csms::push::send_next`] does). The task wakes only for its ticks: each push's
/// outcome is handed to [`Pushing::ended`] by the connection itself.
pub(super) async fn pusher(app: &App, cp: ChargePoint, interval: Duration) {
    let pushing = Arc::new(Pushing {
        csms: Arc::clone(&app.csms),
        cp,
        in_flight: AtomicBool::new(false),
    });
    let mut next = Instant::now() + interval;
    let mut tick = pin!(sleep_until(next));
    let mut seq = 0u64;
    loop {
        tick.as_mut().await;
        // A late tick (a busy thread) moves the ones after it, as `MissedTickBehavior::Delay`.
        next = (next + interval).max(Instant::now());
        tick.as_mut().reset(next);
        let cp = &pushing.cp;
        if !cp.is_connected() {
            return;
        }
        seq += 1;
        if pushing.in_flight.swap(true, Ordering::AcqRel) {
            pushing.csms.metrics().pushes_skipped.inc();
            continue;
        }
        let request = push::data_transfer(cp.version(), seq, push::unix_nanos_now());
        let ended = Arc::clone(&pushing);
        cp.call_raw_then(request, move |outcome| ended.ended(&outcome));
    }
}
