#!/usr/bin/env bash
# Starts mio-server (release), opens and boots N charge-point connections (default 10,000) on
# loopback with a small Python asyncio client (`websockets`), holds them, prints the server's
# memory (from /proc/PID/status) and the count booted, then stops the server by its PID.
#
#   scripts/hold-10k.sh [N] [THREADS]
#   TLS=1 scripts/hold-10k.sh 1000     # the same over wss:// (a CA and server certificate made
#                                      # with openssl in a temporary directory)
#   PROFILE=debug scripts/hold-10k.sh  # a debug build (default: release)
#
# Needs Python 3 with `websockets` (pip install websockets), and openssl for TLS=1. Bounded: the
# client gives up after HOLD_TIMEOUT seconds (default 120). Uses CARGO_TARGET_DIR if set.
set -euo pipefail
# The servers keep no state between runs here unless OCPP_DATABASE_URL says where (their
# default is a SQLite file in the working directory).
export OCPP_DATABASE_URL="${OCPP_DATABASE_URL:-memory}"

N=${1:-10000}
THREADS=${2:-1}
HOLD_TIMEOUT=${HOLD_TIMEOUT:-120}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
WORK=$(mktemp -d)
TLS=${TLS:-0}
PROFILE=${PROFILE:-release}
case "$PROFILE" in
    release) BUILD_FLAGS=(--release) ;;
    debug) BUILD_FLAGS=() ;;
    *) echo "PROFILE must be release or debug" >&2; exit 2 ;;
esac

cargo build "${BUILD_FLAGS[@]}" --quiet -p ocpp-examples --bin mio-server --manifest-path "$ROOT/Cargo.toml"

SCHEME=ws
TLS_ARGS=()
if [ "$TLS" = 1 ]; then
    # A CA and a server certificate for 127.0.0.1 (P-256), valid for a day.
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
        -subj "/CN=hold test CA" -keyout "$WORK/ca.key" -out "$WORK/ca.pem" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
        -keyout "$WORK/server.key" -out "$WORK/server.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$WORK/ext"
    openssl x509 -req -in "$WORK/server.csr" -CA "$WORK/ca.pem" -CAkey "$WORK/ca.key" \
        -CAcreateserial -days 1 -extfile "$WORK/ext" -out "$WORK/server.pem" 2>/dev/null
    SCHEME=wss
    TLS_ARGS=(--tls-cert "$WORK/server.pem" --tls-key "$WORK/server.key")
fi

# Logs to a file at warn level: 20,000 connect/disconnect lines would only slow things down.
RUST_LOG=${RUST_LOG:-warn} "$TARGET/$PROFILE/mio-server" \
    --listen 127.0.0.1:0 --admin 127.0.0.1:0 --threads "$THREADS" "${TLS_ARGS[@]}" \
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
import asyncio, json, resource, ssl, sys, time
import websockets

addr, count, timeout, rss_cmd = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
scheme, ca = sys.argv[5], sys.argv[6]
tls = ssl.create_default_context(cafile=ca) if scheme == "wss" else None
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
                f"{scheme}://{addr}/ocpp/CP{i:05d}", subprotocols=["ocpp1.6"], ssl=tls,
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
timeout $((HOLD_TIMEOUT + 60)) python3 "$WORK/load.py" "$ADDR" "$N" "$HOLD_TIMEOUT" "$RSS_CMD" \
    "$SCHEME" "$WORK/ca.pem"
sleep 1
echo "after the client closed: $(rss)"
