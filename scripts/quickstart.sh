#!/usr/bin/env bash
# The main job: the three scripted agents over the four ReliabilityBench domains,
# without faults (lambda0.0) and with them (lambda0.2), two trials each. Offline.
# Prints the comparison and writes RUN_DIR/report.html.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x .venv/bin/chaosproxy ] || bash scripts/install.sh
out=${1:-runs/quickstart-$(date +%Y%m%d-%H%M%S)}
.venv/bin/chaosproxy run \
  --agent naive --agent retry --agent robust \
  --suite reliabilitybench \
  --profile lambda0.0 --profile lambda0.2 \
  --trials 2 --concurrency 24 --seed 7 \
  --out "$out"
