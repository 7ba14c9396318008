#!/usr/bin/env bash
# Builds the floor peer in release mode into ./target (its own workspace and Cargo.lock).
set -euo pipefail
cd "$(dirname "$0")"
if [ -f Cargo.lock ]; then
    cargo build --release --locked --quiet
else
    cargo build --release --quiet
fi
