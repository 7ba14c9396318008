#!/usr/bin/env bash
# run.sh LISTEN_ADDR PUSH_INTERVAL_MS
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
exec "$dir/target/release/peer-rust-floor" "$1" "$2"
