#!/usr/bin/env bash
# Install chaosproxy and everything its tests need into ./.venv (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev]'

# The Node MCP SDK, for the Node test client and the example Node agent.
if command -v npm >/dev/null 2>&1; then
  npm ci --no-audit --no-fund --loglevel=error
fi
