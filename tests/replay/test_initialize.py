"""SlowInitialize in a schedule: held on the n-th MCP initialize, and read back from the
log as the same entry (so a received SlowInitialize replays and shrinks like the rest)."""

from __future__ import annotations

import asyncio

from chaosproxy.faults.schedule import parse_schedule
from chaosproxy.replay.received import schedule_of
from chaosproxy.replay.rerun import Outcome, Rerunner

from .episodes import cheapest_flight_episode


def test_a_scheduled_slow_initialize_lands_and_is_received_back() -> None:
    record = cheapest_flight_episode("naive").model_copy(update={"transport": "mcp"})
    schedule = parse_schedule(
        [
            {
                "tool": "travel/initialize",
                "call": 1,
                "fault": "SlowInitialize",
                "params": {"delay_s": 0.3},
            }
        ]
    )

    async def twice() -> tuple[Outcome, Outcome]:
        async with Rerunner(record) as rerunner:
            first = await rerunner.run(schedule)
            again = await rerunner.run(schedule_of(first.calls))
            return first, again

    first, again = asyncio.run(twice())
    opened = [c for c in first.calls if c.rpc_method in ("initialize", "server/discover")]
    assert opened and opened[0].fault is not None
    assert (opened[0].fault.name, opened[0].fault.draw) == ("SlowInitialize", None)
    assert all(c.fault is None for c in opened[1:])
    received = schedule_of(first.calls)
    assert [(f.tool, f.call, f.fault, f.params) for f in received.faults] == [
        ("travel/initialize", 1, "SlowInitialize", {"delay_s": 0.3})
    ]
    assert schedule_of(again.calls) == received
    assert first.record.success is True  # a slow handshake only delays the agent
