#!/usr/bin/env bash
# Installs every benchmark peer (each into its own directory). Idempotent; prints each
# peer's install time. Exits non-zero if any install fails (the others are still tried).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
peers=(python-ocpp node-ocpp-rpc rust-tungstenite rust-ocpp-kit rust-floor)
failed=0
for peer in "${peers[@]}"; do
    start=$(date +%s)
    if bash "$here/$peer/install.sh"; then
        echo "install $peer: ok ($(( $(date +%s) - start )) s)"
    else
        echo "install $peer: FAILED ($(( $(date +%s) - start )) s)" >&2
        failed=1
    fi
done
exit "$failed"
