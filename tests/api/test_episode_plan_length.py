"""`Environment.episode` hands the engine the task's plan length (l_min), so fit-v2 times its
incident within the task; `plan_length=` overrides it, and without either the profile's fixed
steps apply. A real proxy and travel service on 127.0.0.1."""

from __future__ import annotations

import httpx
import pytest

import chaosproxy

TASK = "travel-01-book-named-flight"  # l_min 2
pytestmark = pytest.mark.timeout(300)


def _incident_params(episode: chaosproxy.Episode, calls: int) -> dict[str, object]:
    for _ in range(calls):
        httpx.post(f"{episode.url()}/tools/get_itinerary", json={}, timeout=10)
    faulted = [c for c in episode.calls() if c.fault is not None]
    assert faulted, "the incident never reached a call"
    assert faulted[0].fault is not None
    return dict(faulted[0].fault.params)


def test_episodes_time_fit_v2_within_the_plan() -> None:
    with chaosproxy.Environment(domains=["travel"], profile="fit-v2") as env:
        with env.episode(task=TASK, key="plan-a") as episode:
            task_plan = _incident_params(episode, 2)
        with env.episode(plan_length=1, key="plan-b") as episode:
            given = _incident_params(episode, 1)
        with env.episode(task=TASK, plan_length=1, key="plan-c") as episode:
            override = _incident_params(episode, 1)
    assert task_plan["plan_length"] == 2 and task_plan["timing_basis"] == "plan"
    steps = task_plan["timing_steps"]
    assert isinstance(steps, list) and 1 <= steps[0] <= steps[1] <= 2
    assert given["plan_length"] == 1 and given["timing_steps"] == [1, 1]
    assert override["plan_length"] == 1 and override["timing_steps"] == [1, 1]
