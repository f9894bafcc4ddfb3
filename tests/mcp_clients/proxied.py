"""Helpers for tests that drive clients through a real proxy: one fault on one episode's
first call, and the proxy's log lines of an episode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chaosproxy.faults import Profile


def first_call_only(fault: str, params: dict[str, Any]) -> Profile:
    """`fault` on the episode's first tools/call only (an initialize is drawn whatever its
    step: SlowInitialize holds every one)."""
    return Profile.model_validate(
        {
            "name": f"only-{fault}",
            "failure_rate": 1.0,
            "weights": {fault: 1.0},
            "scope": {"steps": {"from_step": 1, "to_step": 1}},
            "params": {fault: params},
        }
    )


def log_lines(path: Path | None, episode: str) -> list[dict[str, Any]]:
    assert path is not None
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [line for line in lines if line["episode"] == episode]
