//! Every ```rust block of the README is a program of `examples/`, verbatim, so that
//! `cargo test` builds what the README shows.

#[test]
fn the_recording_block_is_examples_capture_server_rs() {
    let readme = include_str!("../README.md");
    let fence = "```rust\n";
    let blocks: Vec<&str> = readme
        .split(fence)
        .skip(1)
        .map(|rest| rest.split("\n```").next().unwrap_or_default())
        .collect();
    assert_eq!(blocks.len(), 1, "one rust block in the README");
    let example = include_str!("../examples/capture_server.rs");
    assert_eq!(blocks[0], example.trim_end());
    assert!(
        !readme.contains("```rust,"),
        "no rust block the tests do not build (ignore, no_run...)"
    );
}
