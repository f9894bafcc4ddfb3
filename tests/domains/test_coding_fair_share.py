"""Issue 26, item 7: one agent's slow snippets cannot starve another episode's sandbox calls.

Every sandbox call used to run on the event loop's default executor (6 threads on a 2-core
machine), shared by all episodes: 12 snippets that sleep out their wall-clock limit delayed
another episode's `1+1` to 9 s. Through the real server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import httpx
import pytest
from chaosproxy.domains.coding.fair import SLOTS_ENV, FairSlots
from chaosproxy.domains.coding.sandbox import DEFAULT_LIMITS

pytestmark = pytest.mark.timeout(120)

SLOW = "import time\ntime.sleep(60)"


async def _snippet(http: httpx.AsyncClient, episode: str, code: str) -> tuple[float, dict]:
    start = time.monotonic()
    response = await http.post(
        "/tools/code_interpreter",
        json={"repo": "ledger", "code": code},
        headers={"X-Chaos-Episode": episode},
    )
    assert response.status_code == 200, response.text
    return time.monotonic() - start, response.json()


async def test_slow_snippets_do_not_delay_another_episodes_call(
    domain_url: Callable[[str], str],
) -> None:
    """The issue's attack: 12 snippets that sleep until the sandbox stops them, one each from
    12 episodes, then another episode's `1+1`: it answers as an idle service would. (From
    one episode they never could: the kit runs an episode's calls one at a time.)"""
    async with httpx.AsyncClient(base_url=domain_url("coding"), timeout=90) as http:
        idle, alone = await _snippet(http, "fair-idle", "1+1")
        assert alone["value"] == "2"
        slow = [asyncio.create_task(_snippet(http, f"fair-slow-{i}", SLOW)) for i in range(12)]
        await asyncio.sleep(2.0)  # every slow snippet is asleep in its sandbox by now
        busy, result = await _snippet(http, "fair-victim", "1+1")
        assert result["value"] == "2"
        outcomes = await asyncio.gather(*slow)
    assert all(body["status"] == "timeout" for _, body in outcomes)
    assert busy < idle + 2.5, f"1+1 took {busy:.2f} s beside the slow snippets ({idle:.2f} s idle)"
    assert busy < DEFAULT_LIMITS.wall_seconds


async def test_an_episode_never_holds_more_than_its_share() -> None:
    """Capacity 2, one slot per episode: episode a's five calls run one at a time and b's
    call starts at once; the slots are all free again at the end, even after a cancel."""
    slots = FairSlots(capacity=2, per_episode=1)
    gate = threading.Event()
    seen: list[tuple[str, int]] = []

    def work(name: str) -> str:
        seen.append((name, slots.active))
        gate.wait(5)
        return name

    hog = [asyncio.create_task(slots.run("a", work, f"a{i}")) for i in range(5)]
    await asyncio.sleep(0.05)
    assert slots.running == {"a": 1} and len(slots.waiting) == 4
    other = asyncio.create_task(slots.run("b", work, "b"))
    await asyncio.sleep(0.05)
    assert slots.running == {"a": 1, "b": 1}, slots.running
    hog[-1].cancel()  # a waiting call that gives up leaves no trace
    await asyncio.sleep(0.05)
    assert len(slots.waiting) == 3
    gate.set()
    assert await other == "b"
    assert [await task for task in hog[:-1]] == ["a0", "a1", "a2", "a3"]
    assert slots.running == {} and not slots.waiting
    assert max(active for _, active in seen) <= 2


def test_slots_are_configured_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SLOTS_ENV, "3")
    assert FairSlots.from_env().capacity == 3
    monkeypatch.setenv(SLOTS_ENV, "many")
    with pytest.raises(ValueError, match=SLOTS_ENV):
        FairSlots.from_env()
    with pytest.raises(ValueError, match="must be >= 1"):
        FairSlots(0)
