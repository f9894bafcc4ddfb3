"""A scripted OpenAI-compatible chat server on 127.0.0.1: the stand-in for a hosted model.

It runs in its own thread with its own event loop, because the runner under test runs
its own. `reply(request_body) -> message` decides each answer; every request is kept.
A reply may carry `_usage` (sent as the completion's `usage`); `embed(texts) -> vectors`
serves /v1/embeddings, with a usage of one token per word.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from aiohttp import web

Reply = Callable[[dict[str, Any]], dict[str, Any]]
Embed = Callable[[list[str]], list[list[float]]]


def completion(model: str, message: dict[str, Any]) -> dict[str, Any]:
    message = dict(message)
    usage = message.pop("_usage", None)
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    body: dict[str, Any] = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


@contextmanager
def chat_server(
    reply: Reply, embed: Embed | None = None
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Yields (base URL ending in /v1, the requests received so far)."""
    requests: list[dict[str, Any]] = []

    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        requests.append(body)
        return web.json_response(completion(body["model"], reply(body)))

    async def embeddings(request: web.Request) -> web.Response:
        body = await request.json()
        requests.append(body)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        assert embed is not None
        vectors = embed(texts)
        words = sum(len(text.split()) for text in texts)
        data = [
            {"object": "embedding", "index": i, "embedding": vector}
            for i, vector in enumerate(vectors)
        ]
        usage = {"prompt_tokens": words, "total_tokens": words}
        return web.json_response(
            {"object": "list", "data": data, "model": body["model"], "usage": usage}
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    if embed is not None:
        app.router.add_post("/v1/embeddings", embeddings)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(runner.setup())
        loop.run_until_complete(web.SockSite(runner, sock).start())
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(10), "chat server did not start"
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1", requests
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
