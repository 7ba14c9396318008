//! `--push-interval-ms`: a numbered DataTransfer ([`ocpp_reference_csms::push`] builds it) to every
//! connected charge point every interval, as mio-server's loop does: one task, one tick for
//! all ([`ticker`]).
//!
//! Each push is stamped as it is built, right before it is handed to its connection, and the
//! connection runs at once: on a shard it is driven right there, on the ticker's thread
//! (`ocpp_tokio`'s `handing`), so a push is written before the next is built. With a task
//! per connection (`--shards 0`) the connection's task must run instead, so the ticker yields
//! after every push (tokio runs the task just woken next, its LIFO slot); on shards it yields
//! every [`SHARD_BURST`] pushes, so that the shard reads the answers between bursts. Before
//! this, a ticker handing 10,000 pushes to their tasks in one go made the last ones wait for
//! all the others (push p99 322 ms at 10,000 charge points against 15 us for the peers, see
//! BENCHMARKS.md), and a task per charge point woke twice per push.
//!
//! A push's outcome goes back through `ChargePoint::call_raw_then`, run by the connection:
//! nothing waits for it. The ticker exists only with `--push-interval-ms`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ocpp_tokio::ChargePoint;
use tokio::sync::mpsc;
use tokio::time::{sleep_until, Instant};

use ocpp_reference_csms::{push, Csms};

/// Pushes handed over between two yields of the ticker on shards.
const SHARD_BURST: usize = 64;

/// One charge point the ticker pushes to.
struct Pushing {
    /// The last push's sequence number (skipped ones included).
    seq: u64,
    /// What a push's outcome needs: one reference count per push.
    to: Arc<PushTarget>,
}

/// The charge point a [`Pushing`] pushes to, shared with its pushes' outcome functions.
struct PushTarget {
    csms: Arc<Csms>,
    cp: ChargePoint,
    /// A push is unanswered ([`PushTarget::ended`] clears it).
    in_flight: AtomicBool,
}

impl Pushing {
    /// Pushes, or skips a push while the last one is unanswered (its number is taken, so the
    /// skip shows as a gap: [`ocpp_reference_csms::push::tick`]).
    fn tick(&mut self) {
        let to = &self.to;
        let busy = to.in_flight.swap(true, Ordering::AcqRel);
        let Some(request) = push::tick(&to.csms, to.cp.version(), &mut self.seq, busy) else {
            return;
        };
        let ended = Arc::clone(to);
        to.cp
            .call_raw_then(request, move |outcome| ended.ended(&outcome));
    }
}

impl PushTarget {
    /// A push ended (run by the connection).
    fn ended(&self, outcome: &ocpp_proto::CallOutcome) {
        self.csms
            .on_call_outcome(self.cp.identity(), "DataTransfer", outcome);
        if outcome
            .as_ref()
            .is_err_and(|failure| !failure.may_have_reached_peer())
        {
            push::refused(&self.csms);
        }
        self.in_flight.store(false, Ordering::Release);
    }
}

/// The ticker's side of `--push-interval-ms`: started with the server, fed each charge
/// point as it connects ([`Pushes::add`]).
#[derive(Debug)]
pub(super) struct Pushes {
    arrivals: mpsc::UnboundedSender<ChargePoint>,
}

impl Pushes {
    /// Starts the ticker (inside the runtime). `shards`: the server's (0, a task per
    /// connection, makes the ticker yield after every push).
    pub(super) fn start(csms: Arc<Csms>, interval: Duration, shards: usize) -> Self {
        let (arrivals, incoming) = mpsc::unbounded_channel();
        let burst = if shards == 0 { 1 } else { SHARD_BURST };
        tokio::spawn(ticker(csms, incoming, interval, burst));
        Pushes { arrivals }
    }

    /// Pushes to `cp` from the next tick on, until its connection is over.
    pub(super) fn add(&self, cp: ChargePoint) {
        let _ = self.arrivals.send(cp);
    }
}

/// Every `interval`: a push to each charge point connected, `burst` at a time between
/// yields. Ends once the server is gone (`incoming` closed) and its charge points with it.
async fn ticker(
    csms: Arc<Csms>,
    mut incoming: mpsc::UnboundedReceiver<ChargePoint>,
    interval: Duration,
    burst: usize,
) {
    let mut pushing: Vec<Pushing> = Vec::new();
    let mut next = Instant::now() + interval;
    let mut open = true;
    loop {
        sleep_until(next).await;
        // A late tick (a busy thread) moves the ones after it, as `MissedTickBehavior::Delay`.
        next = (next + interval).max(Instant::now());
        while open {
            match incoming.try_recv() {
                Ok(cp) => pushing.push(Pushing {
                    seq: 0,
                    to: Arc::new(PushTarget {
                        csms: Arc::clone(&csms),
                        cp,
                        in_flight: AtomicBool::new(false),
                    }),
                }),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => open = false,
            }
        }
        pushing.retain(|p| p.to.cp.is_connected());
        if !open && pushing.is_empty() {
            return;
        }
        for (n, charge_point) in pushing.iter_mut().enumerate() {
            charge_point.tick();
            if (n + 1) % burst == 0 {
                tokio::task::yield_now().await;
            }
        }
    }
}
