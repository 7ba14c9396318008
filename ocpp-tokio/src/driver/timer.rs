//! The connection's one timer.

use std::future::Future;
use std::pin::Pin;
use std::task::Context;
use std::time::Instant;

use tokio::time::Sleep;

/// The connection's timer: where the driver asks to be polled again by a deadline.
///
/// It is armed at or before the deadline asked for: a deadline that moves later (the
/// keep-alive, with every frame read) waits for the timer to fire early and the turn it wakes
/// to arm it again, instead of a reset per frame.
pub(crate) trait DriverTimer {
    /// Makes sure the driver is polled again at or before `deadline`; returns whether that
    /// moment has come already (the caller takes another turn at once).
    fn arm(&mut self, cx: &mut Context<'_>, now: Instant, deadline: Instant) -> bool;
}

/// The timer of a driver that is a task of its own: a tokio `Sleep`.
pub(crate) struct TaskTimer {
    sleep: Pin<Box<Sleep>>,
    /// Whether `sleep` was polled since it was last reset (its waker is registered).
    armed: bool,
}

impl TaskTimer {
    pub(crate) fn new(now: Instant) -> Self {
        TaskTimer {
            sleep: Box::pin(tokio::time::sleep_until(now.into())),
            armed: false,
        }
    }
}

impl DriverTimer for TaskTimer {
    /// A timer armed for an earlier moment is left alone. The waker registered when it was
    /// armed is still this task's: the driver is a task of its own (or the one future its
    /// task awaits), so every poll has the same waker.
    fn arm(&mut self, cx: &mut Context<'_>, now: Instant, deadline: Instant) -> bool {
        let at = tokio::time::Instant::from_std(deadline);
        let armed_at = self.sleep.deadline();
        if self.armed && armed_at <= at && armed_at.into_std() > now {
            return false;
        }
        if armed_at != at {
            self.sleep.as_mut().reset(at);
        }
        self.armed = true;
        self.sleep.as_mut().poll(cx).is_ready()
    }
}
