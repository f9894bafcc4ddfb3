"""The proxy's MCP-native faults, seen by every MCP client through a real `chaosproxy` proxy
in front of a real domain service: each fault forced on the first tools/call of its own
episode (one session each, all in one run of the client), and each cell asserting what the
client saw, the proxy's log line, and, where the session has a stream, the
`notifications/tools/list_changed` announcements. The README's "MCP clients under faults"
table is these expectations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from matrix import CLIENTS, SessionSeen, run_client
from proxied import first_call_only, log_lines

if TYPE_CHECKING:
    # Only a type: `conftest` is an ambiguous module name when every test folder loads.
    from conftest import ProxyFactory

OLD: tuple[str, dict[str, Any]] = (
    "list_meetings",
    {"start_date": "2026-03-02", "end_date": "2026-03-06"},
)
NEW: tuple[str, dict[str, Any]] = (
    "list_meetings",
    {"startDate": "2026-03-02", "endDate": "2026-03-06"},
)
SESSION_CLIENTS = {"fastmcp-legacy", "sdk-legacy", "node", "langchain"}
"""Clients that initialise and hold an `Mcp-Session-Id`; the others speak 2026-07-28,
stateless: no initialize, no session to forget."""
ANNOUNCED_TO = {"fastmcp-legacy", "sdk-legacy", "node"}
"""Session clients whose driver counts list_changed (langchain-mcp-adapters exposes no
message handler)."""
SLOW_S = 2.0

CASES: dict[str, tuple[str, dict[str, Any], list[list[tuple[str, dict[str, Any]]]]]] = {
    # name: (fault, its params, the calls of each session in the fault's episode)
    "expired": ("SessionExpired", {}, [[OLD, OLD]]),
    "stream": ("StreamClosed", {}, [[OLD, OLD]]),
    "removed": ("ToolRemoved", {"min_steps": 1, "max_steps": 1}, [[OLD, OLD, OLD]]),
    "changed": ("ToolChanged", {}, [[OLD, OLD], [NEW]]),
    "slow": ("SlowInitialize", {"delay_s": SLOW_S}, [[OLD]]),
    "drift": ("SchemaDrift", {"ops": ["rename"]}, [[OLD, OLD]]),
    "silent": ("SchemaDrift", {"ops": ["rename"], "announce": False}, [[OLD]]),
}


def _message(call: dict[str, Any]) -> str:
    return str(call.get("message") or call.get("text") or "")


@pytest.mark.parametrize("client", CLIENTS)
async def test_client_under_proxy_mcp_faults(client: str, make_proxy: ProxyFactory) -> None:
    async with make_proxy("lambda0.0") as proxy:
        sessions: list[tuple[str, list[tuple[str, dict[str, Any]]]]] = []
        names: list[str] = []
        for case, (fault, params, calls) in CASES.items():
            episode = f"{case}-{client}"
            proxy.core.engine.configure_episode(episode, profile=first_call_only(fault, params))
            for session_calls in calls:
                sessions.append((f"{proxy.url}/e/{episode}/scheduling/mcp", session_calls))
                names.append(case)
        seen_list = await run_client(client, sessions, timeout=300)
        proxy.core.log.flush()
        log = {case: log_lines(proxy.log_path, f"{case}-{client}") for case in CASES}
    seen: dict[str, list[SessionSeen]] = {}
    for case, session in zip(names, seen_list, strict=True):
        assert session.connect_error is None, (case, session)
        assert "list_meetings" in session.tools, (case, session)
        seen.setdefault(case, []).append(session)
    holds_session = client in SESSION_CLIENTS
    announced = client in ANNOUNCED_TO

    # SessionExpired: a 404 for the session, and every later request of it too; a
    # stateless client has no session to forget, so the fault cannot land (no fault drawn).
    (expired,) = seen["expired"]
    calls = [line for line in log["expired"] if line["rpc_method"] == "tools/call"]
    if holds_session:
        assert expired.kinds() == ["rpc_error", "rpc_error"], expired.calls
        wording = "Session terminated" if client == "langchain" else "Session not found"
        assert all(wording in _message(call) for call in expired.calls), expired.calls
        assert calls[0]["fault"]["name"] == "SessionExpired" and calls[0]["status"] == 404
        assert calls[0]["upstream_called"] is False
    else:
        assert expired.kinds() == ["ok", "ok"], expired.calls
        assert all(line["fault"] is None for line in calls)

    # StreamClosed: the service ran, the stream ended without the reply; the next call works.
    (cut,) = seen["stream"]
    first = {"node": "rpc_error", "langchain": "hang"}.get(client, "rpc_error")
    assert cut.kinds() == [first, "ok"], cut.calls
    if client == "node":
        assert "timed out" in _message(cut.calls[0])
    elif client != "langchain":
        assert "SSE stream ended without a response" in _message(cut.calls[0])
    faulted = next(line for line in log["stream"] if line["fault"])
    assert faulted["fault"]["name"] == "StreamClosed" and faulted["upstream_called"] is True

    # ToolRemoved for one step: an "Unknown tool" error result (never thrown), then the
    # tool is back; a session with a stream hears list_changed twice (gone, back).
    (removed,) = seen["removed"]
    assert removed.kinds() == ["tool_error", "ok", "ok"], removed.calls
    assert "Unknown tool: 'list_meetings'" in _message(removed.calls[0])
    assert removed.list_changed == (2 if announced else 0)

    # ToolChanged: the old argument names are refused as a validation error result; a
    # session that lists the tools again sees the new names, and calls with them work.
    stale, fresh = seen["changed"]
    assert stale.kinds() == ["tool_error", "tool_error"], stale.calls
    assert "startDate: required field is missing" in _message(stale.calls[0])
    assert stale.list_changed == (1 if announced else 0)
    assert fresh.kinds() == ["ok"], fresh.calls
    assert "meetings" in _message(fresh.calls[0])

    # SlowInitialize: the request opening the connection is held: the session handshake, or
    # openai-agents' 2026-07-28 `server/discover`; fastmcp and the SDK pinned to 2026-07-28
    # send neither.
    (slow,) = seen["slow"]
    assert slow.kinds() == ["ok"], slow.calls
    opening = {"initialize", "server/discover"}
    held = [line for line in log["slow"] if line["rpc_method"] in opening and line["fault"]]
    if holds_session or client == "openai-agents":
        assert len(held) == 1 and held[0]["fault"]["name"] == "SlowInitialize"
        assert held[0]["latency_ms"] >= SLOW_S * 1000
        assert slow.extra["listed_s"] >= SLOW_S
    else:
        assert held == []

    # SchemaDrift: tools/list changes with it, and is announced where there is a stream;
    # but every client checks the result against the outputSchema it cached at listing
    # time and refuses it (none re-lists by itself, announcement or not).
    (drift,) = seen["drift"]
    (silent,) = seen["silent"]
    refused = "rpc_error" if client == "node" else "client_error"
    assert drift.kinds() == [refused, refused], drift.calls
    assert silent.kinds() == [refused], silent.calls
    wording = (
        "does not match the tool's output schema"
        if client == "node"
        else "Invalid structured content"
    )
    assert wording in _message(drift.calls[0]), drift.calls
    assert drift.list_changed == (1 if announced else 0)
    assert silent.list_changed == 0
