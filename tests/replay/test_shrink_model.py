"""Shrinking a model-driven agent's failure, against `chaosproxy mock-model`, with trials."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaosproxy.commands.schedule import _agent
from chaosproxy.replay.received import received
from chaosproxy.replay.shrink import shrink_episode
from chaosproxy.runner.run import RunSpec, execute

BUDGET = 20


@pytest.fixture(scope="module")
def mock_model() -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "chaosproxy.cli", "mock-model", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "serving on" in line, f"mock-model did not start: {line!r}"
        yield line.split()[-1]
    finally:
        process.terminate()
        process.wait(10)


def test_a_react_failure_shrinks_with_trials(mock_model: str, tmp_path: Path) -> None:
    out = tmp_path / "react"
    spec = RunSpec(
        agents=["react"],
        suite="all",
        profiles=["lambda0.3"],
        epsilons=[0.0],
        trials=2,
        out=out,
        domains=["travel"],
        task_patterns=["travel-05*"],
        model="mock",
        base_url=mock_model,
        timeout_s=30.0,
    )
    asyncio.run(execute(spec))
    failed = [
        received(out, json.loads(line)["episode"])
        for line in (out / "episodes.jsonl").read_text().splitlines()
        if json.loads(line)["success"] is False
    ]
    faulted = [item for item in failed if item.schedule.faults]
    assert faulted, "λ0.3 should make the mock-driven react agent fail a faulted episode"
    item = max(faulted, key=lambda got: len(got.schedule.faults))
    lines: list[str] = []
    result = asyncio.run(
        shrink_episode(
            out,
            item.episode.episode,
            agent=_agent(item.episode.agent, item.episode.model, mock_model),
            trials=2,
            budget=BUDGET,
            report=lines.append,
        )
    )
    assert result.reproduced and result.runs <= BUDGET
    assert 1 <= len(result.minimal.faults) <= len(item.schedule.faults)
    start = [(f.tool, f.call, f.fault) for f in item.schedule.faults]
    assert all((f.tool, f.call, f.fault) in start for f in result.minimal.faults)
    assert result.failure is not None and result.failure.failed
    assert any("run(s))" in line for line in lines)  # trials are reported per candidate
