#!/usr/bin/env bash
# Runs the Autobahn|Testsuite fuzzingclient against the echo server: cases 1-10 (301 cases), then
# a subset of the permessage-deflate cases 12.* and 13.* (72 cases, about 1.5-3 min): 12.1 and
# 12.2 (text and binary, every message size, context takeover both ways), 13.1 and 13.3 (the
# client's offer of context takeover, and of a 9-bit server window). Run all of 12.* and 13.* by hand:
# AUTOBAHN_COMPRESSION_CASES='["12.*","13.*"]' (216 cases, 10-15 min on 2 cores, release build).
#
# usage: bash scripts/autobahn.sh [CASES]     (from anywhere; CASES as for run.sh: only those,
#                                              no compression run; default: both runs above)
#
# Builds examples' echo-server in release, starts it on a free port (port 0; the port is read
# from its "listening on" line), runs ../shared/tools/autobahn/run.sh (the shared dir sits
# beside the repository), stops the server by its PID and exits with run.sh's status. Also
# fails when the summary shows any NON-STRICT case: our bar is strict conformance.
#
# env: AUTOBAHN_RUN_SH   path of run.sh (default ../shared/tools/autobahn/run.sh from the repo)
#      AUTOBAHN_COMPRESSION_CASES  the compression cases (JSON array; "none" skips that run)
#      AUTOBAHN_*        passed on to run.sh (AUTOBAHN_REPORT_DIR, AUTOBAHN_TIMEOUT, ...)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RUN_SH="${AUTOBAHN_RUN_SH:-../shared/tools/autobahn/run.sh}"
[ -f "$RUN_SH" ] || { echo "autobahn.sh: $RUN_SH not found (expected the shared tools beside the repo)" >&2; exit 2; }

# The echo server: SERVER_BIN_DIR's (what .ci/run sets), or built (scripts/server-bin.sh).
source "$ROOT/scripts/server-bin.sh"
server_bin autobahn.sh echo-server || exit

WORK="$(mktemp -d /tmp/echo-autobahn.XXXXXX)"
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
  echo "autobahn.sh: echo-server did not start listening; its log:" >&2
  cat "$WORK/server.log" >&2 || echo "(no log: $WORK/server.log is gone)" >&2
  exit 1
fi
echo "autobahn.sh: echo-server (PID $SERVER_PID) listening on 127.0.0.1:$PORT"

COMPRESSION_DEFAULT='["12.1.*","12.2.*","13.1.*","13.3.*"]'
COMPRESSION_CASES="${AUTOBAHN_COMPRESSION_CASES:-$COMPRESSION_DEFAULT}"
[ $# -gt 0 ] && COMPRESSION_CASES=none

FAILED=()
# suite NAME [run.sh args...]: one fuzzingclient run; records a failure (exit status or any
# NON-STRICT case: our bar is strict conformance) in FAILED.
suite() {
  local name="$1" rc non_strict
  shift
  echo "autobahn.sh: $name"
  set +e
  bash "$RUN_SH" "ws://127.0.0.1:$PORT" echo-server "$@" 2>&1 | tee "$WORK/run.out"
  rc=${PIPESTATUS[0]}
  set -e
  non_strict="$(sed -n 's/^ *NON-STRICT: *\([0-9][0-9]*\)$/\1/p' "$WORK/run.out")"
  if [ "$rc" -ne 0 ]; then
    FAILED+=("$name: run.sh exited with $rc")
  elif [ -z "$non_strict" ]; then
    FAILED+=("$name: no NON-STRICT count in the summary")
  elif [ "$non_strict" -gt 0 ]; then
    FAILED+=("$name: $non_strict NON-STRICT cases; the bar is 0")
  fi
}

suite "cases ${*:-1-10}" "$@"
if [ "$COMPRESSION_CASES" != none ]; then
  # run.sh leaves 12.* and 13.* out unless AUTOBAHN_EXCLUDE is set.
  export AUTOBAHN_EXCLUDE=""
  suite "permessage-deflate cases $COMPRESSION_CASES" "$COMPRESSION_CASES"
fi
stop_server
if [ -s "$WORK/server.log" ] && [ "$(wc -l <"$WORK/server.log" 2>/dev/null || echo 0)" -gt 1 ]; then
  echo "autobahn.sh: echo-server log:"
  sed 's/^/  /' "$WORK/server.log"
fi

if [ ${#FAILED[@]} -gt 0 ]; then
  printf 'autobahn.sh: FAILED (%s)\n' "${FAILED[@]}"
  exit 1
fi
echo "autobahn.sh: OK"
