//! Every connection's next deadline in one min-heap, whose top is the poll timeout.
//!
//! Lazy deletion: an entry is never removed from the middle of the heap. Each connection
//! remembers the deadline of its earliest live entry (`scheduled`); a new deadline is pushed
//! only when it is *earlier* than that. A later deadline (the common case: the idle or ping
//! timer moved forward after a message) pushes nothing; when the old, earlier entry comes up,
//! the connection's `handle_timeout` is called early (harmless, the core checks its own
//! timers) and its real deadline is scheduled then. So the heap holds about one entry per
//! connection, and an entry whose key or deadline no longer matches is skipped when popped.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

use super::slab::Key;

/// A min-heap of `(deadline, key)`.
#[derive(Debug, Default)]
pub struct TimerHeap {
    heap: BinaryHeap<Reverse<(Instant, Key)>>,
}

impl TimerHeap {
    /// Makes sure `key` is woken at `deadline` or earlier. `scheduled` is the connection's
    /// record of its earliest pending entry; it is updated.
    pub fn schedule(
        &mut self,
        key: Key,
        deadline: Option<Instant>,
        scheduled: &mut Option<Instant>,
    ) {
        let Some(deadline) = deadline else { return };
        if scheduled.map_or(true, |current| deadline < current) {
            self.heap.push(Reverse((deadline, key)));
            *scheduled = Some(deadline);
        }
    }

    /// The earliest deadline (possibly of a stale entry: waking early is harmless).
    pub fn next_deadline(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((deadline, _))| *deadline)
    }

    /// Pops the next entry due at `now`: its deadline and key. The caller checks the key is
    /// live and that the deadline is the connection's `scheduled` one (else it is stale).
    pub fn pop_expired(&mut self, now: Instant) -> Option<(Instant, Key)> {
        match self.heap.peek() {
            Some(Reverse((deadline, _))) if *deadline <= now => {
                self.heap.pop().map(|Reverse(entry)| entry)
            }
            _ => None,
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
        let mut heap = TimerHeap::default();
        let mut scheduled = None;
        let t0 = Instant::now();
        heap.schedule(key, Some(t0 + Duration::from_secs(10)), &mut scheduled);
        heap.schedule(key, Some(t0 + Duration::from_secs(20)), &mut scheduled);
        assert_eq!(heap.len(), 1);
        heap.schedule(key, Some(t0 + Duration::from_secs(5)), &mut scheduled);
        assert_eq!(heap.len(), 2);
        assert_eq!(heap.next_deadline(), Some(t0 + Duration::from_secs(5)));
        assert_eq!(heap.pop_expired(t0), None);
        let (deadline, popped) = heap.pop_expired(t0 + Duration::from_secs(6)).unwrap();
        assert_eq!((deadline, popped), (t0 + Duration::from_secs(5), key));
        assert_eq!(scheduled, Some(deadline), "live: it matches `scheduled`");
        scheduled = None;
        let (stale, _) = heap.pop_expired(t0 + Duration::from_secs(11)).unwrap();
        assert_ne!(Some(stale), scheduled, "stale: skipped by the caller");
        assert!(heap.is_empty());
    }
}
