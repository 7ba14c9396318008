#!/usr/bin/env bash
# Runs every scenario of `ocpp-load` against our mio-server and every peer in bench/peers/,
# the server pinned to core 0 and the swarm to core 1, and writes the results (one JSON per
# run), BENCHMARKS.md's generated tables and the plots.
#
#   bash bench/run.sh                      # everything (about an hour on 2 cores)
#   BENCH_QUICK=1 bash bench/run.sh        # a small case of everything (a few minutes)
#
# Settings (environment):
#   BENCH_SERVERS    servers to measure [mio-1 mio-2 rust-floor rust-tungstenite-default
#                    rust-tungstenite-tuned rust-ocpp-kit node-ocpp-rpc python-ocpp]
#                    (rust-floor: the floor peer every figure is compared with;
#                    uring-N: uring-server, mio-server's loop on io_uring, N loops;
#                    tokio-server: ours on ocpp-tokio, one worker thread and one shard;
#                    tokio-tasks: the same with a task per connection, --shards 0; both on
#                    request only)
#   BENCH_SIZES      charge points on one server process [1000 10000 19000]
#   BENCH_BIG_SIZES  charge points across several mio-server processes [50000 100000]
#   BENCH_SCENARIOS  [idle heartbeat push stream reconnect deflate]
#   BENCH_IDLE_S BENCH_HEARTBEAT_S BENCH_PUSH_S BENCH_STREAM_S   phase lengths [20 30 20 20]
#   BENCH_RATE       connects per second [1000]
#   BENCH_OUT        results folder [bench/results/latest]
#   BENCH_SKIP_INSTALL=1  do not install the peers (already installed)
#   BENCH_SKIP_REPORT=1   do not write BENCHMARKS.md's tables and plots
#   BENCH_PROFILE    cargo profile of mio-server and ocpp-load [release]
#   SERVER_BIN_DIR   run the binaries in this folder without building (CI's quick check:
#                    target/debug, the test step's build)
#
# Bounded: every ocpp-load run has its own time limits plus `timeout`; every server this
# script starts is stopped by its PID. Loopback only.
set -uo pipefail
# The servers keep no state between runs here unless OCPP_DATABASE_URL says where (their
# default is a SQLite file in the working directory).
export OCPP_DATABASE_URL="${OCPP_DATABASE_URL:-memory}"

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
QUICK=${BENCH_QUICK:-0}
if [ "$QUICK" = 1 ]; then
    SERVERS=${BENCH_SERVERS:-mio-1 rust-tungstenite-default}
    SIZES=${BENCH_SIZES:-200}
    BIG_SIZES=${BENCH_BIG_SIZES:-}
    IDLE_S=${BENCH_IDLE_S:-2}; HEARTBEAT_S=${BENCH_HEARTBEAT_S:-3}
    PUSH_S=${BENCH_PUSH_S:-2}; STREAM_S=${BENCH_STREAM_S:-2}
else
    SERVERS=${BENCH_SERVERS:-mio-1 mio-2 rust-floor rust-tungstenite-default rust-tungstenite-tuned rust-ocpp-kit node-ocpp-rpc python-ocpp}
    SIZES=${BENCH_SIZES:-1000 10000 19000}
    BIG_SIZES=${BENCH_BIG_SIZES:-50000 100000}
    IDLE_S=${BENCH_IDLE_S:-20}; HEARTBEAT_S=${BENCH_HEARTBEAT_S:-30}
    PUSH_S=${BENCH_PUSH_S:-20}; STREAM_S=${BENCH_STREAM_S:-20}
fi
SCENARIOS=${BENCH_SCENARIOS:-idle heartbeat push stream reconnect deflate}
RECONNECT_SIZE=${BENCH_RECONNECT_SIZE:-}
BURN_SERVERS=${BENCH_BURN_SERVERS:-$SERVERS}
# Extra flags for mio-server (the deflate runs set them).
SERVER_EXTRA=""
RATE=${BENCH_RATE:-1000}
OUT=${BENCH_OUT:-$ROOT/bench/results/latest}
PORT=${BENCH_PORT:-9400}
mkdir -p "$OUT"
LOG="$OUT/run.log"
: >"$LOG"
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }

SERVER_PIDS=()
FAILURES=0
stop_servers() {
    for pid in "${SERVER_PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${SERVER_PIDS[@]}"; do
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    SERVER_PIDS=()
    if [ -s "$OUT/restarted.pid" ]; then
        pid=$(cat "$OUT/restarted.pid")
        kill -TERM "$pid" 2>/dev/null || true
        sleep 0.5
        kill -KILL "$pid" 2>/dev/null || true
        rm -f "$OUT/restarted.pid"
    fi
}
trap stop_servers EXIT

# -- Build and install ---------------------------------------------------------------------
PROFILE=${BENCH_PROFILE:-release}
PROFILE_DIR=$([ "$PROFILE" = dev ] && echo debug || echo "$PROFILE")
BIN=$TARGET/$PROFILE_DIR
if [ -n "${SERVER_BIN_DIR:-}" ]; then
    BIN=$SERVER_BIN_DIR
    log "using the binaries in $BIN (SERVER_BIN_DIR; not building)"
else
    log "building mio-server, tokio-server, uring-server and ocpp-load ($PROFILE)"
    cargo build --profile "$PROFILE" --quiet -p ocpp-examples --bin mio-server --bin tokio-server \
        --bin uring-server --bin ocpp-load || exit 1
fi
if [ "${BENCH_SKIP_INSTALL:-0}" != 1 ]; then
    for server in $SERVERS; do
        case $server in
            mio-* | uring-* | tokio-server | tokio-tasks) continue ;;
            rust-tungstenite-*) peer=rust-tungstenite ;;
            *) peer=$server ;;
        esac
        if [ "${server#mio-}" = "$server" ]; then
            log "installing peer $peer"
            bash "bench/peers/$peer/install.sh" >>"$LOG" 2>&1 || { log "cannot install $peer"; exit 1; }
        fi
    done
fi

cores=$(nproc)
if [ "$cores" -ge 2 ]; then
    PIN_SERVER="taskset -c 0"; PIN_LOAD="taskset -c 1"
else
    PIN_SERVER=""; PIN_LOAD=""
fi

# The command that starts `server` on 127.0.0.1:$PORT pushing every $2 ms (0 = never).
server_cmd() {
    local server=$1 push=$2
    case $server in
        mio-* | uring-*)
            # uring-N: the same options, on uring-server.
            local push_flag="" binary=${server%-*}-server
            [ "$push" -gt 0 ] && push_flag="--push-interval-ms $push"
            echo "exec $BIN/$binary --listen 127.0.0.1:$PORT --admin 127.0.0.1:0 --threads ${server##*-} $push_flag $SERVER_EXTRA" ;;
        tokio-server | tokio-tasks)
            # Pinned to one core like mio-1: one worker thread of the tokio runtime, and one
            # shard (tokio-tasks: a task per connection instead).
            local push_flag="" shards=1
            [ "$push" -gt 0 ] && push_flag="--push-interval-ms $push"
            [ "$server" = tokio-tasks ] && shards=0
            echo "exec $BIN/tokio-server --listen 127.0.0.1:$PORT --admin 127.0.0.1:0 --threads 1 --shards $shards $push_flag $SERVER_EXTRA" ;;
        rust-tungstenite-*)
            echo "exec bash $ROOT/bench/peers/rust-tungstenite/run.sh 127.0.0.1:$PORT $push ${server#rust-tungstenite-}" ;;
        *)
            echo "exec bash $ROOT/bench/peers/$server/run.sh 127.0.0.1:$PORT $push" ;;
    esac
}

# Waits until the port accepts connections; fails at once if a server process died.
wait_port() {
    local pid
    for _ in $(seq 1 600); do
        for pid in "${SERVER_PIDS[@]}"; do
            kill -0 "$pid" 2>/dev/null || return 1
        done
        if (exec 3<>/dev/tcp/127.0.0.1/"$PORT") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    return 1
}

# Starts `processes` copies of `server` sharing the port; sets SERVER_PIDS.
start_server() {
    local server=$1 push=$2 processes=${3:-1} i
    for i in $(seq 1 "$processes"); do
        RUST_LOG=warn $PIN_SERVER sh -c "$(server_cmd "$server" "$push")" >>"$OUT/server.log" 2>&1 &
        SERVER_PIDS+=($!)
    done
    # Let the processes exec into the server, then wait for the port.
    sleep 0.3
    wait_port
}

# run NAME SERVER COUNT PROCESSES SCENARIO PUSH_MS [ocpp-load args...]
run() {
    local name=$1 server=$2 count=$3 processes=$4 scenario=$5 push=$6
    shift 6
    local json="$OUT/$name.json"
    log "$name: $server, $count charge points, $scenario"
    if ! start_server "$server" "$push" "$processes"; then
        log "$name: $server did not start"
        FAILURES=$((FAILURES + 1))
        echo "{\"label\":\"$server\",\"scenario\":\"$scenario\",\"charge_points\":$count,\"error\":\"server did not start\"}" >"$json"
        stop_servers
        return
    fi
    local pids
    pids=$(IFS=,; echo "${SERVER_PIDS[*]}")
    # One source address per 5,000 charge points: connect()'s search for a free ephemeral
    # port slows down sharply as one (source, destination) pair fills its 28,232 ports.
    local sources=$(( (count + 4999) / 5000 ))
    local budget=$(( count / RATE + 240 ))
    if ! timeout "$budget" $PIN_LOAD "$BIN/ocpp-load" "$scenario" \
        --url "ws://127.0.0.1:$PORT/ocpp" --count "$count" --rate "$RATE" \
        --source-count "$sources" --server-pid "$pids" --label "$server" --json "$json" \
        "$@" 2>>"$LOG"; then
        log "$name: ocpp-load failed or timed out (see run.log)"
        FAILURES=$((FAILURES + 1))
        [ -s "$json" ] || echo "{\"label\":\"$server\",\"scenario\":\"$scenario\",\"charge_points\":$count,\"error\":\"could not complete (ocpp-load failed or timed out)\"}" >"$json"
    fi
    stop_servers
    sleep 1
}

has() { case " $SCENARIOS " in *" $1 "*) return 0 ;; esac; return 1; }

for size in $SIZES; do
    for server in $SERVERS; do
        has idle && run "idle-$server-$size" "$server" "$size" 1 idle 0 --duration-s "$IDLE_S"
        has heartbeat && run "heartbeat-$server-$size" "$server" "$size" 1 heartbeat 0 \
            --duration-s "$HEARTBEAT_S" --heartbeat-s 10 --status-s 30 --meter-s 30
        has push && run "push-$server-$size" "$server" "$size" 1 push 500 --duration-s "$PUSH_S"
    done
done

for size in $BIG_SIZES; do
    processes=$(( (size + 18999) / 19000 ))
    has idle && run "idle-mio-1-$size" mio-1 "$size" "$processes" idle 0 --duration-s "$IDLE_S"
    has heartbeat && run "heartbeat-mio-1-$size" mio-1 "$size" "$processes" heartbeat 0 \
        --duration-s "$HEARTBEAT_S" --heartbeat-s 10 --status-s 30 --meter-s 30
done

if has stream; then
    for server in $SERVERS; do
        for clients in 1 20; do
            run "stream-$server-$clients" "$server" "$clients" 1 stream 10 --duration-s "$STREAM_S"
            case " $BURN_SERVERS " in
                *" $server "*) run "stream-burn-$server-$clients" "$server" "$clients" 1 stream 10 \
                    --duration-s "$STREAM_S" --burn 80 ;;
            esac
        done
    done
fi

if has reconnect; then
    for server in $SERVERS; do
        size=${RECONNECT_SIZE:-$(echo "$SIZES" | awk '{print $1}')}
        run "reconnect-$server-$size" "$server" "$size" 1 reconnect 0 \
            --restart-cmd "exec $PIN_SERVER sh -c '$(server_cmd "$server" 0)' >>$OUT/server.log 2>&1" \
            --restart-pid-file "$OUT/restarted.pid" --connect-timeout-s 120
    done
fi

# permessage-deflate: the same heartbeat run with the charge points offering compression and
# mio-server accepting it, without and with context takeover.
if has deflate; then
    size=${BENCH_DEFLATE_SIZE:-$(echo "$SIZES" | awk '{print $NF}')}
    for mode in no-context context; do
        SERVER_EXTRA="--deflate $mode"
        run "heartbeat-deflate-$mode-mio-1-$size" mio-1 "$size" 1 heartbeat 0 \
            --duration-s "$HEARTBEAT_S" --heartbeat-s 10 --status-s 30 --meter-s 30 \
            --deflate "$mode" --label "mio-1 deflate $mode"
    done
    SERVER_EXTRA=""
fi

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)"
    echo "cpu: $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "servers: $SERVERS"
    echo "sizes: $SIZES / $BIG_SIZES"
    echo "quick: $QUICK"
} >"$OUT/machine.txt"
log "results in $OUT"

if [ "${BENCH_SKIP_REPORT:-0}" != 1 ]; then
    bash bench/report.sh "$OUT" || exit 1
fi
log "$FAILURES runs did not complete"
# A peer that cannot hold a size is a result of the full run; in the quick check every run
# must complete.
if [ "$QUICK" = 1 ] && [ "$FAILURES" -gt 0 ]; then
    exit 1
fi
