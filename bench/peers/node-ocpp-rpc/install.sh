#!/usr/bin/env bash
# Installs the peer's dependencies into ./node_modules from package-lock.json (idempotent).
set -euo pipefail
cd "$(dirname "$0")"
stamp="node_modules/.peer-installed"
if ! sha256sum --status -c "$stamp" 2>/dev/null; then
    npm ci --no-audit --no-fund --loglevel=error
    sha256sum package-lock.json > "$stamp"
fi
