#!/usr/bin/env bash
# The tracing backend's own virtualenv for tests/tracing/test_otel_e2e.py: Arize Phoenix.
# Cached in $XDG_CACHE_HOME/chaosproxy/otel-backend-<hash of the requirements>, so CI creates it
# once and reuses it while scripts/otel_backend_requirements.txt is unchanged. Prints the
# venv's python on its last line. The test finds it the same way (CHAOSPROXY_PHOENIX_PYTHON
# overrides).
set -euo pipefail
cd "$(dirname "$0")/.."

req=scripts/otel_backend_requirements.txt
hash=$(sha256sum "$req" | cut -c1-12)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/chaosproxy
venv=$cache/otel-backend-$hash
mkdir -p "$cache"
if [ ! -f "$venv/.chaosproxy-ready" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q -r "$req"
  "$venv/bin/python" -c "import phoenix" 
  touch "$venv/.chaosproxy-ready"
  # older environments of other requirement hashes are dead weight
  find "$cache" -maxdepth 1 -name 'otel-backend-*' ! -name "otel-backend-$hash" -exec rm -rf {} +
fi
echo "$venv/bin/python"
