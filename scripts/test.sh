#!/usr/bin/env bash
# The whole test suite, one command: bash scripts/test.sh
#
# 1. `cargo test --workspace`: unit, integration and doc tests of every crate (its
#    `test result:` lines are what CI reads);
# 2. scripts/interop.sh: the Python `websockets` and Node `ws` clients against the echo server
#    (installs their packages when missing). TEST_SKIP_INTEROP=1 skips it (.ci/run runs it as
#    a section of its own).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# The charge-point example's interop test runs it against a Python `ocpp` central system: install
# that package first, and make the test fail rather than skip if it is still missing.
echo "== test.sh: packages for the interop tests"
bash scripts/interop-ocpp.sh --deps-only
echo "== test.sh: cargo test --workspace"
OCPP_INTEROP_REQUIRED=1 cargo test --workspace
if [ "${TEST_SKIP_INTEROP:-0}" = 1 ]; then
  echo "== test.sh: interop skipped (TEST_SKIP_INTEROP=1)"
else
  echo "== test.sh: interop"
  bash scripts/interop.sh
  bash scripts/interop-ocpp.sh
fi
echo "== test.sh: OK"
