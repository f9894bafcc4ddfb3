"""Episode lifecycle in a service (issue 13 #4): an explicit end that frees everything, and a
bounded store of idle episodes that never evicts one in use and says when one restarts."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from collections.abc import Iterator

import httpx
import pytest
from chaosproxy.domains.kit.client import McpToolClient
from chaosproxy.domains.kit.store import EpisodeLimits, EpisodeStore
from chaosproxy.domains.kit.testing import serve_app
from kit_toy import domain

NOTE = {"key": "k", "value": "v"}


async def test_count_bound_evicts_the_least_recently_used_idle_episode() -> None:
    store = EpisodeStore(domain, EpisodeLimits(max_idle=3))
    for name in ("a", "b", "c"):
        await store.invoke("set_note", NOTE, episode=name)
    await store.invoke("list_items", {}, episode="a")  # a is now the most recently used
    await store.invoke("set_note", NOTE, episode="d")
    assert list(store.episodes) == ["c", "a", "d"]
    assert "b" in store.evicted


async def test_an_episode_in_use_is_never_evicted() -> None:
    store = EpisodeStore(domain, EpisodeLimits(max_idle=1))
    busy = asyncio.create_task(store.invoke("slow_increment", {"delay_ms": 200}, episode="busy"))
    await asyncio.sleep(0.05)  # the slow call holds "busy" in a worker thread
    for index in range(5):
        await store.invoke("set_note", NOTE, episode=f"other-{index}")
    assert "busy" in store.episodes  # 5 idle newer ones came and went around it
    assert (await busy)["value"] == 1
    assert "busy" not in store.evicted
    await store.invoke("set_note", NOTE, episode="later")
    assert "busy" in store.evicted  # idle now, and the least recently used


async def test_idle_time_bound() -> None:
    store = EpisodeStore(domain, EpisodeLimits(max_idle=100, idle_ttl_s=60))
    await store.invoke("set_note", NOTE, episode="old")
    await store.invoke("set_note", NOTE, episode="new")
    store.episodes["new"].last_used = store.episodes["old"].last_used + 120
    gone = store.evict_idle(now=store.episodes["old"].last_used + 90)
    assert gone == ["old"] and list(store.episodes) == ["new"]


async def test_a_returning_evicted_episode_starts_afresh_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with serve_app(domain.asgi_app(EpisodeLimits(max_idle=1))) as url:
        async with httpx.AsyncClient(base_url=url) as http:
            first = await http.post("/tools/set_note", json=NOTE, headers={"X-Chaos-Episode": "x"})
            await http.post("/tools/set_note", json=NOTE, headers={"X-Chaos-Episode": "y"})
            await http.post("/tools/set_note", json=NOTE, headers={"X-Chaos-Episode": "z"})
            gone = await http.get("/_oracle/episodes/x/state")
            back = await http.post("/tools/list_items", json={}, headers={"X-Chaos-Episode": "x"})
            again = await http.post("/tools/list_items", json={}, headers={"X-Chaos-Episode": "x"})
            state = (await http.get("/_oracle/episodes/x/state")).json()
        async with McpToolClient(f"{url}/mcp", episode="y") as client:
            # y was evicted when x came back: the MCP result's _meta says so
            result = await client._client.call_tool_mcp("list_items", {})
    assert "x-chaos-episode-restarted" not in first.headers
    assert gone.status_code == 410 and gone.json()["error"]["type"] == "evicted_episode"
    assert back.headers["X-Chaos-Episode-Restarted"] == "evicted"
    assert "x-chaos-episode-restarted" not in again.headers  # only the first call says it
    assert state["notes"] == {}  # afresh: the evicted note is gone
    assert result.meta is not None
    assert result.meta["io.chaosproxy/episode-restarted"] == "evicted"
    assert any("starts afresh" in record.getMessage() for record in caplog.records)


def _allocated() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


async def test_delete_frees_what_an_episode_held() -> None:
    """Memory per episode comes back after DELETE: measured with tracemalloc."""
    store = EpisodeStore(domain, EpisodeLimits(max_idle=10_000))
    await store.invoke("set_note", NOTE, episode="warm-up")
    tracemalloc.start()
    try:
        before = _allocated()
        names = [f"ep-{index}" for index in range(300)]
        for name in names:
            store.reset(name)
            await store.invoke("set_note", NOTE, episode=name, idempotency_key="k1")
        held = _allocated() - before
        for name in names:
            store.delete(name)
        left = _allocated() - before
    finally:
        tracemalloc.stop()
    assert held > 300 * 2_000  # each episode holds its state, journal and stored reply
    assert left < held * 0.05, (held, left)


@pytest.fixture
def limits_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("CHAOSPROXY_MAX_IDLE_EPISODES", "7")
    monkeypatch.setenv("CHAOSPROXY_EPISODE_IDLE_TTL", "30")
    yield


def test_limits_come_from_the_environment(limits_env: None) -> None:
    assert EpisodeLimits.from_env() == EpisodeLimits(max_idle=7, idle_ttl_s=30.0)
    assert domain.asgi_app().state.store.limits.max_idle == 7


def test_bad_limits_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAOSPROXY_MAX_IDLE_EPISODES", "0")
    with pytest.raises(ValueError, match="CHAOSPROXY_MAX_IDLE_EPISODES"):
        EpisodeLimits.from_env()
