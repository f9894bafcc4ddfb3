"""MCP specifics: drift reaches tools/list and stays; a cut result stays self-consistent;
a client hanging up on the GET stream leaves no error and no open upstream stream."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import fastmcp
import httpx
import pytest
from proxy_helpers import ProxyFactory, forced, logged, read_log, until

from chaosproxy.proxy.salvage import salvage


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_schema_drift_reaches_tools_list_and_stays(
    make_proxy: ProxyFactory, mode: str
) -> None:
    async with make_proxy(forced("SchemaDrift", ops=["rename"])) as proxy:
        url = f"{proxy.url}/e/d-{mode}/toy/mcp"
        async with fastmcp.Client(url, mode=mode, timeout=10) as client:
            before = {t.name: t for t in await client.list_tools()}
            # the client validates against the schema it cached: a version change breaks it
            with pytest.raises(RuntimeError, match="Invalid structured content"):
                await client.call_tool_mcp("get_item", {"item_id": "A1"})
            after = {t.name: t for t in await client.list_tools()}
            proxy.core.engine.set_profile(forced("HighLatency", min_s=0.0, max_s=0.0))
            again = await client.call_tool_mcp("get_item", {"item_id": "A1"})
            later = await client.call_tool_mcp("get_item", {"item_id": "A1"})
    assert before["get_item"].outputSchema != after["get_item"].outputSchema
    drifted = set(after["get_item"].outputSchema["properties"])
    assert drifted != {"item_id", "name", "price", "tags", "stock"}
    assert set(again.structuredContent or {}) == set(later.structuredContent or {}) == drifted


async def test_truncated_mcp_result_is_consistent(make_proxy: ProxyFactory, tmp_path: Path) -> None:
    async with make_proxy(forced("PartialResponse", modes=["truncate"])) as proxy:
        body = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "get_item", "arguments": {"item_id": "A1"}},
        }
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        }
        headers = {"Accept": "application/json, text/event-stream"}
        async with httpx.AsyncClient() as client:
            started = await client.post(f"{proxy.url}/toy/mcp", json=init, headers=headers)
            headers["Mcp-Session-Id"] = started.headers["Mcp-Session-Id"]
            headers["MCP-Protocol-Version"] = "2025-11-25"
            response = await client.post(f"{proxy.url}/toy/mcp", json=body, headers=headers)
    data_line = next(line for line in response.text.splitlines() if line.startswith("data: "))
    result = json.loads(data_line[6:])["result"]
    text = result["content"][0]["text"]
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    assert result.get("structuredContent") == salvage(text)
    assert read_log(tmp_path)[-1].fault_delivered


async def test_client_hanging_up_on_the_get_stream(
    make_proxy: ProxyFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="aiohttp")
    async with make_proxy() as proxy:
        url = f"{proxy.url}/e/g1/toy/mcp"
        stream_ended = logged(proxy, lambda fields: fields["method"] == "GET")
        slots, size = proxy.core.upstream._slots, proxy.limits.upstream_pool_size
        async with fastmcp.Client(url, mode="legacy", timeout=10) as client:
            await client.list_tools()
            await until(lambda: slots._value < size)  # the GET stream is open (holds a slot)
        await asyncio.wait_for(stream_ended.wait(), 5)  # the client hung up on its stream
        await until(lambda: slots._value == size)
    streams = [r for r in read_log(tmp_path) if r.method == "GET"]
    assert streams and all(r.episode == "g1" for r in streams)
    noisy = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert noisy == []
