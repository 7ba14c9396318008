//! The README opens with `examples/csms.rs`, verbatim, in at most 40 lines.

#[test]
fn the_readme_example_is_examples_csms_rs() {
    let readme = include_str!("../README.md");
    let example = include_str!("../examples/csms.rs");
    let start = readme.find("```rust,no_run\n").expect("a rust block") + "```rust,no_run\n".len();
    let end = start + readme[start..].find("\n```").expect("its end");
    assert!(
        readme.starts_with("# ocpp-tokio\n\n```rust"),
        "the README opens with the example"
    );
    assert_eq!(&readme[start..end], example.trim_end());
    assert!(
        example.lines().count() <= 40,
        "{} lines",
        example.lines().count()
    );
}
