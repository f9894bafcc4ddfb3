#!/usr/bin/env bash
# Everything the test suite needs beyond the core install (idempotent; scripts/test.sh runs it).
# System packages (Chromium, podman, docker-compose) are .ci/run's.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x .venv/bin/chaosproxy ] || bash scripts/install.sh
export PYTHONWARNINGS="ignore:Editable installation"
stamp=.venv/.test-extras
want=$(cat pyproject.toml constraints.txt package-lock.json | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install -q -c constraints.txt -e '.[dev]'

  # The Node MCP SDK, for the Node test client and the example Node agent.
  if command -v npm >/dev/null 2>&1; then
    npm ci --no-audit --no-fund --loglevel=error >/dev/null
  fi

  # langchain-mcp-adapters pins mcp < 2, so it gets a virtual environment of its own; the MCP
  # client matrix (tests/mcp_clients) drives it there.
  [ -x .venv-langchain/bin/python ] || python3 -m venv .venv-langchain
  .venv-langchain/bin/python -m pip install -q 'langchain-mcp-adapters>=0.3'
  echo "$want" > "$stamp"
fi

# mitmproxy's own environment for forward mode, in the user's cache (`up --forward-port`
# creates it on first use; creating it here keeps the forward tests from waiting).
.venv/bin/python -m chaosproxy.forward.mitmenv >/dev/null
