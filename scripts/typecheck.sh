#!/usr/bin/env bash
# Type-check the package as it is installed: domains/ and agents/ inside chaosproxy.
#
# The editable install maps chaosproxy.domains to domains/ with an import hook that mypy
# cannot follow, so this builds a tree of links shaped like the installed package and
# checks that, with the settings in pyproject.toml. mypy's caches sit beside that tree (one per
# set of options), so a second run re-checks only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tree=build/typecheck
cache=$root/build/mypy-cache
rm -rf "$tree" && mkdir -p "$tree/chaosproxy"
for entry in chaosproxy/*; do ln -s "$root/$entry" "$tree/chaosproxy/"; done
for folder in domains agents profiles; do ln -s "$root/$folder" "$tree/chaosproxy/$folder"; done
cd "$tree" && "$root/.venv/bin/mypy" --config-file "$root/pyproject.toml" --cache-dir "$cache/tree" -p chaosproxy
# The pure fault engine and the scorer are held to --strict (their own code; modules they
# import are checked by the run above).
"$root/.venv/bin/mypy" --config-file "$root/pyproject.toml" --cache-dir "$cache/strict" \
  --strict --follow-imports=silent \
  -p chaosproxy.faults -p chaosproxy.scoring
