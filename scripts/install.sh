#!/usr/bin/env bash
# Install chaosproxy into ./.venv (idempotent): the core only, what the quick start needs.
# The test suite's extras come with scripts/install_test_extras.sh (scripts/test.sh runs it);
# forward mode creates mitmproxy's own environment the first time it is used.
set -euo pipefail
cd "$(dirname "$0")/.."

# libseccomp: the coding sandbox's seccomp filters (pyseccomp loads it). Debian ships it with apt.
if ! ldconfig -p 2>/dev/null | grep 'libseccomp\.so\.2' >/dev/null && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && apt-get install -y -qq libseccomp2 >/dev/null) || echo "libseccomp2 not installed: the coding sandbox will refuse to run code"
fi

# setuptools' editable-install banner is a warning for package authors, not for users.
export PYTHONWARNINGS="ignore:Editable installation"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q --no-compile -c constraints.txt -e .
