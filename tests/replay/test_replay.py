"""Replay: the schedule an episode received, run again, gives the same fault sequence."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from chaosproxy.records import CallRecord
from chaosproxy.replay.received import received
from chaosproxy.replay.rerun import Rerunner
from chaosproxy.runner.run import RunSpec, execute


def comparable(call: CallRecord) -> dict[str, Any]:
    """A call as replay must reproduce it: all but ts, latency_ms and the fault's draw."""
    data = call.model_dump(mode="json")
    data.pop("ts")
    data.pop("latency_ms")
    if data.get("fault") is not None:
        data["fault"].pop("draw")
    return data


RUNS = {
    # per-call draws (the issue's case), and FIT v2's planned incidents (step entries)
    "lambda0.2": (["retry", "robust"], "travel-0[1-6]*"),
    "fit-v2": (["retry"], "travel-0[1-5]*"),
}


@pytest.fixture(scope="module", params=sorted(RUNS))
def small_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    profile = str(request.param)
    agents, tasks = RUNS[profile]
    out = tmp_path_factory.mktemp("run") / profile
    spec = RunSpec(
        agents=agents,
        suite="all",
        profiles=[profile],
        epsilons=[0.0],
        trials=1,
        out=out,
        seed=11,
        domains=["travel"],
        task_patterns=[tasks],
        concurrency=4,
        timeout_s=20.0,
    )
    asyncio.run(execute(spec))
    return out


def test_replay_reproduces_every_faulted_episode(small_run: Path) -> None:
    import json

    episodes = [
        json.loads(line)["episode"]
        for line in (small_run / "episodes.jsonl").read_text().splitlines()
    ]
    got = [received(small_run, episode) for episode in episodes]
    faulted = [item for item in got if item.schedule.faults]
    assert len(faulted) >= 3, "the λ0.2 run should fault several episodes"

    async def replay_all() -> int:
        same = 0
        async with Rerunner(faulted[0].episode) as rerunner:
            outcomes = await asyncio.gather(
                *(
                    rerunner.run(item.schedule, attempt=item.episode.attempt, original=item.episode)
                    for item in faulted
                )
            )
        for item, outcome in zip(faulted, outcomes, strict=True):
            assert [comparable(c) for c in outcome.calls] == [comparable(c) for c in item.calls]
            assert all(c.fault.draw is None for c in outcome.calls if c.fault is not None)
            assert outcome.record.success == item.episode.success
            same += 1
        return same

    assert asyncio.run(replay_all()) == len(faulted)
