#!/usr/bin/env bash
# Builds the peer in release mode into ./target (its own workspace and Cargo.lock).
set -euo pipefail
cd "$(dirname "$0")"
cargo build --release --locked --quiet
