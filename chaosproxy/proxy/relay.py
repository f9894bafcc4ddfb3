"""The one streaming relay (MCP SSE, model streams, GET streams) and protocol traffic.

`stream` forwards server-sent events as they arrive; a protocol's `StreamRules` (sans-I/O)
decide per event: forward it, ask the engine about it (the call's reply), log and send it,
cut the connection, or end the stream. The relay does the I/O and hands every ending to
`finish`. `PassRules` are the rules of protocol traffic (never faulted; a `tools/list`
reply may be rewritten through a pure callable).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, Protocol

import aiohttp
from multidict import CIMultiDict

from chaosproxy.faults import ResponseEffect
from chaosproxy.proxy.effects import (
    AskEngine,
    Cut,
    EndStream,
    EventStep,
    Forward,
    Gone,
    InStream,
    Rendered,
    ReplyEvent,
    outcome_for,
)
from chaosproxy.proxy.exchange import Exchange, client_gone
from chaosproxy.proxy.finish import finish
from chaosproxy.proxy.jsonrpc import (
    EventTooLarge,
    SseEvent,
    SseParser,
    is_reply_to,
    rpc_outcome,
)
from chaosproxy.proxy.listener import Answer, StreamResponse
from chaosproxy.proxy.upstream import UpstreamReply

log = logging.getLogger("chaosproxy.proxy")

Rewrite = Callable[[dict[str, Any]], dict[str, Any] | None]
"""A JSON-RPC reply -> the reply to send instead (None: unchanged)."""


class StreamRules(Protocol):
    """A protocol's per-event decisions on one stream (pure: no I/O)."""

    head_with_first_chunk: bool
    """The response head waits for the first event (a reply that comes first can still be
    turned into a whole HTTP error)."""

    def opening(self) -> AskEngine | None:
        """What to ask the engine before the first event (None: nothing)."""
        ...

    def opened(self, effect: ResponseEffect) -> None:
        """The engine's answer to `opening`."""
        ...

    def event(self, event: SseEvent, sent: int) -> EventStep:
        """What to do with the next event (`sent`: bytes relayed so far)."""
        ...

    def render(
        self, effect: ResponseEffect, ask: AskEngine, event: SseEvent, prepared: bool, sent: int
    ) -> EventStep:
        """The engine's effect on the reply event `ask` came from."""
        ...

    def ended(self, sent: int) -> InStream:
        """The stream ended and no event was the call's reply: what the log says."""
        ...


async def stream(
    x: Exchange, upstream: UpstreamReply, headers: CIMultiDict[str], rules: StreamRules
) -> Answer:
    """Relay `upstream`'s events to the client under `rules`; every ending goes to `finish`."""
    core = x.core
    request = x.request
    if x.wants_reply and (ask := rules.opening()) is not None:
        rules.opened(await x.after(ask.status, ask.body))
    response = StreamResponse(
        upstream.status, headers, head_with_first_chunk=rules.head_with_first_chunk
    )
    parser = SseParser(core.upstream.limits.max_response_bytes)
    sent = 0
    # the reply event, when the service's stream had already ended with it: it goes out
    # with the stream's end, in one write instead of two
    held = b""

    async def write(data: bytes) -> None:
        nonlocal sent, held
        if not response.prepared:
            await response.prepare(request)
        await response.write(held + data)
        held = b""
        sent += len(data)

    try:
        if not rules.head_with_first_chunk:
            await response.prepare(request)
        async for chunk in upstream.content.iter_any():
            for event in parser.feed(chunk):
                step = rules.event(event, sent)
                if isinstance(step, AskEngine):
                    effect = await x.after(step.status, step.body)
                    step = rules.render(effect, step, event, response.prepared, sent)
                if isinstance(step, Forward):
                    await write(step.data)
                elif isinstance(step, ReplyEvent):
                    out = step.data
                    if x.draft.trace is not None:
                        x.draft.trace.reply(out)
                    finish(x, InStream(step.status, step.outcome, sent + len(out)), response)
                    if upstream.content.is_eof():
                        held = out
                        sent += len(out)
                    else:
                        await write(out)
                elif isinstance(step, Rendered):
                    return finish(x, step)
                elif isinstance(step, Cut):
                    return finish(x, Cut(sent), response)
                else:
                    finish(x, EndStream(step.status, sent), response)
                    if not response.prepared:
                        await response.prepare(request)
                    await response.write_eof()
                    return response
        rest = parser.rest()
        sent += len(rest)
        if not x.draft.logged:
            finish(x, rules.ended(sent), response)
        if not response.prepared:
            await response.prepare(request)
        await response.write_eof(held + rest)
    except (ConnectionResetError, aiohttp.ClientConnectionResetError):
        return finish(x, Gone(sent), response)
    except (
        aiohttp.ClientPayloadError,
        aiohttp.ServerTimeoutError,
        TimeoutError,
        EventTooLarge,
    ) as exc:
        x.draft.error = x.draft.error or f"upstream stream broke: {exc!r}"
        if not client_gone(request):
            return finish(x, Cut(sent), response)
    finally:
        if not x.draft.logged:
            # the client hung up mid-stream (the handler is cancelled), or the stream broke
            finish(x, Gone(sent) if client_gone(request) else rules.ended(sent), response)
    return response


class PassRules:
    """Protocol traffic's stream: every event passes; a JSON-RPC reply to `request_id`
    (e.g. `tools/list`) may be rewritten by `rewrite` and is the request's log line."""

    def __init__(self, status: int, request_id: Any, rewrite: Rewrite | None) -> None:
        self.status = status
        self.request_id = request_id
        self.rewrite = rewrite
        self.head_with_first_chunk = request_id is not None

    def opening(self) -> AskEngine | None:
        return None

    def opened(self, effect: ResponseEffect) -> None:
        return None

    def event(self, event: SseEvent, sent: int) -> EventStep:
        if self.request_id is None:
            return Forward(event.raw)
        message = event.message()
        if not is_reply_to(message, self.request_id):
            return Forward(event.raw)
        assert message is not None
        changed = self.rewrite(message) if self.rewrite is not None else None
        data = event.raw if changed is None else event.with_message(changed)
        return ReplyEvent(data, self.status, rpc_outcome(changed or message, self.status, False))

    def render(
        self, effect: ResponseEffect, ask: AskEngine, event: SseEvent, prepared: bool, sent: int
    ) -> EventStep:
        return Forward(event.raw)

    def ended(self, sent: int) -> InStream:
        error = "stream ended without a reply" if self.request_id is not None else None
        return InStream(self.status, outcome_for(self.status, tool_call=False), sent, error)


def whole(
    status: int, headers: CIMultiDict[str], raw: bytes, request_id: Any, rewrite: Rewrite | None
) -> Rendered:
    """Protocol traffic's whole body; a JSON-RPC reply in it may be rewritten."""
    if rewrite is None or request_id is None or not raw:
        return Rendered(status, raw, headers)
    try:
        message = json.loads(raw)
    except (UnicodeDecodeError, RecursionError, ValueError):
        return Rendered(status, raw, headers)
    if not isinstance(message, dict) or not is_reply_to(message, request_id):
        return Rendered(status, raw, headers)
    changed = rewrite(message)
    body = raw if changed is None else json.dumps(changed, ensure_ascii=False).encode()
    return Rendered(status, body, headers, rpc_outcome(changed or message, status, False))
