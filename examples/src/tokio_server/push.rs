//! `--push-interval-ms`: every tick, a numbered DataTransfer to each connected charge point
//! whose previous push was answered ([`crate::csms::push`] builds it).

use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use ocpp_tokio::ChargePoint;
use tokio::sync::watch;
use tokio::time::{interval_at, Instant, MissedTickBehavior};

use super::handler::{App, Ended};
use crate::csms::push;

/// Pushes until shutdown. The pushes waiting for their answers are futures of this one task
/// (no task per push): each is a `ChargePoint::call_raw` on the charge point's handle.
pub(super) async fn ticker(app: Arc<App>, interval: Duration, mut stop: watch::Receiver<bool>) {
    let mut ticker = interval_at(Instant::now() + interval, interval);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut pending = FuturesUnordered::new();
    let mut answered: Vec<ChargePoint> = Vec::new();
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                for (cp, seq) in app.push_targets(&mut answered) {
                    pending.push(push_one(Arc::clone(&app), cp, seq));
                }
            }
            Some(cp) = pending.next(), if !pending.is_empty() => answered.push(cp),
            _ = stop.changed() => return,
        }
    }
}

/// One push: built (and stamped) when first polled, right after the tick.
async fn push_one(app: Arc<App>, cp: ChargePoint, seq: u64) -> ChargePoint {
    let request = push::data_transfer(cp.version(), seq, push::unix_nanos_now());
    let result = cp.call_raw(request).await;
    if let Ended::NotSent(_) = app.call_ended(&cp, "DataTransfer", result) {
        app.csms.metrics().pushes_skipped.inc();
    }
    cp
}
