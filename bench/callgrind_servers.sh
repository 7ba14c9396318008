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
port=9587 admin=9597
cd "$(dirname "$0")/.."
# shellcheck source=bench/steady_load.sh
. bench/steady_load.sh "$@"
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/callgrind.out" \
    "$server" "${args[@]}" >"$out/server.log" 2>&1 &
server_pid=$!
sleep 5
start_load "$count" 40 "$load" "$out/load.log"
sleep $(( count / 100 + 15 ))
before=$(counter)
callgrind_control -i on "$server_pid" >/dev/null
sleep 10
callgrind_control -i off "$server_pid" >/dev/null
after=$(counter)
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
