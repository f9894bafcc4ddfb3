"""Pass-through with streaming: plain bodies are relayed whole, SSE event by event.

A JSON-RPC reply inside the response (plain JSON or one SSE event) can be handed to a
hook that logs the request and may rewrite or withhold the reply; everything else is
forwarded byte for byte as it arrives.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from chaosproxy.proxy.core import RESET_STATUS, Core
from chaosproxy.proxy.exchange import Draft, client_gone, outcome_for, reset_connection
from chaosproxy.proxy.jsonrpc import SseParser
from chaosproxy.proxy.listener import Answer, Request, StreamResponse
from chaosproxy.proxy.upstream import UpstreamReply, response_headers

ReplyHook = Callable[[dict[str, Any], bool], Awaitable["Reply"]]
"""(JSON-RPC reply, in_band) -> what to send instead. In band (an SSE stream already open)
the HTTP status can no longer change."""


class Reply:
    """What a hook decided: send `message` (None: the original), or cut the connection.

    `status` and `headers` replace the HTTP status and add headers (plain bodies only).
    `before`: messages sent first, as SSE events (a plain body becomes an SSE stream);
    `end`: the stream ends cleanly without the reply.
    """

    def __init__(
        self,
        message: dict[str, Any] | None = None,
        *,
        cut: bool = False,
        status: int | None = None,
        headers: dict[str, str] | None = None,
        before: list[dict[str, Any]] | None = None,
        end: bool = False,
    ) -> None:
        self.message = message
        self.cut = cut
        self.status = status
        self.headers = headers or {}
        self.before = before or []
        self.end = end


def sse_events(messages: list[dict[str, Any]]) -> bytes:
    return b"".join(
        b"event: message\ndata: " + json.dumps(m, ensure_ascii=False).encode() + b"\n\n"
        for m in messages
    )


def is_reply_to(message: dict[str, Any] | None, request_id: Any) -> bool:
    return (
        message is not None
        and request_id is not None
        and message.get("id") == request_id
        and ("result" in message or "error" in message)
    )


def rpc_outcome(message: dict[str, Any], status: int, tool_call: bool) -> Any:
    if status >= 400:
        return outcome_for(status, tool_call=tool_call)
    if "error" in message:
        return "rpc_error"
    result = message.get("result")
    if isinstance(result, dict) and result.get("isError"):
        return "tool_error"
    return "ok"


async def relay_sse(
    core: Core,
    request: Request,
    draft: Draft,
    upstream: UpstreamReply,
    request_id: Any,
    hook: ReplyHook | None,
) -> Answer:
    """Forward events as they arrive; the reply event goes through `hook`, after the log line.

    For a request, the response head is sent with the first forwarded event, so a reply
    that comes first (the usual case) can still be turned into an HTTP error by a fault;
    a GET stream's head is sent at once.
    """
    response = StreamResponse(
        upstream.status,
        response_headers(upstream.headers),
        head_with_first_chunk=request_id is not None,
    )
    parser = SseParser(core.upstream.limits.max_response_bytes)
    sent = 0
    # the reply event, when the service's stream had already ended with it: it goes out
    # with the reply's end, in one write instead of two
    held = b""

    async def write(data: bytes) -> None:
        nonlocal sent, held
        if not response.prepared:
            await response.prepare(request)
        await response.write(held + data)
        held = b""
        sent += len(data)

    try:
        if request_id is None:
            await response.prepare(request)
        async for chunk in upstream.content.iter_any():
            for event in parser.feed(chunk):
                message = event.message()
                if not is_reply_to(message, request_id):
                    await write(event.raw)
                    continue
                assert message is not None
                reply = Reply() if hook is None else await hook(message, response.prepared)
                if reply.cut:
                    core.deliver(request, draft)
                    core.write(draft, status=RESET_STATUS, outcome="reset", bytes_out=sent)
                    core.log.flush()
                    reset_connection(request)
                    return response
                if reply.end:
                    core.deliver(request, draft)
                    core.write(draft, status=upstream.status, outcome="reset", bytes_out=sent)
                    core.log.flush()
                    if not response.prepared:
                        await response.prepare(request)
                    await response.write_eof()
                    return response
                final = reply.message or message
                if reply.status is not None and not response.prepared:
                    headers = response_headers(upstream.headers)
                    headers["Content-Type"] = "application/json"
                    headers.update(reply.headers)
                    return core.send(
                        request,
                        draft,
                        status=reply.status,
                        body=json.dumps(final, ensure_ascii=False).encode(),
                        headers=headers,
                        outcome=rpc_outcome(final, reply.status, draft.kind == "tool_call"),
                    )
                out = event.raw if reply.message is None else event.with_message(reply.message)
                out = sse_events(reply.before) + out if reply.before else out
                here = core.deliver(request, draft)
                core.write(
                    draft,
                    status=upstream.status if here else 499,
                    outcome=rpc_outcome(final, upstream.status, draft.kind == "tool_call"),
                    bytes_out=sent + len(out),
                )
                core.log.flush()
                if upstream.content.is_eof():
                    held = out
                    sent += len(out)
                else:
                    await write(out)
        rest = parser.rest()
        sent += len(rest)
        if not response.prepared:
            await response.prepare(request)
        await response.write_eof(held + rest)
    except (ConnectionResetError, aiohttp.ClientConnectionResetError):
        core.gone(draft)
        return response
    except (aiohttp.ClientPayloadError, aiohttp.ServerTimeoutError, TimeoutError) as exc:
        draft.error = f"upstream stream broke: {exc!r}"
        if not client_gone(request):
            reset_connection(request)
    finally:
        if not draft.logged and client_gone(request):
            core.gone(draft)  # the client hung up mid-stream (the handler is cancelled)
        elif not draft.logged:
            if request_id is not None and draft.error is None:
                draft.error = "stream ended without a reply"
            core.write(
                draft,
                status=upstream.status,
                outcome=outcome_for(upstream.status, tool_call=draft.kind == "tool_call"),
                bytes_out=sent,
            )
    return response


async def relay_plain(
    core: Core,
    request: Request,
    draft: Draft,
    upstream: UpstreamReply,
    raw: bytes,
    request_id: Any,
    hook: ReplyHook | None,
) -> Answer:
    """A whole (non-streamed) body; a JSON-RPC reply in it goes through `hook`."""
    message: Any = None
    if hook is not None and request_id is not None and raw:
        try:
            message = json.loads(raw)
        except (UnicodeDecodeError, RecursionError, ValueError):
            message = None
    if not isinstance(message, dict) or not is_reply_to(message, request_id) or hook is None:
        return core.send(
            request,
            draft,
            status=upstream.status,
            body=raw,
            headers=response_headers(upstream.headers),
        )
    reply = await hook(message, False)
    if reply.cut:
        return core.reset(request, draft)
    headers = response_headers(upstream.headers)
    if reply.end:
        headers["Content-Type"] = "text/event-stream"
        return core.send(
            request, draft, status=upstream.status, body=b"", headers=headers, outcome="reset"
        )
    body = raw if reply.message is None else json.dumps(reply.message, ensure_ascii=False).encode()
    if reply.before:
        body = sse_events([*reply.before, reply.message or message])
        headers["Content-Type"] = "text/event-stream"
    status = reply.status or upstream.status
    for key, value in reply.headers.items():
        headers[key] = value
    return core.send(
        request,
        draft,
        status=status,
        body=body,
        headers=headers,
        outcome=rpc_outcome(reply.message or message, status, draft.kind == "tool_call"),
    )
