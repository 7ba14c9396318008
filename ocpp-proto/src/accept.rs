//! What a server's accept loop does when `accept` fails, and how fast it accepts, decided
//! once for every driver (the mio loop, uring-server's ring, ocpp-tokio's server, the admin
//! listeners).
//!
//! # Accept errors
//! Out of descriptors or memory (`EMFILE`, `ENFILE`, `ENOMEM`, `ENOBUFS`), accepting again at
//! once would spin: the kernel keeps the connection in the listen backlog, and the loop waits
//! [`ACCEPT_RETRY`] before it tries again. Anything else concerns the one connection that was
//! being accepted (reset or aborted before it was taken, a protocol error): the loop goes on
//! at once with the next.
//!
//! # The accept rate
//! After a node or Redis outage, tens of thousands of charge points reconnect at once, and
//! every handshake (TLS above all) costs CPU that the charge points already connected are
//! waiting for. With an [`AcceptRate`], a loop accepts at most `burst` connections at once and
//! then one per slot of `1 / rate` seconds ([`AcceptPacer`], a generic cell rate algorithm;
//! the caller passes the time in, there is no clock here). Over the rate the loop does not call
//! `accept` at all until the instant [`AcceptPacer::next_accept`] names, which it sleeps to.
//!
//! Meanwhile the connections wait in the kernel's listen backlog, where they cost no
//! handshake, no task and no descriptor: the kernel completes their TCP handshake and queues
//! them, in arrival order, and the loop takes them one slot at a time. When the backlog is
//! full (the listen queue length the server asked for, capped by `net.core.somaxconn`), Linux
//! drops what it has no room for, without a reset (`net.ipv4.tcp_abort_on_overflow` is 0 by
//! default): a new SYN, which the client retransmits with its own exponential back-off (1 s,
//! 2 s, 4 s...), or the final ACK of a handshake, whose SYN-ACK the server retransmits later.
//! Nothing is refused: the client only waits longer, and its TCP stack spreads the retries.
//! That is what we want, and why the loop does not accept-then-close (or answer 503) past the
//! rate: a refusal costs the accept, the TLS handshake and the HTTP upgrade that the rate is
//! there to save, and it tells every charge point at once that the server is up but busy, so
//! that they retry together, on their own back-off that often starts again small, in a herd.
//! A slow accept is the back-pressure TCP already has.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use ocpp_proto::accept::{AcceptPacer, AcceptRate};
//!
//! // 20 a second, 5 at once.
//! let mut pacer = AcceptPacer::new(AcceptRate::new(20, 5));
//! let start = Instant::now();
//! let mut accepted = 0;
//! let mut now = start;
//! while accepted < 60 {
//!     match pacer.next_accept(now) {
//!         None => {
//!             // listener.accept() here
//!             pacer.accepted(now);
//!             accepted += 1;
//!         }
//!         // Leave the others in the backlog; sleep until `at`.
//!         Some(at) => now = at,
//!     }
//! }
//! // 5 at once, then 55 slots of 50 ms.
//! assert_eq!(now - start, Duration::from_millis(2_750));
//! ```

use std::io;
use std::time::{Duration, Instant};

/// How long an accept loop waits after running out of descriptors or memory.
pub const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// What to do after a failed `accept` ([`after_accept_error`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcceptRetry {
    /// Try the next connection at once (the error was that one connection's).
    Now,
    /// Wait this long before accepting again (out of descriptors or memory; the connection
    /// waits in the backlog).
    After(Duration),
}

/// What an accept loop does after `error` (a `WouldBlock` is not an error here: the caller
/// waits for readiness as usual).
///
/// ```
/// use std::io;
/// use ocpp_proto::accept::{after_accept_error, AcceptRetry, ACCEPT_RETRY};
///
/// let emfile = io::Error::from_raw_os_error(24);
/// assert_eq!(after_accept_error(&emfile), AcceptRetry::After(ACCEPT_RETRY));
/// let aborted = io::Error::from(io::ErrorKind::ConnectionAborted);
/// assert_eq!(after_accept_error(&aborted), AcceptRetry::Now);
/// ```
pub fn after_accept_error(error: &io::Error) -> AcceptRetry {
    if is_resource_exhaustion(error) {
        AcceptRetry::After(ACCEPT_RETRY)
    } else {
        AcceptRetry::Now
    }
}

/// Out of descriptors or memory: accepting again at once would spin.
fn is_resource_exhaustion(error: &io::Error) -> bool {
    if error.kind() == io::ErrorKind::OutOfMemory {
        return true;
    }
    // The Linux numbers (the servers run there); other systems fall back to `OutOfMemory`.
    matches!(
        error.raw_os_error(),
        Some(23 /* ENFILE */ | 24 /* EMFILE */ | 12 /* ENOMEM */ | 105 /* ENOBUFS */)
    )
}

/// How fast an accept loop takes new connections: `per_second` a second, up to `burst` at
/// once (see the [module documentation](self) for why the others are left in the backlog).
///
/// ```
/// use ocpp_proto::accept::AcceptRate;
///
/// // 500 handshakes a second, 100 at once: 20,000 charge points back after an outage are
/// // all accepted within about 40 s, in the order the kernel queued them.
/// let rate = AcceptRate::new(500, 100);
/// assert_eq!((rate.per_second(), rate.burst()), (500, 100));
/// assert_eq!(AcceptRate::new(0, 0), AcceptRate::new(1, 1));
/// ```
pub type AcceptRate = crate::Rate;

/// The state of one accept loop under an [`AcceptRate`]: a generic cell rate algorithm (the
/// theoretical arrival time of the next slot; `burst` slots may be taken ahead). It holds no
/// clock: the loop passes `now` in, asks [`next_accept`](Self::next_accept) before it calls
/// `accept`, and reports each connection it took with [`accepted`](Self::accepted).
///
/// In any window of `t` seconds it lets at most `burst + rate * t` connections through, and
/// it never makes a loop wait when the connections come slower than the rate.
///
/// ```
/// use std::time::{Duration, Instant};
/// use ocpp_proto::accept::{AcceptPacer, AcceptRate};
///
/// let mut pacer = AcceptPacer::new(AcceptRate::new(10, 2));
/// let now = Instant::now();
/// for _ in 0..2 {
///     assert_eq!(pacer.next_accept(now), None); // accept
///     pacer.accepted(now);
/// }
/// // The burst is used: the next slot is 100 ms later.
/// assert_eq!(pacer.next_accept(now), Some(now + Duration::from_millis(100)));
/// ```
#[derive(Debug, Clone)]
pub struct AcceptPacer {
    /// The time between two slots (rounded up to the nanosecond: never faster than the rate).
    interval: Duration,
    /// How far ahead of now slots may be taken: `interval * (burst - 1)`.
    tolerance: Duration,
    /// When the next slot is free; `None` before the first accept.
    next_slot: Option<Instant>,
}

impl AcceptPacer {
    /// The pacer of the one loop that accepts at `rate`.
    pub fn new(rate: AcceptRate) -> Self {
        AcceptPacer::one_of(rate, 1)
    }

    /// The pacer of one of `loops` loops that share `rate` (each its own listener on one port,
    /// `SO_REUSEPORT`): each gets `1 / loops` of the rate and of the burst (at least one
    /// connection at once), so that together they accept at about `rate`.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use ocpp_proto::accept::{AcceptPacer, AcceptRate};
    ///
    /// let mut pacer = AcceptPacer::one_of(AcceptRate::new(100, 10), 4);
    /// let now = Instant::now();
    /// for _ in 0..3 {
    ///     pacer.accepted(now); // a burst of 3 (10 / 4, rounded up)
    /// }
    /// assert_eq!(pacer.next_accept(now), Some(now + Duration::from_millis(40)));
    /// ```
    pub fn one_of(rate: AcceptRate, loops: usize) -> Self {
        let loops = u32::try_from(loops.max(1)).unwrap_or(u32::MAX);
        let interval = rate.interval_of(loops);
        let burst = rate.burst().div_ceil(loops).max(1);
        AcceptPacer {
            interval,
            tolerance: interval * (burst - 1),
            next_slot: None,
        }
    }

    /// `None` when a connection may be accepted at `now`; else the instant before which the
    /// loop leaves connections in the listen backlog (it sleeps until then, or until another
    /// deadline of its own, and asks again).
    pub fn next_accept(&self, now: Instant) -> Option<Instant> {
        let next_slot = self.next_slot?;
        let admissible = next_slot.checked_sub(self.tolerance).unwrap_or(now);
        (admissible > now).then_some(admissible)
    }

    /// A connection was accepted at `now`: it takes the next slot. Call it for every
    /// connection taken from the listener (even one accepted while
    /// [`next_accept`](Self::next_accept) said to wait, e.g. by a multishot accept already in
    /// flight), so that the rate holds over time.
    pub fn accepted(&mut self, now: Instant) {
        let slot = self.next_slot.map_or(now, |next| next.max(now));
        self.next_slot = Some(slot + self.interval);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exhaustion_waits_anything_else_goes_on() {
        for errno in [12, 23, 24, 105] {
            let error = io::Error::from_raw_os_error(errno);
            assert_eq!(
                after_accept_error(&error),
                AcceptRetry::After(ACCEPT_RETRY),
                "{errno}"
            );
        }
        for kind in [
            io::ErrorKind::ConnectionAborted,
            io::ErrorKind::ConnectionReset,
            io::ErrorKind::Interrupted,
        ] {
            assert_eq!(after_accept_error(&io::Error::from(kind)), AcceptRetry::Now);
        }
        let oom = io::Error::from(io::ErrorKind::OutOfMemory);
        assert_eq!(after_accept_error(&oom), AcceptRetry::After(ACCEPT_RETRY));
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A loop that accepts every connection as soon as the pacer lets it: the instants of its
    /// accepts, for connections arriving at `arrivals` (offsets from `start`, sorted).
    fn accept_times(
        pacer: &mut AcceptPacer,
        start: Instant,
        arrivals: &[Duration],
    ) -> Vec<Instant> {
        let mut now = start;
        let mut times = Vec::with_capacity(arrivals.len());
        for &arrival in arrivals {
            now = now.max(start + arrival);
            if let Some(at) = pacer.next_accept(now) {
                assert!(at > now, "a wait must end in the future");
                now = at;
                assert_eq!(pacer.next_accept(now), None, "the slot it named is free");
            }
            pacer.accepted(now);
            times.push(now);
        }
        times
    }

    #[test]
    fn a_storm_is_taken_burst_first_then_one_per_slot() {
        let start = Instant::now();
        let mut pacer = AcceptPacer::new(AcceptRate::new(20, 5));
        let times = accept_times(&mut pacer, start, &[Duration::ZERO; 60]);
        assert!(times[..5].iter().all(|&t| t == start));
        for (i, &t) in times.iter().enumerate().skip(5) {
            assert_eq!(t - start, ms(50) * (i as u32 - 4), "accept {i}");
        }
        assert_eq!(*times.last().unwrap() - start, ms(2_750));
    }

    #[test]
    fn below_the_rate_a_loop_never_waits() {
        let start = Instant::now();
        let mut pacer = AcceptPacer::new(AcceptRate::new(10, 1));
        for i in 0..100 {
            let now = start + ms(100) * i;
            assert_eq!(pacer.next_accept(now), None, "{i}");
            pacer.accepted(now);
        }
        // A quiet spell fills the burst again, and no more than the burst.
        let mut pacer = AcceptPacer::new(AcceptRate::new(10, 3));
        let later = start + Duration::from_secs(60);
        pacer.accepted(start);
        for _ in 0..3 {
            assert_eq!(pacer.next_accept(later), None);
            pacer.accepted(later);
        }
        assert_eq!(pacer.next_accept(later), Some(later + ms(100)));
    }

    #[test]
    fn loops_sharing_a_rate_accept_about_the_rate_together() {
        let start = Instant::now();
        let rate = AcceptRate::new(20, 5);
        let mut total = 0;
        for _ in 0..3 {
            let mut pacer = AcceptPacer::one_of(rate, 3);
            // Each loop: 2 at once (5 / 3 rounded up), then one per 150 ms.
            let times = accept_times(&mut pacer, start, &[Duration::ZERO; 100]);
            total += times.iter().filter(|&&t| t <= start + ms(3_000)).count();
        }
        // One loop alone: 5 + 20 * 3 = 65 in 3 s; three loops: 3 * (2 + 20) = 66.
        assert_eq!(total, 66);
        assert_eq!(AcceptPacer::one_of(rate, 0).interval, ms(50));
    }

    #[test]
    fn an_accept_taken_while_waiting_still_counts() {
        // A multishot accept in flight can deliver past the rate: the next slots move on.
        let start = Instant::now();
        let mut pacer = AcceptPacer::new(AcceptRate::new(10, 1));
        for _ in 0..5 {
            pacer.accepted(start);
        }
        assert_eq!(pacer.next_accept(start), Some(start + ms(500)));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// In any window of `t` seconds, at most `burst + rate * t` accepts.
        #[test]
        fn never_more_than_burst_plus_rate_times_t(
            per_second in 1u32..2_000,
            burst in 1u32..50,
            loops in 1usize..4,
            mut arrivals in proptest::collection::vec(0u64..3_000_000_000, 1..200),
        ) {
            arrivals.sort_unstable();
            let arrivals: Vec<Duration> = arrivals.into_iter().map(Duration::from_nanos).collect();
            let start = Instant::now();
            let mut pacer = AcceptPacer::one_of(AcceptRate::new(per_second, burst), loops);
            let times = accept_times(&mut pacer, start, &arrivals);
            // One loop's share: per_second / loops, burst / loops rounded up.
            let rate = f64::from(per_second) / loops as f64;
            let burst = burst.div_ceil(loops as u32) as f64;
            for i in 0..times.len() {
                for j in i..times.len() {
                    let count = (j - i + 1) as f64;
                    let window = (times[j] - times[i]).as_secs_f64();
                    proptest::prop_assert!(
                        count <= burst + rate * window + 1e-6,
                        "{} accepts in {window} s", count
                    );
                }
            }
            // And every connection was accepted, none later than the rate makes it.
            let last = *times.last().unwrap() - start;
            let bound = arrivals.last().unwrap().as_secs_f64()
                + arrivals.len() as f64 / rate + 1e-6;
            proptest::prop_assert!(last.as_secs_f64() <= bound);
        }
    }
}
