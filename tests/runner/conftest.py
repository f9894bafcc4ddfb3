"""Runner tests drive real runs: services in a child process, the proxy, real agents."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from chaosproxy.runner.run import RunSpec, RunSummary, execute

RunGrid = Callable[..., RunSummary]


@pytest.fixture(scope="session")
def run_grid() -> RunGrid:
    return _run_grid


def _run_grid(out: Path, **overrides: object) -> RunSummary:
    """Run a grid synchronously (each test gets its own event loop)."""
    settings: dict[str, object] = {
        "agents": ["robust"],
        "suite": "reliabilitybench",
        "profiles": ["lambda0.0"],
        "epsilons": [0.0],
        "trials": 1,
        "out": out,
        "concurrency": 8,
    }
    settings.update(overrides)
    return asyncio.run(execute(RunSpec(**settings)))  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def mock_model_url() -> Iterator[str]:
    """`chaosproxy mock-model` on a free loopback port, as a user would start it."""
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
