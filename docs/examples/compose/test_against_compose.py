"""Chaos tests against the compose environment that conftest.py brings up once per session."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
from conftest import ComposeEnv

CHAOSPROXY = str(Path(sys.executable).parent / "chaosproxy")


def test_the_robust_agent_completes_travel_tasks_under_faults(
    compose_env: ComposeEnv, tmp_path: Path
) -> None:
    """`chaosproxy run --services/--proxy/--control` (RemoteEnvironment) through the containers."""
    out = tmp_path / "robust"
    subprocess.run(
        [
            CHAOSPROXY, "run", "--agent", "robust", "--profile", "lambda0.2",
            "--domains", "travel", "--tasks", "travel-0[1-3]*", "--out", str(out),
            "--services", f"travel={compose_env.url('travel')}",
            "--proxy", compose_env.url("proxy"), "--control", compose_env.url("control"),
            "--proxy-log", str(compose_env.runs / "proxy" / "calls.jsonl"),
        ],
        env=compose_env.env,
        check=True,
        capture_output=True,
    )  # fmt: skip
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 3
    assert all(episode["success"] for episode in episodes), episodes


def test_my_own_client_gets_an_answer_through_the_proxy(compose_env: ComposeEnv) -> None:
    """Any HTTP client through the proxy: an episode named in the URL, faults from lambda0.2."""
    url = f"{compose_env.url('proxy')}/e/my-client/travel/tools/search_flights"
    body = {"origin": "SFO", "dest": "JFK", "date": "2026-03-10"}
    replies = [httpx.post(url, json=body, timeout=30) for _ in range(5)]
    assert any(reply.status_code == 200 and reply.json()["total"] > 0 for reply in replies)
