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
port=9588 admin=9598
cd "$(dirname "$0")/.."
# shellcheck source=bench/steady_load.sh
. bench/steady_load.sh "$@"
"$server" "${args[@]}" >"$out/server.log" 2>&1 &
server_pid=$!
sleep 2
start_load "$count" 30 "$load" "$out/load.log"
sleep $(( count / 100 + 8 ))
before=$(counter)
timeout -s INT 10 strace -c -f -p "$server_pid" -o "$out/strace.txt" || true
after=$(counter)
wait "$load_pid" || true
kill -TERM "$server_pid" 2>/dev/null || true
wait "$server_pid" 2>/dev/null || true
measured=$(( after - before ))
echo "$server ($scenario${CALLGRIND_EXTRA:+, $CALLGRIND_EXTRA}): $measured $units in the window; system calls per $unit:"
awk -v n="$measured" '$NF ~ /^[a-z_0-9]+$/ && $4 ~ /^[0-9]+$/ && $NF != "total" {
    printf "  %-16s %6.2f\n", $NF, $4 / n; sum += $4 } END { printf "  %-16s %6.2f\n", "all", sum / n }' \
    "$out/strace.txt"
