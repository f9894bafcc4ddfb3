"""`hunt`: each fault alone at each call position; failing ones listed, misses reported."""

from __future__ import annotations

import asyncio

from chaosproxy.records import EpisodeRecord
from chaosproxy.replay.hunt import hunt
from chaosproxy.replay.rerun import Rerunner


def test_single_fault_sweep_of_the_naive_agent() -> None:
    record = EpisodeRecord(
        episode="naive~travel-03-cheapest-lon-par~e0~lambda0.0~t1",
        episode_key="travel-03-cheapest-lon-par~e0~lambda0.0~t1",
        task_id="travel-03-cheapest-lon-par",
        domain="travel",
        epsilon=0.0,
        profile="lambda0.0",
        trial=1,
        agent="naive",
        transport="rest",
        seed=7,
        outcome="completed",
        started_at=0.0,
        duration_s=0.0,
        task_text="Book the cheapest flight from LON to PAR on 2026-03-12 for Bob Hale.",
    )

    async def sweep() -> object:
        async with Rerunner(record) as rerunner:
            return await hunt(rerunner, ["ServerError", "SessionExpired"], budget=20)

    result = asyncio.run(sweep())
    calls = ["search_flights", "hold_flight", "confirm_booking"]
    assert result.tried == 6
    assert result.grouped() == {  # naive retries nothing: a 5xx anywhere fails the task
        "ServerError": [f"call 1 of travel/{tool}" for tool in calls]
    }
    assert [m.fault for m in result.missed] == ["SessionExpired"] * 3  # MCP-only, on REST
