"""A small user service (REST + MCP) to put behind the proxy with `--upstream`.

It records the episode and step headers it receives, so tests can check what the proxy
forwarded, and keeps a per-episode counter so writes are visible.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastmcp import FastMCP
from fastmcp.server.dependencies import get_http_headers
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route


class Item(BaseModel):
    item_id: str
    name: str
    price: float
    tags: list[str]
    stock: dict[str, int]


class Note(BaseModel):
    id: int
    text: str
    count: int


@dataclass
class ToyState:
    calls: list[dict[str, Any]] = field(default_factory=list)
    notes: dict[str, int] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    slow_arrived: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when `/slow` is reached (the service holds a request)."""


def item(item_id: str) -> Item:
    return Item(
        item_id=item_id,
        name=f"Widget {item_id}",
        price=19.5,
        tags=["blue", "small", "sale", "new"],
        stock={"sfo": 3, "jfk": 0},
    )


def build_app(state: ToyState) -> Starlette:
    mcp = FastMCP("toy")

    def note(text: str, headers: dict[str, str]) -> Note:
        episode = headers.get("x-chaos-episode", "default")
        count = state.notes.get(episode, 0) + 1
        state.notes[episode] = count
        return Note(id=count, text=text, count=count)

    def seen(transport: str, tool: str, headers: dict[str, str], arguments: dict[str, Any]) -> None:
        state.calls.append(
            {
                "transport": transport,
                "tool": tool,
                "episode": headers.get("x-chaos-episode"),
                "step": headers.get("x-chaos-step"),
                "arguments": arguments,
            }
        )

    @mcp.tool
    def get_item(item_id: str) -> Item:
        """Look up one item by id."""
        seen("mcp", "get_item", get_http_headers(), {"item_id": item_id})
        return item(item_id)

    @mcp.tool
    def add_note(text: str) -> Note:
        """Add a note; the count shows how many writes the episode made."""
        headers = get_http_headers()
        seen("mcp", "add_note", headers, {"text": text})
        return note(text, headers)

    async def rest_tool(request: Request) -> JSONResponse:
        name = request.path_params["name"]
        arguments = await request.json()
        headers = {k.lower(): v for k, v in request.headers.items()}
        seen("rest", name, headers, arguments)
        if name == "get_item":
            if "item_id" not in arguments:
                return JSONResponse(
                    {"error": {"type": "validation", "message": "missing", "field": "item_id"}}, 422
                )
            return JSONResponse(item(str(arguments["item_id"])).model_dump())
        if name == "add_note":
            return JSONResponse(note(str(arguments.get("text", "")), headers).model_dump())
        if name == "crash":
            return JSONResponse({"error": {"type": "internal", "message": "toy bug"}}, 500)
        return JSONResponse({"error": {"type": "not_found", "message": f"no tool {name}"}}, 404)

    async def openapi(request: Request) -> JSONResponse:
        return JSONResponse(
            {"openapi": "3.1.0", "info": {"title": "toy", "version": "1"}, "paths": {}}
        )

    async def slow(request: Request) -> JSONResponse:
        state.slow_arrived.set()
        await asyncio.sleep(float(request.query_params.get("s", "1")))
        return JSONResponse({"slept": True})

    async def oracle(request: Request) -> JSONResponse:
        return JSONResponse({"secret": True})

    async def forget(request: Request) -> JSONResponse:
        state.deleted.append(request.path_params["episode"])
        return JSONResponse({"deleted": True})

    mcp_app = mcp.http_app(path="/mcp")
    return Starlette(
        routes=[
            Route("/tools/{name}", rest_tool, methods=["POST"]),
            Route("/openapi.json", openapi),
            Route("/slow", slow),
            Route("/_oracle/hints", oracle),
            Route("/_oracle/episodes/{episode}", forget, methods=["DELETE"]),
            Mount("/", app=mcp_app),
        ],
        lifespan=mcp_app.lifespan,
    )


@asynccontextmanager
async def serve_toy() -> AsyncIterator[tuple[str, ToyState]]:
    """Serve the toy on an ephemeral 127.0.0.1 port in this event loop."""
    state = ToyState()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(build_app(state), log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}", state
    finally:
        server.should_exit = True
        await task
        sock.close()
