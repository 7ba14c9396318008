#!/usr/bin/env bash
# OCPP interop checks: mio-server (the example CSMS) against charge points built on third-party
# OCPP libraries -- the PyPI `ocpp` library (OCPP 1.6, 2.0.1 and 2.1) and npm `ocpp-rpc`'s RPCClient
# (OCPP 1.6 and 2.0.1 with strict schema validation on; 2.1 without, see below).
#
# usage: bash scripts/interop-ocpp.sh [--deps-only] [-v]
#
# Installs what is missing (idempotent, non-interactive): `ocpp==2.1.0`, `websockets` and `jwcrypto`
# (signed-message tests of ocpp-messages) with pip
# (nothing is upgraded if they are present), the Node packages of tests/interop/package-lock.json
# with `npm ci` (`npm install` if there is no lock). Builds mio-server (release), starts it on
# free loopback ports (--listen/--admin 127.0.0.1:0, ports read from its first stdout line,
# bounded wait), runs every client (each bounded by a timeout), stops the server by its PID
# (also on exit/interrupt, via a trap) and prints one line per client:
#   ok python-ocpp 1.6 / FAIL python-ocpp 2.0.1 ...
# A failing client's output and the server log are printed. Exits non-zero if any client failed.
# `--deps-only` installs the packages and stops; `-v` prints every client's output.
#
# env: PYTHON            interpreter for the Python client (default python3)
#      CARGO_TARGET_DIR  honoured by the build; the binary is looked up there
#      MIO_SERVER_BIN    an already built mio-server to use instead of building one
set -euo pipefail
# The servers keep no state between runs here unless OCPP_DATABASE_URL says where (their
# default is a SQLite file in the working directory).
export OCPP_DATABASE_URL="${OCPP_DATABASE_URL:-memory}"

OCPP_PY_VERSION="2.1.0"
JWCRYPTO_VERSION="1.6.1"  # the independent JWS of the signed-message tests (ocpp-messages)
CLIENT_TIMEOUT=30  # seconds per client (each client bounds itself to 20 s)
START_TIMEOUT=10   # seconds for mio-server to print its listening line
PYTHON="${PYTHON:-python3}"

DEPS_ONLY=0
VERBOSE=0
for arg in "$@"; do
  case "$arg" in
    --deps-only) DEPS_ONLY=1 ;;
    -v | --verbose) VERBOSE=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "interop-ocpp.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
INTEROP="tests/interop"

install_python_deps() {
  if "$PYTHON" - "$OCPP_PY_VERSION" <<'EOF' 2>/dev/null; then
import sys
from importlib.metadata import version
import ocpp, websockets, jwcrypto  # noqa: F401
sys.exit(version("ocpp") != sys.argv[1])
EOF
    echo "interop-ocpp.sh: python ocpp $OCPP_PY_VERSION, websockets and jwcrypto present"
    return
  fi
  echo "interop-ocpp.sh: installing python ocpp==$OCPP_PY_VERSION websockets jwcrypto==$JWCRYPTO_VERSION"
  export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_ROOT_USER_ACTION=ignore
  "$PYTHON" -m pip install --quiet "ocpp==$OCPP_PY_VERSION" websockets "jwcrypto==$JWCRYPTO_VERSION" \
    || "$PYTHON" -m pip install --quiet --break-system-packages "ocpp==$OCPP_PY_VERSION" websockets \
      "jwcrypto==$JWCRYPTO_VERSION"
}

# True when every package the lock names is installed at the locked version.
node_deps_present() {
  node -e '
    const lock = require(process.argv[1] + "/package-lock.json");
    for (const [path, meta] of Object.entries(lock.packages || {})) {
      if (!path || meta.dev || meta.optional) continue;
      let have;
      try { have = require(process.argv[1] + "/" + path + "/package.json").version; } catch (e) { process.exit(1); }
      if (have !== meta.version) process.exit(1);
    }' "$ROOT/$INTEROP" 2>/dev/null
}

install_node_deps() {
  if [ ! -f "$INTEROP/package-lock.json" ]; then
    echo "interop-ocpp.sh: no lock; npm install in $INTEROP"
    npm install --prefix "$INTEROP" --no-audit --no-fund --loglevel=error
  elif node_deps_present; then
    echo "interop-ocpp.sh: node packages of $INTEROP/package-lock.json present"
  else
    echo "interop-ocpp.sh: installing node packages (npm ci in $INTEROP)"
    npm ci --prefix "$INTEROP" --no-audit --no-fund --loglevel=error
  fi
}

install_python_deps
install_node_deps
[ "$DEPS_ONLY" = 1 ] && exit 0

WORK="$(mktemp -d /tmp/ocpp-interop.XXXXXX)"
SERVER_PID=""
stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    # Graceful shutdown takes "a few seconds" at most; then SIGKILL.
    for _ in $(seq 100); do
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
  fi
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}
trap 'stop_server; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

if [ -n "${MIO_SERVER_BIN:-}" ]; then
  BIN="$MIO_SERVER_BIN"
  echo "interop-ocpp.sh: using $BIN (MIO_SERVER_BIN; not building)"
else
  # SERVER_BIN_DIR's (what .ci/run sets), or built (scripts/server-bin.sh).
  source "$ROOT/scripts/server-bin.sh"
  server_bin interop-ocpp.sh mio-server || exit
fi

# Start on free ports; wait (bounded) for `mio-server listening on ADDR (admin on ADDR)`.
RUST_LOG="${RUST_LOG:-info}" "$BIN" --listen 127.0.0.1:0 --admin 127.0.0.1:0 \
  >"$WORK/server.out" 2>"$WORK/server.log" &
SERVER_PID=$!
LINE=""
for _ in $(seq $((START_TIMEOUT * 10))); do
  LINE="$(head -n 1 "$WORK/server.out" 2>/dev/null || true)"
  case "$LINE" in *")") break ;; esac # the whole line is there
  LINE=""
  kill -0 "$SERVER_PID" 2>/dev/null || break
  sleep 0.1
done
OCPP_ADDR="$(sed -n 's/^mio-server listening on \([0-9.]*:[0-9][0-9]*\) (admin on [0-9.]*:[0-9][0-9]*)$/\1/p' <<<"$LINE")"
ADMIN_ADDR="$(sed -n 's/^mio-server listening on [0-9.]*:[0-9][0-9]* (admin on \([0-9.]*:[0-9][0-9]*\))$/\1/p' <<<"$LINE")"
if [ -z "$OCPP_ADDR" ] || [ -z "$ADMIN_ADDR" ]; then
  echo "interop-ocpp.sh: mio-server did not start listening within ${START_TIMEOUT}s (first line: '$LINE'); its log:" >&2
  cat "$WORK/server.log" >&2 || true
  exit 1
fi
WS_URL="ws://$OCPP_ADDR/ocpp"
ADMIN_URL="http://$ADMIN_ADDR"
echo "interop-ocpp.sh: mio-server (PID $SERVER_PID) on $WS_URL, admin $ADMIN_URL"

FAILED=()
RESULTS=()
# run NAME COMMAND...: runs one client (bounded), records `ok NAME` or `FAIL NAME`.
run() {
  local name="$1" log rc=0
  shift
  log="$WORK/client-${name// /-}.log"
  timeout --kill-after=5 "$CLIENT_TIMEOUT" "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then
    RESULTS+=("ok $name")
    [ "$VERBOSE" = 1 ] && sed 's/^/  | /' "$log"
  else
    [ "$rc" = 124 ] && echo "interop-ocpp.sh: $name was killed after ${CLIENT_TIMEOUT}s" >>"$log"
    RESULTS+=("FAIL $name (exit $rc)")
    FAILED+=("$name")
    echo "interop-ocpp.sh: $name failed (exit $rc); its output:"
    sed 's/^/  | /' "$log"
  fi
  echo "${RESULTS[-1]}"
}

run "python-ocpp 1.6" "$PYTHON" "$INTEROP/python_cp.py" "$WS_URL" 1.6 --admin "$ADMIN_URL"
run "python-ocpp 2.0.1" "$PYTHON" "$INTEROP/python_cp.py" "$WS_URL" 2.0.1 --admin "$ADMIN_URL"
run "python-ocpp 2.1" "$PYTHON" "$INTEROP/python_cp.py" "$WS_URL" 2.1 --admin "$ADMIN_URL"
run "ocpp-rpc 1.6" node "$INTEROP/node_cp.js" "$WS_URL" --admin "$ADMIN_URL" --version 1.6
run "ocpp-rpc 2.0.1" node "$INTEROP/node_cp.js" "$WS_URL" --admin "$ADMIN_URL" --version 2.0.1
# ocpp-rpc 2.2.1's strict mode cannot validate 2.1: it looks its schemas up as
# `urn:BootNotification.req` (the 1.6 and 2.0.1 files' ids) while its ocpp2_1.json names them
# `urn:BootNotificationRequest` ("Schema ... is missing from subprotocol schema 'ocpp2.1'"). On
# 2.1 it runs unvalidated; the Python library above validates 2.1 against its schemas.
run "ocpp-rpc 2.1" node "$INTEROP/node_cp.js" "$WS_URL" --admin "$ADMIN_URL" --version 2.1 --no-strict

if ! kill -0 "$SERVER_PID" 2>/dev/null; then
  echo "interop-ocpp.sh: mio-server exited during the run"
  FAILED+=("mio-server")
fi
stop_server
if [ ${#FAILED[@]} -gt 0 ] || [ "$VERBOSE" = 1 ] || grep -qE 'ERROR|WARN|panicked' "$WORK/server.log"; then
  echo "interop-ocpp.sh: mio-server log:"
  sed 's/^/  | /' "$WORK/server.log"
fi

echo "interop-ocpp.sh: summary"
printf '%s\n' "${RESULTS[@]}"
if [ ${#FAILED[@]} -gt 0 ]; then
  echo "interop-ocpp.sh: FAILED: ${FAILED[*]}"
  exit 1
fi
echo "interop-ocpp.sh: OK (${#RESULTS[@]} clients)"
