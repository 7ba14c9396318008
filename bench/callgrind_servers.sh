#!/usr/bin/env bash
# Instructions per request of a whole server (user code, callgrind), mio-server or
# tokio-server, in a steady phase:
#
#   bash bench/callgrind_servers.sh SERVER_BINARY [CHARGE_POINTS] [LOAD_BINARY]
#
# Runs the server (release build; mio-server with one loop, tokio-server as built) under
# callgrind with instrumentation off, connects CHARGE_POINTS (200) with ocpp-load, each
# sending a Heartbeat every second and a StatusNotification and a MeterValues every 3 s;
# instrumentation is on for 10 s of that phase only, and the instruction total is divided by
# the requests answered in the window (the server's ocpp_messages_in_total). The same load
# for every binary, so two builds (before and after a change) compare directly.
# With CALLGRIND_SCENARIO=push the server pushes a DataTransfer to every charge point every
# 500 ms instead (--push-interval-ms 500), the charge points only answer, and the total is
# divided by the pushes sent in the window (ocpp_calls_sent_total): instructions per push.
# CALLGRIND_EXTRA adds arguments to the server's command line (e.g. `--shards 0` for
# tokio-server with a task per connection).
# Build first: cargo build --release -p ocpp-examples --bin mio-server --bin tokio-server --bin ocpp-load
set -euo pipefail
scenario=${CALLGRIND_SCENARIO:-heartbeat}
# The servers keep no state between runs here unless OCPP_DATABASE_URL says where (their
# default is a SQLite file in the working directory).
export OCPP_DATABASE_URL="${OCPP_DATABASE_URL:-memory}"
server=${1:?the server binary (mio-server or tokio-server)}
count=${2:-200}
cd "$(dirname "$0")/.."
load=${3:-./target/release/ocpp-load}
out=$(mktemp -d)
port=9587 admin=9597
args=(--listen "127.0.0.1:$port" --admin "127.0.0.1:$admin")
case "$(basename "$server")" in
    mio-server) args+=(--threads 1) ;;
esac
# shellcheck disable=SC2206 # words on purpose
args+=(${CALLGRIND_EXTRA:-})
metric=ocpp_messages_in_total unit=request units=requests
if [ "$scenario" = push ]; then
    args+=(--push-interval-ms 500)
    metric=ocpp_calls_sent_total unit=push units=pushes
fi
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/callgrind.out" \
    "$server" "${args[@]}" >"$out/server.log" 2>&1 &
server_pid=$!
sleep 5
if [ "$scenario" = push ]; then
    "$load" push --url "ws://127.0.0.1:$port/ocpp" --count "$count" --rate 100 \
        --duration-s 40 >"$out/load.log" 2>&1 &
else
    "$load" heartbeat --url "ws://127.0.0.1:$port/ocpp" --count "$count" --rate 100 \
        --duration-s 40 --heartbeat-s 1 --status-s 3 --meter-s 3 >"$out/load.log" 2>&1 &
fi
load_pid=$!
sleep $(( count / 100 + 15 ))
messages() { curl -s "http://127.0.0.1:$admin/metrics" | awk -v m="$metric" '$1 == m {print $2}'; }
before=$(messages)
callgrind_control -i on "$server_pid" >/dev/null
sleep 10
callgrind_control -i off "$server_pid" >/dev/null
after=$(messages)
callgrind_control -d "$server_pid" >/dev/null
wait "$load_pid" || true
kill -TERM "$server_pid" 2>/dev/null || true
sleep 2
kill -KILL "$server_pid" 2>/dev/null || true
wait "$server_pid" 2>/dev/null || true
requests=$(( after - before ))
total=$(cat "$out"/callgrind.out* | awk '$1 == "totals:" && $2 > 0 {print $2; exit}')
echo "$server ($scenario): $requests $units in the window, $total instructions, $(( total / requests )) per $unit"
echo "(files in $out)"
