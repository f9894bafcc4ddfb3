"""The proxy keeps a bounded store of idle episodes (issue 13 #4): least recently used idle
episodes are forgotten by the proxy and its engine, never one with a request in flight, and
a returning one starts afresh with the same draws, its first log line saying so."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
from proxy_helpers import ProxyFactory, read_log

from chaosproxy.faults import Profile
from chaosproxy.proxy.episodes import EpisodeBook
from chaosproxy.proxy.settings import ProxyLimits
from chaosproxy.records import CallRecord


async def call(client: httpx.AsyncClient, base: str, episode: str, n: int = 1) -> None:
    for i in range(n):
        await client.post(f"{base}/e/{episode}/toy/tools/get_item", json={"item_id": f"A{i}"})


HALF = Profile.model_validate(
    {
        "name": "half",
        "failure_rate": 0.5,
        "weights": {"PartialResponse": 1.0, "SchemaDrift": 1.0, "HardRateLimit": 1.0},
    }
)


def life(records: list[CallRecord]) -> list[tuple[int | None, Any, Any]]:
    """What the engine drew per call: step, fault name and its parameters."""
    return [
        (r.step, r.fault.name if r.fault else None, r.fault.params if r.fault else None)
        for r in records
    ]


async def test_evicted_episode_restarts_with_the_same_draws(
    make_proxy: ProxyFactory, tmp_path: Path
) -> None:
    limits = ProxyLimits(max_idle_episodes=2, upstream_read_timeout_s=5)
    async with (
        make_proxy(HALF, seed=7, limits=limits) as proxy,
        httpx.AsyncClient(timeout=10) as client,
    ):
        await call(client, proxy.url, "a", 8)
        first = [r for r in read_log(tmp_path) if r.episode == "a"]
        assert proxy.core.engine.episode_summary("a")["known"]
        await call(client, proxy.url, "b")
        assert proxy.core.engine.episode_summary("a")["known"]  # 2 idle: a, b
        await call(client, proxy.url, "c")
        assert not proxy.core.engine.episode_summary("a")["known"]
        assert "a" not in proxy.core.book.steps
        assert set(proxy.core.book.idle) == {"b", "c"}
        await call(client, proxy.url, "a", 8)
    second = [r for r in read_log(tmp_path) if r.episode == "a"][len(first) :]
    assert [r.step for r in first] == list(range(1, 9))
    assert life(second) == life(first)
    assert any(name is not None for _, name, _ in life(first))  # the draws compared are faults
    assert second[0].episode_restarted is True
    assert all(r.episode_restarted is None for r in first + second[1:])


async def test_an_episode_in_use_is_never_evicted(make_proxy: ProxyFactory, tmp_path: Path) -> None:
    limits = ProxyLimits(max_idle_episodes=1, upstream_read_timeout_s=5)
    async with make_proxy(limits=limits) as proxy, httpx.AsyncClient(timeout=10) as client:
        await call(client, proxy.url, "busy", 2)
        slow = asyncio.create_task(client.get(f"{proxy.url}/e/busy/toy/slow?s=0.6"))
        await asyncio.sleep(0.2)
        assert proxy.core.book.busy == {"busy": 1}
        for other in ("x1", "x2", "x3", "x4"):
            await call(client, proxy.url, other)
        assert (await slow).status_code == 200
        await call(client, proxy.url, "busy")
        assert proxy.core.engine.episode_summary("busy")["known"]
        assert not proxy.core.engine.episode_summary("x1")["known"]
    steps = [r.step for r in read_log(tmp_path) if r.episode == "busy" and r.tool == "get_item"]
    assert steps == [1, 2, 4]  # the slow GET in flight was step 3
    assert all(r.episode_restarted is None for r in read_log(tmp_path) if r.episode == "busy")


async def test_many_episodes_keep_the_proxy_small(make_proxy: ProxyFactory) -> None:
    limits = ProxyLimits(max_idle_episodes=4)
    async with (
        make_proxy(HALF, limits=limits, run_dir=None) as proxy,
        httpx.AsyncClient(timeout=10) as client,
    ):
        await asyncio.gather(*(call(client, proxy.url, f"ep{i}", 2) for i in range(40)))
        book = proxy.core.book
        assert len(book.idle) == 4 and not book.busy
        assert len(book.steps) <= 4
        known = [i for i in range(40) if proxy.core.engine.episode_summary(f"ep{i}")["known"]]
        assert len(known) == 4


async def test_configured_episode_counts_as_used(make_proxy: ProxyFactory) -> None:
    """PUT /_chaos/episodes/{id} keeps the episode under the bound (an operator's episodes
    cannot grow the engine without limit either)."""
    limits = ProxyLimits(max_idle_episodes=2)
    async with make_proxy(limits=limits) as proxy, httpx.AsyncClient(timeout=10) as client:
        headers = {"Authorization": f"Bearer {proxy.token}"}
        for name in ("p1", "p2", "p3"):
            reply = await client.put(
                f"{proxy.control_url}/_chaos/episodes/{name}", json={"seed": 3}, headers=headers
            )
            assert reply.status_code == 200
        assert list(proxy.core.book.idle) == ["p2", "p3"]
        assert not proxy.core.engine.episode_summary("p1")["known"]
        assert proxy.core.engine.episode_summary("p3")["seed"] == 3


def test_idle_time_limit_with_a_clock() -> None:
    now = [0.0]
    book = EpisodeBook(max_idle=100, idle_ttl_s=10, clock=lambda: now[0])
    for episode in ("a", "b"):
        assert book.begin(episode) == (False, [])
        book.next_step(episode)
        assert book.end(episode) == []
    now[0] = 5.0
    book.begin("b")
    book.end("b")
    now[0] = 12.0
    assert book.begin("c") == (False, ["a"])  # idle 12 s > 10 s; b only 7 s
    assert book.steps == {"b": 1}
    now[0] = 100.0
    assert book.begin("c") == (False, ["b"])  # c is in flight twice: never expired
    assert book.end("c") == [] and book.end("c") == []
    assert book.begin("a") == (True, [])
    assert book.begin("b")[0] is True
