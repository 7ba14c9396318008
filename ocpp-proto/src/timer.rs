//! The connection's timers: a small fixed table whose minimum is the next deadline.
//!
//! The shape of quinn-proto's `connection/timer.rs`: an enum indexes an array of optional
//! instants (here milliseconds from one epoch); nothing is allocated and `poll_timeout` is a
//! scan of a handful of entries.

use std::time::{Duration, Instant};

/// Something the connection waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Timer {
    /// The opening handshake, the application's decision included, must finish by then
    /// (slowloris defence).
    Handshake,
    /// Send the next keep-alive ping.
    Ping,
    /// The pong to our last ping must have arrived by then.
    Pong,
    /// Nothing received for this long: the peer is gone.
    Idle,
    /// Our outstanding CALL must be answered by then (OCPP-J "message timeout").
    Call,
    /// The peer must answer our close frame (or close TCP) by then.
    Close,
    /// The earliest deadline of our CALLs queued behind the one in flight: those past it end
    /// unsent ([`CallFailure::DeadlinePassed`](crate::CallFailure::DeadlinePassed)).
    Queued,
}

impl Timer {
    pub(crate) const ALL: [Timer; 7] = [
        Timer::Handshake,
        Timer::Ping,
        Timer::Pong,
        Timer::Idle,
        Timer::Call,
        Timer::Close,
        Timer::Queued,
    ];

    const fn index(self) -> usize {
        self as usize
    }
}

/// "Not running", in [`TimerTable::deadlines`].
const STOPPED: u32 = u32::MAX;

/// One optional deadline per [`Timer`], and when the peer last sent anything.
///
/// Compact: every instant is kept as milliseconds after one `epoch` in a `u32` (48 bytes with
/// alignment, where seven `Option<Instant>` and an `Instant` would take 128; an idle connection
/// is mostly its timers).
/// Deadlines are rounded up to the millisecond, so a timer never fires before its instant (at
/// most a millisecond after it); the last input is rounded down, so the silence counted from it
/// is never shorter than it was. Past about 49 days from the epoch, the epoch moves forward to
/// the earliest instant kept (no instant changes).
#[derive(Debug, Clone)]
pub(crate) struct TimerTable {
    epoch: Instant,
    /// Per [`Timer`], milliseconds after `epoch`; [`STOPPED`]: not running.
    deadlines: [u32; 7],
    /// When the last input arrived, milliseconds after `epoch`.
    last_input: u32,
}

impl TimerTable {
    /// No timer running; the last input is `now`.
    #[inline]
    pub(crate) fn new(now: Instant) -> Self {
        TimerTable {
            epoch: now,
            deadlines: [STOPPED; 7],
            last_input: 0,
        }
    }

    #[inline]
    pub(crate) fn set(&mut self, timer: Timer, at: Instant) {
        let (millis, rest) = self.millis(at);
        let millis = millis.saturating_add(u64::from(rest));
        self.deadlines[timer.index()] = self.offset(millis);
    }

    #[inline]
    pub(crate) fn stop(&mut self, timer: Timer) {
        self.deadlines[timer.index()] = STOPPED;
    }

    #[inline]
    pub(crate) fn get(&self, timer: Timer) -> Option<Instant> {
        match self.deadlines[timer.index()] {
            STOPPED => None,
            millis => Some(self.instant(millis)),
        }
    }

    #[inline]
    pub(crate) fn stop_all(&mut self) {
        self.deadlines = [STOPPED; 7];
    }

    /// The earliest deadline, if any timer is running.
    #[inline]
    pub(crate) fn next(&self) -> Option<Instant> {
        let earliest = self.deadlines.iter().copied().min()?;
        (earliest != STOPPED).then(|| self.instant(earliest))
    }

    /// Whether `timer` runs and its deadline is at or before `now`.
    #[inline]
    pub(crate) fn is_expired(&self, timer: Timer, now: Instant) -> bool {
        self.get(timer).is_some_and(|at| at <= now)
    }

    /// Input arrived at `now`.
    #[inline]
    pub(crate) fn note_input(&mut self, now: Instant) {
        let (millis, _) = self.millis(now);
        self.last_input = self.offset(millis);
    }

    /// When the last input arrived (rounded down to the millisecond).
    #[inline]
    pub(crate) fn last_input(&self) -> Instant {
        self.instant(self.last_input)
    }

    #[inline]
    fn instant(&self, millis: u32) -> Instant {
        self.epoch + Duration::from_millis(u64::from(millis))
    }

    /// Whole milliseconds from the epoch to `at` (zero before it), and 1 if a fraction is left.
    #[inline]
    fn millis(&self, at: Instant) -> (u64, u8) {
        let since = at.saturating_duration_since(self.epoch);
        let millis = since
            .as_secs()
            .saturating_mul(1000)
            .saturating_add(u64::from(since.subsec_millis()));
        (millis, u8::from(since.subsec_nanos() % 1_000_000 != 0))
    }

    /// `millis` after the epoch as a stored offset. Past the `u32` range the epoch first moves
    /// forward, to the earliest instant kept if that brings `millis` in range, else to about 49
    /// days before `millis`; what is kept from before the new epoch moves up to it: a deadline
    /// that far behind is long due (it fires at once), and silence longer than that counts as
    /// that long (which matters only to an idle timeout of more than 49 days).
    #[inline]
    fn offset(&mut self, millis: u64) -> u32 {
        const MAX: u64 = STOPPED as u64 - 1;
        if millis <= MAX {
            return millis as u32;
        }
        let running = self.deadlines.iter().copied().filter(|&d| d != STOPPED);
        let earliest = running
            .chain([self.last_input])
            .min()
            .map_or(millis, u64::from);
        let shift = earliest.min(millis).max(millis - MAX);
        self.epoch += Duration::from_millis(shift);
        let moved = |at: u32| u64::from(at).saturating_sub(shift) as u32;
        for deadline in self.deadlines.iter_mut().filter(|d| **d != STOPPED) {
            *deadline = moved(*deadline);
        }
        self.last_input = moved(self.last_input);
        (millis - shift) as u32
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_table_stays_small() {
        assert_eq!(std::mem::size_of::<super::TimerTable>(), 48);
    }

    use super::*;

    #[test]
    fn next_is_the_minimum() {
        let t0 = Instant::now();
        let mut table = TimerTable::new(t0);
        assert_eq!(table.next(), None);
        table.set(Timer::Idle, t0 + Duration::from_secs(90));
        table.set(Timer::Ping, t0 + Duration::from_secs(30));
        table.set(Timer::Call, t0 + Duration::from_secs(60));
        assert_eq!(table.next(), Some(t0 + Duration::from_secs(30)));
        table.stop(Timer::Ping);
        assert_eq!(table.next(), Some(t0 + Duration::from_secs(60)));
        assert!(table.is_expired(Timer::Call, t0 + Duration::from_secs(60)));
        assert!(!table.is_expired(Timer::Idle, t0 + Duration::from_secs(60)));
        table.stop_all();
        assert_eq!(table.next(), None);
    }

    #[test]
    fn deadlines_round_up_and_last_input_rounds_down() {
        let t0 = Instant::now();
        let mut table = TimerTable::new(t0);
        let at = t0 + Duration::from_micros(1500);
        table.set(Timer::Call, at);
        assert_eq!(table.get(Timer::Call), Some(t0 + Duration::from_millis(2)));
        assert!(
            !table.is_expired(Timer::Call, at),
            "never before its instant"
        );
        table.note_input(at);
        assert_eq!(table.last_input(), t0 + Duration::from_millis(1));
    }

    #[test]
    fn the_epoch_moves_past_the_u32_range() {
        let t0 = Instant::now();
        let day = Duration::from_secs(86_400);
        let mut table = TimerTable::new(t0);
        table.set(Timer::Call, t0 + 40 * day);
        table.note_input(t0 + 45 * day);
        table.set(Timer::Idle, t0 + 60 * day);
        assert_eq!(table.get(Timer::Call), Some(t0 + 40 * day), "kept exactly");
        assert_eq!(table.get(Timer::Idle), Some(t0 + 60 * day));
        assert_eq!(table.last_input(), t0 + 45 * day);
        table.stop(Timer::Call);
        // 140 days after the idle deadline: that one is long due, and stays due.
        let later = t0 + 200 * day;
        table.note_input(later);
        table.set(Timer::Ping, later + Duration::from_secs(30));
        assert_eq!(table.last_input(), later, "kept exactly");
        assert_eq!(
            table.get(Timer::Ping),
            Some(later + Duration::from_secs(30))
        );
        assert!(table.is_expired(Timer::Idle, later));
        table.stop(Timer::Idle);
        assert_eq!(table.next(), Some(later + Duration::from_secs(30)));
        // A CALL after 60 silent days still gets its whole timeout.
        let silent = later + 60 * day;
        table.set(Timer::Call, silent + Duration::from_secs(30));
        assert_eq!(
            table.get(Timer::Call),
            Some(silent + Duration::from_secs(30))
        );
        assert!(table.last_input() <= silent);
    }
}
