"""`up` judges episodes that name a task (issue 30): PUT /_chaos/episodes/{id} with a task
starts the episode at the task's initial state, POST .../verdict runs its verifier and
records it, and `chaosproxy score` of the `up` directory reports SR and pass^k. A real
`chaosproxy up` process, a real agent over REST through it, hostile requests refused."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import httpx
import pytest
from chaosproxy.domains.kit.client import RestToolClient
from chaosproxy.domains.registry import get_domain
from proxy_subprocess import start_up

from chaosproxy.proxy.controlfile import read_control_file
from chaosproxy.scoring.api import score_runs

TASK = "travel-03-cheapest-lon-par"


@pytest.mark.timeout(120)
def test_up_judges_and_scores_episodes_that_name_a_task(tmp_path: Path) -> None:
    process, url = start_up(["--profile", "lambda0.0", "--domains", "travel"], tmp_path)
    try:
        access = read_control_file(tmp_path)
        control = httpx.Client(
            base_url=access.url, headers={"Authorization": f"Bearer {access.token}"}, timeout=30
        )
        started = control.put("/_chaos/episodes/solved", json={"task": TASK, "agent": "mine"})
        assert started.status_code == 200, started.text
        assert started.json()["text"].startswith("Book the cheapest flight from LON to PAR")
        assert started.json()["plan_length"] == 3  # the task's l_min times incidents

        async def solve() -> None:
            async with RestToolClient(f"{url}/e/solved/travel") as client:
                await get_domain("travel").tasks[TASK].solve(client)

        asyncio.run(solve())
        first = control.post("/_chaos/episodes/solved/verdict").json()
        assert (first["success"], first["recorded"], first["t_success"]) == (True, True, 3)
        again = control.post("/_chaos/episodes/solved/verdict").json()
        assert (again["success"], again["recorded"]) == (True, False)

        assert control.put("/_chaos/episodes/idle", json={"task": TASK, "agent": "mine"}).is_success
        assert control.post("/_chaos/episodes/idle/verdict").json()["success"] is False

        unknown = control.put("/_chaos/episodes/x", json={"task": "no-such-task"})
        assert unknown.status_code == 400 and unknown.json()["error"]["field"] == "task"
        assert "no-such-task" in unknown.json()["error"]["message"]
        other = control.put("/_chaos/episodes/x", json={"task": "support-01-create-ticket"})
        assert other.status_code == 400 and "does not serve" in other.text
        no_task = control.post("/_chaos/episodes/never/verdict")
        assert no_task.status_code == 409 and "named no task" in no_task.text
        bad_agent = control.put("/_chaos/episodes/x", json={"task": TASK, "agent": "a b/../"})
        assert bad_agent.status_code == 400
        # the agent port never reaches the judge
        assert httpx.post(f"{url}/_chaos/episodes/solved/verdict", timeout=10).status_code == 404
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    results = score_runs([tmp_path]).results
    group = next(g for g in results.groups if g.agent == "mine")
    assert (group.sr.value, group.counts.evaluable) == (0.5, 2)
