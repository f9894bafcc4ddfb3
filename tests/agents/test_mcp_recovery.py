"""The robust scripted agent recovers from MCP session failures; naive stops.

A real scheduling service on 127.0.0.1 sits behind a small ASGI wrapper that answers the
next tools/call the way a real MCP server fails: it forgot the session (404), refuses the
token (401 with WWW-Authenticate), closes the SSE stream before the reply, or no longer
knows the tool. The wrapper counts what reaches the service, so each test checks both what
the agent got and what the client did about it (a new initialize, a new tools/list).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from chaosproxy.agents.scripted.agent import GaveUp, PolicyClient
from chaosproxy.agents.scripted.policy import POLICIES, classify
from chaosproxy.domains.kit.client import (
    AuthRequired,
    McpToolClient,
    SessionLost,
    ToolNotListed,
)
from chaosproxy.domains.kit.testing import serve_app
from chaosproxy.domains.registry import get_domain

CHALLENGE = 'Bearer error="invalid_token", error_description="the access token expired"'
ARGUMENTS = {"start_date": "2026-03-02", "end_date": "2026-03-06"}


@dataclass
class FailNext:
    """ASGI wrapper: the next `tools/call` fails as `mode` says; counts JSON-RPC methods."""

    app: Any
    mode: str | None = None
    seen: list[str] = field(default_factory=list)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/mcp":
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = json.loads(body) if body else {}
        self.seen.append(str(request.get("method")))
        mode, self.mode = (
            (self.mode, None) if request.get("method") == "tools/call" else (None, self.mode)
        )
        if mode == "session":
            await _answer(
                send,
                404,
                {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "error": {"code": -32001, "message": "Session not found"},
                },
            )
            return
        if mode == "auth":
            await _answer(
                send, 401, {"error": "invalid_token"}, [(b"www-authenticate", CHALLENGE.encode())]
            )
            return
        if mode == "stream":
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")],
                }
            )
            await send({"type": "http.response.body", "body": b": keep-alive\n\n"})
            return
        if mode == "removed":
            request["params"]["name"] = "no_longer_here"
            body = json.dumps(request).encode()

        pending = [{"type": "http.request", "body": body, "more_body": False}]

        async def replay() -> dict[str, Any]:
            return pending.pop() if pending else await receive()

        if mode == "changed":
            await self.app(scope, replay, _announcing_list_changed(send))
            return
        await self.app(scope, replay, send)


LIST_CHANGED = (
    b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n'
)


def _announcing_list_changed(send: Any) -> Any:
    """Puts `notifications/tools/list_changed` on the call's SSE stream before its reply."""
    announced = False

    async def wrapped(message: dict[str, Any]) -> None:
        nonlocal announced
        if message["type"] == "http.response.body" and not announced:
            announced = True
            message = {**message, "body": LIST_CHANGED + message.get("body", b"")}
        await send(message)

    return wrapped


async def _answer(
    send: Any, status: int, payload: dict[str, Any], extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [(b"content-type", b"application/json"), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(payload).encode()})


@pytest.fixture(scope="module")
def service() -> Iterator[tuple[FailNext, str]]:
    wrapper = FailNext(get_domain("scheduling").asgi_app())
    with serve_app(wrapper) as url:
        yield wrapper, f"{url}/mcp"


@pytest.mark.parametrize(
    ("mode", "raised", "kind"),
    [
        ("session", SessionLost, "session_lost"),
        ("auth", AuthRequired, "unauthorized"),
        ("removed", ToolNotListed, "tool_not_listed"),
    ],
)
async def test_client_names_the_failure(
    service: tuple[FailNext, str], mode: str, raised: type[Exception], kind: str
) -> None:
    wrapper, url = service
    async with McpToolClient(url, timeout_s=10) as client:
        await client.list_tools()
        wrapper.mode = mode
        with pytest.raises(raised) as failure:
            await client.call_with("list_meetings", ARGUMENTS)
    assert classify(failure.value) == kind  # type: ignore[arg-type]
    if mode == "auth":
        assert isinstance(failure.value, AuthRequired)
        assert failure.value.challenge == CHALLENGE


@pytest.mark.parametrize("mode", ["session", "auth", "stream", "removed"])
async def test_robust_recovers_naive_stops(service: tuple[FailNext, str], mode: str) -> None:
    wrapper, url = service
    async with McpToolClient(url, timeout_s=10) as client:
        await client.list_tools()
        wrapper.mode = mode
        with pytest.raises(GaveUp):
            await PolicyClient(client, POLICIES["naive"], random.Random(1), {}).call(
                "list_meetings", **ARGUMENTS
            )
    async with McpToolClient(url, timeout_s=10) as client:
        await client.list_tools()
        wrapper.seen.clear()
        wrapper.mode = mode
        robust = PolicyClient(client, POLICIES["robust"], random.Random(1), {})
        result = await robust.call("list_meetings", **ARGUMENTS)
    assert isinstance(result.get("meetings"), list)
    assert robust.calls == 2
    # What the careful client did between the failed call and the one that worked.
    calls = [index for index, method in enumerate(wrapper.seen) if method == "tools/call"]
    assert len(calls) == 2, wrapper.seen
    between = wrapper.seen[calls[0] + 1 : calls[1]]
    expected = {
        "session": ["initialize", "notifications/initialized"],
        "auth": ["initialize", "notifications/initialized"],
        "stream": ["initialize", "notifications/initialized"],
        "removed": ["tools/list"],
    }[mode]
    assert between == expected, wrapper.seen


@pytest.mark.parametrize(("policy", "relists"), [("naive", False), ("robust", True)])
async def test_list_changed_refreshes_tools(
    service: tuple[FailNext, str], policy: str, relists: bool
) -> None:
    wrapper, url = service
    async with McpToolClient(url, timeout_s=10) as client:
        await client.list_tools()
        agent = PolicyClient(client, POLICIES[policy], random.Random(1), {})  # type: ignore[index]
        wrapper.seen.clear()
        wrapper.mode = "changed"
        await agent.call("list_meetings", **ARGUMENTS)
        assert client.tools_changed
        await agent.call("list_meetings", **ARGUMENTS)
        assert client.tools_changed is not relists
    calls = [index for index, method in enumerate(wrapper.seen) if method == "tools/call"]
    between = wrapper.seen[calls[0] + 1 : calls[1]]
    assert between == (["tools/list"] if relists else []), wrapper.seen
