"""The kit's tool clients: results, ToolCallFailed on every kind of failure, Retry-After, steps."""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from chaosproxy.domains.kit import ToolCallFailed
from chaosproxy.domains.kit.client import (
    McpToolClient,
    OracleClient,
    RestToolClient,
    parse_retry_after,
)
from chaosproxy.domains.kit.testing import bind_socket, serve_app
from kit_toy import domain
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send


async def _limited(request: Request) -> Response:
    return JSONResponse(
        {"error": {"type": "rate_limited", "message": "slow down"}}, 429, {"Retry-After": "3"}
    )


async def _truncated(request: Request) -> Response:
    return PlainTextResponse('{"order_id": "ORD-1", "tot', media_type="application/json")


async def _a_list(request: Request) -> Response:
    return JSONResponse([1, 2])


async def _html_error(request: Request) -> Response:
    return PlainTextResponse("<html>bad gateway</html>", 502)


@pytest.fixture(scope="module")
def faulty_url() -> Iterator[str]:
    app = Starlette(
        routes=[
            Route("/tools/limited", _limited, methods=["POST"]),
            Route("/tools/truncated", _truncated, methods=["POST"]),
            Route("/tools/a_list", _a_list, methods=["POST"]),
            Route("/tools/html_error", _html_error, methods=["POST"]),
        ]
    )
    with serve_app(app) as url:
        yield url


@pytest.mark.parametrize(
    ("tool", "status", "retry_after", "message_part"),
    [
        ("limited", 429, 3.0, "slow down"),
        ("truncated", 200, None, "not valid JSON"),
        ("a_list", 200, None, "not a JSON object"),
        ("html_error", 502, None, "HTTP 502"),
    ],
)
async def test_rest_client_raises_tool_call_failed(
    faulty_url: str, tool: str, status: int, retry_after: float | None, message_part: str
) -> None:
    async with RestToolClient(faulty_url) as client:
        with pytest.raises(ToolCallFailed) as failure:
            await client.call(tool)
    assert failure.value.status == status
    assert failure.value.retry_after == retry_after
    assert message_part in failure.value.message
    assert failure.value.body is not None


async def test_rest_client_connection_refused_is_status_0() -> None:
    sock = bind_socket()
    port = sock.getsockname()[1]
    sock.close()  # nothing listens on this port now
    async with RestToolClient(f"http://127.0.0.1:{port}") as client:
        with pytest.raises(ToolCallFailed) as failure:
            await client.call("anything")
    assert failure.value.status == 0


async def test_rest_client_results_errors_and_step_numbers(base_url: str, episode: str) -> None:
    async with (
        RestToolClient(base_url, episode=episode, step_header=True) as client,
        OracleClient(base_url) as oracle,
    ):
        listing = await client.call("list_items", max_price=10)
        note = await client.call("set_note", key="k", value="v")
        with pytest.raises(ToolCallFailed) as failure:
            await client.call(
                "create_order", sku="SKU-404", quantity=1, customer={"name": "a", "email": "b"}
            )
        await client.call("submit_answer", total=1.5)
        journal = await oracle.journal(episode)
    assert listing["count"] == 1 and note["value"] == "v"
    assert failure.value.status == 404 and failure.value.message == "item 'SKU-404' does not exist"
    assert failure.value.body["error"]["field"] == "sku"
    assert [(entry["tool"], entry["step"]) for entry in journal["entries"]] == [
        ("set_note", 2),
        ("submit_answer", 4),
    ]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_mcp_client_results_and_errors(base_url: str, episode: str, mode: str) -> None:
    async with McpToolClient(f"{base_url}/mcp", episode=episode, mode=mode) as client:
        order = await client.call(
            "create_order", sku="SKU-1", quantity=1, customer={"name": "a", "email": "b"}
        )
        with pytest.raises(ToolCallFailed) as refused:
            await client.call(
                "create_order", sku="SKU-3", quantity=1, customer={"name": "a", "email": "b"}
            )
        with pytest.raises(ToolCallFailed) as invalid:
            await client.call("set_note", key="k")
    assert order["order_id"] == "ORD-0001" and order["total"] == 30.0
    assert refused.value.status == 409 and "in stock" in refused.value.message
    assert invalid.value.status == 422 and "value" in invalid.value.message


async def test_mcp_client_unreachable_server_is_status_0() -> None:
    sock = bind_socket()
    port = sock.getsockname()[1]
    sock.close()
    with pytest.raises(ToolCallFailed) as failure:
        async with McpToolClient(f"http://127.0.0.1:{port}/mcp", timeout_s=5):
            pass
    assert failure.value.status == 0


def test_parse_retry_after() -> None:
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert parse_retry_after("2.5") == 2.5
    assert parse_retry_after("-1") == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    parsed = parse_retry_after(future)
    assert parsed is not None and 25 <= parsed <= 31


class RateLimitEveryOtherToolCall:
    """Wraps a kit app: every odd MCP tools/call gets an HTTP 429 with Retry-After, like a proxy."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.calls = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/mcp" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if json.loads(body).get("method") == "tools/call":
            self.calls += 1
            if self.calls % 2 == 1:
                limited = JSONResponse({"error": "slow down"}, 429, {"Retry-After": "2"})
                await limited(scope, receive, send)
                return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_mcp_client_keeps_http_status_and_retry_after(mode: str) -> None:
    with serve_app(RateLimitEveryOtherToolCall(domain.asgi_app())) as url:
        async with McpToolClient(f"{url}/mcp", episode="e", mode=mode) as client:
            with pytest.raises(ToolCallFailed) as limited:
                await client.call("set_note", key="k", value="first")
            second = await client.call("set_note", key="k", value="second")
    assert limited.value.status == 429 and limited.value.retry_after == 2.0
    assert second["value"] == "second"
