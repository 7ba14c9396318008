//! The connection's timers: a small fixed table whose minimum is the next deadline.
//!
//! The shape of quinn-proto's `connection/timer.rs`: an enum indexes an array of optional
//! instants; nothing is allocated and `poll_timeout` is a scan of a handful of entries.

use std::time::Instant;

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
}

impl Timer {
    pub(crate) const ALL: [Timer; 6] = [
        Timer::Handshake,
        Timer::Ping,
        Timer::Pong,
        Timer::Idle,
        Timer::Call,
        Timer::Close,
    ];

    const fn index(self) -> usize {
        self as usize
    }
}

/// One optional deadline per [`Timer`].
#[derive(Debug, Clone, Default)]
pub(crate) struct TimerTable {
    deadlines: [Option<Instant>; 6],
}

impl TimerTable {
    pub(crate) fn set(&mut self, timer: Timer, at: Instant) {
        self.deadlines[timer.index()] = Some(at);
    }

    pub(crate) fn stop(&mut self, timer: Timer) {
        self.deadlines[timer.index()] = None;
    }

    pub(crate) fn get(&self, timer: Timer) -> Option<Instant> {
        self.deadlines[timer.index()]
    }

    pub(crate) fn stop_all(&mut self) {
        self.deadlines = [None; 6];
    }

    /// The earliest deadline, if any timer is running.
    pub(crate) fn next(&self) -> Option<Instant> {
        self.deadlines.iter().flatten().min().copied()
    }

    /// Whether `timer` runs and its deadline is at or before `now`.
    pub(crate) fn is_expired(&self, timer: Timer, now: Instant) -> bool {
        self.get(timer).is_some_and(|at| at <= now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn next_is_the_minimum() {
        let t0 = Instant::now();
        let mut table = TimerTable::default();
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
}
