"""Shrink: a known two-fault weakness is found inside a larger received schedule."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from chaosproxy.faults.schedule import parse_schedule
from chaosproxy.records import EPISODES_FILE, EpisodeRecord, append_jsonl
from chaosproxy.replay.received import received
from chaosproxy.replay.rerun import Rerunner
from chaosproxy.replay.shrink import shrink_episode, shrink_received

from .episodes import cheapest_flight_episode
from .weak_agent import WeakAgent

BUDGET_RUNS = 60
BUDGET_S = 90.0
TRUNCATE = {"modes": ["truncate"]}
NOISY = [
    ("travel/search_flights", 1, "ServerError", {}),
    ("travel/search_flights", 2, "SoftRateLimit", {}),
    ("travel/search_flights", 3, "ServerError", {}),
    ("travel/search_flights", 4, "SoftRateLimit", {}),
    ("travel/hold_flight", 1, "PartialResponse", TRUNCATE),
    ("travel/hold_flight", 2, "SoftRateLimit", {}),
]


def _episode() -> EpisodeRecord:
    return cheapest_flight_episode("weak")


async def _record_failing_episode(run_dir: Path) -> None:
    """A run directory holding one failed episode that received the six faults."""
    schedule = parse_schedule(
        [{"tool": t, "call": n, "fault": f, "params": p} for t, n, f, p in NOISY]
    )
    async with Rerunner(_episode(), agent=WeakAgent(), run_dir=run_dir) as rerunner:
        outcome = await rerunner.run(schedule)
    append_jsonl(run_dir / EPISODES_FILE, outcome.record)


def test_shrinks_to_exactly_the_two_fault_weakness(tmp_path: Path) -> None:
    asyncio.run(_record_failing_episode(tmp_path))
    got = received(tmp_path, _episode().episode)
    assert got.episode.success is False
    assert len(got.schedule.faults) == 6
    lines: list[str] = []
    started = time.monotonic()
    result = asyncio.run(
        shrink_episode(
            tmp_path,
            got.episode.episode,
            agent=WeakAgent(),
            budget=BUDGET_RUNS,
            report=lines.append,
        )
    )
    elapsed = time.monotonic() - started
    assert result.reproduced and not result.budget_spent
    assert [(f.tool, f.call, f.fault) for f in result.minimal.faults] == [
        ("travel/hold_flight", 1, "PartialResponse"),
        ("travel/hold_flight", 2, "SoftRateLimit"),
    ]
    assert result.runs <= BUDGET_RUNS and elapsed <= BUDGET_S
    assert len(lines) == len(result.log) >= 3  # progress, one line per candidate
    assert result.failure is not None and result.failure.failed
    first = result.divergence()
    assert first is not None and first.tool == "hold_flight" and first.fault is not None


def test_budget_stops_with_the_smallest_failure_so_far(tmp_path: Path) -> None:
    asyncio.run(_record_failing_episode(tmp_path))
    result = asyncio.run(shrink_episode(tmp_path, _episode().episode, agent=WeakAgent(), budget=3))
    assert result.budget_spent and result.runs == 3
    assert 2 <= len(result.minimal.faults) <= 6


def test_a_delay_is_shortened_while_the_failure_persists() -> None:
    """The agent gives up on a 429 that asks it to wait more than 2 s. Received: a
    Retry-After of 8 s; shrinking asks SoftRateLimit for simpler values (0, half, one
    less) and keeps the shortest that still fails: 3 s."""
    start = parse_schedule(
        [
            {
                "tool": "travel/search_flights",
                "call": 1,
                "fault": "SoftRateLimit",
                "params": {"retry_after_s": 8},
            },
        ]
    )
    lines: list[str] = []
    begun, result = asyncio.run(
        shrink_received(
            _episode(), start, agent=WeakAgent(patience_s=2), budget=20, report=lines.append
        )
    )
    assert begun == start and result.reproduced and not result.budget_spent
    (entry,) = result.minimal.faults
    assert entry.params == {"retry_after_s": 3}
    assert result.failure is not None and result.failure.failed
    assert result.runs <= 10
