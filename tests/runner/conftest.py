"""Runner tests drive real runs: services in a child process, the proxy, real agents."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
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
