"""What each MCP client sees when the server fails as real MCP servers do (one session per
failure, all in one run of the client): a forgotten session (404), a refused token (401),
an SSE stream that ends before the reply, a tool that is no longer there, and a
`notifications/tools/list_changed` announcement. None of these clients recovers by itself;
the README's "MCP clients under faults" table is this test's expectations."""

from __future__ import annotations

from typing import Any

import pytest
from faulty_server import FAULTS
from matrix import CLIENTS, run_client

GOOD: tuple[str, dict[str, Any]] = (
    "list_meetings",
    {"start_date": "2026-03-02", "end_date": "2026-03-06"},
)
SESSION_CLIENTS = {"fastmcp-legacy", "sdk-legacy", "node", "langchain"}
"""Clients that hold an `Mcp-Session-Id` (the 2025-11-25 handshake); the rest are stateless."""
ANNOUNCED_TO = {"fastmcp-legacy", "sdk-legacy", "node"}
"""Clients whose calls come back on an SSE stream that can carry the announcement, and whose
driver counts it (langchain-mcp-adapters exposes no message handler)."""


@pytest.mark.parametrize("client", CLIENTS)
async def test_client_under_mcp_faults(client: str, faulty_url: str) -> None:
    sessions = [(f"{faulty_url}/f/{client}/{fault}/mcp", [GOOD, GOOD]) for fault in FAULTS]
    seen = dict(zip(FAULTS, await run_client(client, sessions, timeout=240), strict=True))
    for fault, session in seen.items():
        assert session.connect_error is None, (fault, session)
        assert "list_meetings" in session.tools, (fault, session)

    # A forgotten session: an error, never a silent retry; it stays broken for clients
    # that hold a session (none re-initialises on its own).
    forgotten = seen["session"]
    assert forgotten.calls[0]["kind"] == "rpc_error", forgotten.calls
    assert forgotten.kinds()[1] == ("rpc_error" if client in SESSION_CLIENTS else "ok")

    # 401: an error naming no hang; the mcp 1.x session under langchain dies with it.
    refused = seen["auth"]
    if client == "langchain":
        assert refused.calls == [] and "close_error" in refused.extra, refused
    else:
        assert refused.kinds() == ["rpc_error", "ok"], refused.calls

    # The reply's stream ends early: the 2.x SDKs say so at once; the Node SDK waits for its
    # request timeout; mcp 1.x (langchain) waits for ever (the driver's bound says "hang").
    cut = seen["stream"]
    first = {"node": "rpc_error", "langchain": "hang"}.get(client, "rpc_error")
    assert cut.kinds() == [first, "ok"], cut.calls
    if client not in {"node", "langchain"}:
        assert "SSE stream ended without a response" in cut.calls[0]["message"]
    if client == "node":
        assert "timed out" in cut.calls[0]["message"]

    # A tool that is gone: an error result in every client, never thrown.
    removed = seen["removed"]
    assert removed.kinds() == ["tool_error", "ok"], removed.calls
    assert "Unknown tool" in removed.calls[0]["text"]

    # list_changed: delivered where the reply is a stream; the call itself is unaffected.
    changed = seen["changed"]
    assert changed.kinds() == ["ok", "ok"], changed.calls
    assert changed.list_changed == (1 if client in ANNOUNCED_TO else 0)
