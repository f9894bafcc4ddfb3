"""OpenAI-compatible model calls (`POST .../chat/completions`, `.../embeddings`).

A model call is not an agent step: it is logged as `kind: "model_call"` with the model
and the reply's token usage, and only the model-call faults apply to it (429 with
provider-like rate-limit headers, overloaded 5xx, timeouts, a stream cut mid-way, an
empty choice, malformed tool-call arguments). Streamed replies (SSE) are relayed event by
event; a StreamCut closes the connection before the stream's final event.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import aiohttp

from chaosproxy.faults import SyntheticResponse
from chaosproxy.proxy.core import RESET_STATUS
from chaosproxy.proxy.exchange import client_gone, reset_connection
from chaosproxy.proxy.jsonrpc import SseEvent, SseParser
from chaosproxy.proxy.listener import Answer, Request, StreamResponse
from chaosproxy.proxy.pipeline import Exchange, Outgoing, Rendered, ToolCall
from chaosproxy.proxy.protocols.rest import encode_body, parse_object, parse_reply, render_effect
from chaosproxy.proxy.routing import Route
from chaosproxy.proxy.upstream import UpstreamReply, forward_headers, read_all, response_headers

ENDPOINTS = (("/chat/completions", "chat.completions"), ("/embeddings", "embeddings"))
JSON_HEADERS = {"Content-Type": "application/json"}
WHOLE_REPLY_FAULTS = ("EmptyChoice", "MalformedToolCall")


def model_endpoint(method: str, subpath: str) -> str | None:
    """The model operation a request calls (`chat.completions`, `embeddings`), if any."""
    if method != "POST":
        return None
    path = subpath.rstrip("/")
    for suffix, name in ENDPOINTS:
        if path.endswith(suffix):
            return name
    return None


def _usage(value: Any) -> dict[str, Any] | None:
    usage = value.get("usage") if isinstance(value, dict) else None
    return usage if isinstance(usage, dict) else None


def _final(event: SseEvent) -> tuple[bool, dict[str, Any] | None]:
    """Whether the event ends the stream ([DONE] or a finish_reason), and its chunk."""
    if event.data.strip() == "[DONE]":
        return True, None
    try:
        chunk = json.loads(event.data) if event.data else None
    except ValueError:
        return False, None
    if not isinstance(chunk, dict):
        return False, None
    choices = chunk.get("choices")
    finished = isinstance(choices, list) and any(
        isinstance(choice, dict) and choice.get("finish_reason") for choice in choices
    )
    return finished, chunk


@dataclass
class ModelAdapter:
    request: Request
    route: Route
    body: bytes
    stream: bool

    @classmethod
    def parse(
        cls, request: Request, route: Route, body: bytes, endpoint: str
    ) -> tuple[ModelAdapter, ToolCall, str | None]:
        """(adapter, call, the model asked for). The prompt is not logged as arguments."""
        payload = parse_object(body) or {}
        model = payload.get("model")
        adapter = cls(request, route, body, payload.get("stream") is True)
        call = ToolCall(tool=endpoint, arguments=None, target="model")
        return adapter, call, str(model) if model is not None else None

    def outgoing(
        self, call: ToolCall, forwarded: dict[str, Any] | None, extra: dict[str, str]
    ) -> Outgoing:
        url = self.route.target(self.request.query)
        headers = forward_headers(self.request.headers, extra)
        return Outgoing("POST", url, headers, self.body, streaming=self.stream)

    def synthetic(self, call: ToolCall, response: SyntheticResponse) -> Rendered:
        return Rendered(
            status=response.status,
            body=encode_body(response.body),
            headers={**JSON_HEADERS, **response.headers},
        )

    async def reply(self, x: Exchange, upstream: UpstreamReply) -> Answer:
        if upstream.headers.get("Content-Type", "").startswith("text/event-stream"):
            return await self._stream(x, upstream)
        raw = await read_all(upstream)
        parsed, why = parse_reply(raw, upstream.headers.get("Content-Type", ""))
        x.draft.usage = _usage(parsed)
        if not x.wants_reply:
            return self._pass(x, upstream, raw)
        effect = await x.after(upstream.status, parsed)
        if why is not None:
            x.draft.note = why
        if effect.action == "pass":
            return self._pass(x, upstream, raw)
        return render_effect(x, effect, parsed)

    def _pass(self, x: Exchange, upstream: UpstreamReply, raw: bytes) -> Answer:
        return x.core.send(
            x.request,
            x.draft,
            status=upstream.status,
            body=raw,
            headers=response_headers(upstream.headers),
        )

    async def _stream(self, x: Exchange, upstream: UpstreamReply) -> Answer:
        """Relay SSE events; the log line goes out before `[DONE]` (or the cut, or the end)."""
        core, request, draft = x.core, x.request, x.draft
        cut_after: int | None = None
        if x.wants_reply:
            effect = await x.after(upstream.status, None)
            cut = effect.notes.get("StreamCut") if effect.action == "truncate" else None
            if isinstance(cut, dict):
                cut_after = int(cut.get("cut_after_events", 0))
            elif x.decision.fault is not None and x.decision.fault.name in WHOLE_REPLY_FAULTS:
                draft.note = f"streamed reply: {x.decision.fault.name} acts on whole replies only"
        response = StreamResponse(upstream.status, response_headers(upstream.headers))
        await response.prepare(request)
        parser = SseParser()
        events = sent = 0

        def log(status: int, outcome: Any) -> None:
            here = core.deliver(request, draft)
            core.write(draft, status=status if here else 499, outcome=outcome, bytes_out=sent)
            core.log.flush()

        try:
            async for chunk in upstream.content.iter_any():
                for event in parser.feed(chunk):
                    final, data = _final(event)
                    usage = _usage(data)
                    if usage is not None:
                        draft.usage = usage
                    if cut_after is not None and (events >= cut_after or final):
                        log(RESET_STATUS, "reset")
                        reset_connection(request)
                        return response
                    if event.data.strip() == "[DONE]" and not draft.logged:
                        log(upstream.status, "ok")
                    await response.write(event.raw)
                    sent += len(event.raw)
                    events += 0 if event.data.strip() == "[DONE]" else 1
            if parser.rest():
                await response.write(parser.rest())
            if not draft.logged:
                log(upstream.status, "ok")
            await response.write_eof()
        except (ConnectionResetError, aiohttp.ClientConnectionResetError):
            core.gone(draft)
        except (aiohttp.ClientPayloadError, aiohttp.ServerTimeoutError, TimeoutError) as exc:
            draft.error = f"upstream stream broke: {exc!r}"
            if not draft.logged:
                log(RESET_STATUS, "reset")
            if not client_gone(request):
                reset_connection(request)
        return response
