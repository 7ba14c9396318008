#!/usr/bin/env bash
# Type names defined more than once in the workspace (issue 36: each type name means one
# thing). Reads the hand-written source under every crate's src/ (not the generated
# ocpp-messages/src/v*, tests, fuzz or the benchmarks' peers) and lists, with their count, the
# names of module-level structs, enums, traits and type aliases defined in more than one
# place.
#
#   bash scripts/type-name-collisions.sh           # every module-level type
#   bash scripts/type-name-collisions.sh --public  # `pub` ones only; exits 1 if any
set -euo pipefail
cd "$(dirname "$0")/.."
visibility='(pub(\([a-z:]+\))? )?'
if [ "${1:-}" = "--public" ]; then
    visibility='pub '
fi
collisions=$(git ls-files '*.rs' | grep '/src/' \
    | grep -v '^ocpp-messages/src/v\|/tests\.rs$\|/tests/\|^fuzz/\|^bench/' \
    | xargs grep -hoP "^${visibility}((struct|enum|trait) |type (?=[A-Z][A-Za-z0-9_]*(<[^=]*>)? =))\K[A-Z][A-Za-z0-9_]*" \
    | sort | uniq -c | awk '$1 > 1 { print $2, $1 }')
if [ -n "$collisions" ]; then
    echo "$collisions"
fi
if [ "${1:-}" = "--public" ] && [ -n "$collisions" ]; then
    echo "public type names defined more than once (above): give each one name of its own" >&2
    exit 1
fi
