"""fit-v2 over a real run: the runner hands each task's plan length (l_min) to the engine,
the incident is timed within the plan, and at least 95 % of episodes receive it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chaosproxy.records import CALLS_FILE, EPISODES_FILE, EpisodeRecord, read_jsonl
from chaosproxy.scoring import score_runs
from chaosproxy.scoring.delivery import delivery_lines

pytestmark = pytest.mark.timeout(120)

# 38 tasks of all nine domains: l_min 1 to 4, plus one task of 6 and one of 8 calls
TASKS = ["*-0[1-4]-*", "travel-10-*", "logistics-07-*"]


def test_fit_v2_delivers_its_incident_in_at_least_95_percent_of_episodes(
    tmp_path: Path, run_grid: Callable[..., Any]
) -> None:
    out = tmp_path / "fit"
    run_grid(
        out,
        agents=["naive", "robust"],
        suite="all",
        task_patterns=TASKS,
        profiles=["fit-v2"],
        concurrency=16,
    )
    episodes = list(read_jsonl(out / EPISODES_FILE, EpisodeRecord))
    assert len(episodes) == 76 and {e.outcome for e in episodes} == {"completed"}
    l_min = {
        task["id"]: task["l_min"]
        for task in map(json.loads, (out / "tasks.jsonl").read_text().splitlines())
    }
    assert {l_min[e.task_id] for e in episodes} >= {1, 2, 3, 4, 6, 8}

    # From the raw log: an episode received its incident when one of its effects was
    # delivered; every incident is timed within its task's plan.
    received: set[str] = set()
    first_step: dict[str, int] = {}
    for call in map(json.loads, (out / CALLS_FILE).read_text().splitlines()):
        fault = call.get("fault")
        if call["kind"] != "tool_call" or not fault or not fault["incident"].endswith("@episode"):
            continue
        params = fault["params"]
        task = call["episode"].split("~")[1]
        assert params["timing_basis"] == "plan" and params["plan_length"] == l_min[task]
        low, high = params["timing_steps"]
        assert 1 <= low <= high <= l_min[task], (call["episode"], params)
        first_step.setdefault(call["episode"], call["step"])
        if call["fault_delivered"]:
            received.add(call["episode"])
    for episode, step in first_step.items():
        assert step <= l_min[episode.split("~")[1]], episode
    by_agent = {
        agent: sum(e.episode in received for e in episodes if e.agent == agent) / 38
        for agent in ("naive", "robust")
    }
    assert min(by_agent.values()) >= 0.95, by_agent

    # The scorer says the same, and prints it.
    results = score_runs([out]).results
    shares = {g.agent: g.delivery.incident_delivered for g in results.groups if g.delivery}
    for agent, share in by_agent.items():
        assert shares[agent].value == pytest.approx(share) and shares[agent].n == 38
    lines = delivery_lines(results)
    assert any(line.startswith("naive · fit-v2") and "incident delivered" in line for line in lines)
