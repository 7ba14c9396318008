#!/usr/bin/env bash
# Writes the tables and plots of a bench/run.sh results folder, and, for the full run,
# BENCHMARKS.md's generated section (plots in bench/plots/).
#
#   bash bench/report.sh [RESULTS_DIR]
#
# Installs matplotlib into bench/.venv the first time.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RESULTS=${1:-$ROOT/bench/results/latest}
VENV=$ROOT/bench/.venv
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check matplotlib==3.10.8
fi
if grep -q "^quick: 1" "$RESULTS/machine.txt" 2>/dev/null; then
    # A quick run checks the harness; it does not replace the published figures.
    "$VENV/bin/python" "$ROOT/bench/report.py" "$RESULTS"
else
    "$VENV/bin/python" "$ROOT/bench/report.py" "$RESULTS" \
        --benchmarks "$ROOT/BENCHMARKS.md" --plots "$ROOT/bench/plots"
    mkdir -p "$ROOT/bench/results/published"
    cp "$RESULTS"/*.json "$RESULTS/machine.txt" "$ROOT/bench/results/published/"
fi
