//! Spare output buffers, kept per thread, so that a message's output buffer is not allocated
//! anew for each message.
//!
//! A server holds tens of thousands of connections and an idle one holds no output buffer (it
//! is freed once written, see `exchange.rs`), so each message written took an allocation of
//! its own. Here a buffer a connection has written out waits, with a few others per thread, for
//! the next message of any connection the thread drives: in a steady flow of messages, writing
//! takes no allocation.
//!
//! The bounds keep it cheap: at most [`KEPT`] buffers per thread, each of at most
//! [`MAX_KEPT_CAPACITY`] bytes (a larger one is freed). A connection holds a spare only while it
//! has output not written, as it held its own buffer before.

/// The most buffers a thread keeps.
pub(super) const KEPT: usize = 4;

/// The largest buffer kept, in bytes (larger ones are freed): an OCPP message is under 2 kB
/// 99 % of the time (OCPP-J 2.1 §5.2).
pub(super) const MAX_KEPT_CAPACITY: usize = 8 * 1024;

std::thread_local! {
    static SPARE: core::cell::RefCell<Vec<Vec<u8>>> = const { core::cell::RefCell::new(Vec::new()) };
}

/// An empty buffer of at least `capacity` bytes: a spare if this thread keeps one that large
/// (the most recently given first), otherwise a new one of exactly `capacity` (no allocation
/// for 0).
#[must_use]
pub(super) fn take(capacity: usize) -> Vec<u8> {
    let spare = SPARE
        .try_with(|spare| {
            let mut spare = spare.try_borrow_mut().ok()?;
            let at = spare.iter().rposition(|buf| buf.capacity() >= capacity)?;
            Some(spare.swap_remove(at))
        })
        .ok()
        .flatten();
    match spare {
        Some(mut buf) => {
            buf.clear();
            buf
        }
        None => Vec::with_capacity(capacity),
    }
}

/// Gives `buf` back for the next message on this thread: kept if it is allocated, not larger
/// than [`MAX_KEPT_CAPACITY`] and fewer than [`KEPT`] are kept; freed otherwise.
pub(super) fn give(buf: Vec<u8>) {
    if buf.capacity() == 0 || buf.capacity() > MAX_KEPT_CAPACITY {
        return;
    }
    let _ = SPARE.try_with(|spare| {
        if let Ok(mut spare) = spare.try_borrow_mut() {
            if spare.len() < KEPT {
                if spare.capacity() == 0 {
                    spare.reserve_exact(KEPT);
                }
                spare.push(buf);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_buffer_is_taken_again_only_when_it_is_large_enough() {
        let mut buf = Vec::with_capacity(100);
        buf.extend_from_slice(b"old");
        let at = buf.as_ptr();
        give(buf);
        let small_enough = take(200);
        assert_ne!(
            small_enough.as_ptr(),
            at,
            "a spare smaller than asked was taken"
        );
        let reused = take(50);
        assert_eq!(reused.as_ptr(), at);
        assert!(reused.is_empty() && reused.capacity() >= 100);
    }

    #[test]
    fn at_most_kept_buffers_of_at_most_the_largest_size_are_kept() {
        for _ in 0..KEPT + 3 {
            give(Vec::with_capacity(64));
        }
        give(Vec::with_capacity(MAX_KEPT_CAPACITY + 1));
        let kept = SPARE.with(|spare| {
            let spare = spare.borrow();
            (spare.len(), spare.iter().map(Vec::capacity).max())
        });
        assert_eq!(kept.0, KEPT);
        assert!(kept.1.is_some_and(|c| c <= MAX_KEPT_CAPACITY));
    }
}
