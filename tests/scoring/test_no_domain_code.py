"""The scorer reads the run directory only: it scores in a fresh process in which no
domain code can be imported (issue 14)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

BLOCKER = """
import importlib.abc, sys

class NoDomains(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "chaosproxy.domains" or name.startswith("chaosproxy.domains."):
            raise ImportError(f"domain code is off limits to the scorer: {name}")
        return None

sys.meta_path.insert(0, NoDomains())
"""

SCORE = """
import json, sys
from pathlib import Path
from chaosproxy.scoring import score_runs, write_outputs
path = Path(sys.argv[1])
scored = score_runs([path])
write_outputs(scored, path)
assert not [m for m in sys.modules if m.startswith("chaosproxy.domains")]
g = scored.results.groups[0]
print(json.dumps({"frr": g.frr.value, "dup": g.hygiene.duplicate_writes.count,
                  "t_source": [s.t_success_source for s in scored.episodes]}))
"""


def test_scores_in_a_process_that_cannot_import_domains(run: Any) -> None:
    order = {"sku": "A1", "qty": 1}
    (
        run.episode(t_success=9, checks=[(3, True)], held_initially=False, non_idempotent=["w"])
        .call()
        .call("w", arguments=order, status=504, outcome="timeout", fault="LostReply")
        .call("w", arguments=order)
        .write("w", order, 2)
        .write("w", order, 3)
    )
    path = run.build()
    probe = subprocess.run(
        [sys.executable, "-c", BLOCKER + "import chaosproxy.domains.registry"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.returncode != 0 and "off limits" in probe.stderr  # the blocker works
    done = subprocess.run(
        [sys.executable, "-c", BLOCKER + SCORE, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    # t_success from the recorded verdicts (3, not the record's 9): 3 − 2 ≤ 2 -> FRR 1.0;
    # the retried write repeats the lost one: 1 duplicate (w is recorded non-idempotent)
    assert out == {"frr": 1.0, "dup": 1, "t_source": ["verdicts"]}
    assert (path / "results.json").is_file() and (path / "episodes.csv").is_file()


def test_score_command_runs_without_domains(run: Any) -> None:
    run.episode(t_success=1, checks=[(1, True)], held_initially=False).call()
    path = run.build()
    command = "from chaosproxy.cli import main; main(['score', sys.argv[1]])"
    done = subprocess.run(
        [sys.executable, "-c", BLOCKER + command, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((path / "results.json").read_text())["counts"]["evaluable"] == 1
