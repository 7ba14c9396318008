#!/usr/bin/env bash
# mio-server with --database memory against --database sqlite://FILE, the same load on each
# (issue "The reference central system as a product"): memory per idle booted charge point and
# CPU per request in a heartbeat phase.
#
#   bash bench/database.sh [CHARGE_POINTS]     # default 10000 idle, 5000 heartbeat
#
# Build first: cargo build --release -p ocpp-examples --bin mio-server --bin ocpp-load
# The server runs on core 0, the swarm on core 1; every server is stopped by its PID; loopback
# only. Prints ocpp-load's phase lines; the JSON reports go to $OUT (default /tmp/ocpp-db-bench).
set -uo pipefail
cd "$(dirname "$0")/.."
IDLE_COUNT=${1:-10000}
HEARTBEAT_COUNT=$(( IDLE_COUNT / 2 ))
OUT=${OUT:-/tmp/ocpp-db-bench}
TARGET=${CARGO_TARGET_DIR:-target}/release
PORT=${BENCH_PORT:-9600}

run() { # run SCENARIO MODE COUNT
    local scenario=$1 mode=$2 count=$3 dir="$OUT/$1-$2" db pid
    rm -rf "$dir"; mkdir -p "$dir"
    case $mode in
        memory) db=memory ;;
        sqlite) db="sqlite://$dir/state.sqlite3" ;;
    esac
    taskset -c 0 "$TARGET/mio-server" --listen "127.0.0.1:$PORT" --admin "127.0.0.1:$((PORT + 1))" \
        --database "$db" >"$dir/server.out" 2>"$dir/server.err" &
    pid=$!
    sleep 1
    taskset -c 1 timeout 300 "$TARGET/ocpp-load" "$scenario" --url "ws://127.0.0.1:$PORT/ocpp" \
        --count "$count" --duration-s 20 --server-pid "$pid" --label "mio-$mode" \
        --json "$dir/report.json" >"$dir/load.out" 2>&1
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    grep -E '^\[|cpu_us_per_request' "$dir/load.out"
    PORT=$((PORT + 10))
}

for mode in memory sqlite; do run idle "$mode" "$IDLE_COUNT"; done
for mode in memory sqlite; do run heartbeat "$mode" "$HEARTBEAT_COUNT"; done
