#!/usr/bin/env bash
# Installs the peer's dependencies into ./.venv (idempotent).
set -euo pipefail
cd "$(dirname "$0")"
if ! .venv/bin/python -c 'import ocpp, websockets' 2>/dev/null \
    || ! cmp -s requirements.txt .venv/.installed-requirements; then
    python3 -m venv .venv
    .venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
    cp requirements.txt .venv/.installed-requirements
fi
