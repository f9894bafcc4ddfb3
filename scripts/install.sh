#!/usr/bin/env bash
# Install chaosproxy and everything its tests need into ./.venv (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."

# libseccomp: the coding sandbox's seccomp filters (pyseccomp loads it). Debian ships it with apt.
if ! ldconfig -p 2>/dev/null | grep 'libseccomp\.so\.2' >/dev/null && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && apt-get install -y -qq libseccomp2 >/dev/null) || echo "libseccomp2 not installed: the coding sandbox will refuse to run code"
fi

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev,otel]'

# The Node MCP SDK, for the Node test client and the example Node agent.
if command -v npm >/dev/null 2>&1; then
  npm ci --no-audit --no-fund --loglevel=error
fi

# mitmproxy's own venv for forward mode (`up --forward-port`), in the user's cache: it pins
# an h11 that fastmcp/httpx cannot use, so it cannot live in .venv. `up` would create it
# on first use; creating it here keeps the first run (and CI's tests) from waiting.
.venv/bin/python -m chaosproxy.forward.mitmenv

# langchain-mcp-adapters pins mcp < 2, so it gets a virtual environment of its own; the MCP
# client matrix (tests/mcp_clients) drives it there.
if [ ! -x .venv-langchain/bin/python ]; then
  python3 -m venv .venv-langchain
fi
.venv-langchain/bin/python -m pip install -q 'langchain-mcp-adapters>=0.3'
