#!/usr/bin/env bash
# A server's resident memory per idle booted charge point, quickly, split as bench/run.sh's
# idle scenario reports it (the whole RSS, and the anonymous part without the executable's
# pages, which are touched once and are not per charge point):
#
#   bash bench/rss_idle.sh SERVER_BINARY [CHARGE_POINTS] [SERVER_ARGS...]
#
# Starts the server (release build, --threads 1, state in memory), reads its RSS, connects
# CHARGE_POINTS (10,000) with ocpp-load's idle scenario at 2,000/s, and reads it again 15 s
# in. Environment passes through, so allocator experiments are one variable away
# (e.g. LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2, or
# GLIBC_TUNABLES=glibc.malloc.tcache_count=1024). One process may open 20,000 files here:
# keep CHARGE_POINTS at or under 15,000.
# Build first: cargo build --release -p ocpp-examples --bin mio-server --bin tokio-server --bin ocpp-load
set -euo pipefail
server=${1:?the server binary (mio-server or tokio-server)}
count=${2:-10000}
shift $(( $# < 2 ? $# : 2 ))
cd "$(dirname "$0")/.."
export OCPP_DATABASE_URL="${OCPP_DATABASE_URL:-memory}"
port=9633
out=$(mktemp -d)
"$server" --listen "127.0.0.1:$port" --admin 127.0.0.1:0 --threads 1 "$@" >"$out/server.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
sleep 2
kib() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$pid/status"; }
rss0=$(kib VmRSS) anon0=$(kib RssAnon)
./target/release/ocpp-load idle --url "ws://127.0.0.1:$port/ocpp" --count "$count" --rate 2000 \
    --duration-s 20 >"$out/load.log" 2>&1 &
load=$!
sleep 15
rss=$(kib VmRSS) anon=$(kib RssAnon)
wait "$load" || true
echo "$(basename "$server"): $count idle charge points: RSS $(( (rss - rss0) * 1024 / count )) B" \
    "per charge point, anonymous $(( (anon - anon0) * 1024 / count )) B (files in $out)"
