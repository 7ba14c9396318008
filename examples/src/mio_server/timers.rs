//! Every connection's next deadline in one min-heap, whose top is the poll timeout.
//!
//! Lazy deletion: an entry is never removed from the middle of the heap. Each connection
//! remembers the deadline of its earliest live entry (`scheduled`); a new deadline is pushed
//! only when it is *earlier* than that. A later deadline (the common case: the idle or ping
//! timer moved forward after a message) pushes nothing; when the old, earlier entry comes up,
//! the connection's `handle_timeout` is called early (harmless, the core checks its own
//! timers) and its real deadline is scheduled then. So the heap holds about one entry per
//! connection, and an entry whose key or deadline no longer matches is skipped when popped.
//! Before the loop sleeps, it takes such entries off the heap's top, and moves a connection's
//! early entry to its real deadline ([`TimerHeap::settle`]), so that neither wakes it.
//!
//! Compact: the loop's instants are kept as [`Moment`]s, milliseconds after the heap's epoch
//! in 8 bytes where an `Instant` takes 16. A heap entry is 16 bytes (24 with an `Instant`),
//! and the socket record's three instants save 24 bytes: at 10,000 charge points, about
//! 37 bytes each.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::num::NonZeroU64;
use std::time::{Duration, Instant};

use super::slab::Key;

/// An instant of the loop: milliseconds after the [`TimerHeap`]'s epoch, plus one (so that
/// `Option<Moment>` is 8 bytes). A `u64` of milliseconds lasts 584 million years.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Moment(NonZeroU64);

impl Moment {
    /// `millis` after the epoch (saturating: 584 million years are never reached).
    fn from_millis(millis: u128) -> Moment {
        let millis = u64::try_from(millis).unwrap_or(u64::MAX);
        Moment(NonZeroU64::MIN.saturating_add(millis))
    }

    fn millis(self) -> u64 {
        self.0.get() - 1
    }
}

/// What [`TimerHeap::settle`] is told of an entry at the heap's top.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// Its owner is gone, or scheduled an earlier entry since: dropped.
    Stale,
    /// Its owner's deadline: the loop wakes for it.
    Due,
    /// It came before its owner's real deadline, which is this moment (`None`: none at all),
    /// already recorded as the owner's `scheduled`: moved there.
    Move(Option<Moment>),
}

/// The deadline heap, and the epoch its [`Moment`]s count from.
#[derive(Debug)]
pub struct TimerHeap {
    epoch: Instant,
    heap: BinaryHeap<Reverse<(Moment, Key)>>,
}

impl TimerHeap {
    /// An empty heap whose moments count from `epoch` (the loop's start: no instant the loop
    /// sees is earlier).
    pub fn new(epoch: Instant) -> Self {
        TimerHeap {
            epoch,
            heap: BinaryHeap::new(),
        }
    }

    /// `at` as a deadline: rounded up to the millisecond, so it never passes before `at`.
    pub fn deadline(&self, at: Instant) -> Moment {
        let since = at.saturating_duration_since(self.epoch);
        Moment::from_millis(since.as_millis() + u128::from(since.subsec_nanos() % 1_000_000 != 0))
    }

    /// `now` as a moment gone by: rounded down to the millisecond.
    pub fn moment(&self, now: Instant) -> Moment {
        Moment::from_millis(now.saturating_duration_since(self.epoch).as_millis())
    }

    /// The instant of `moment`.
    pub fn instant(&self, moment: Moment) -> Instant {
        self.epoch + Duration::from_millis(moment.millis())
    }

    /// Schedules `deadline` for `key` unless an earlier or equal one is already scheduled.
    pub fn schedule(
        &mut self,
        key: Key,
        deadline: Option<Instant>,
        scheduled: &mut Option<Moment>,
    ) {
        let Some(deadline) = deadline else { return };
        let deadline = self.deadline(deadline);
        if scheduled.is_none_or(|current| deadline < current) {
            self.heap.push(Reverse((deadline, key)));
            *scheduled = Some(deadline);
        }
    }

    /// The earliest deadline (possibly stale: waking for it early is harmless).
    pub fn next_deadline(&self) -> Option<Instant> {
        self.heap
            .peek()
            .map(|Reverse((deadline, _))| self.instant(*deadline))
    }

    /// Pops the earliest entry if its deadline has passed by `now`.
    pub fn pop_expired(&mut self, now: Instant) -> Option<(Moment, Key)> {
        let now = self.moment(now);
        match self.heap.peek() {
            Some(Reverse((deadline, _))) if *deadline <= now => {
                self.heap.pop().map(|Reverse(entry)| entry)
            }
            _ => None,
        }
    }

    /// Takes off the heap's top the entries the loop need not wake for, before it sleeps, at
    /// most `most` of them: `owner` says of each (its deadline, its key) whether it is
    /// [stale](Settle::Stale), [due](Settle::Due) (it stops there) or to
    /// [move](Settle::Move) to a later moment (the owner's real deadline, which the owner has
    /// already recorded as its `scheduled`). An entry never moves earlier, and nothing is
    /// judged: this only spares the wakes that lazy deletion would cause.
    pub fn settle(
        &mut self,
        most: usize,
        mut owner: impl FnMut(&TimerHeap, Moment, Key) -> Settle,
    ) {
        for _ in 0..most {
            let Some(&Reverse((at, key))) = self.heap.peek() else {
                return;
            };
            match owner(self, at, key) {
                Settle::Due => return,
                Settle::Stale => {
                    self.heap.pop();
                }
                Settle::Move(to) => {
                    self.heap.pop();
                    if let Some(to) = to {
                        self.heap.push(Reverse((to, key)));
                    }
                }
            }
        }
    }

    /// How many entries (live and stale) the heap holds.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether the heap is empty.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::slab::Slab;
    use super::*;

    #[test]
    fn later_deadlines_push_nothing() {
        let mut slab = Slab::default();
        let key = slab.insert(());
        let t0 = Instant::now();
        let mut heap = TimerHeap::new(t0);
        let mut scheduled = None;
        heap.schedule(key, Some(t0 + Duration::from_secs(10)), &mut scheduled);
        heap.schedule(key, Some(t0 + Duration::from_secs(20)), &mut scheduled);
        assert_eq!(heap.len(), 1);
        heap.schedule(key, Some(t0 + Duration::from_secs(5)), &mut scheduled);
        assert_eq!(heap.len(), 2);
        assert_eq!(heap.next_deadline(), Some(t0 + Duration::from_secs(5)));
        assert_eq!(heap.pop_expired(t0), None);
        let (deadline, popped) = heap.pop_expired(t0 + Duration::from_secs(6)).unwrap();
        assert_eq!(
            (heap.instant(deadline), popped),
            (t0 + Duration::from_secs(5), key)
        );
        assert_eq!(scheduled, Some(deadline), "live: it matches `scheduled`");
        scheduled = None;
        let (stale, _) = heap.pop_expired(t0 + Duration::from_secs(11)).unwrap();
        assert_ne!(Some(stale), scheduled, "stale: skipped by the caller");
        assert!(heap.is_empty());
    }

    #[test]
    fn settling_drops_stale_entries_and_moves_early_ones_to_the_real_deadline() {
        let mut slab = Slab::default();
        let (up, gone, due) = (slab.insert(()), slab.insert(()), slab.insert(()));
        let t0 = Instant::now();
        let secs = |s| t0 + Duration::from_secs(s);
        let mut heap = TimerHeap::new(t0);
        // `up`: the handshake's deadline (10 s) was scheduled; the connection came up, and
        // its real deadline is now the ping's (60 s), which pushed nothing (later).
        let mut up_scheduled = None;
        heap.schedule(up, Some(secs(10)), &mut up_scheduled);
        heap.schedule(up, Some(secs(60)), &mut up_scheduled);
        // `gone`: closed since (its entry is stale); `due`: a real deadline at 20 s.
        let mut gone_scheduled = None;
        heap.schedule(gone, Some(secs(5)), &mut gone_scheduled);
        let mut due_scheduled = None;
        heap.schedule(due, Some(secs(20)), &mut due_scheduled);
        let real = |key| match key {
            k if k == up => Some(secs(60)),
            k if k == due => Some(secs(20)),
            _ => None,
        };
        let mut asked = Vec::new();
        heap.settle(16, |heap, at, key| {
            asked.push(key);
            if key == gone {
                return Settle::Stale;
            }
            let Some(real) = real(key).map(|r| heap.deadline(r)) else {
                return Settle::Move(None);
            };
            if real <= at {
                return Settle::Due;
            }
            up_scheduled = Some(real);
            Settle::Move(Some(real))
        });
        assert_eq!(
            asked,
            [gone, up, due],
            "in deadline order, stopping at the due one"
        );
        assert_eq!(
            heap.next_deadline(),
            Some(secs(20)),
            "the loop sleeps until 20 s"
        );
        assert_eq!(heap.len(), 2);
        assert_eq!(up_scheduled.map(|m| heap.instant(m)), Some(secs(60)));
        let (first, key) = heap.pop_expired(secs(60)).unwrap();
        assert_eq!((heap.instant(first), key), (secs(20), due));
        let (second, key) = heap.pop_expired(secs(60)).unwrap();
        assert_eq!(
            (Some(second), key),
            (up_scheduled, up),
            "live where it moved"
        );

        // At most `most` entries a call.
        let mut heap = TimerHeap::new(t0);
        for s in 1..=10 {
            heap.schedule(up, Some(secs(s)), &mut None);
        }
        let mut calls = 0;
        heap.settle(3, |_, _, _| {
            calls += 1;
            Settle::Stale
        });
        assert_eq!((calls, heap.len()), (3, 7));
    }

    #[test]
    fn deadlines_never_pass_early() {
        let t0 = Instant::now();
        let mut heap = TimerHeap::new(t0);
        let key = Slab::default().insert(());
        let at = t0 + Duration::from_micros(2_500);
        let mut scheduled = None;
        heap.schedule(key, Some(at), &mut scheduled);
        // Rounded up to 3 ms: not due at 2.5 ms plus a little, due at 3 ms.
        assert_eq!(heap.next_deadline(), Some(t0 + Duration::from_millis(3)));
        assert_eq!(heap.pop_expired(at + Duration::from_micros(400)), None);
        assert!(heap.pop_expired(t0 + Duration::from_millis(3)).is_some());
        // A whole millisecond stays as it is; gone-by moments round down.
        assert_eq!(
            heap.deadline(t0 + Duration::from_millis(7)),
            heap.moment(t0 + Duration::from_millis(7))
        );
        assert_eq!(
            heap.moment(t0 + Duration::from_micros(7_900)),
            heap.moment(t0 + Duration::from_millis(7))
        );
        // An instant before the epoch is the epoch.
        assert_eq!(heap.moment(t0), heap.deadline(t0));
        assert_eq!(std::mem::size_of::<Option<Moment>>(), 8);
        assert_eq!(std::mem::size_of::<Reverse<(Moment, Key)>>(), 16);
    }
}
