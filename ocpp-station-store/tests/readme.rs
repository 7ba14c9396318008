//! The README's program is `examples/offline_queue.rs`, verbatim (so the example, built by
//! `cargo test`, is what the README shows; the README's blocks also run as doc tests).

#[test]
fn the_readme_opens_with_examples_offline_queue_rs() {
    let readme = include_str!("../README.md");
    let fence = "```rust\n";
    assert!(
        readme.starts_with("# ocpp-station-store\n\n```rust\n"),
        "the README opens with the example"
    );
    let start = readme.find(fence).expect("a rust block") + fence.len();
    let end = start + readme[start..].find("\n```").expect("its end");
    let example = include_str!("../examples/offline_queue.rs");
    assert_eq!(&readme[start..end], example.trim_end());
    let lines = example.lines().count();
    assert!(lines <= 40, "{lines} lines");
}
