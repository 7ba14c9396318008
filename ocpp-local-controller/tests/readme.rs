//! The README's program is `examples/local_controller.rs`, verbatim (so the example, built by
//! `cargo test`, is what the README shows).

#[test]
fn the_readme_opens_with_examples_local_controller_rs() {
    let readme = include_str!("../README.md");
    let fence = "```rust,no_run\n";
    let start = readme.find(fence).expect("a rust block") + fence.len();
    let end = start + readme[start..].find("\n```").expect("its end");
    let example = include_str!("../examples/local_controller.rs");
    assert_eq!(&readme[start..end], example.trim_end());
    let lines = example.lines().count();
    assert!(lines <= 40, "{lines} lines");
}
