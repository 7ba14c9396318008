#!/usr/bin/env bash
# Where a whole server's heap goes per idle booted charge point, by allocation site (massif):
#
#   bash bench/massif_servers.sh SERVER_BINARY [CHARGE_POINTS] [LOAD_BINARY]
#
# Runs the server (release build, --threads 1, state in memory) under valgrind's massif,
# connects CHARGE_POINTS (2000) with ocpp-load's idle scenario and holds them 30 s; 20 s in,
# every one connected and booted, takes a detailed snapshot (vgdb) and prints its allocation
# sites over 1 % of the heap, each divided by the charge points (bytes asked for; malloc's own
# overhead is massif's "extra"). The same load
# for every binary, so mio-server and tokio-server (the same CSMS application) compare directly.
# Build first: cargo build --release -p ocpp-examples --bin mio-server --bin tokio-server --bin ocpp-load
set -euo pipefail
export OCPP_DATABASE_URL="${OCPP_DATABASE_URL:-memory}"
server=${1:?the server binary (mio-server or tokio-server)}
count=${2:-2000}
cd "$(dirname "$0")/.."
load=${3:-./target/release/ocpp-load}
out=$(mktemp -d)
port=9611
valgrind --tool=massif --depth=40 --threshold=0.2 --vgdb=yes \
    --massif-out-file="$out/massif.out" \
    "$server" --listen "127.0.0.1:$port" --admin 127.0.0.1:0 --threads 1 >"$out/server.log" 2>&1 &
server_pid=$!
sleep 6
"$load" idle --url "ws://127.0.0.1:$port/ocpp" --count "$count" --rate 200 --duration-s 30 \
    >"$out/load.log" 2>&1 &
load_pid=$!
sleep $(( count / 200 + 20 ))
vgdb --pid="$server_pid" detailed_snapshot "$out/idle.massif" >/dev/null
wait "$load_pid" || true
kill -TERM "$server_pid" 2>/dev/null || true
sleep 5
kill -KILL "$server_pid" 2>/dev/null || true
wait "$server_pid" 2>/dev/null || true
ms_print --threshold=1 "$out/idle.massif" >"$out/massif.txt"
awk -F= -v n="$count" '$1 == "mem_heap_B" {h = $2} $1 == "mem_heap_extra_B" {x = $2}
    END {printf "heap %.0f B and malloc overhead %.0f B per charge point (the whole process / %d)\n", h / n, x / n, n}' \
    "$out/idle.massif"
echo "$server: $count idle charge points; heap bytes per charge point by site:"
grep -E '^(->|\| ->)' "$out/massif.txt" |
    sed -E 's/^[|] //; s/\(in [^)]*\)//' |
    awk -v n="$count" '{gsub(/[(),B]/, "", $2); printf "%8.0f  %s\n", $2 / n, $0}' |
    cut -c1-160
echo "(files in $out)"
