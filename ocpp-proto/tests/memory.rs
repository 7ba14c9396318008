//! What an idle open connection costs: `size_of` and heap bytes (goal: at most 1 KiB in all;
//! 168 bytes since the output, the events and the CALLs under way (in flight, awaited, queued,
//! held) are boxed together only while an exchange is under way; 304 since the frame decoder
//! boxes the state of a partial frame only while one is partial; 432 since the timers count
//! milliseconds from one epoch and the rare queues and the deflate state are boxed; it was 576).
//! Run with `--nocapture` to see the figures.

mod common;

use common::*;
use ocpp_proto::Answer;
use ocpp_proto::Connection;

#[test]
fn idle_open_connection_footprint() {
    let mut pair = Pair::connected_v16();
    // Some traffic first, so that buffers were used and must have been released.
    for _ in 0..10 {
        let id = pair.cp.call(pair.now, boot_request()).unwrap();
        pair.drive();
        pair.take_csms_events();
        pair.csms
            .answer(pair.now, &id, Answer::Result(boot_accepted()))
            .unwrap();
        pair.drive();
        pair.take_cp_events();
    }
    let size = std::mem::size_of::<Connection>();
    let heap = pair.csms.heap_bytes();
    println!("size_of::<Connection>() = {size} bytes; heap held while idle = {heap} bytes");
    assert_eq!(heap, 0, "an idle open connection holds no buffer");
    assert!(size + heap <= 1024, "{size} + {heap} bytes");
    assert!(size <= 168, "size_of::<Connection>() grew to {size} bytes");
}
