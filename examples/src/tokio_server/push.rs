//! `--push-interval-ms`: a numbered DataTransfer ([`crate::csms::push`] builds it) to each
//! connected charge point every interval, from a task of its own started when it connects.
//!
//! One task per charge point rather than one ticker for all: the push is stamped when it is
//! built, and `ChargePoint::call_raw` takes it built, so the stamp is only close to the
//! moment the connection's task encodes it if nothing runs in between. A push task wakes the
//! connection's task and yields to it at once (tokio runs the task just woken next); a
//! ticker stamping 10,000 pushes in one go made the last ones wait for all the others (push
//! p99 322 ms at 10,000 charge points against 15 us for the peers, see BENCHMARKS.md). The
//! tasks exist only with `--push-interval-ms`, so an idle server holds none; their timers
//! start at connect time, so the pushes are spread like the connects.

use std::pin::pin;
use std::time::Duration;

use futures_util::future::{Fuse, FusedFuture, FutureExt};
use ocpp_tokio::ChargePoint;
use tokio::time::{interval_at, Instant, MissedTickBehavior};

use super::handler::{call_ended, App};
use crate::csms::push;

/// Pushes to `cp` until its connection is over. A tick while the previous push is
/// unanswered is skipped but takes its sequence number, so the skip shows as a gap (as
/// [`crate::csms::push::send_next`] does).
pub(super) async fn pusher(app: &App, cp: ChargePoint, interval: Duration) {
    let mut ticker = interval_at(Instant::now() + interval, interval);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut seq = 0u64;
    let mut call = pin!(Fuse::terminated());
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                if !cp.is_connected() {
                    return;
                }
                seq += 1;
                if call.is_terminated() {
                    let request = push::data_transfer(cp.version(), seq, push::unix_nanos_now());
                    call.set(cp.call_raw(request).fuse());
                } else {
                    app.csms.metrics().pushes_skipped.inc();
                }
            }
            outcome = &mut call => {
                call_ended(&app.csms, &cp, "DataTransfer", &outcome);
                if outcome.is_err_and(|failure| !failure.may_have_reached_peer()) {
                    app.csms.metrics().pushes_skipped.inc();
                    if !cp.is_connected() {
                        return;
                    }
                }
            }
        }
    }
}
