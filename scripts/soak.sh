#!/usr/bin/env bash
# The soak of issue 14: mio-server under 5,000 charge points with churn for SOAK_MINUTES, every
# CALL both ways reconciled with the server's /metrics at the end, the server's RSS sampled every
# 10 s into a CSV and drawn as an SVG; then a restart of mio-server under 19,000 charge points:
# the time until all are back and booted, and how many handshakes hit the server's deadline.
# Figures go into RELIABILITY.md by hand. A script, not CI.
#
#   bash scripts/soak.sh                      # 30 minutes + the restart (about 40 minutes)
#   SOAK_MINUTES=2 bash scripts/soak.sh       # a short run to shake out bugs
#
# Settings (environment):
#   SOAK_MINUTES        length of the soak phase [30]
#   SOAK_COUNT          charge points of the soak [5000]
#   SOAK_COMMANDS_PER_S admin commands per second [10]
#   SOAK_CHURN_S        mean seconds between two disconnects of one charge point [600]
#   SOAK_DROP_SHARE     share of those without a close frame [0.5]
#   SOAK_DUPLICATES     extra charge points (share of SOAK_COUNT) connecting with a taken
#                       identity [0.02]
#   SOAK_SESSION_S      mean session length and pause between sessions [180]
#   SOAK_HEARTBEAT_S    Heartbeat period [60]; SOAK_METER_S MeterValues period [30]
#   RESTART_COUNT       charge points of the restart test [19000]; 0 skips it
#   SOAK_SKIP_SOAK=1    only the restart test
#   SOAK_OUT            results folder [bench/results/soak]
#   SOAK_PORT           mio-server's port [9500] (admin on +1; the restart uses +2 and +3)
#
# Bounded: every ocpp-load run has its own limits plus `timeout`; every server this script starts
# is stopped by its PID. Loopback only.
set -uo pipefail
# The servers keep no state between runs here unless OCPP_DATABASE_URL says where (their
# default is a SQLite file in the working directory).
export OCPP_DATABASE_URL="${OCPP_DATABASE_URL:-memory}"

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
MINUTES=${SOAK_MINUTES:-30}
COUNT=${SOAK_COUNT:-5000}
COMMANDS=${SOAK_COMMANDS_PER_S:-10}
CHURN=${SOAK_CHURN_S:-600}
DROP=${SOAK_DROP_SHARE:-0.5}
DUPLICATES=${SOAK_DUPLICATES:-0.02}
SESSION=${SOAK_SESSION_S:-180}
HEARTBEAT=${SOAK_HEARTBEAT_S:-60}
METER=${SOAK_METER_S:-30}
RESTART_COUNT=${RESTART_COUNT:-19000}
OUT=${SOAK_OUT:-$ROOT/bench/results/soak}
PORT=${SOAK_PORT:-9500}
ADMIN=$((PORT + 1))
RPORT=$((PORT + 2))
RADMIN=$((PORT + 3))
mkdir -p "$OUT"
LOG="$OUT/run.log"
: >"$LOG"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }

PIDS=()
stop_pid() {
    local pid=$1
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
cleanup() {
    for pid in "${PIDS[@]}"; do stop_pid "$pid"; done
    PIDS=()
    if [ -s "$OUT/restarted.pid" ]; then
        stop_pid "$(cat "$OUT/restarted.pid")"
        rm -f "$OUT/restarted.pid"
    fi
}
trap cleanup EXIT

wait_admin() {
    for _ in $(seq 1 100); do
        curl -s --max-time 2 "http://127.0.0.1:$1/metrics" >/dev/null && return 0
        sleep 0.1
    done
    log "the admin interface on $1 did not come up"
    return 1
}

metric() { awk -v n="$2" '$1 == n { print $2 }' <<<"$1"; }

log "building mio-server and ocpp-load (release)"
cargo build --release --quiet -p ocpp-examples --bin mio-server --bin ocpp-load || exit 1
# The binaries measured are copied: a build during the run cannot change them.
BIN=$OUT/bin
mkdir -p "$BIN"
cp "$TARGET/release/mio-server" "$TARGET/release/ocpp-load" "$BIN/" || exit 1
log "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

if [ "${SOAK_SKIP_SOAK:-0}" != 1 ]; then
    "$BIN/mio-server" --listen "127.0.0.1:$PORT" --admin "127.0.0.1:$ADMIN" \
        >"$OUT/soak-server.log" 2>&1 &
    SERVER=$!
    PIDS+=("$SERVER")
    wait_admin "$ADMIN" || exit 1
    STARTED=$(date +%s)
    # RSS (and a few gauges) every 10 s while the server lives.
    (
        echo "unix_s,elapsed_s,rss_kib,charge_points_connected,sockets_open,calls_received_total,load1"
        while kill -0 "$SERVER" 2>/dev/null; do
            now=$(date +%s)
            rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$SERVER/status" 2>/dev/null)
            m=$(curl -s --max-time 5 "http://127.0.0.1:$ADMIN/metrics")
            echo "$now,$((now - STARTED)),${rss:-},$(metric "$m" ocpp_charge_points_connected),$(metric "$m" ocpp_sockets_open),$(metric "$m" ocpp_calls_received_total),$(cut -d' ' -f1 /proc/loadavg)"
            sleep 10
        done
    ) >"$OUT/soak-rss.csv" &
    SAMPLER=$!
    PIDS+=("$SAMPLER")
    log "soak: $COUNT charge points for $MINUTES min (server PID $SERVER, sampler PID $SAMPLER)"
    timeout $((MINUTES * 60 + 900)) "$BIN/ocpp-load" soak \
        --url "ws://127.0.0.1:$PORT/ocpp" --admin "127.0.0.1:$ADMIN" \
        --count "$COUNT" --rate 500 --duration-s $((MINUTES * 60)) \
        --heartbeat-s "$HEARTBEAT" --meter-s "$METER" --session-s "$SESSION" \
        --churn-s "$CHURN" --drop-share "$DROP" --duplicate-share "$DUPLICATES" \
        --commands-per-s "$COMMANDS" --retry-min-ms 500 --retry-random-ms 1000 \
        --retry-max-ms 30000 --server-pid "$SERVER" --label mio-server \
        --json "$OUT/soak.json" 2>"$OUT/soak.log"
    status=$?
    log "ocpp-load soak exited with $status"
    # One more sample at rest, then stop the sampler and the server.
    sleep 10
    stop_pid "$SAMPLER"
    stop_pid "$SERVER"
    PIDS=()
    python3 bench/soak_plot.py "$OUT/soak-rss.csv" "$OUT/soak-rss.svg" \
        "mio-server during the soak: $COUNT charge points, $MINUTES min" || true
    python3 - "$OUT/soak.json" "$OUT/soak-rss.csv" >"$OUT/soak-summary.txt" <<'EOF'
import csv, json, sys
report = json.load(open(sys.argv[1]))
soak = report.get("soak", {})
print(f"all checks ok: {soak.get('all_ok')}")
for check in soak.get("checks", []):
    print(("ok   " if check["ok"] else "FAIL ") + check["what"])
print("client:", json.dumps(soak.get("client", {}), sort_keys=True))
print("commands:", json.dumps(soak.get("commands", {}), sort_keys=True))
print("command latency:", json.dumps(soak.get("command_latency", {}), sort_keys=True))
print("server counters:", json.dumps(soak.get("server_counters", {}), sort_keys=True))
print("server gauges at end:", json.dumps(soak.get("server_gauges_at_end", {}), sort_keys=True))
rows = [r for r in csv.DictReader(open(sys.argv[2])) if r["rss_kib"]]
if rows:
    loaded = [r for r in rows if float(r["charge_points_connected"] or 0) > 0]
    def mib(r): return float(r["rss_kib"]) / 1024
    print(f"rss samples: {len(rows)}; first {mib(rows[0]):.1f} MiB, last {mib(rows[-1]):.1f} MiB")
    if len(loaded) >= 4:
        # After the connect ramp (the first two minutes) to the end of the load.
        settled = [r for r in loaded if float(r["elapsed_s"]) >= 120] or loaded
        print(f"rss under load (from 2 min): first {mib(settled[0]):.1f} MiB, min {min(map(mib, settled)):.1f}, "
              f"max {max(map(mib, settled)):.1f}, last {mib(settled[-1]):.1f} MiB")
for p in report.get("phases", []):
    lat = p.get("latency", {}).get("request")
    if lat:
        print(f"phase {p['phase']}: request latency p50 {lat['p50_us']} us, p99 {lat['p99_us']} us, max {lat['max_us']} us")
EOF
    cat "$OUT/soak-summary.txt" | tee -a "$LOG"
fi

if [ "$RESTART_COUNT" -gt 0 ]; then
    RESTART_CMD="exec $BIN/mio-server --listen 127.0.0.1:$RPORT --admin 127.0.0.1:$RADMIN >>$OUT/restart-server.log 2>&1"
    "$BIN/mio-server" --listen "127.0.0.1:$RPORT" --admin "127.0.0.1:$RADMIN" \
        >"$OUT/restart-server.log" 2>&1 &
    SERVER=$!
    PIDS+=("$SERVER")
    wait_admin "$RADMIN" || exit 1
    log "restart: $RESTART_COUNT charge points, then mio-server (PID $SERVER) is restarted"
    # Four source addresses: the old connections' TIME_WAIT entries and the new ones do not
    # share one address's 28,232 ports.
    timeout 900 "$BIN/ocpp-load" reconnect \
        --url "ws://127.0.0.1:$RPORT/ocpp" --count "$RESTART_COUNT" --source-count 4 \
        --rate 1000 --connect-timeout-s 300 --server-pid "$SERVER" \
        --restart-cmd "$RESTART_CMD" --restart-pid-file "$OUT/restarted.pid" \
        --retry-min-ms 250 --retry-random-ms 1000 --label mio-server \
        --json "$OUT/restart.json" 2>"$OUT/restart.log"
    log "ocpp-load reconnect exited with $?"
    PIDS=()
    sleep 2
    m=$(curl -s --max-time 10 "http://127.0.0.1:$RADMIN/metrics")
    echo "$m" >"$OUT/restart-metrics.txt"
    python3 - "$OUT/restart.json" "$OUT/restart-metrics.txt" >"$OUT/restart-summary.txt" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
metrics = {}
for line in open(sys.argv[2]):
    if line and not line.startswith("#") and " " in line:
        name, value = line.split(" ", 1)
        metrics[name] = value.strip()
for p in report.get("phases", []):
    c = p.get("counters", {})
    if p["phase"] == "connect":
        print(f"connect: {c.get('connected')} booted in {p['seconds']} s, failed {p.get('failed')}")
    if p["phase"] == "reconnect":
        lat = p.get("latency", {}).get("reconnect", {})
        print(f"reconnect: dropped {c.get('dropped')}, back and booted {c.get('rebooted')}, not back {c.get('not_back')}, "
              f"all back after {p.get('all_back_after_s')} s (first drop to last boot); per charge point "
              f"p50 {lat.get('p50_us', 0) / 1e6:.2f} s, p99 {lat.get('p99_us', 0) / 1e6:.2f} s, max {lat.get('max_us', 0) / 1e6:.2f} s; "
              f"connect errors {c.get('connect_errors', 0)}")
print("restarted server: handshake timeouts", metrics.get("ocpp_handshake_timeouts_total"),
      "sessions", metrics.get("ocpp_sessions_total"), "sockets accepted", metrics.get("ocpp_sockets_accepted_total"),
      "connected", metrics.get("ocpp_charge_points_connected"))
EOF
    cat "$OUT/restart-summary.txt" | tee -a "$LOG"
    if [ -s "$OUT/restarted.pid" ]; then
        stop_pid "$(cat "$OUT/restarted.pid")"
        rm -f "$OUT/restarted.pid"
    fi
fi
log "done: $OUT"
