#!/usr/bin/env bash
# Builds the peer in release mode into ./target (its own workspace and Cargo.lock).
set -euo pipefail
cd "$(dirname "$0")"
# Into its own target/ whatever CARGO_TARGET_DIR says: run.sh runs the binary from there.
cargo build --release --locked --quiet --target-dir target
