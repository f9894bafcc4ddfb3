"""Every fault type, observed through the proxy by a real REST client (httpx)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from proxy_helpers import ProxyFactory, forced, read_log


async def call(
    client: httpx.AsyncClient, base: str, tool: str, episode: str = "ep", **args: Any
) -> httpx.Response:
    return await client.post(f"{base}/e/{episode}/toy/tools/{tool}", json=args)


def body_json(response: httpx.Response) -> Any:
    return json.loads(response.content)


def check_timeout(r: httpx.Response, toy_calls: int) -> None:
    assert r.status_code == 504 and toy_calls == 0


def check_server_error(r: httpx.Response, toy_calls: int) -> None:
    assert r.status_code in (500, 502, 503) and "error" in body_json(r) and toy_calls == 0


def check_soft_limit(r: httpx.Response, toy_calls: int) -> None:
    assert r.status_code == 429 and float(r.headers["Retry-After"]) > 0 and toy_calls == 0


def check_hard_limit(r: httpx.Response, toy_calls: int) -> None:
    assert r.status_code in (403, 429) and toy_calls == 0


ORIGINAL = {
    "item_id": "A1",
    "name": "Widget A1",
    "price": 19.5,
    "tags": ["blue", "small", "sale", "new"],
    "stock": {"sfo": 3, "jfk": 0},
}


def check_empty(r: httpx.Response, toy_calls: int) -> None:
    assert r.status_code == 200 and toy_calls == 1
    assert body_json(r).get("tags", []) == []


def check_latency(r: httpx.Response, toy_calls: int) -> None:
    assert r.status_code == 200 and r.elapsed.total_seconds() >= 0.2 and toy_calls == 1


def check_adversarial(r: httpx.Response, toy_calls: int) -> None:
    assert r.status_code == 200 and toy_calls == 1
    assert body_json(r) != ORIGINAL


def check_corruption(r: httpx.Response, toy_calls: int) -> None:
    assert r.status_code == 200 and toy_calls == 1
    assert body_json(r)["item_id"] != "A1"


CASES = [
    ("TransientTimeout", check_timeout),
    ("ServerError", check_server_error),
    ("SoftRateLimit", check_soft_limit),
    ("HardRateLimit", check_hard_limit),
    ("EmptyResponse", check_empty),
    ("HighLatency", check_latency),
    ("AdversarialPayload", check_adversarial),
    ("ParameterCorruption", check_corruption),
]


@pytest.mark.parametrize(("fault", "check"), CASES, ids=[c[0] for c in CASES])
async def test_fault_seen_by_httpx(
    make_proxy: ProxyFactory, toy: Any, tmp_path: Path, fault: str, check: Any
) -> None:
    async with make_proxy(forced(fault)) as proxy, httpx.AsyncClient() as client:
        response = await call(client, proxy.url, "get_item", item_id="A1")
    check(response, len(toy[1].calls))
    (record,) = read_log(tmp_path)
    assert record.fault is not None and record.fault.name == fault
    assert record.fault_delivered and record.step == 1 and record.kind == "tool_call"
    assert record.status == response.status_code
    assert record.arguments == {"item_id": "A1"}


async def test_retry_after_is_logged(make_proxy: ProxyFactory, tmp_path: Path) -> None:
    async with (
        make_proxy(forced("SoftRateLimit", retry_after_s=3)) as proxy,
        httpx.AsyncClient() as client,
    ):
        response = await call(client, proxy.url, "get_item", item_id="A1")
    assert response.headers["Retry-After"] == "3"
    assert read_log(tmp_path)[0].retry_after_s == 3.0


async def test_partial_response_body_is_really_cut(
    make_proxy: ProxyFactory, tmp_path: Path
) -> None:
    profile = forced("PartialResponse", modes=["truncate"])
    async with make_proxy(profile) as proxy, httpx.AsyncClient() as client:
        response = await call(client, proxy.url, "get_item", item_id="A1")
    assert response.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(response.content)
    assert response.content.startswith(b'{"item_id"')
    record = read_log(tmp_path)[0]
    assert record.bytes_out == len(response.content) and record.fault_delivered


@pytest.mark.parametrize("when", ["request", "response"])
async def test_connection_reset(
    make_proxy: ProxyFactory, toy: Any, tmp_path: Path, when: str
) -> None:
    async with (
        make_proxy(forced("ConnectionReset", when=when)) as proxy,
        httpx.AsyncClient() as client,
    ):
        with pytest.raises(httpx.TransportError):
            await call(client, proxy.url, "add_note", text="x")
    assert len(toy[1].calls) == (1 if when == "response" else 0)
    record = read_log(tmp_path)[0]
    assert record.outcome == "reset" and record.status == 0 and record.fault_delivered


@pytest.mark.parametrize("flavour", ["timeout", "closed"])
async def test_lost_reply_wrote_but_reply_lost(
    make_proxy: ProxyFactory, toy: Any, tmp_path: Path, flavour: str
) -> None:
    async with (
        make_proxy(forced("LostReply", flavour=flavour)) as proxy,
        httpx.AsyncClient() as client,
    ):
        if flavour == "timeout":
            response = await call(client, proxy.url, "add_note", text="x")
            assert response.status_code == 504
        else:
            with pytest.raises(httpx.TransportError):
                await call(client, proxy.url, "add_note", text="x")
    assert toy[1].notes == {"ep": 1}
    assert read_log(tmp_path)[0].upstream_status == 200


async def test_schema_drift_stays_for_the_episode(make_proxy: ProxyFactory, tmp_path: Path) -> None:
    async with (
        make_proxy(forced("SchemaDrift", ops=["rename"])) as proxy,
        httpx.AsyncClient() as client,
    ):
        first = body_json(await call(client, proxy.url, "get_item", item_id="A1"))
        proxy.core.engine.set_profile(forced("HighLatency", min_s=0.0, max_s=0.0))
        later = [
            body_json(await call(client, proxy.url, "get_item", item_id="A1")) for _ in range(3)
        ]
        other = body_json(await call(client, proxy.url, "get_item", episode="fresh", item_id="A1"))
    assert "item_id" not in first or "name" not in first
    assert all(set(body) == set(first) for body in later)
    assert "item_id" in other and "name" in other


async def test_stale_data_returns_an_earlier_response(make_proxy: ProxyFactory, toy: Any) -> None:
    async with make_proxy(forced("StaleData")) as proxy, httpx.AsyncClient() as client:
        bodies = [body_json(await call(client, proxy.url, "add_note", text="n")) for _ in range(3)]
    assert toy[1].notes["ep"] == 3
    assert [b["count"] for b in bodies] != [1, 2, 3]
    assert all(b["count"] in (1, 2, 3) for b in bodies)


async def test_contradictory_data_changes_the_result(make_proxy: ProxyFactory) -> None:
    async with make_proxy(forced("ContradictoryData")) as proxy, httpx.AsyncClient() as client:
        response = await call(client, proxy.url, "get_item", item_id="A1")
    assert response.status_code == 200
    assert body_json(response) != ORIGINAL
