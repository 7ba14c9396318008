#!/usr/bin/env bash
# System calls per request (or per push) of a whole server, counted by `strace -c` in a steady
# phase, with the same load as bench/callgrind_servers.sh:
#
#   bash bench/syscalls_servers.sh SERVER_BINARY [CHARGE_POINTS] [LOAD_BINARY]
#
# CALLGRIND_SCENARIO=push and CALLGRIND_EXTRA as there. Prints each call's count per unit
# (strace slows the server down: the counts are the measure, not the times).
# Build first: cargo build --release -p ocpp-examples --bin mio-server --bin tokio-server --bin ocpp-load
set -euo pipefail
scenario=${CALLGRIND_SCENARIO:-heartbeat}
export OCPP_DATABASE_URL="${OCPP_DATABASE_URL:-memory}"
server=${1:?the server binary (mio-server or tokio-server)}
count=${2:-200}
cd "$(dirname "$0")/.."
load=${3:-./target/release/ocpp-load}
out=$(mktemp -d)
port=9588 admin=9598
args=(--listen "127.0.0.1:$port" --admin "127.0.0.1:$admin")
case "$(basename "$server")" in
    mio-server) args+=(--threads 1) ;;
esac
# shellcheck disable=SC2206 # words on purpose
args+=(${CALLGRIND_EXTRA:-})
metric=ocpp_messages_in_total unit=request
if [ "$scenario" = push ]; then
    args+=(--push-interval-ms 500)
    metric=ocpp_calls_sent_total unit=push
fi
"$server" "${args[@]}" >"$out/server.log" 2>&1 &
server_pid=$!
sleep 2
if [ "$scenario" = push ]; then
    "$load" push --url "ws://127.0.0.1:$port/ocpp" --count "$count" --rate 100 \
        --duration-s 30 >"$out/load.log" 2>&1 &
else
    "$load" heartbeat --url "ws://127.0.0.1:$port/ocpp" --count "$count" --rate 100 \
        --duration-s 30 --heartbeat-s 1 --status-s 3 --meter-s 3 >"$out/load.log" 2>&1 &
fi
load_pid=$!
sleep $(( count / 100 + 8 ))
messages() { curl -s "http://127.0.0.1:$admin/metrics" | awk -v m="$metric" '$1 == m {print $2}'; }
before=$(messages)
timeout -s INT 10 strace -c -f -p "$server_pid" -o "$out/strace.txt" || true
after=$(messages)
wait "$load_pid" || true
kill -TERM "$server_pid" 2>/dev/null || true
wait "$server_pid" 2>/dev/null || true
units=$(( after - before ))
echo "$server ($scenario${CALLGRIND_EXTRA:+, $CALLGRIND_EXTRA}): $units ${unit}s in the window; system calls per $unit:"
awk -v n="$units" '$NF ~ /^[a-z_0-9]+$/ && $4 ~ /^[0-9]+$/ && $NF != "total" {
    printf "  %-16s %6.2f\n", $NF, $4 / n; sum += $4 } END { printf "  %-16s %6.2f\n", "all", sum / n }' \
    "$out/strace.txt"
