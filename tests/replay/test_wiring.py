"""A schedule reaches the engine through `Environment.episode` and the control API."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

import chaosproxy

SCHEDULE = {"faults": [{"tool": "travel/search_flights", "call": 2, "fault": "SoftRateLimit"}]}
ARGS: dict[str, str] = {}  # the service answers 422 itself: any status but a 429 will do


def test_environment_episode_and_control_api_take_a_schedule(tmp_path: Path) -> None:
    with chaosproxy.Environment(domains=["travel"], profile="lambda0.3", run_dir=tmp_path) as env:
        episode = env.episode(task="travel-03-cheapest-lon-par", schedule=SCHEDULE)
        search = f"{episode.url('travel')}/tools/search_flights"
        statuses = [httpx.post(search, json=ARGS, timeout=10).status_code for _ in range(4)]
        assert statuses == [422, 429, 422, 422]  # replace: λ0.3 draws nothing else
        assert [f.name for f in episode.faults()] == ["SoftRateLimit"]
        episode.end()

        with pytest.raises(chaosproxy.SetupError, match=r"faults\.0\.fault"):
            env.episode(schedule={"faults": [{"tool": "x", "call": 1, "fault": "Nope"}]})

        auth = {"Authorization": f"Bearer {env.token}"}
        control = f"{env.control_url}/_chaos/episodes/ctl-1"
        bad = httpx.put(
            control,
            json={"schedule": {"faults": [{"tool": "x", "call": 0, "fault": "LostReply"}]}},
            headers=auth,
            timeout=10,
        )
        assert bad.status_code == 400
        assert bad.json()["error"]["field"] == "schedule.faults.0.call"
        ok = httpx.put(control, json={"schedule": SCHEDULE}, headers=auth, timeout=10)
        assert ok.status_code == 200 and ok.json()["schedule"] == 1
        url = f"{env.url}/e/ctl-1/travel/tools/search_flights"
        statuses = [httpx.post(url, json=ARGS, timeout=10).status_code for _ in range(3)]
        assert statuses == [422, 429, 422]
