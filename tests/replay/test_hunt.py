"""`hunt`: each fault alone at each call position; failing ones listed, misses reported."""

from __future__ import annotations

import asyncio

from chaosproxy.replay.hunt import hunt
from chaosproxy.replay.rerun import Rerunner

from .episodes import cheapest_flight_episode


def test_single_fault_sweep_of_the_naive_agent() -> None:
    record = cheapest_flight_episode("naive")

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
