"""One MCP tool call through a real client (fastmcp or the mcp SDK, either era), summarised."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import fastmcp
import mcp

CLIENTS = [
    ("fastmcp", "legacy"),
    ("fastmcp", "2026-07-28"),
    ("sdk", "legacy"),
    ("sdk", "2026-07-28"),
]
CLIENT_IDS = [f"{kind}-{mode}" for kind, mode in CLIENTS]


@dataclass
class Seen:
    """What the client saw: a result (ok or isError), a JSON-RPC error, or a failure."""

    kind: str
    structured: Any = None
    text: str = ""
    message: str = ""
    results: list[Any] = field(default_factory=list)

    def data(self) -> Any:
        return self.structured if self.structured is not None else json.loads(self.text)


def _result(result: Any) -> Seen:
    text = "".join(getattr(item, "text", "") for item in result.content)
    return Seen(
        "tool_error" if result.isError else "ok",
        structured=result.structuredContent,
        text=text,
    )


async def mcp_calls(
    kind: str, mode: str, url: str, calls: list[tuple[str, dict[str, Any]]], list_first: bool = True
) -> list[Seen]:
    """Make `calls` in one session; each call's outcome, errors included.

    A transport failure may end the whole session (a reset does, in some clients): the
    calls it cut short are reported as client errors.
    """
    seen: list[Seen] = []
    try:
        await _session(kind, mode, url, calls, list_first, seen)
    except Exception as exc:
        if seen and len(seen) == len(calls) and seen[-1].kind == "ok":
            raise  # a healthy session must close cleanly
        seen.extend(Seen("client_error", message=repr(exc)) for _ in range(len(calls) - len(seen)))
    return seen


async def _session(
    kind: str,
    mode: str,
    url: str,
    calls: list[tuple[str, dict[str, Any]]],
    list_first: bool,
    seen: list[Seen],
) -> None:
    if kind == "fastmcp":
        async with fastmcp.Client(url, mode=mode, timeout=10) as client:
            if list_first:
                await client.list_tools()
            for tool, arguments in calls:
                try:
                    seen.append(_result(await client.call_tool_mcp(tool, arguments)))
                except mcp.MCPError as exc:
                    seen.append(Seen("rpc_error", message=str(exc)))
                except Exception as exc:
                    seen.append(Seen("client_error", message=repr(exc)))
        return
    async with mcp.Client(url, mode=mode, read_timeout_seconds=10) as sdk:
        if list_first:
            await sdk.list_tools()
        for tool, arguments in calls:
            try:
                seen.append(_result(await sdk.call_tool(tool, arguments)))
            except mcp.MCPError as exc:
                seen.append(Seen("rpc_error", message=str(exc)))
            except Exception as exc:
                seen.append(Seen("client_error", message=repr(exc)))
