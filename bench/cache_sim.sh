#!/usr/bin/env bash
# Simulated cache misses per request, server side, in a steady heartbeat phase:
#
#   bash bench/cache_sim.sh mio|floor [CHARGE_POINTS]
#
# Runs the server (release mio-server, one loop, or the floor peer) under callgrind with its
# cache simulation, the last level set to 2 MiB (this machine's L2 per core, so "LL" misses are
# the accesses that leave L2), connects CHARGE_POINTS (10,000) at 250/s, then has each send a
# Heartbeat every 60 s. Instrumentation is on for 30 s of that phase only, and the totals are
# divided by the requests answered in the window (mio-server: its ocpp_messages_in counter;
# the floor has none, so its window is taken as 30 s x the phase's measured request rate).
# The kernel is not simulated: its own evictions between requests come on top.
# Needs valgrind; build first with
#   cargo build --release -p ocpp-examples --bin mio-server --bin ocpp-load
#   (cd bench/peers/rust-floor && cargo build --release --locked)
set -euo pipefail
# The servers keep no state between runs here unless OCPP_DATABASE_URL says where (their
# default is a SQLite file in the working directory).
export OCPP_DATABASE_URL="${OCPP_DATABASE_URL:-memory}"
which=${1:?mio or floor}
count=${2:-10000}
cd "$(dirname "$0")/.."
ulimit -n 20000
out=$(mktemp -d)
port=9487 admin=9497
case "$which" in
    mio) server=(./target/release/mio-server --listen "127.0.0.1:$port" --admin "127.0.0.1:$admin" --threads 1) ;;
    floor) server=(bench/peers/rust-floor/target/release/peer-rust-floor "127.0.0.1:$port" 0) ;;
    *) echo "mio or floor" >&2; exit 2 ;;
esac
valgrind --tool=callgrind --cache-sim=yes --LL=2097152,16,64 --instr-atstart=no \
    --callgrind-out-file="$out/callgrind.out" "${server[@]}" >"$out/server.log" 2>&1 &
server_pid=$!
sleep 8
connect_s=$(( count / 250 ))
./target/release/ocpp-load heartbeat --url "ws://127.0.0.1:$port/ocpp" --count "$count" \
    --rate 250 --source-count 2 --duration-s 70 --heartbeat-s 60 --status-s 0 --meter-s 0 \
    --json "$out/load.json" >"$out/load.log" 2>&1 &
load_pid=$!
sleep $(( connect_s + 15 ))
messages() { curl -s "http://127.0.0.1:$admin/metrics" | awk '$1 == "ocpp_messages_in_total" {print $2}'; }
[ "$which" = mio ] && before=$(messages)
callgrind_control -i on "$server_pid" >/dev/null
sleep 30
callgrind_control -i off "$server_pid" >/dev/null
[ "$which" = mio ] && after=$(messages)
callgrind_control -d "$server_pid" >/dev/null
wait "$load_pid" || true
kill -INT "$server_pid" 2>/dev/null || true
sleep 1
kill "$server_pid" 2>/dev/null || true
wait "$server_pid" 2>/dev/null || true
if [ "$which" = mio ]; then
    requests=$(( after - before ))
else
    requests=$(python3 -c "
import json
phase = [p for p in json.load(open('$out/load.json'))['phases'] if p['phase'] == 'heartbeat'][0]
print(round(phase['counters']['requests_ok'] / phase['seconds'] * 30))")
fi
totals=$(cat "$out"/callgrind.out* | awk '$1 == "totals:" && $2 > 0 {print; exit}')
echo "$which: $requests requests in the window; per request:"
echo "$totals" | awk -v n="$requests" '{
    printf "  instructions %.0f, L1i misses %.1f, L1d misses %.1f (read %.1f), misses beyond 2 MiB: instructions %.2f, data %.1f\n",
        $2 / n, $5 / n, ($6 + $7) / n, $6 / n, $8 / n, ($9 + $10) / n }'
echo "(files in $out)"
