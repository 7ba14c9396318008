#!/usr/bin/env bash
# Every criterion micro-benchmark of the workspace, behind one command.
#
#   bash bench/micro.sh [SECONDS]    # measurement time per benchmark [3]
#
# The figures are wall-clock on a shared machine: compare the ratios within one run (each
# bench measures its peer beside us: tungstenite, serde_json::Value, rust-ocpp, memcpy), not
# the absolute numbers across runs. Criterion's reports land in target/criterion/.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SECONDS_EACH=${1:-3}
ARGS=(--warm-up-time 1 --measurement-time "$SECONDS_EACH")
for crate_dir in ocpp-frame ocpp-messages ocpp-proto; do
    for bench in "$crate_dir"/benches/*.rs; do
        name=$(basename "$bench" .rs)
        echo "== $crate_dir: $name"
        cargo bench --quiet -p "$crate_dir" --bench "$name" -- "${ARGS[@]}"
    done
done
