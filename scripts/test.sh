#!/usr/bin/env bash
# The test command: lint, type-check and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install_test_extras.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/deptry .
bash scripts/typecheck.sh
# Two pytest-xdist workers: many tests wait on servers in subprocesses, so two workers keep
# both cores busy. Tests sharing an outside resource stay in one xdist group
# (tests/conftest.py). `-n 0` after the command runs them in one process.
.venv/bin/python -m pytest -n 2 --dist loadgroup "$@"
