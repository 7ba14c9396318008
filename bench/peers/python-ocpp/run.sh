#!/usr/bin/env bash
# run.sh LISTEN_ADDR PUSH_INTERVAL_MS    (PEER_SYNC_VALIDATION=1: schema validation on the event loop)
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
exec "$dir/.venv/bin/python" "$dir/server.py" "$1" "$2"
