"""`hunt`: single faults at each call, then pairs; failing ones shrunk and grouped."""

from __future__ import annotations

import asyncio
import time

from chaosproxy.replay.hunt import HuntResult, hunt
from chaosproxy.replay.rerun import Rerunner

from .episodes import cheapest_flight_episode
from .weak_agent import WeakAgent

CALLS = ["search_flights", "hold_flight", "confirm_booking"]


def test_single_fault_sweep_of_the_naive_agent() -> None:
    record = cheapest_flight_episode("naive")

    async def sweep() -> HuntResult:
        async with Rerunner(record) as rerunner:
            return await hunt(rerunner, ["ServerError", "SessionExpired"], budget=20)

    result = asyncio.run(sweep())
    assert result.singles == 6 and result.pairs == 0  # no single passed: no pair to build
    assert result.grouped() == {  # naive retries nothing: a 5xx anywhere fails the task
        "ServerError": [f"call 1 of travel/{tool}" for tool in CALLS]
    }
    assert [m.fault for m in result.missed] == ["SessionExpired"] * 3  # MCP-only, on REST
    (group,) = result.groups()
    assert group.key == "ServerError hits the 1st call"
    assert group.where == [f"travel/{tool}" for tool in CALLS]
    # shrinking made each one simpler: one status of the three ServerError may answer
    assert all(s.faults[0].params == {"statuses": [500]} for s in group.schedules)


def test_pairs_find_the_two_fault_weakness_no_single_fault_shows() -> None:
    """The weak agent survives every single fault; a 429 right after a truncated reply on
    the same tool breaks it (on confirm_booking too, but the booking went through: the
    task is done). Shrinking keeps the failure and makes the 429 simpler: no wait at all.
    Budget: 60 runs, 90 s."""
    lines: list[str] = []

    async def sweep() -> HuntResult:
        async with Rerunner(cheapest_flight_episode("weak"), agent=WeakAgent()) as rerunner:
            return await hunt(
                rerunner,
                ["PartialResponse", "SoftRateLimit"],
                budget=60,
                report=lines.append,
                window=1,
                params={"PartialResponse": {"modes": ["truncate"]}},
            )

    started = time.monotonic()
    result = asyncio.run(sweep())
    assert time.monotonic() - started <= 90.0
    assert result.singles == 6 and not result.budget_spent and result.runs <= 60
    assert all(len(found.schedule.faults) == 2 for found in result.found)
    groups = result.groups()
    assert [g.key for g in groups] == [
        "PartialResponse hits the 1st call, then SoftRateLimit hits the 2nd call of the same tool"
    ]
    assert groups[0].where == ["travel/search_flights", "travel/hold_flight"]
    expected = [
        ("PartialResponse", 1, {"modes": ["truncate"]}),
        ("SoftRateLimit", 2, {"retry_after_s": 0}),
    ]
    assert all(
        [(f.fault, f.call, f.params) for f in s.faults] == expected for s in groups[0].schedules
    )
    assert any(line.startswith("pair ") for line in lines)  # progress, per run
