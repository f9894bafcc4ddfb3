#!/usr/bin/env bash
# Ray's own virtualenv for tests/scale/test_ray.py and benchmarks/scale.py: Ray (≈300 MB) plus
# chaosproxy's pinned dependencies (constraints.txt). Cached in
# $XDG_CACHE_HOME/chaosproxy/ray-env-<hash of constraints.txt and scripts/ray_requirements.txt>,
# so CI creates it once and reuses it while the lock file is unchanged. chaosproxy itself is an
# editable install of this checkout, re-pointed (without dependencies, in seconds) whenever the
# script runs from another checkout, so the cache never holds a copy of the source. Prints the
# venv's python on its last line. The test finds it the same way (CHAOSPROXY_RAY_PYTHON overrides).
set -euo pipefail
cd "$(dirname "$0")/.."

export PYTHONWARNINGS="ignore:Editable installation"
req=scripts/ray_requirements.txt
hash=$(cat constraints.txt "$req" | sha256sum | cut -c1-12)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/chaosproxy
venv=$cache/ray-env-$hash
mkdir -p "$cache"
if [ ! -f "$venv/.chaosproxy-ready" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q --no-compile -c constraints.txt -r "$req" -e .
  "$venv/bin/python" -c "import ray, chaosproxy.runner.ray"
  touch "$venv/.chaosproxy-ready"
  # older environments of other lock-file hashes are dead weight
  find "$cache" -maxdepth 1 -name 'ray-env-*' ! -name "ray-env-$hash" -exec rm -rf {} +
fi
# chaosproxy from this checkout (the cached venv may have been made from another one)
# (asked from / : from here, `import chaosproxy` would find ./chaosproxy whatever is installed)
where=$(cd / && "$venv/bin/python" -c "import chaosproxy, os; print(os.path.dirname(os.path.dirname(chaosproxy.__file__)))" 2>/dev/null || true)
if [ "$where" != "$PWD" ]; then
  "$venv/bin/python" -m pip install -q --no-deps --no-compile -e .
fi
echo "$venv/bin/python"
