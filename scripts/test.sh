#!/usr/bin/env bash
# The test command: lint, type-check and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install_test_extras.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/deptry .
bash scripts/typecheck.sh
.venv/bin/python -m pytest "$@"
