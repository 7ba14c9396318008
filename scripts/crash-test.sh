#!/usr/bin/env bash
# Crash test of the reference CSMS's durability (issue 40): "nothing acknowledged is lost,
# nothing refused is kept". Not in CI (a run takes minutes); see RELIABILITY.md, "Crash test".
#
# usage: bash scripts/crash-test.sh
#        SERVER=tokio DB=postgres CRASH_SECONDS=120 bash scripts/crash-test.sh
#
# Builds mio-server and tokio-server (release), installs the Python `ocpp` package if missing
# (scripts/interop-ocpp.sh --deps-only, which installs its Node packages too), then runs scripts/crash_test/harness.py: STATIONS
# charge points (OCPP 1.6 and 2.0.1 half and half) run transactions back to back against the
# server while it is killed (SIGKILL, restarted on the same database) and its database goes
# away (PostgreSQL stopped and started; SQLite's write lock held by another process); charge
# points resend what was refused or not answered, as real ones do, and keep a ledger of what
# was acknowledged and refused. At the end the server is stopped cleanly, its `transactions`
# table read directly and reconciled with the ledger; the outages are measured (time to the
# first CALLERROR, latency of answers that need no commit). Exits 1 if an acknowledged event
# was lost, a refused one kept, a 1.6 id given twice or an outage not refused within ~3 s.
#
# env: SERVER          mio (default) or tokio
#      DB              sqlite (default; a file in the run directory) or postgres (a private
#                      cluster: initdb in a temporary directory, a free loopback port; PG_BIN
#                      names the binaries' directory, else /usr/lib/postgresql/*/bin)
#      CRASH_SECONDS   how long transactions start (default 90); then they are finished
#      STATIONS        charge points (default 60)
#      OUTAGE_SECONDS  length of each database outage (default 10)
#      SEED            the stations' and faults' randomness (default 1)
#      CRASH_OUT       the run's directory (default target/crash-test/SERVER-DB-TIME): ledger,
#                      faults, server logs, the rows read, summary.json
#      SERVER_BIN      an already built server to use instead of building
#      LABEL           kept in summary.json (default: "commit HASH" of this checkout, with
#                      "+changes" if examples/ or ocpp-*/ have uncommitted changes)
#      PYTHON          interpreter (default python3); CARGO_TARGET_DIR is honoured
set -euo pipefail

SERVER="${SERVER:-mio}"
DB="${DB:-sqlite}"
CRASH_SECONDS="${CRASH_SECONDS:-90}"
STATIONS="${STATIONS:-60}"
OUTAGE_SECONDS="${OUTAGE_SECONDS:-10}"
SEED="${SEED:-1}"
PYTHON="${PYTHON:-python3}"

if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
case "$SERVER" in mio | tokio) ;; *) echo "crash-test.sh: SERVER must be mio or tokio" >&2; exit 2 ;; esac
case "$DB" in sqlite | postgres) ;; *) echo "crash-test.sh: DB must be sqlite or postgres" >&2; exit 2 ;; esac

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# The `ocpp` package (and websockets), at the version the interop tests pin, if missing.
if ! "$PYTHON" -c 'import ocpp, websockets' 2>/dev/null; then
  PYTHON="$PYTHON" bash scripts/interop-ocpp.sh --deps-only
fi

if [ -n "${SERVER_BIN:-}" ]; then
  BIN="$SERVER_BIN"
  echo "crash-test.sh: using $BIN (SERVER_BIN; not building)"
else
  echo "crash-test.sh: building mio-server and tokio-server (release)"
  cargo build --release --quiet -p ocpp-examples --bin mio-server --bin tokio-server
  TARGET_DIR="${CARGO_TARGET_DIR:-$(cargo metadata --format-version 1 --no-deps \
    | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')}"
  BIN="$TARGET_DIR/release/$SERVER-server"
fi

if [ -z "${LABEL:-}" ]; then
  LABEL="commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  if [ -n "$(git status --porcelain --untracked-files=no -- examples 'ocpp-*' Cargo.lock 2>/dev/null)" ]; then
    LABEL="$LABEL+changes"
  fi
fi
OUT="${CRASH_OUT:-target/crash-test/$SERVER-$DB-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT"

exec "$PYTHON" scripts/crash_test/harness.py --server-bin "$BIN" --db "$DB" \
  --stations "$STATIONS" --seconds "$CRASH_SECONDS" --outage-seconds "$OUTAGE_SECONDS" \
  --seed "$SEED" --out "$OUT" --label "$LABEL"
