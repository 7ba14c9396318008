//! The hand-off between a handle and its shard: a handle that queues a CALL or a SEND while
//! its connection's shard is idle drives the connection on its own thread ([`handing`]). The
//! handle ([`ChargePoint`](crate::ChargePoint)) and the shard (`shard.rs`) meet here, so that
//! neither imports the other. Without shards (they need Unix), nothing is ever handed.

use std::cell::Cell;
use std::sync::Arc;

thread_local! {
    /// Set while a handle queues a CALL or a SEND ([`handing`]): the slot waker that the
    /// queueing wakes leaves itself in [`HANDED`] instead of waking its shard.
    static HANDING: Cell<bool> = const { Cell::new(false) };
    /// The connection a [`handing`] push woke, to drive on the caller's thread.
    static HANDED: Cell<Option<Arc<dyn DriveHere>>> = const { Cell::new(None) };
}

/// Queues a command through `push` (a handle's CALL or SEND), then, if that woke a
/// connection of a shard whose task is not running, drives the connection here, on the
/// caller's thread: the CALL is written now, with no hop through the scheduler (and no wait
/// behind the tasks queued before the shard). When the shard is running, or the connection
/// is a task's, nothing changes: the wake goes where it always goes.
pub(crate) fn handing<R>(push: impl FnOnce() -> R) -> R {
    let _ = HANDING.try_with(|handing| handing.set(true));
    let result = push();
    let _ = HANDING.try_with(|handing| handing.set(false));
    if let Some(slot) = HANDED.try_with(Cell::take).ok().flatten() {
        slot.drive_here();
    }
    result
}

/// A connection of a shard, driven from a handle's thread ([`handing`]).
pub(crate) trait DriveHere: Send + Sync {
    /// Drives the connection on this thread.
    fn drive_here(self: Arc<Self>);
}

/// Whether a [`handing`] push is under way on this thread (then the first wake it causes is
/// handed over, once: this clears the mark).
pub(crate) fn is_handing() -> bool {
    HANDING.try_with(|handing| handing.replace(false)) == Ok(true)
}

/// Leaves `here` to be driven by the [`handing`] push under way; false when this thread cannot
/// keep it (it is shutting down), and the caller wakes its shard as usual.
pub(crate) fn hand(here: Arc<dyn DriveHere>) -> bool {
    HANDED.try_with(|handed| handed.set(Some(here))).is_ok()
}
