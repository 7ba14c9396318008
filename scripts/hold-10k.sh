#!/usr/bin/env bash
# Starts mio-server (release), opens and boots N charge-point connections (default 10,000) on
# loopback with a small Python asyncio client (`websockets`), holds them, prints the server's
# memory (from /proc/PID/status) and the count booted, then stops the server by its PID.
#
#   scripts/hold-10k.sh [N] [THREADS]
#
# Needs Python 3 with `websockets` (pip install websockets). Bounded: the client gives up after
# HOLD_TIMEOUT seconds (default 120). Uses CARGO_TARGET_DIR if set.
set -euo pipefail

N=${1:-10000}
THREADS=${2:-1}
HOLD_TIMEOUT=${HOLD_TIMEOUT:-120}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
WORK=$(mktemp -d)

cargo build --release --quiet -p ocpp-examples --bin mio-server --manifest-path "$ROOT/Cargo.toml"

# Logs to a file at warn level: 20,000 connect/disconnect lines would only slow things down.
RUST_LOG=${RUST_LOG:-warn} "$TARGET/release/mio-server" \
    --listen 127.0.0.1:0 --admin 127.0.0.1:0 --threads "$THREADS" \
    >"$WORK/stdout" 2>"$WORK/stderr" &
SERVER=$!
stop_server() {
    if kill -0 "$SERVER" 2>/dev/null; then
        kill -TERM "$SERVER" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$SERVER" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$SERVER" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap stop_server EXIT

for _ in $(seq 1 100); do
    grep -q "listening on" "$WORK/stdout" 2>/dev/null && break
    sleep 0.1
done
LINE=$(head -n1 "$WORK/stdout")
echo "$LINE"
ADDR=$(echo "$LINE" | awk '{print $4}')
ADMIN=$(echo "$LINE" | awk '{print $7}' | tr -d ')')
rss() { awk '/^(VmRSS|VmHWM)/ {printf "%s %s kB  ", $1, $2}' "/proc/$SERVER/status"; echo; }
echo "server pid $SERVER, idle: $(rss)"

cat >"$WORK/load.py" <<'PY'
import asyncio, json, resource, sys, time
import websockets

addr, count, timeout, rss_cmd = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

booted = 0
failed = 0
held = []
gate = asyncio.Semaphore(256)  # handshakes in flight at once

async def one(i):
    global booted, failed
    try:
        async with gate:
            ws = await websockets.connect(
                f"ws://{addr}/ocpp/CP{i:05d}", subprotocols=["ocpp1.6"],
                compression=None, ping_interval=None, open_timeout=30, max_queue=4)
            held.append(ws)
            await ws.send(json.dumps([2, "1", "BootNotification",
                                      {"chargePointVendor": "load", "chargePointModel": "hold"}]))
            answer = json.loads(await asyncio.wait_for(ws.recv(), 30))
            if answer[0] == 3 and answer[2].get("status") == "Accepted":
                booted += 1
            else:
                failed += 1
    except Exception as e:
        failed += 1
        if failed <= 5:
            print(f"CP{i:05d}: {type(e).__name__}: {e}", file=sys.stderr)

async def main():
    start = time.monotonic()
    tasks = [asyncio.create_task(one(i)) for i in range(count)]
    done, pending = await asyncio.wait(tasks, timeout=timeout)
    for t in pending:
        t.cancel()
    elapsed = time.monotonic() - start
    print(f"booted {booted} of {count} in {elapsed:.1f} s ({failed} failed, {len(pending)} unfinished)", flush=True)
    # Hold them while the server's memory is read.
    print("while held: ", end="", flush=True)
    proc = await asyncio.create_subprocess_shell(rss_cmd)
    await proc.wait()
    await asyncio.gather(*(ws.close() for ws in held), return_exceptions=True)

asyncio.run(main())
PY

RSS_CMD="awk '/^(VmRSS|VmHWM)/ {printf \"%s %s kB  \", \$1, \$2}' /proc/$SERVER/status; echo; curl -s http://$ADMIN/metrics | grep -E '^ocpp_(charge_points_connected|sockets_open|messages_in_total) '"
timeout $((HOLD_TIMEOUT + 60)) python3 "$WORK/load.py" "$ADDR" "$N" "$HOLD_TIMEOUT" "$RSS_CMD"
sleep 1
echo "after the client closed: $(rss)"
