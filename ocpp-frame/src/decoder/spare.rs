//! Spare message buffers, kept per thread, so that reading a message takes no allocation in a
//! steady flow of messages.
//!
//! An idle decoder holds no buffer: a message's buffer leaves with the message. So each message
//! took an allocation for its bytes. Here, once a message is complete, the decoder hands out
//! the message's bytes split off their buffer and keeps the buffer itself, empty, with a few
//! others of this thread. Once the message is dropped (the application parsed it), the next
//! message of any decoder on the thread reclaims that buffer whole, without allocating
//! (`BytesMut::try_reclaim`). A message still held elsewhere keeps its buffer from being
//! reclaimed, and a new one is allocated as before.
//!
//! The bounds keep it cheap in memory and harmless to a peer: at most [`KEPT`] buffers per
//! thread, each of at most [`MAX_KEPT_CAPACITY`] bytes. A spare is taken only for a message
//! that is one frame whose bytes are all in the input at hand: it is handed out, and the buffer
//! given back, within the same call, so a decoder never holds a spare between calls and what a
//! partial message holds stays within twice what the peer sent (`fuzz/frame_decoder` checks
//! it).
//!
//! Without the `std` feature there is no thread-local storage, and buffers are allocated per
//! message.

use bytes::BytesMut;

/// The most buffers a thread keeps.
#[cfg(feature = "std")]
const KEPT: usize = 4;

/// The largest buffer kept, in bytes (larger ones are freed): an OCPP message is under 2 kB
/// 99 % of the time (OCPP-J 2.1 §5.2).
const MAX_KEPT_CAPACITY: usize = 8 * 1024;

#[cfg(feature = "std")]
std::thread_local! {
    static SPARE: core::cell::RefCell<[Option<BytesMut>; KEPT]> =
        const { core::cell::RefCell::new([None, None, None, None]) };
}

/// An empty buffer with room for `capacity` bytes: a spare this thread keeps that nothing
/// shares any more and that is large enough, or a new one of exactly `capacity`.
pub(super) fn take(capacity: usize) -> BytesMut {
    #[cfg(feature = "std")]
    {
        let reclaimed = SPARE
            .try_with(|spare| {
                let mut spare = spare.try_borrow_mut().ok()?;
                spare.iter_mut().find_map(|slot| {
                    let fits = slot.as_mut()?.try_reclaim(capacity);
                    if fits {
                        slot.take()
                    } else {
                        None
                    }
                })
            })
            .ok()
            .flatten();
        if let Some(buf) = reclaimed {
            return buf;
        }
    }
    BytesMut::with_capacity(capacity)
}

/// Whether a message's buffer is small enough to be kept once its bytes are split off.
pub(super) fn keeps(buf: &BytesMut) -> bool {
    cfg!(feature = "std") && buf.capacity() <= MAX_KEPT_CAPACITY
}

/// Keeps `buf` (an emptied buffer whose message was split off, see [`keeps`]) for a later
/// [`take`] on this thread, if fewer than [`KEPT`] are kept; drops it otherwise.
pub(super) fn give(buf: BytesMut) {
    #[cfg(feature = "std")]
    {
        if !buf.is_empty() {
            return;
        }
        let _ = SPARE.try_with(|spare| {
            if let Ok(mut spare) = spare.try_borrow_mut() {
                if let Some(slot) = spare.iter_mut().find(|slot| slot.is_none()) {
                    *slot = Some(buf);
                }
            }
        });
    }
    #[cfg(not(feature = "std"))]
    drop(buf);
}

/// Frees the spare message buffers this thread keeps (see [`crate::free_spare_buffers`]).
pub(crate) fn free() {
    #[cfg(feature = "std")]
    let _ = SPARE.try_with(|spare| {
        if let Ok(mut spare) = spare.try_borrow_mut() {
            *spare = [None, None, None, None];
        }
    });
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_comes_back_whole_once_its_message_is_dropped() {
        let mut buf = take(64);
        buf.extend_from_slice(b"[2,\"1\",\"Heartbeat\",{}]");
        let base = buf.as_ptr() as usize;
        let message = buf.split().freeze();
        give(buf);
        let within = |buf: &BytesMut| (base..base + 64).contains(&(buf.as_ptr() as usize));
        // The message is alive: its bytes stay its own, and only the rest of the buffer (42
        // bytes) is free, too little for 64.
        let other = take(64);
        assert!(!within(&other));
        drop(message);
        let again = take(64);
        assert!(
            within(&again),
            "the dropped message's buffer was not reused"
        );
        assert!(again.is_empty() && again.capacity() >= 64);
    }
}
