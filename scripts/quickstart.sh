#!/usr/bin/env bash
# The main job: the three scripted agents over the four ReliabilityBench domains,
# without faults (lambda0.0) and with them (lambda0.2), two trials each. Offline.
# Prints the headline table and writes RUN_DIR/report.html (the full tables:
# `chaosproxy score RUN_DIR`).
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x .venv/bin/chaosproxy ] || bash scripts/install.sh
out=${1:-runs/quickstart-$(date +%Y%m%d-%H%M%S)}
.venv/bin/chaosproxy run \
  --agent naive --agent retry --agent robust \
  --suite reliabilitybench \
  --profile lambda0.0 --profile lambda0.2 \
  --trials 2 --concurrency 24 --seed 7 \
  --no-score --out "$out"

# A model-driven agent beside them, offline: react and reflexion against the mock model
# (`chaosproxy mock-model`, labelled mock in every result) on the travel domain.
mock_log=$(mktemp)
.venv/bin/chaosproxy mock-model --port 0 > "$mock_log" &
mock_pid=$!
trap 'kill $mock_pid 2>/dev/null; rm -f "$mock_log"' EXIT
for _ in $(seq 100); do grep -q 'serving on' "$mock_log" && break; sleep 0.2; done
.venv/bin/chaosproxy run \
  --agent react --agent reflexion --model mock \
  --base-url "$(grep -o 'http://[^ ]*' "$mock_log")" \
  --suite reliabilitybench --domains travel \
  --profile lambda0.0 --profile lambda0.2 \
  --trials 1 --concurrency 24 --seed 7 \
  --no-score --out "$out-mock"

for run in "$out" "$out-mock"; do
  echo
  .venv/bin/chaosproxy score --brief "$run"
  .venv/bin/chaosproxy report "$run" >/dev/null
done
echo
echo "reports: $out/report.html and $out-mock/report.html (open them in a browser)"
echo "next: every table with 'chaosproxy score $out'; your own agent: README.md, \"Your agent in five minutes\""
