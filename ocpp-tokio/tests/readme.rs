//! The README's programs are `examples/csms.rs` and `examples/stations.rs`, verbatim (so
//! the examples, built by `cargo test`, are what the README shows), in at most 40 and 60 lines.

/// The `n`th ```rust block of the README (from 0).
fn block(n: usize) -> &'static str {
    let readme = include_str!("../README.md");
    let fence = "```rust,no_run\n";
    let mut rest = readme;
    for _ in 0..n {
        rest = &rest[rest.find(fence).expect("a rust block") + fence.len()..];
    }
    let start = rest.find(fence).expect("a rust block") + fence.len();
    let end = start + rest[start..].find("\n```").expect("its end");
    &rest[start..end]
}

#[test]
fn the_readme_opens_with_examples_csms_rs() {
    let readme = include_str!("../README.md");
    let example = include_str!("../examples/csms.rs");
    assert!(
        readme.starts_with("# ocpp-tokio\n\n```rust"),
        "the README opens with the example"
    );
    assert_eq!(block(0), example.trim_end());
    let lines = example.lines().count();
    assert!(lines <= 40, "{lines} lines");
}

#[test]
fn the_second_block_is_examples_stations_rs() {
    let example = include_str!("../examples/stations.rs");
    assert_eq!(block(1), example.trim_end());
    let lines = example.lines().count();
    assert!(lines <= 60, "{lines} lines");
}

#[test]
fn the_charging_station_section_opens_with_examples_station_rs() {
    let readme = include_str!("../README.md");
    let section = readme
        .find("\n## A charging station\n")
        .expect("a section on a charging station");
    let blocks_before = readme[..section].matches("```rust,no_run\n").count();
    let example = include_str!("../examples/station.rs");
    assert_eq!(block(blocks_before), example.trim_end());
    let lines = example.lines().count();
    assert!(lines <= 60, "{lines} lines");
}

#[test]
fn the_one_handler_section_opens_with_examples_every_version_rs() {
    let readme = include_str!("../README.md");
    let section = readme
        .find("\n## One handler for every version\n")
        .expect("a section on one handler for every version");
    let blocks_before = readme[..section].matches("```rust,no_run\n").count();
    let example = include_str!("../examples/every_version.rs");
    assert_eq!(block(blocks_before), example.trim_end());
    let lines = example.lines().count();
    assert!(lines <= 60, "{lines} lines");
}

#[test]
fn the_restart_section_opens_with_examples_survives_restart_rs() {
    let readme = include_str!("../README.md");
    let section = readme
        .find("\n## A station that survives a restart\n")
        .expect("a section on a station that survives a restart");
    let blocks_before = readme[..section].matches("```rust,no_run\n").count();
    let example = include_str!("../examples/survives_restart.rs");
    assert_eq!(block(blocks_before), example.trim_end());
    let lines = example.lines().count();
    assert!(lines <= 82, "{lines} lines");
}
