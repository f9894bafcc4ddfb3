"""Ctrl-C leaves a scoreable partial run; --resume finishes exactly what is missing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from chaosproxy.cli import main
from chaosproxy.records import EPISODES_FILE, EpisodeRecord, read_jsonl
from chaosproxy.scoring import score_runs

FLAGS = [
    "run", "--agent", "retry", "--domains", "travel,scheduling", "--profile", "lambda0.2",
    "--trials", "2", "--concurrency", "2", "--no-score",
]  # fmt: skip
TOTAL = (16 + 13) * 2


def recorded(out: Path) -> list[EpisodeRecord]:
    path = out / EPISODES_FILE
    return list(read_jsonl(path, EpisodeRecord)) if path.exists() else []


def test_interrupt_then_resume(tmp_path: Path) -> None:
    out = tmp_path / "run"
    command = [sys.executable, "-m", "chaosproxy.cli", *FLAGS, "--out", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while len(recorded(out)) < 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 0, output
    assert "--resume" in output
    partial = recorded(out)
    assert 4 <= len(partial) < TOTAL
    assert score_runs([out]).results.counts.total == len(partial)

    finished = CliRunner().invoke(main, [*FLAGS, "--out", str(out), "--resume"])
    assert finished.exit_code == 0, finished.output
    complete = recorded(out)
    assert len(complete) == TOTAL
    assert max(Counter(r.episode for r in complete).values()) == 1
    assert [r.episode for r in complete[: len(partial)]] == [r.episode for r in partial]


def test_an_existing_run_is_never_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "config.json").write_text("{}")
    result = CliRunner().invoke(main, [*FLAGS, "--out", str(out)])
    assert result.exit_code != 0
    assert "already holds a run" in result.output
    assert (out / "config.json").read_text() == "{}"


def test_resume_needs_a_run(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, [*FLAGS, "--out", str(tmp_path / "none"), "--resume"])
    assert result.exit_code != 0
    assert "nothing to resume" in result.output


def test_resume_refuses_a_different_grid(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = CliRunner().invoke(
        main, [*FLAGS[:-5], "--trials", "1", "--concurrency", "4", "--no-score", "--out", str(out),
               "--tasks", "travel-01*"]
    )  # fmt: skip
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(
        main, [*FLAGS, "--out", str(out), "--resume", "--tasks", "travel-02*"]
    )
    assert again.exit_code != 0
    assert "different grid" in again.output
    assert os.path.getsize(out / EPISODES_FILE) > 0
