"""Concurrent episodes doing conflicting writes each end with exactly their own state."""

from __future__ import annotations

import asyncio
import uuid

import httpx
from chaosproxy.domains.kit.client import McpToolClient, OracleClient, RestToolClient

EPISODES = 8
ORDERS = 3  # 8 episodes x 3 kettles would exhaust a shared stock of 5 at once


async def _work(client: RestToolClient | McpToolClient, name: str, index: int) -> None:
    for _ in range(ORDERS):
        await client.call("set_note", key="owner", value=name)
        await client.call(
            "create_order",
            sku="SKU-1",
            quantity=1,
            customer={"name": name, "email": f"{index}@x.io"},
        )
    await client.call("submit_answer", total=float(index))


async def _run(base_url: str, name: str, index: int, http: httpx.AsyncClient) -> None:
    transport = ("rest", "legacy", "2026-07-28")[index % 3]
    client: RestToolClient | McpToolClient
    if transport == "rest":
        client = RestToolClient(base_url, episode=name, http=http)
    else:
        client = McpToolClient(f"{base_url}/mcp", episode=name, mode=transport)
    async with client:
        await _work(client, name, index)


async def test_concurrent_episodes_over_both_transports_stay_isolated(base_url: str) -> None:
    run = uuid.uuid4().hex[:6]
    names = [f"iso-{run}-{index}" for index in range(EPISODES)]
    async with httpx.AsyncClient() as http, OracleClient(base_url, http=http) as oracle:
        await asyncio.gather(*(oracle.reset(name) for name in names))
        await asyncio.gather(
            *(_run(base_url, name, index, http) for index, name in enumerate(names))
        )
        states = await asyncio.gather(*(oracle.state(name) for name in names))
        journals = await asyncio.gather(*(oracle.journal(name) for name in names))
    for index, (name, state, journal) in enumerate(zip(names, states, journals, strict=True)):
        assert [order["order_id"] for order in state["orders"]] == [
            "ORD-0001",
            "ORD-0002",
            "ORD-0003",
        ]
        assert {order["customer"]["name"] for order in state["orders"]} == {name}
        assert state["items"][0]["stock"] == 5 - ORDERS
        assert state["notes"] == {"owner": name}
        assert state["answer"] == float(index)
        # first set_note changes state, repeats of the same value do not
        assert [entry["tool"] for entry in journal["entries"]] == ["set_note"] + [
            "create_order"
        ] * ORDERS + ["submit_answer"]


async def test_default_episode_untouched_by_named_episodes(base_url: str) -> None:
    name = f"iso-{uuid.uuid4().hex[:6]}"
    async with OracleClient(base_url) as oracle, RestToolClient(base_url) as default_client:
        await default_client.call("list_items")
        before = await oracle.state("default")
        async with RestToolClient(base_url, episode=name) as client:
            await client.call("set_note", key="owner", value=name)
        after = await oracle.state("default")
    assert before == after


async def test_slow_tool_calls_of_one_episode_never_overlap(base_url: str) -> None:
    name = f"slow-{uuid.uuid4().hex[:6]}"
    async with (
        httpx.AsyncClient() as http,
        RestToolClient(base_url, episode=name, http=http) as client,
    ):
        results = await asyncio.gather(
            *(client.call("slow_increment", delay_ms=20) for _ in range(5))
        )
        state = await OracleClient(base_url, http=http).state(name)
    assert sorted(result["value"] for result in results) == [1, 2, 3, 4, 5]
    assert state["counter"] == 5


async def test_slow_tool_does_not_stall_other_episodes(base_url: str) -> None:
    run = uuid.uuid4().hex[:6]
    async with (
        httpx.AsyncClient() as http,
        RestToolClient(base_url, episode=f"slow-{run}", http=http) as slow,
        RestToolClient(base_url, episode=f"fast-{run}", http=http) as fast,
    ):
        pending = asyncio.ensure_future(slow.call("slow_increment", delay_ms=400))
        await asyncio.sleep(0.05)
        listing = await fast.call("list_items")
        assert not pending.done(), "a call of another episode waited for the slow tool"
        assert (await pending)["value"] == 1
    assert listing["count"] == 3


async def test_escalation_records_the_proxy_step(base_url: str) -> None:
    name = f"esc-{uuid.uuid4().hex[:6]}"
    headers = {"X-Chaos-Episode": name, "X-Chaos-Step": "9"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers) as http:
        escalated = await http.post("/tools/escalate_to_human", json={"reason": "price mismatch"})
        state = (await http.get(f"/_oracle/episodes/{name}/state")).json()
    assert escalated.json()["escalation_id"] == "ESC-0001"
    assert state["escalations"] == [
        {"escalation_id": "ESC-0001", "reason": "price mismatch", "step": 9}
    ]
