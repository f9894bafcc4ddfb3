"""A scripted OpenAI-compatible model server on 127.0.0.1 (the stand-in for a hosted model).

Chat completions answer with a tool call (whole, or streamed as SSE chunks with a usage
chunk at the end, as OpenAI does with `stream_options.include_usage`), or with words when
`tool_choice` is "none"; embeddings answer one vector per input. The other model APIs answer
in their own shapes, whole or streamed: OpenAI's Responses API and legacy completions,
Anthropic's Messages, Ollama's `/api/chat`; `GET /v1/models` lists one model. Every POST
body is kept.
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
IN_OUT = {"input_tokens": 11, "output_tokens": 6}
"""Responses API and Anthropic usage: their own key names."""


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
            message: dict[str, Any] = {"role": "assistant", "content": None}
            if body.get("tool_choice") == "none":
                message["content"] = "".join(WORDS)
            else:
                message["tool_calls"] = [TOOL_CALL]
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
    app.router.add_post("/v1/responses", _kept(seen, responses))
    app.router.add_post("/v1/completions", _kept(seen, legacy_completions))
    app.router.add_post("/v1/messages", _kept(seen, messages))
    app.router.add_post("/api/chat", _kept(seen, ollama_chat))
    app.router.add_get("/v1/models", list_models)
    app.router.add_get("/v1/models/{model}", list_models)
    return app


Handler = Any


def _kept(seen: list[dict[str, Any]], handler: Handler) -> Handler:
    async def keep(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        seen.append(body)
        result: web.StreamResponse = await handler(request, body)
        return result

    return keep


async def _sse(request: web.Request, events: list[tuple[str | None, Any]]) -> web.StreamResponse:
    """Named (or unnamed) SSE events, one write each."""
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for name, data in events:
        head = f"event: {name}\n".encode() if name else b""
        await response.write(head + b"data: " + json.dumps(data).encode() + b"\n\n")
    await response.write_eof()
    return response


async def responses(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
    text = "".join(WORDS)
    output = [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
    ]
    whole = {
        "id": "resp_1",
        "object": "response",
        "model": body["model"],
        "output": output,
        "usage": {**IN_OUT, "total_tokens": 17},
    }
    if not body.get("stream"):
        return web.json_response(whole)
    events: list[tuple[str | None, Any]] = [
        ("response.created", {"type": "response.created", "response": {**whole, "usage": None}})
    ]
    events += [
        ("response.output_text.delta", {"type": "response.output_text.delta", "delta": w})
        for w in WORDS
    ]
    events.append(("response.completed", {"type": "response.completed", "response": whole}))
    return await _sse(request, events)


async def legacy_completions(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
    choice = {"index": 0, "text": "".join(WORDS), "finish_reason": "stop"}
    return web.json_response(
        {
            "id": "cmpl-1",
            "object": "text_completion",
            "model": body["model"],
            "choices": [choice],
            "usage": USAGE,
        }
    )


async def messages(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
    text = "".join(WORDS)
    whole = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "usage": IN_OUT,
    }  # fmt: skip
    if not body.get("stream"):
        return web.json_response(whole)
    start = {
        **whole,
        "content": [],
        "usage": {"input_tokens": IN_OUT["input_tokens"], "output_tokens": 1},
    }
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    events += [
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}},
        )
        for w in WORDS
    ]
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": IN_OUT["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return await _sse(request, events)


async def ollama_chat(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
    """Whole with `"stream": false`; else (Ollama's default) NDJSON, one object a word."""
    counts = {"prompt_eval_count": 9, "eval_count": 6}
    if body.get("stream") is False:
        message = {"role": "assistant", "content": "".join(WORDS)}
        return web.json_response(
            {"model": body["model"], "message": message, "done": True, **counts}
        )
    response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
    await response.prepare(request)
    for word in WORDS:
        line = {
            "model": body["model"],
            "message": {"role": "assistant", "content": word},
            "done": False,
        }
        await response.write(json.dumps(line).encode() + b"\n")
    await response.write(
        json.dumps({"model": body["model"], "done": True, **counts}).encode() + b"\n"
    )
    await response.write_eof()
    return response


async def list_models(request: web.Request) -> web.Response:
    model = {"id": "scripted-1", "object": "model", "owned_by": "tests"}
    if "model" in request.match_info:
        return web.json_response(model)
    return web.json_response({"object": "list", "data": [model]})


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
