"""A scripted OpenAI-compatible model server on 127.0.0.1 (the stand-in for a hosted model).

Chat completions answer with a tool call (whole, or streamed as SSE chunks with a usage
chunk at the end, as OpenAI does with `stream_options.include_usage`); embeddings answer
one vector per input. Every request body is kept.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

USAGE = {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
TOOL_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_item", "arguments": '{"item_id": "A1"}'},
}
WORDS = ["The ", "item ", "is ", "in ", "stock", "."]


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "scripted-1",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def build_app(seen: list[dict[str, Any]]) -> web.Application:
    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        seen.append(body)
        if not body.get("stream"):
            message = {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]}
            return web.json_response(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
                    "usage": USAGE,
                }
            )
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(_chunk({"role": "assistant", "content": ""}))
        for word in WORDS:
            await response.write(_chunk({"content": word}))
        await response.write(_chunk({}, finish="stop"))
        usage = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": []}
        await response.write(b"data: " + json.dumps({**usage, "usage": USAGE}).encode() + b"\n\n")
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def embeddings(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append(body)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [
            {"object": "embedding", "index": i, "embedding": [0.1, 0.2]} for i in range(len(texts))
        ]
        usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
        return web.json_response(
            {"object": "list", "data": data, "model": body["model"], "usage": usage}
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_post("/v1/embeddings", embeddings)
    return app


@asynccontextmanager
async def serve_llm() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """Yields (base URL without /v1, the request bodies received)."""
    seen: list[dict[str, Any]] = []
    runner = web.AppRunner(build_app(seen), access_log=None)
    await runner.setup()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    await web.SockSite(runner, sock).start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", seen
    finally:
        await runner.cleanup()
