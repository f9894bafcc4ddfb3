"""MCP face of the kit with real clients: fastmcp.Client and the official mcp SDK, both eras."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import fastmcp
import httpx
import httpx2
import mcp
import pytest
from fastmcp.client.transports import StreamableHttpTransport
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

MODES = ["legacy", "2026-07-28"]
CUSTOMER = {"name": "Ana Ruiz", "email": "ana@example.com"}


@asynccontextmanager
async def sdk_client(url: str, mode: str, headers: dict[str, str]) -> AsyncIterator[mcp.Client]:
    async with (
        create_mcp_http_client(headers=headers) as http,
        mcp.Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


@asynccontextmanager
async def fast_client(
    url: str, mode: str, headers: dict[str, str]
) -> AsyncIterator[fastmcp.Client[Any]]:
    async with fastmcp.Client(StreamableHttpTransport(url, headers=headers), mode=mode) as client:
        yield client


CLIENTS: dict[str, Callable[..., Any]] = {"fastmcp": fast_client, "mcp-sdk": sdk_client}


@pytest.fixture(
    params=[(name, mode) for name in CLIENTS for mode in MODES], ids=lambda p: f"{p[0]}-{p[1]}"
)
def mcp_client(request: pytest.FixtureRequest) -> tuple[str, str]:
    name, mode = request.param
    return name, mode


async def test_tool_list_matches_rest_schemas(base_url: str, mcp_client: tuple[str, str]) -> None:
    name, mode = mcp_client
    async with httpx.AsyncClient(base_url=base_url) as http:
        rest = {t["name"]: t for t in (await http.get("/tools")).json()["tools"]}
    async with CLIENTS[name](f"{base_url}/mcp", mode, {}) as client:
        listed = await client.list_tools()
        tools = listed.tools if hasattr(listed, "tools") else listed
    assert {tool.name for tool in tools} == set(rest)
    for tool in tools:
        assert tool.input_schema == rest[tool.name]["input_schema"]
        assert tool.output_schema == rest[tool.name]["output_schema"]
        assert tool.description == rest[tool.name]["description"]
        assert (
            tool.annotations is not None
            and tool.annotations.idempotent_hint == rest[tool.name]["idempotent"]
        )


async def test_call_returns_structured_result_in_the_episode(
    base_url: str, episode: str, mcp_client: tuple[str, str]
) -> None:
    name, mode = mcp_client
    headers = {"X-Chaos-Episode": episode, "X-Chaos-Step": "7"}
    async with CLIENTS[name](f"{base_url}/mcp", mode, headers) as client:
        if name == "fastmcp":
            result = await client.call_tool_mcp(
                "create_order", {"sku": "SKU-2", "quantity": 1, "customer": CUSTOMER}
            )
        else:
            result = await client.call_tool(
                "create_order", {"sku": "SKU-2", "quantity": 1, "customer": CUSTOMER}
            )
    assert not result.is_error
    assert result.structured_content == {
        "order_id": "ORD-0001",
        "sku": "SKU-2",
        "quantity": 1,
        "total": 45.5,
        "customer": CUSTOMER,
        "status": "placed",
    }
    async with httpx.AsyncClient(base_url=base_url) as http:
        journal = (await http.get(f"/_oracle/episodes/{episode}/journal")).json()
        untouched = (
            await http.post("/_oracle/episodes/other-" + episode + "/reset", json={})
        ).json()
    assert [(e["tool"], e["step"], e["transport"]) for e in journal["entries"]] == [
        ("create_order", 7, "mcp")
    ]
    assert journal["final_state"]["items"][1]["stock"] == 0
    assert untouched["state"]["items"][1]["stock"] == 1


MCP_BAD_INPUT: list[tuple[str, str, dict[str, Any], int, str]] = [
    ("missing field", "create_order", {"sku": "SKU-1", "quantity": 1}, 422, "customer"),
    (
        "wrong type",
        "create_order",
        {"sku": "SKU-1", "quantity": "two", "customer": CUSTOMER},
        422,
        "quantity",
    ),
    ("unknown field", "set_note", {"key": "a", "value": "b", "colour": "red"}, 422, "colour"),
    (
        "domain refusal",
        "create_order",
        {"sku": "SKU-404", "quantity": 1, "customer": CUSTOMER},
        404,
        "sku",
    ),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("tool", "arguments", "status", "field"),
    [c[1:] for c in MCP_BAD_INPUT],
    ids=[c[0] for c in MCP_BAD_INPUT],
)
async def test_bad_input_is_a_tool_error_with_the_rest_message(
    base_url: str,
    episode: str,
    mode: str,
    tool: str,
    arguments: dict[str, Any],
    status: int,
    field: str,
) -> None:
    headers = {"X-Chaos-Episode": episode}
    async with httpx.AsyncClient(base_url=base_url, headers=headers) as http:
        rest = (await http.post(f"/tools/{tool}", json=arguments)).json()["error"]
    async with fast_client(f"{base_url}/mcp", mode, headers) as client:
        result = await client.call_tool_mcp(tool, arguments)
    assert result.is_error
    assert result.structured_content is None  # an error body never matches the outputSchema
    assert result.meta is not None
    error = result.meta["io.chaosproxy/error"]
    assert error["status"] == status and error["field"] == field
    assert error["message"] == rest["message"]
    text = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert text == {"error": {**rest, "status": status}}


async def test_unknown_tool_on_mcp_is_an_error(base_url: str) -> None:
    async with fast_client(f"{base_url}/mcp", "legacy", {}) as client:
        result = await client.call_tool_mcp("launch_rocket", {})
    assert result.is_error
    assert "launch_rocket" in "".join(getattr(block, "text", "") for block in result.content)


async def test_tool_bug_on_mcp_is_an_error_naming_the_tool(base_url: str, episode: str) -> None:
    async with fast_client(f"{base_url}/mcp", "2026-07-28", {"X-Chaos-Episode": episode}) as client:
        result = await client.call_tool_mcp("explode", {})
    assert result.is_error and result.structured_content is None and result.meta is not None
    assert result.meta["io.chaosproxy/error"]["status"] == 500
    assert "explode" in result.meta["io.chaosproxy/error"]["message"]


@pytest.mark.parametrize(
    ("host", "allowed"),
    [("127.0.0.1:8700", True), ("localhost:9", True), ("attacker.example", False)],
)
async def test_host_guard_accepts_loopback_from_any_port(
    base_url: str, host: str, allowed: bool
) -> None:
    """Requests forwarded by the proxy carry the proxy's Host (another port): they must pass."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    async with httpx2.AsyncClient() as http:
        response = await http.post(
            f"{base_url}/mcp",
            json=body,
            headers={"Host": host, "Accept": "application/json, text/event-stream"},
        )
    assert (response.status_code == 200) is allowed
    if not allowed:
        assert response.status_code == 421
