#!/usr/bin/env bash
# Fuzz smoke run: every target of fuzz/Cargo.toml for a fixed time each, without a sanitizer.
#
# usage: bash scripts/fuzz-smoke.sh [SECONDS]     (per target; default $FUZZ_SECONDS or 60)
#        FUZZ_OPT_LEVEL=1 bash scripts/fuzz-smoke.sh   (a quicker build, see below)
#
# Runs `cargo fuzz run -s none TARGET fuzz/corpus/TARGET fuzz/seeds/TARGET -- -max_total_time=N`.
# libFuzzer writes new inputs to the first corpus directory, so the generated corpus goes to
# fuzz/corpus/ (ignored by git) and the hand-made seeds in fuzz/seeds/TARGET (created when
# missing) are only read. A crash (exit status != 0) fails the script after all targets ran;
# the input lands in fuzz/artifacts/TARGET/. Needs cargo-fuzz (`cargo install cargo-fuzz`).
set -euo pipefail

DURATION="${1:-${FUZZ_SECONDS:-60}}"
# FUZZ_OPT_LEVEL=N builds the targets at opt-level N instead of the release profile's 3
# (.ci/run: 1, which builds in about half the time and ran 0.8 to 1.0 times as many inputs a
# second in a 5 s run of four targets). The same level for the build and the runs, or
# `cargo fuzz run` builds again.
if [ -n "${FUZZ_OPT_LEVEL:-}" ]; then
  export CARGO_PROFILE_RELEASE_OPT_LEVEL="$FUZZ_OPT_LEVEL"
fi
[[ "$DURATION" =~ ^[0-9]+$ ]] || { echo "fuzz-smoke.sh: SECONDS must be a number (got $DURATION)" >&2; exit 2; }

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# The [[bin]] names of fuzz/Cargo.toml.
mapfile -t TARGETS < <(awk '
  /^\[/ { in_bin = ($0 == "[[bin]]") }
  in_bin && /^name *=/ { gsub(/^name *= *"|" *$/, ""); print }
' fuzz/Cargo.toml)
[ ${#TARGETS[@]} -gt 0 ] || { echo "fuzz-smoke.sh: no [[bin]] targets in fuzz/Cargo.toml" >&2; exit 2; }
echo "fuzz-smoke.sh: ${#TARGETS[@]} targets (${TARGETS[*]}), ${DURATION} s each"

echo "fuzz-smoke.sh: building all targets"
cargo fuzz build -s none

LOGS="$(mktemp -d /tmp/fuzz-smoke.XXXXXX)"
trap 'rm -rf "$LOGS"' EXIT
FAILED=()
for target in "${TARGETS[@]}"; do
  mkdir -p "fuzz/seeds/$target" "fuzz/corpus/$target"
  echo "fuzz-smoke.sh: $target (${DURATION} s)"
  # Built above, so this only runs. The outer timeout guards against a hang of the tooling.
  status=0
  timeout --kill-after=10 $((DURATION + 600)) \
    cargo fuzz run -s none "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" -- \
    -max_total_time="$DURATION" -print_final_stats=1 >"$LOGS/$target.log" 2>&1 || status=$?
  if [ "$status" -eq 0 ]; then
    grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added)' "$LOGS/$target.log" \
      | sed 's/^/  /' || true
  else
    FAILED+=("$target")
    [ "$status" -eq 124 ] && echo "fuzz-smoke.sh: $target timed out after $((DURATION + 600)) s"
    echo "fuzz-smoke.sh: $target FAILED (exit status $status); last lines of its output:"
    tail -n 40 "$LOGS/$target.log" | sed 's/^/  /'
  fi
done

if [ ${#FAILED[@]} -gt 0 ]; then
  echo "fuzz-smoke.sh: FAILED: ${FAILED[*]} (inputs in fuzz/artifacts/)"
  exit 1
fi
echo "fuzz-smoke.sh: OK (${#TARGETS[@]} targets, ${DURATION} s each)"
