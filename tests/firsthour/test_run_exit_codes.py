"""`chaosproxy run` exit codes as scripts rely on them (issue 30): a profile typo is a usage
error (2, as in `up`), a run whose agent crashed in every episode fails (1) and says where
its stderr went, and `--fail-under` gates on the scored numbers. Real runs, real services."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(300)
CLI = [sys.executable, "-m", "chaosproxy.cli"]
ONE_TASK = ["--tasks", "travel-01-book-named-flight", "--profile", "lambda0.0", "--no-score"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "run", *args], capture_output=True, text=True, timeout=240)


def test_a_profile_typo_is_a_usage_error_in_run_as_in_up(tmp_path: Path) -> None:
    run = _run("--agent", "naive", "--profile", "lamda0.2", "--out", str(tmp_path / "r"))
    up = subprocess.run(
        [*CLI, "up", "--profile", "lamda0.2", "--port", "0", "--run-dir", str(tmp_path / "u")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == up.returncode == 2
    assert "did you mean 'lambda0.2'" in run.stderr and "did you mean 'lambda0.2'" in up.stderr
    assert not (tmp_path / "r").exists()  # refused before anything was written


def test_an_agent_that_always_crashes_fails_the_run_and_points_at_its_stderr(
    tmp_path: Path,
) -> None:
    out = tmp_path / "crash"
    done = _run(
        "--agent-cmd", "echo 'cannot import my_agent' >&2; exit 3", *ONE_TASK, "--out", str(out)
    )
    assert done.returncode == 1
    assert "no episode completed" in done.stderr
    assert "stderr.txt: cannot import my_agent" in done.stderr


def test_fail_under_gates_the_run_on_its_scores(tmp_path: Path) -> None:
    out = tmp_path / "naive"
    passed = _run("--agent", "naive", *ONE_TASK, "--out", str(out), "--fail-under", "sr=0.5")
    assert passed.returncode == 0, passed.stderr
    gated = subprocess.run(
        [*CLI, "score", "--quiet", str(out), "--fail-under", "frr=0.5"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert gated.returncode == 1 and "n/a (not measurable)" in gated.stderr  # λ0: no FRR
