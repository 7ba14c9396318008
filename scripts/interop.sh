#!/usr/bin/env bash
# Interop checks: the Python `websockets` and Node `ws` clients against the echo server, each
# without compression and with permessage-deflate (the clients check that it was negotiated).
#
# usage: bash scripts/interop.sh [--deps-only]
#
# Installs the clients' packages when missing (idempotent, non-interactive): websockets (pinned
# below) with pip, ws from tests/interop/package-lock.json with `npm ci` into
# tests/interop/node_modules. Then builds the echo server (release), starts it on a free port,
# runs both clients (each bounded by a timeout), stops the server by its PID and fails if either
# client failed. `--deps-only` installs the packages and stops.
#
# env: PYTHON  interpreter for the Python client (default python3)
set -euo pipefail

WEBSOCKETS_VERSION="17.4"
CLIENT_TIMEOUT=120 # seconds per client
PYTHON="${PYTHON:-python3}"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
INTEROP="tests/interop"

install_deps() {
  if "$PYTHON" -c "import sys, websockets; sys.exit(websockets.__version__ != '$WEBSOCKETS_VERSION')" 2>/dev/null; then
    echo "interop.sh: python websockets $WEBSOCKETS_VERSION present"
  else
    echo "interop.sh: installing python websockets==$WEBSOCKETS_VERSION"
    export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_ROOT_USER_ACTION=ignore
    "$PYTHON" -m pip install --quiet "websockets==$WEBSOCKETS_VERSION" \
      || "$PYTHON" -m pip install --quiet --break-system-packages "websockets==$WEBSOCKETS_VERSION"
  fi
  local want have
  want="$(node -p "require('./$INTEROP/package-lock.json').packages['node_modules/ws'].version")"
  have="$(node -p "try { require('./$INTEROP/node_modules/ws/package.json').version } catch (e) { '' }")"
  if [ "$have" = "$want" ]; then
    echo "interop.sh: node ws $want present"
  else
    echo "interop.sh: installing node ws $want (npm ci in $INTEROP)"
    npm ci --prefix "$INTEROP" --no-audit --no-fund --loglevel=error
  fi
}

install_deps
[ "${1:-}" = "--deps-only" ] && exit 0

# The echo server: SERVER_BIN_DIR's (what .ci/run sets), or built (scripts/server-bin.sh).
source "$ROOT/scripts/server-bin.sh"
server_bin interop.sh echo-server || exit

WORK="$(mktemp -d /tmp/echo-interop.XXXXXX)"
SERVER_PID=""
stop_server() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=""
}
trap 'stop_server; rm -rf "$WORK"' EXIT

# Start on port 0 and wait (at most 10 s) for the line that names the port it got.
"$BIN" 127.0.0.1:0 2>"$WORK/server.log" &
SERVER_PID=$!
PORT=""
for _ in $(seq 100); do
  PORT="$(sed -n 's/^echo-server listening on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$WORK/server.log" 2>/dev/null || true)"
  [ -n "$PORT" ] && break
  kill -0 "$SERVER_PID" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$PORT" ]; then
  echo "interop.sh: echo-server did not start listening; its log:" >&2
  cat "$WORK/server.log" >&2 || echo "(no log: $WORK/server.log is gone)" >&2
  exit 1
fi
URL="ws://127.0.0.1:$PORT"
echo "interop.sh: echo-server (PID $SERVER_PID) listening on $URL"

FAILED=()
echo "interop.sh: python websockets $WEBSOCKETS_VERSION client"
timeout --kill-after=5 "$CLIENT_TIMEOUT" "$PYTHON" "$INTEROP/python_client.py" "$URL" || FAILED+=(python)
echo "interop.sh: node ws client"
timeout --kill-after=5 "$CLIENT_TIMEOUT" node "$INTEROP/node_client.js" "$URL" || FAILED+=(node)

stop_server
if [ "$(wc -l <"$WORK/server.log" 2>/dev/null || echo 0)" -gt 1 ]; then
  echo "interop.sh: echo-server log:"
  sed 's/^/  /' "$WORK/server.log"
fi
if [ ${#FAILED[@]} -gt 0 ]; then
  echo "interop.sh: FAILED: ${FAILED[*]}"
  exit 1
fi
echo "interop.sh: OK (python, node)"
