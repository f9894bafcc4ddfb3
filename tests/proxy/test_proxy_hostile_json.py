"""Hostile JSON (huge integers, deep nesting, lone surrogates) gets a JSON 4xx, never a 500."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from chaosproxy.profiles import load_profile
from proxy_helpers import ProxyFactory, read_log
from proxy_shop import serve_shop

from chaosproxy.faults import FaultEngine
from chaosproxy.proxy.server import ProxyServer

BIG_INT = b"1" * 5000
DEEP = b"[" * 10000 + b"]" * 10000
SURROGATE = b'"x\\ud800y"'
HOSTILE = {"big_int": BIG_INT, "deep": DEEP, "surrogate": SURROGATE}


def _object(value: bytes) -> bytes:
    return b'{"item_id":' + value + b"}"


def _rpc(value: bytes) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call",'
        b'"params":{"name":"get_item","arguments":{"item_id":' + value + b"}}}"
    )


@pytest.mark.parametrize("kind", sorted(HOSTILE))
async def test_rest_hostile_json_is_a_logged_json_400(
    make_proxy: ProxyFactory, tmp_path: Path, kind: str
) -> None:
    async with make_proxy() as proxy, httpx.AsyncClient() as client:
        response = await client.post(
            proxy.url + "/e/ep-h/toy/tools/get_item",
            content=_object(HOSTILE[kind]),
            headers={"Content-Type": "application/json"},
        )
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "bad_json"
    assert error["message"]
    (record,) = read_log(tmp_path)
    assert record.status == 400 and record.upstream_called is False


@pytest.mark.parametrize("kind", sorted(HOSTILE))
async def test_mcp_hostile_json_is_a_logged_parse_error(
    make_proxy: ProxyFactory, tmp_path: Path, kind: str
) -> None:
    async with make_proxy() as proxy, httpx.AsyncClient() as client:
        response = await client.post(
            proxy.url + "/e/ep-h/toy/mcp",
            content=_rpc(HOSTILE[kind]),
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
        )
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["error"]["code"] == -32700
    assert body["error"]["message"]
    (record,) = read_log(tmp_path)
    assert record.transport == "mcp" and record.upstream_called is False


@pytest.mark.parametrize("kind", sorted(HOSTILE))
async def test_generic_rest_route_hostile_json_is_a_logged_json_400(
    tmp_path: Path, kind: str
) -> None:
    async with serve_shop() as (url, _state):
        engine = FaultEngine(default_profile=load_profile("lambda0.0"), seed=3)
        proxy = ProxyServer(engine=engine, upstreams={"shop": url}, run_seed=3, run_dir=tmp_path)
        await proxy.start()
        try:
            async with httpx.AsyncClient() as client:
                response = await client.post(
                    f"{proxy.url}/e/ep/shop/api/orders",
                    content=b'{"customer_id":' + HOSTILE[kind] + b',"item":"rug"}',
                    headers={"Content-Type": "application/json"},
                )
        finally:
            await proxy.stop()
    assert response.status_code == 400, response.text
    assert response.json()["error"]["type"] == "bad_json"
    (record,) = read_log(tmp_path)
    assert record.status == 400 and record.upstream_called is False
    assert record.error is not None and "bad_json" in record.error


async def test_non_json_body_still_passes_through(tmp_path: Path) -> None:
    """Only hostile JSON is refused: a body that is not JSON at all reaches the service."""
    async with serve_shop() as (url, _state):
        engine = FaultEngine(default_profile=load_profile("lambda0.0"), seed=3)
        proxy = ProxyServer(engine=engine, upstreams={"shop": url}, run_seed=3, run_dir=tmp_path)
        await proxy.start()
        try:
            async with httpx.AsyncClient() as client:
                response = await client.post(
                    f"{proxy.url}/e/ep/shop/api/orders", content=b"not json {"
                )
        finally:
            await proxy.stop()
    (record,) = read_log(tmp_path)
    assert record.upstream_called is True and response.status_code == record.status


@pytest.mark.parametrize("transport", ["rest", "mcp"])
async def test_nesting_over_the_cap_is_refused_naming_the_depth(
    make_proxy: ProxyFactory, tmp_path: Path, transport: str
) -> None:
    """129 levels parse fine in Python, but the proxy's explicit cap (128) refuses them."""
    from chaosproxy.proxy.jsonbody import MAX_DEPTH

    deep = b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1)
    fits = b"[" * (MAX_DEPTH - 8) + b"]" * (MAX_DEPTH - 8)
    path, wrap = ("/toy/tools/get_item", _object) if transport == "rest" else ("/toy/mcp", _rpc)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    async with make_proxy() as proxy, httpx.AsyncClient() as client:
        url = f"{proxy.url}/e/ep-d{path}"
        refused = await client.post(url, content=wrap(deep), headers=headers)
        passed = await client.post(url, content=wrap(fits), headers=headers)
    assert refused.status_code == 400
    body = refused.json()
    message = body["error"]["message"]
    assert f"more than {MAX_DEPTH} levels" in message
    if transport == "mcp":
        assert body["error"]["code"] == -32700
    assert passed.status_code != 400 or "levels" not in passed.text
    records = read_log(tmp_path)
    assert records[0].status == 400 and records[0].upstream_called is False
    assert records[1].upstream_called is True
