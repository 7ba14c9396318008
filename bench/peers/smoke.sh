#!/usr/bin/env bash
# smoke.sh NAME [MODE]: installs peer NAME, starts it on a free loopback port with push every
# 200 ms, runs smoke.py (3 charge points), stops it by PID; then the same with push off.
# Exits non-zero on any failure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
name="${1:?usage: smoke.sh NAME [MODE]}"
mode="${2:-}"
peer="$here/$name"
[ -x "$peer/run.sh" ] || { echo "no peer $name" >&2; exit 2; }

# The smoke client's own venv.
venv="$here/.venv-smoke"
if ! "$venv/bin/python" -c 'import websockets' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'websockets>=13,<18'
fi

start=$(date +%s)
bash "$peer/install.sh"
echo "install $name: $(( $(date +%s) - start )) s"

pid=""
log="$(mktemp)"
stop_peer() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    pid=""
}
trap 'stop_peer; rm -f "$log"' EXIT

free_port() {
    "$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

run_one() {
    local push_ms="$1" port
    port="$(free_port)"
    if [ -n "$mode" ]; then
        bash "$peer/run.sh" "127.0.0.1:$port" "$push_ms" "$mode" >"$log" 2>&1 &
    else
        bash "$peer/run.sh" "127.0.0.1:$port" "$push_ms" >"$log" 2>&1 &
    fi
    pid=$!
    # Wait (at most 30 s) for the port to accept connections.
    local up=""
    for _ in $(seq 300); do
        if ! kill -0 "$pid" 2>/dev/null; then break; fi
        if "$venv/bin/python" -c "import socket,sys; s=socket.socket(); s.settimeout(0.2); sys.exit(s.connect_ex(('127.0.0.1',$port)))" 2>/dev/null; then
            up=1; break
        fi
        sleep 0.1
    done
    if [ -z "$up" ]; then
        echo "FAIL: $name did not listen on 127.0.0.1:$port"; cat "$log"; return 1
    fi
    local comm
    comm="$(cat /proc/$pid/comm 2>/dev/null || echo '?')"
    echo "== $name ${mode:-} push=${push_ms}ms on 127.0.0.1:$port (pid $pid, $comm)"
    sleep 0.2
    echo "   peer says: $(head -n 1 "$log")"
    local status=0
    timeout 60 "$venv/bin/python" "$here/smoke.py" "ws://127.0.0.1:$port/ocpp" --push-ms "$push_ms" || status=$?
    if ! kill -0 "$pid" 2>/dev/null; then
        echo "FAIL: the peer exited during the smoke"; status=1
    fi
    stop_peer
    if [ "$status" -ne 0 ]; then echo "--- peer log"; tail -n 30 "$log"; fi
    return "$status"
}

run_one 200
run_one 0
echo "smoke $name ${mode:-}: PASSED"
