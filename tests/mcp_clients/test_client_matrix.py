"""Every MCP client agent builders run, as an agent runs it (list tools, then call), against
a real domain service, directly and through the proxy: tools are listed, results arrive,
and an ordinary tool error comes back as an error *result* in every client, never thrown."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from matrix import CLIENTS, run_client

if TYPE_CHECKING:
    # Only a type: `conftest` is an ambiguous module name when every test folder loads.
    from conftest import ProxyFactory

GOOD: tuple[str, dict[str, Any]] = (
    "list_meetings",
    {"start_date": "2026-03-02", "end_date": "2026-03-06"},
)
BAD: tuple[str, dict[str, Any]] = (
    "list_meetings",
    {"start_date": "2026-03-06", "end_date": "2026-03-02"},
)


@pytest.mark.parametrize("client", CLIENTS)
async def test_tools_results_and_tool_errors(
    client: str, scheduling_url: str, make_proxy: ProxyFactory
) -> None:
    async with make_proxy("lambda0.0") as proxy:
        direct, proxied = await run_client(
            client,
            [
                (f"{scheduling_url}/mcp", [GOOD, BAD]),
                (f"{proxy.url}/e/matrix-{client}/scheduling/mcp", [GOOD, BAD]),
            ],
        )
    for seen in (direct, proxied):
        assert seen.connect_error is None, seen
        assert {"list_meetings", "book_meeting", "escalate_to_human"} <= set(seen.tools)
        assert seen.kinds() == ["ok", "tool_error"], seen.calls
        assert "end_date is before start_date" in seen.calls[1]["text"]
        assert "start_date" in seen.calls[0]["text"]
