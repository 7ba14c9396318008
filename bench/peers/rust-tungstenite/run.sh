#!/usr/bin/env bash
# run.sh LISTEN_ADDR PUSH_INTERVAL_MS [MODE]   MODE: default (tungstenite defaults) | tuned
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
exec "$dir/target/release/peer-rust-tungstenite" "$1" "$2" "${3:-${PEER_MODE:-default}}"
