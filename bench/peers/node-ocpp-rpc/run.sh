#!/usr/bin/env bash
# run.sh LISTEN_ADDR PUSH_INTERVAL_MS    (PEER_STRICT=0 turns ocpp-rpc's strict mode off)
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
exec node "$dir/server.js" "$1" "$2"
