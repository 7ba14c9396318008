#!/usr/bin/env bash
# A million charge points on one machine (issue 38): mio-server nodes sharing one port
# (SO_REUSEPORT), each a node of one cluster on one redis-server, and ocpp-load booting every
# charge point (its worker processes, each under 20,000 sockets, over source addresses in
# 127.0.0.0/8) and holding them with heartbeats. Then:
#   hold     MILLION_HOLD_S idle with heartbeats: Redis commands/s per claim, CPU, memory per
#            charge point in the nodes (RSS), the kernel (Slab, sockstat) and Redis
#            (used_memory); commands through the admin API of a node that does not hold the
#            charge point (bench/million_probe.py)
#   storm    one node killed (SIGKILL): its charge points reconnect to the same port with
#            back-off and jitter (ocpp-load --rejoin) and boot again on the others; displaced,
#            time to 50 %, 99 % and 100 % booted again, Pending answers of boot admission
#            (--boot-rate), p99 of commands to not-displaced charge points meanwhile
#   redis    Redis killed and started again empty on the same port: the time until every
#            claim is back (the nodes' refresh rounds), p99 of commands meanwhile
# Results: bench/results/million-latest/ (million.json, summary.md, a plot if matplotlib is
# installed: bench/million_report.py). Exit status 1 when a check fails: a charge point lost,
# a displaced one not booted again, a claim missing in Redis at the end.
#
#   bash bench/million.sh                                   # 1,000,000 (the machine alone)
#   MILLION_SIZE=50000 MILLION_HOLD_S=20 bash bench/million.sh   # the CI case
#
# Settings (environment):
#   MILLION_SIZE         charge points [1000000]
#   MILLION_NODES        mio-server nodes [ceil(SIZE/16000), at least 3, so that a node holds
#                        under 20,000 connections even with a killed node's share]
#   MILLION_HOLD_S       the idle hold, with heartbeats [300]
#   MILLION_HEARTBEAT_S  Heartbeat period of every charge point [300]
#   MILLION_RATE         connects per second (ocpp-load --rate) [2000]
#   MILLION_BOOT_RATE    each node's --boot-rate N[/BURST], empty = none [1000/2000]
#   MILLION_CLUSTER_TTL_S  the nodes' --cluster-ttl-s (claims refreshed every third) [90]
#   MILLION_SAMPLES      commands timed after the hold [500]
#   MILLION_STORM_MAX_S  longest wait for the killed node's charge points [300]
#   MILLION_REDIS_MAX_S  longest wait for every claim after the Redis restart [300]
#   MILLION_PORT         the charge points' port; admin ports follow it [9800]; Redis is
#                        MILLION_REDIS_PORT [PORT+1000]
#   MILLION_OUT          results folder [bench/results/million-latest]
#   MILLION_REDIS_NICE   redis-server's nice value [-20: before the nodes and the swarm]
#   MILLION_LOG          the nodes' RUST_LOG [warn]; with
#                        warn,ocpp_examples::mio_server::ocpp_socket=info each connection's
#                        end and its reason is logged (server-disconnects.txt counts them)
#   MILLION_PROFILE      the cargo profile to build and run [release]; `ci` (Cargo.toml)
#                        builds in about 2/3 of release's time
#   MILLION_SKIP_BUILD=1 use the binaries already built (of MILLION_PROFILE)
#   SERVER_BIN_DIR       run the binaries in this folder without building (CI: target/debug,
#                        the test step's build; a debug build holds 50,000 charge points)
#
# Bounded: every wait has a limit, ocpp-load runs under `timeout`, every process this script
# starts is stopped by its PID. Loopback only. No CPU pinning (2 cores: every process shares
# both).
set -uo pipefail
export OCPP_DATABASE_URL="${OCPP_DATABASE_URL:-memory}"

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
PROFILE=${MILLION_PROFILE:-release}
BIN=$TARGET/$PROFILE
[ "$PROFILE" = dev ] && BIN=$TARGET/debug # cargo's one profile whose folder has another name
[ -n "${SERVER_BIN_DIR:-}" ] && BIN=$SERVER_BIN_DIR && MILLION_SKIP_BUILD=1
SIZE=${MILLION_SIZE:-1000000}
NODES=${MILLION_NODES:-$(( (SIZE + 15999) / 16000 ))}
[ "$NODES" -lt 3 ] && NODES=3
HOLD_S=${MILLION_HOLD_S:-300}
HEARTBEAT_S=${MILLION_HEARTBEAT_S:-300}
RATE=${MILLION_RATE:-2000}
BOOT_RATE=${MILLION_BOOT_RATE-1000/2000}
TTL_S=${MILLION_CLUSTER_TTL_S:-90}
SAMPLES=${MILLION_SAMPLES:-500}
STORM_MAX_S=${MILLION_STORM_MAX_S:-300}
REDIS_MAX_S=${MILLION_REDIS_MAX_S:-300}
LOG=${MILLION_LOG:-warn}
REDIS_NICE=${MILLION_REDIS_NICE:--20}
PORT=${MILLION_PORT:-9800}
REDIS_PORT=${MILLION_REDIS_PORT:-$((PORT + 1000))}
OUT=${MILLION_OUT:-$ROOT/bench/results/million-latest}
PROBE="python3 $ROOT/bench/million_probe.py"
mkdir -p "$OUT"
rm -f "$OUT"/*.json "$OUT"/*.jsonl "$OUT"/*.log "$OUT"/*.svg "$OUT"/summary.md
LOG="$OUT/run.log"
: >"$LOG"
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }
now() { date +%s.%N; }

# One node must hold its share plus the killed node's share under 20,000 files.
if [ $(( SIZE / (NODES - 1) )) -gt 18500 ]; then
    log "MILLION_NODES=$NODES: a node would hold $(( SIZE / (NODES - 1) )) after the kill (> 18,500)"
    exit 2
fi

NODE_PIDS=()
LOAD_PID=""
REDIS_PID=""
REDIS_DIR=$(mktemp -d)
HELPER_PIDS=()
stop_all() {
    for pid in "${HELPER_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
    HELPER_PIDS=()
    if [ -n "$LOAD_PID" ]; then
        kill -TERM "$LOAD_PID" 2>/dev/null
        wait "$LOAD_PID" 2>/dev/null
        LOAD_PID=""
    fi
    for pid in "${NODE_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    for pid in "${NODE_PIDS[@]}"; do
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    NODE_PIDS=()
    if [ -n "$REDIS_PID" ]; then
        kill -TERM "$REDIS_PID" 2>/dev/null
        wait "$REDIS_PID" 2>/dev/null
        REDIS_PID=""
    fi
    rm -rf "$REDIS_DIR"
}
trap stop_all EXIT

rcli() { redis-cli -p "$REDIS_PORT" "$@"; }
info_field() { rcli info "$1" 2>/dev/null | tr -d '\r' | sed -n "s/^$2://p"; }
ticks() { # summed utime + stime of these PIDs, in clock ticks
    local sum=0 pid
    for pid in "$@"; do
        [ -r "/proc/$pid/stat" ] && sum=$((sum + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
    done
    echo "$sum"
}
rss() { # summed VmRSS of these PIDs, in bytes
    local sum=0 pid
    for pid in "$@"; do
        [ -r "/proc/$pid/status" ] && sum=$((sum + $(awk '/^VmRSS/ {print $2 * 1024}' "/proc/$pid/status")))
    done
    echo "$sum"
}
descendants() { # the PID and every descendant of it (ocpp-load's workers)
    local pid=$1 child
    echo "$pid"
    for child in $(cat "/proc/$pid/task/"*/children 2>/dev/null); do descendants "$child"; done
}
meminfo() { awk -v k="$1:" '$1 == k {print $2 * 1024}' /proc/meminfo; }
sockstat_mem() { awk '$1 == "TCP:" {for (i = 2; i < NF; i++) if ($i == "mem") print $(i + 1) * 4096}' /proc/net/sockstat; }
or0() { [ -n "$1" ] && echo "$1" || echo 0; }
# The nanoseconds this PID's main thread ran ($1 = 1) or waited for a CPU while runnable (2)
schedstat() { [ -r "/proc/$1/schedstat" ] && awk -v f="$2" '{print $f}' "/proc/$1/schedstat" || echo 0; }
# One line of figures at a moment, for the report
snapshot() {
    local name=$1
    echo "{\"name\": \"$name\", \"t\": $(now), \"slab\": $(meminfo Slab), \"sunreclaim\": $(meminfo SUnreclaim), \"mem_available\": $(meminfo MemAvailable), \"tcp_mem\": $(sockstat_mem), \"nodes_rss\": $(rss "${NODE_PIDS[@]}"), \"nodes_ticks\": $(ticks "${NODE_PIDS[@]}"), \"redis_rss\": $(rss "$REDIS_PID"), \"redis_ticks\": $(ticks "$REDIS_PID"), \"redis_run_ns\": $(schedstat "$REDIS_PID" 1), \"redis_wait_ns\": $(schedstat "$REDIS_PID" 2), \"load_ticks\": $(ticks $( [ -n "$LOAD_PID" ] && descendants "$LOAD_PID")), \"redis_used_memory\": $(or0 "$(info_field memory used_memory)"), \"redis_commands\": $(or0 "$(info_field stats total_commands_processed)"), \"redis_keys\": $(or0 "$(rcli dbsize 2>/dev/null)")}" >>"$OUT/snapshots.jsonl"
}
# The claims in Redis: SCAN with a large COUNT (redis-cli --scan asks 10 keys a round trip,
# which at a million claims on a busy Redis took longer than the whole hold).
claims() {
    local cursor=0 total=0 reply
    while :; do
        reply=$(rcli scan "$cursor" match 'ocpp:cp:*' count 20000 2>/dev/null) || { echo 0; return; }
        cursor=$(printf '%s\n' "$reply" | head -1 | tr -dc '0-9')
        total=$(( total + $(printf '%s\n' "$reply" | tail -n +2 | grep -c 'ocpp:cp:') ))
        [ -z "$cursor" ] || [ "$cursor" = 0 ] && break
    done
    echo "$total"
}
start_redis() {
    # Redis runs at the highest priority (nice -20): in a deployment it has a core of its own;
    # here 117 processes share two. At nice -5 its thread waited for a CPU 2.3 times as long
    # as it ran (/proc/PID/schedstat, a million, 2026-12-06), and the nodes' claims and
    # releases timed out in Redis's run queue, not in Redis (BENCHMARKS.md).
    nice -n "$REDIS_NICE" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
        --dir "$REDIS_DIR" >>"$OUT/redis.log" 2>&1 &
    REDIS_PID=$!
    for _ in $(seq 1 100); do rcli ping >/dev/null 2>&1 && return 0; sleep 0.1; done
    log "redis-server did not start"
    return 1
}
stop_helpers() { # the phase's probes stop (their stop file) and are waited for
    touch "$STOP"
    for pid in "${HELPER_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
    HELPER_PIDS=()
}
record() { # name value: one figure for the report
    echo "{\"$1\": $2}" >>"$OUT/figures.jsonl"
}

command -v redis-server >/dev/null || { log "redis-server is not installed"; exit 1; }
if [ "${MILLION_SKIP_BUILD:-0}" != 1 ]; then
    log "building mio-server and ocpp-load (profile $PROFILE)"
    cargo build --profile "$PROFILE" --quiet -p ocpp-examples --bin mio-server --bin ocpp-load || exit 1
fi
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
TICK=$(getconf CLK_TCK)
record charge_points "$SIZE"
record nodes "$NODES"
record hold_s "$HOLD_S"
record heartbeat_s "$HEARTBEAT_S"
record rate "$RATE"
record boot_rate "\"$BOOT_RATE\""
record cluster_ttl_s "$TTL_S"
record clock_ticks "$TICK"

# ---------------------------------------------------------------------------------------------
# Redis, the nodes, the swarm.
start_redis || exit 1
snapshot empty
ADMIN_PORTS=()
NAMED=() # PORT:NODE of every node, for bench/million_probe.py
boot_rate_arg=()
[ -n "$BOOT_RATE" ] && boot_rate_arg=(--boot-rate "$BOOT_RATE")
for k in $(seq 1 "$NODES"); do
    admin=$((PORT + k))
    ADMIN_PORTS+=("$admin")
    NAMED+=("$admin:node$k")
    RUST_LOG=$LOG "$BIN/mio-server" --listen "127.0.0.1:$PORT" --admin "127.0.0.1:$admin" \
        --redis "redis://127.0.0.1:$REDIS_PORT/" --node-id "node$k" --cluster-ttl-s "$TTL_S" \
        "${boot_rate_arg[@]}" >>"$OUT/server.log" 2>&1 &
    NODE_PIDS+=($!)
done
for _ in $(seq 1 300); do
    up=0
    for admin in "${ADMIN_PORTS[@]}"; do
        (exec 3<>/dev/tcp/127.0.0.1/"$admin") 2>/dev/null && up=$((up + 1))
    done
    [ "$up" = "$NODES" ] && break
    sleep 0.1
done
[ "$up" = "$NODES" ] || { log "only $up of $NODES nodes up"; exit 1; }
snapshot nodes_up

SOURCES=$(( (SIZE + 3999) / 4000 ))
[ "$SOURCES" -gt 250 ] && SOURCES=250
END_FILE="$OUT/.end"
rm -f "$END_FILE"
CONNECT_LIMIT=$(( SIZE / RATE + 300 ))
PHASE_LIMIT=$(( HOLD_S + STORM_MAX_S + REDIS_MAX_S + 600 ))
log "$SIZE charge points on $NODES nodes: connecting at $RATE/s ($SOURCES source addresses)"
timeout $(( CONNECT_LIMIT + PHASE_LIMIT + 120 )) "$BIN/ocpp-load" heartbeat --rejoin \
    --url "ws://127.0.0.1:$PORT/ocpp" --count "$SIZE" --rate "$RATE" --prefix M \
    --source-count "$SOURCES" --label "million-$NODES" --json "$OUT/load.json" \
    --duration-s "$PHASE_LIMIT" --end-file "$END_FILE" --heartbeat-s "$HEARTBEAT_S" \
    --status-s 0 --meter-s 0 --connect-timeout-s "$CONNECT_LIMIT" \
    --retry-min-ms 250 --retry-random-ms 2000 >>"$OUT/load.log" 2>&1 &
LOAD_PID=$!
t_connect=$(now)
for _ in $(seq 1 $(( (CONNECT_LIMIT + 30) * 2 ))); do
    grep -q '\] connect ' "$OUT/load.log" 2>/dev/null && break
    kill -0 "$LOAD_PID" 2>/dev/null || break
    sleep 0.5
done
grep -q '\] connect ' "$OUT/load.log" || { log "the connect phase did not end"; exit 1; }
record connect_s "$(awk -v a="$t_connect" -v b="$(now)" 'BEGIN {print b - a}')"
log "connected: $(grep -m1 '\] connect ' "$OUT/load.log")"

# ---------------------------------------------------------------------------------------------
# The hold.
sleep 3
snapshot hold_start
log "holding $HOLD_S s"
sleep "$HOLD_S"
snapshot hold_end
record claims_after_hold "$(claims)"
$PROBE holders "$OUT/holders.json" "${NAMED[@]}" >>"$LOG" 2>&1 || { log "no listing"; exit 1; }
$PROBE commands "$OUT/commands-hold.json" "$OUT/holders.json" "$SAMPLES" /nonexistent 600 - \
    "${NAMED[@]}" >>"$LOG" 2>&1 || log "hold: the command probe failed"

# ---------------------------------------------------------------------------------------------
# The storm: one node killed.
VICTIM=0 # index into NODE_PIDS / ADMIN_PORTS
VICTIM_NODE=node$((VICTIM + 1))
SURVIVORS=("${ADMIN_PORTS[@]:1}")
displaced=$(python3 -c "import json; print(len(json.load(open('$OUT/holders.json'))['$VICTIM_NODE']))")
record displaced_listed "$displaced"
STOP="$OUT/.stop-storm"
rm -f "$STOP"
$PROBE watch "$OUT/watch-storm.jsonl" "$STOP" $((STORM_MAX_S + 60)) "${SURVIVORS[@]}" &
HELPER_PIDS+=($!)
$PROBE commands "$OUT/commands-storm.json" "$OUT/holders.json" 0 "$STOP" $((STORM_MAX_S + 60)) \
    "$VICTIM_NODE" "${NAMED[@]}" >>"$LOG" 2>&1 &
HELPER_PIDS+=($!)
sleep 2
log "storm: killing $VICTIM_NODE (PID ${NODE_PIDS[$VICTIM]}, $displaced charge points)"
record kill_t "$(now)"
kill -KILL "${NODE_PIDS[$VICTIM]}"
wait "${NODE_PIDS[$VICTIM]}" 2>/dev/null
NODE_PIDS=("${NODE_PIDS[@]:1}")
# Back: every charge point connected on the survivors and none waiting for admission.
t0=$(now)
while :; do
    line=$(tail -n 1 "$OUT/watch-storm.jsonl" 2>/dev/null)
    back=$(echo "$line" | python3 -c "
import json, sys
try:
    line = json.loads(sys.stdin.read())
except ValueError:
    print(0); raise SystemExit
n = [v for k, v in line.items() if k != 't']
print(int(sum(v.get('ocpp_charge_points_connected', 0) for v in n)) if all(v.get('ocpp_boots_waiting', 0) == 0 for v in n) and len(n) == $((NODES - 1)) else 0)")
    [ "$back" -ge "$SIZE" ] && break
    [ "$(awk -v a="$t0" -v b="$(now)" 'BEGIN {print (b - a > '"$STORM_MAX_S"')}')" = 1 ] && break
    sleep 0.5
done
record storm_server_back_t "$(now)"
log "storm: $back of $SIZE connected on the survivors"
sleep 3
stop_helpers
snapshot after_storm
record claims_after_storm "$(claims)"

# ---------------------------------------------------------------------------------------------
# Redis killed and started again, empty.
STOP="$OUT/.stop-redis"
rm -f "$STOP"
$PROBE holders "$OUT/holders-2.json" "${NAMED[@]:1}" >>"$LOG" 2>&1 || { log "no listing"; exit 1; }
$PROBE commands "$OUT/commands-redis.json" "$OUT/holders-2.json" 0 "$STOP" $((REDIS_MAX_S + 60)) \
    - "${NAMED[@]:1}" >>"$LOG" 2>&1 &
HELPER_PIDS+=($!)
sleep 2
log "redis: killing and starting again (empty)"
record redis_kill_t "$(now)"
kill -KILL "$REDIS_PID"
wait "$REDIS_PID" 2>/dev/null
REDIS_PID=""
start_redis || exit 1
t0=$(now)
record redis_up_t "$t0"
: >"$OUT/redis-keys.jsonl"
while :; do
    keys=$(rcli dbsize 2>/dev/null || echo 0)
    echo "{\"t\": $(now), \"keys\": $keys}" >>"$OUT/redis-keys.jsonl"
    if [ "$keys" -ge "$SIZE" ]; then
        n=$(claims)
        echo "{\"t\": $(now), \"claims\": $n}" >>"$OUT/redis-keys.jsonl"
        [ "$n" -ge "$SIZE" ] && break
    fi
    [ "$(awk -v a="$t0" -v b="$(now)" 'BEGIN {print (b - a > '"$REDIS_MAX_S"')}')" = 1 ] && break
    sleep 0.25
done
record redis_claims_back_t "$(now)"
record claims_after_redis "$(claims)"
log "redis: $(claims) claims back"
sleep 3
stop_helpers
snapshot end

# ---------------------------------------------------------------------------------------------
# The swarm's report, then ours.
touch "$END_FILE"
wait "$LOAD_PID"
record load_rc $?
LOAD_PID=""
# The listings were the probes' input (at a million, megabytes): not results.
rm -f "$END_FILE" "$OUT/.stop-storm" "$OUT/.stop-redis" "$OUT"/holders*.json
# What the nodes logged: each kind of warning with its count (numbers folded), and why
# connections ended (with MILLION_LOG at info for ocpp_socket).
grep -o ' WARN .*' "$OUT/server.log" | sed -E 's/[0-9]+/N/g' | sort | uniq -c | sort -rn \
    >"$OUT/server-warnings.txt"
grep ' disconnected' "$OUT/server.log" | grep -o 'reason=.*seconds=' | sed -E 's/[0-9]+/N/g' \
    | sort | uniq -c | sort -rn >"$OUT/server-disconnects.txt"
python3 bench/million_report.py "$OUT" | tee "$OUT/summary.md"
