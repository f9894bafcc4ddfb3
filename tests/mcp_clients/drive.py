"""Drive one real MCP client through a list of sessions, as an agent would, and print JSON.

Run as a script in the client's own interpreter with `-I` (isolated: the repository's
top-level `agents/` folder must not shadow openai-agents' `agents` package, and
langchain-mcp-adapters lives in a virtual environment of its own because it pins mcp < 2):

    python -I drive.py CLIENT 'JSON [{"url": ..., "calls": [[tool, args], ...]}, ...]'

Every session lists the tools first, then makes its calls in order. Each call's outcome is
one of: "ok" (a result), "tool_error" (a result with isError, or the client's own error
value for it), "rpc_error" (a JSON-RPC error raised), "client_error" (anything else raised).
"hang" is a call that had no outcome after CALL_TIMEOUT_S (the client waits on a reply
that will never come). Only the standard library and the client under test are imported here.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

CALL_TIMEOUT_S = 12


async def _bounded(call: Any) -> Any:
    """A call's outcome, or TimeoutError after CALL_TIMEOUT_S."""
    return await asyncio.wait_for(call, CALL_TIMEOUT_S)


def _counting_list_changed(out: dict[str, Any]) -> Any:
    """A message handler (the SDK's and fastmcp's shape) counting tools/list_changed."""

    async def handler(message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/tools/list_changed":
            out["list_changed"] += 1

    return handler


def _listed(out: dict[str, Any], names: list[str]) -> None:
    """The tools listed, and how long connecting, initialising and listing took."""
    out["tools"] = names
    out["listed_s"] = round(time.monotonic() - out.pop("started"), 3)


def _text(content: Any) -> str:
    return "".join(getattr(item, "text", "") or "" for item in content or [])


def _field(result: Any, new: str, old: str) -> Any:
    """mcp 2.x spells result fields in snake case; mcp 1.x (and its users) in camel case."""
    fields = getattr(type(result), "model_fields", {})
    return getattr(result, new if new in fields else old, None)


def _result(result: Any) -> dict[str, Any]:
    return {
        "kind": "tool_error" if _field(result, "is_error", "isError") else "ok",
        "structured": _field(result, "structured_content", "structuredContent"),
        "text": _text(getattr(result, "content", None)),
    }


def _raised(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, TimeoutError):
        return {"kind": "hang", "code": None, "message": f"no outcome in {CALL_TIMEOUT_S} s"}
    code = getattr(exc, "code", None)
    error = getattr(exc, "error", None)
    if code is None and error is not None:
        code = getattr(error, "code", None)
    return {
        "kind": "rpc_error" if isinstance(code, int) else "client_error",
        "code": code if isinstance(code, int) else None,
        "message": f"{type(exc).__name__}: {exc}"[:500],
    }


async def _fastmcp(mode: str, url: str, calls: list[Any], out: dict[str, Any]) -> None:
    import fastmcp

    async with fastmcp.Client(
        url, mode=mode, timeout=10, message_handler=_counting_list_changed(out)
    ) as client:
        _listed(out, [tool.name for tool in await client.list_tools()])
        for tool, arguments in calls:
            try:
                out["calls"].append(_result(await _bounded(client.call_tool_mcp(tool, arguments))))
            except Exception as exc:
                out["calls"].append(_raised(exc))


async def _sdk(mode: str, url: str, calls: list[Any], out: dict[str, Any]) -> None:
    import mcp

    async with mcp.Client(
        url, mode=mode, read_timeout_seconds=10, message_handler=_counting_list_changed(out)
    ) as client:
        listed = await client.list_tools()
        _listed(out, [tool.name for tool in listed.tools])
        for tool, arguments in calls:
            try:
                out["calls"].append(_result(await _bounded(client.call_tool(tool, arguments))))
            except Exception as exc:
                out["calls"].append(_raised(exc))


async def _openai_agents(url: str, calls: list[Any], out: dict[str, Any]) -> None:
    from agents.mcp import MCPServerStreamableHttp

    server = MCPServerStreamableHttp(
        {"url": url, "timeout": 10},
        client_session_timeout_seconds=10,
        message_handler=_counting_list_changed(out),
    )
    await server.connect()
    try:
        _listed(out, [tool.name for tool in await server.list_tools()])
        for tool, arguments in calls:
            try:
                out["calls"].append(_result(await _bounded(server.call_tool(tool, arguments))))
            except Exception as exc:
                out["calls"].append(_raised(exc))
    finally:
        await server.cleanup()


async def _langchain(url: str, calls: list[Any], out: dict[str, Any]) -> None:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    client = MultiServerMCPClient({"s": {"url": url, "transport": "streamable_http"}})
    async with client.session("s") as session:
        from langchain_mcp_adapters.tools import load_mcp_tools

        tools = {tool.name: tool for tool in await load_mcp_tools(session)}
        _listed(out, list(tools))
        for name, arguments in calls:
            try:
                # Invoked with a tool call, as LangGraph's ToolNode does: the answer is a
                # ToolMessage whose status says whether the MCP result was an error.
                message = await _bounded(
                    tools[name].ainvoke(
                        {"type": "tool_call", "id": "call-1", "name": name, "args": arguments}
                    )
                )
                content = message.content
                text = content if isinstance(content, str) else json.dumps(content, default=str)
                kind = "tool_error" if getattr(message, "status", "") == "error" else "ok"
                out["calls"].append({"kind": kind, "structured": message.artifact, "text": text})
            except Exception as exc:
                out["calls"].append(_raised(exc))


async def _session(client: str, url: str, calls: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"tools": [], "calls": [], "connect_error": None, "list_changed": 0}
    out["started"] = time.monotonic()
    try:
        if client.startswith("fastmcp-"):
            await _fastmcp(client.removeprefix("fastmcp-"), url, calls, out)
        elif client.startswith("sdk-"):
            await _sdk(client.removeprefix("sdk-"), url, calls, out)
        elif client == "openai-agents":
            await _openai_agents(url, calls, out)
        elif client == "langchain":
            await _langchain(url, calls, out)
        else:
            raise SystemExit(f"unknown client {client!r}")
    except Exception as exc:
        if not out["tools"] and not out["calls"]:
            out["connect_error"] = _raised(exc)["message"]
        else:
            out["close_error"] = _raised(exc)["message"]
    out.pop("started", None)
    return out


async def main(client: str, sessions: list[dict[str, Any]]) -> None:
    results = []
    for session in sessions:
        results.append(
            await asyncio.wait_for(_session(client, session["url"], session["calls"]), 90)
        )
    print(json.dumps(results, default=str))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))
