"""The README's "Your agent in five minutes", as a user runs it: the example agent under
`chaosproxy run --agent-cmd`, scored, gated (a real run: services, proxy, subprocess agent)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chaosproxy.scoring.api import score_runs

pytestmark = pytest.mark.timeout(300)
ROOT = Path(__file__).resolve().parents[2]
AGENT = f"{sys.executable} {ROOT / 'agents' / 'examples' / 'first_agent.py'}"
CLI = [sys.executable, "-m", "chaosproxy.cli"]


def test_the_first_agent_solves_its_task_and_passes_the_gate(tmp_path: Path) -> None:
    out = tmp_path / "first"
    run = [*CLI, "run", "--agent-cmd", AGENT, "--agent-name", "first", "--no-score"]
    run += ["--tasks", "travel-03-cheapest-lon-par", "--profile", "lambda0.0", "--trials", "2"]
    done = subprocess.run([*run, "--out", str(out)], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    group = score_runs([out]).results.groups[0]
    assert (group.agent, group.sr.value, group.counts.evaluable) == ("first", 1.0, 2)
    stdout = (out / "episodes").glob("*/stdout.txt")
    assert all("booked:" in path.read_text() for path in stdout)
    gate = [*CLI, "score", "--quiet", str(out), "--fail-under", "sr=1.0"]
    assert subprocess.run(gate, capture_output=True, timeout=120).returncode == 0
