#!/usr/bin/env bash
# The cluster measurement of BENCHMARKS.md ("A cluster on one Redis"): several mio-server
# processes share one port (SO_REUSEPORT), each a node of one cluster on one redis-server;
# ocpp-load boots every charge point and holds them in a heartbeat phase, during which this
# script reads Redis's commands per second, CPU and memory, and times commands sent through
# the admin API of the node that holds the charge point and of another node
# (bench/cluster_latency.py).
#
#   bash bench/cluster.sh                          # 10,000, 50,000 and 100,000 charge points
#   CLUSTER_SIZES=10000 bash bench/cluster.sh      # one size
#
# Settings (environment):
#   CLUSTER_SIZES    charge points [10000 50000 100000]
#   CLUSTER_NODES    mio-server processes, each a node [6]
#   CLUSTER_PHASE_S  length of the heartbeat phase [150]
#   CLUSTER_HEARTBEAT_S  Heartbeat period of every charge point [30]
#   CLUSTER_SAMPLES  commands timed of each kind (same node, other node) [1000]
#   CLUSTER_RATE     connects per second [1000]
#   CLUSTER_OUT      results folder [bench/results/cluster-latest]
#   CLUSTER_PORT     the charge points' port; admin ports follow it, Redis is PORT+100 [9600]
#   CLUSTER_BIN      a folder with mio-server and ocpp-load already built (no build; e.g. two
#                    commits' binaries side by side) [$CARGO_TARGET_DIR/release, built]
#   CLUSTER_TTL_S    the nodes' claim and node TTL (`--cluster-ttl-s`; refresh rounds every
#                    third of it) [the servers' default: 90 s claims, 5 s node records]
#
# Servers and Redis are pinned to core 0, ocpp-load and the latency client to core 1.
# Bounded: ocpp-load has its own limits plus `timeout`; every process this script starts is
# stopped by its PID. Loopback only.
set -uo pipefail
# The servers keep no state between runs here unless OCPP_DATABASE_URL says where (their
# default is a SQLite file in the working directory).
export OCPP_DATABASE_URL="${OCPP_DATABASE_URL:-memory}"

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=${CLUSTER_BIN:-$TARGET/release}
SIZES=${CLUSTER_SIZES:-10000 50000 100000}
NODES=${CLUSTER_NODES:-6}
PHASE_S=${CLUSTER_PHASE_S:-150}
HEARTBEAT_S=${CLUSTER_HEARTBEAT_S:-30}
SAMPLES=${CLUSTER_SAMPLES:-1000}
RATE=${CLUSTER_RATE:-1000}
OUT=${CLUSTER_OUT:-$ROOT/bench/results/cluster-latest}
PORT=${CLUSTER_PORT:-9600}
REDIS_PORT=$((PORT + 100))
TTL_ARGS=()
[ -n "${CLUSTER_TTL_S:-}" ] && TTL_ARGS=(--cluster-ttl-s "$CLUSTER_TTL_S")
mkdir -p "$OUT"
LOG="$OUT/run.log"
: >"$LOG"
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }

if [ "$(nproc)" -ge 2 ]; then
    PIN_SERVER="taskset -c 0"; PIN_LOAD="taskset -c 1"
else
    PIN_SERVER=""; PIN_LOAD=""
fi

PIDS=()
REDIS_PID=""
REDIS_DIR=""
stop_all() {
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    PIDS=()
    if [ -n "$REDIS_PID" ]; then
        kill -TERM "$REDIS_PID" 2>/dev/null || true
        wait "$REDIS_PID" 2>/dev/null || true
        REDIS_PID=""
    fi
    [ -n "$REDIS_DIR" ] && rm -rf "$REDIS_DIR"
    REDIS_DIR=""
}
trap stop_all EXIT

rcli() { redis-cli -p "$REDIS_PORT" "$@"; }
info_field() { rcli info "$1" | tr -d '\r' | sed -n "s/^$2://p"; }
# Redis's CPU time in clock ticks, and its RSS in bytes (from /proc).
redis_ticks() { awk '{print $14 + $15}' "/proc/$REDIS_PID/stat"; }
redis_cpu() {
    rcli info cpu | tr -d '\r' | awk -F: '/^used_cpu_(sys|user):/ {s += $2} END {printf "%.6f", s}'
}
evalsha_calls() {
    rcli info commandstats | tr -d '\r' | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p'
}
redis_rss() { awk '/VmRSS/ {print $2 * 1024}' "/proc/$REDIS_PID/status"; }

if [ -z "${CLUSTER_BIN:-}" ]; then
    log "building mio-server and ocpp-load (release)"
    cargo build --release --quiet -p ocpp-examples --bin mio-server --bin ocpp-load || exit 1
fi
command -v redis-server >/dev/null || { log "redis-server is not installed"; exit 1; }
TICK=$(getconf CLK_TCK)

run_size() {
    local size=$1 k
    local json="$OUT/load-$size.json"
    REDIS_DIR=$(mktemp -d)
    $PIN_SERVER redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
        --dir "$REDIS_DIR" >>"$OUT/redis.log" 2>&1 &
    REDIS_PID=$!
    for _ in $(seq 1 100); do rcli ping >/dev/null 2>&1 && break; sleep 0.1; done
    local redis_rss0
    redis_rss0=$(redis_rss)
    local admin_ports=() pids
    for k in $(seq 1 "$NODES"); do
        local admin=$((PORT + k))
        admin_ports+=("$admin")
        RUST_LOG=warn $PIN_SERVER "$BIN/mio-server" --listen "127.0.0.1:$PORT" \
            --admin "127.0.0.1:$admin" --redis "redis://127.0.0.1:$REDIS_PORT/" \
            --node-id "node$k" "${TTL_ARGS[@]}" >>"$OUT/server.log" 2>&1 &
        PIDS+=($!)
    done
    for _ in $(seq 1 200); do
        local up=0
        for k in "${admin_ports[@]}"; do
            (exec 3<>/dev/tcp/127.0.0.1/"$k") 2>/dev/null && up=$((up + 1))
        done
        [ "$up" = "$NODES" ] && break
        sleep 0.1
    done
    pids=$(IFS=,; echo "${PIDS[*]}")
    local sources=$(( (size + 4999) / 5000 ))
    local processes=$(( (size + 18999) / 19000 ))
    local budget=$(( size / RATE + PHASE_S + 300 ))
    log "$size charge points on $NODES nodes: connecting ($processes load processes)"
    timeout "$budget" $PIN_LOAD "$BIN/ocpp-load" heartbeat --url "ws://127.0.0.1:$PORT/ocpp" \
        --count "$size" --rate "$RATE" --source-count "$sources" --processes "$processes" \
        --server-pid "$pids" --label "mio-cluster-$NODES" --json "$json" \
        --duration-s "$PHASE_S" --heartbeat-s "$HEARTBEAT_S" --status-s 0 --meter-s 0 \
        --connect-timeout-s $(( size / RATE + 240 )) >>"$OUT/load-$size.log" 2>&1 &
    local load=$!
    # Booted = claimed in Redis. DBSIZE (O(1)) counts the claims, the epoch counter and the
    # node records while nothing has disconnected; the live claims are counted once after.
    local keys=0 claims
    for _ in $(seq 1 $(( (size / RATE + 240) * 2 ))); do
        keys=$(rcli dbsize 2>/dev/null || echo 0)
        [ "$keys" -ge $((size + 1 + NODES)) ] && break
        kill -0 "$load" 2>/dev/null || break
        sleep 0.5
    done
    claims=$(rcli eval "local n=0 for _,k in ipairs(redis.call('keys','ocpp:cp:*')) do if redis.call('hget',k,'node')~='' then n=n+1 end end return n" 0 2>/dev/null || echo 0)
    log "$size: $claims claims in Redis; measuring"
    sleep 5
    local t0 ticks0 cmds0 t1 ticks1 cmds1 rss used cpu0 cpu1 reads0 reads1 evalsha0 evalsha1
    t0=$(date +%s.%N); ticks0=$(redis_ticks); cmds0=$(info_field stats total_commands_processed)
    cpu0=$(redis_cpu); reads0=$(info_field stats total_reads_processed); evalsha0=$(evalsha_calls)
    $PIN_LOAD python3 bench/cluster_latency.py "$OUT/latency-$size.json" "$SAMPLES" \
        "${admin_ports[@]}" >>"$LOG" 2>&1 || log "$size: latency client failed"
    # At least 60 s of Redis figures, whatever the latency client took.
    local spent
    spent=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {print int(b - a)}')
    [ "$spent" -lt 60 ] && sleep $((60 - spent))
    t1=$(date +%s.%N); ticks1=$(redis_ticks); cmds1=$(info_field stats total_commands_processed)
    cpu1=$(redis_cpu); reads1=$(info_field stats total_reads_processed); evalsha1=$(evalsha_calls)
    rss=$(redis_rss); used=$(info_field memory used_memory)
    wait "$load"
    local load_rc=$?
    python3 - "$OUT/redis-$size.json" <<EOF
import json, sys
wall = $t1 - $t0
json.dump({
    "charge_points": $size, "nodes": $NODES, "claims_seen": $claims, "load_rc": $load_rc,
    "window_s": round(wall, 1),
    "commands_per_s": round(($cmds1 - $cmds0) / wall, 1),
    "cpu_percent": round(($ticks1 - $ticks0) / $TICK / wall * 100, 2),
    # INFO cpu (used_cpu_sys + used_cpu_user), and the reads Redis made of its clients'
    # sockets (INFO stats total_reads_processed: about one per round trip of a client).
    "redis_cpu_s": round($cpu1 - $cpu0, 3),
    "reads_per_s": round(($reads1 - $reads0) / wall, 1),
    # Scripts run (INFO commandstats cmdstat_evalsha calls: refresh.lua, announce.lua, ...).
    "evalsha_per_s": round(($evalsha1 - $evalsha0) / wall, 1),
    "redis_cpu_us_per_evalsha": round(($cpu1 - $cpu0) * 1e6 / max(1, $evalsha1 - $evalsha0), 2),
    "ttl_s": "${CLUSTER_TTL_S:-}",
    "rss_bytes": $rss, "rss_before_bytes": $redis_rss0, "used_memory_bytes": $used,
    "rss_per_charge_point_bytes": round(($rss - $redis_rss0) / $size, 1),
}, open(sys.argv[1], "w"), indent=1)
EOF
    log "$size: done (ocpp-load exit $load_rc)"
    stop_all
    sleep 2
}

for size in $SIZES; do
    run_size "$size"
done
python3 bench/cluster_report.py "$OUT" | tee "$OUT/summary.md"
