"""Model calls: OpenAI-compatible, OpenAI Responses, Anthropic Messages, Ollama.

A model call is not an agent step: it is logged as `kind: "model_call"` with the model
and the reply's token usage (in the provider's own shape), and only the model-call faults
apply to it (429 with provider-like rate-limit headers, overloaded 5xx, timeouts, a stream
cut mid-way; on whole chat-completions replies also an empty choice and malformed
tool-call arguments). Streamed replies (SSE) are relayed event by event; a StreamCut
closes the connection before the stream's final event.

Which requests are model calls is decided by method and path alone (`model_endpoint`),
never by what the upstream served before, so a request is always classified the same way.
Model listings (`GET .../v1/models`) are protocol traffic (`model_protocol`).
"""

from __future__ import annotations

import json
import re
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


@dataclass(frozen=True)
class ModelApi:
    """One model operation: how its path ends (`exact`: the whole path is it), the name
    it is logged under, and whether a request without `stream` asks for a stream."""

    suffix: str
    operation: str
    exact: bool = False
    streams_by_default: bool = False


ENDPOINTS = (
    ModelApi("/chat/completions", "chat.completions"),
    ModelApi("/embeddings", "embeddings"),
    ModelApi("/v1/responses", "responses"),
    ModelApi("/v1/completions", "completions"),
    ModelApi("/v1/messages", "messages"),
    ModelApi("/api/chat", "ollama.chat", exact=True, streams_by_default=True),
    ModelApi("/api/generate", "ollama.generate", exact=True, streams_by_default=True),
    ModelApi("/api/embed", "ollama.embed", exact=True),
)
"""First match wins. `/chat/completions` and `/embeddings` end any path (Azure's
deployments too); the others need their `/v1`, and Ollama's native paths are whole."""

PROTOCOL_PATHS = re.compile(r"(^|/)v1/models(/.+)?$|^/api/(tags|version|ps)$")
"""Model listings and server info (`GET`): protocol traffic, never faulted, not a step."""

COUNT_TOKENS = "/v1/messages/count_tokens"
"""Anthropic's token count (a `POST`, no model run): protocol traffic too."""

JSON_HEADERS = {"Content-Type": "application/json"}
WHOLE_REPLY_FAULTS = ("EmptyChoice", "MalformedToolCall")
NOTHING_TO_ACT_ON = {
    "EmptyChoice": "the reply has no choices",
    "MalformedToolCall": "the reply carries no tool call",
}
"""Why a whole-reply model fault drawn on a 2xx chat reply did not act (known only after)."""

FINAL_EVENT_TYPES = frozenset(
    {"response.completed", "response.incomplete", "response.failed", "message_stop"}
)
"""Stream events that end a Responses API or Anthropic Messages stream."""


_SUFFIXES = tuple(api.suffix for api in ENDPOINTS)


def _api(subpath: str) -> ModelApi | None:
    path = subpath.rstrip("/")
    if not path.endswith(_SUFFIXES):  # most requests: one C call, not a walk over ENDPOINTS
        return None
    for api in ENDPOINTS:
        if path == api.suffix if api.exact else path.endswith(api.suffix):
            return api
    return None


def model_endpoint(method: str, subpath: str) -> str | None:
    """The model operation a request calls (`chat.completions`, `responses`, ...), if any."""
    if method != "POST":
        return None
    api = _api(subpath)
    return api.operation if api is not None else None


def model_protocol(method: str, subpath: str) -> bool:
    """A model API request that runs no model (listing models, counting tokens)."""
    path = subpath.rstrip("/")
    if method in ("GET", "HEAD"):
        return PROTOCOL_PATHS.search(path) is not None
    return method == "POST" and path.endswith(COUNT_TOKENS)


def _usage(value: Any) -> dict[str, Any] | None:
    """A reply's (or stream event's) token usage, as the provider shaped it: `usage` at the
    top (OpenAI, Responses, Anthropic), in a Responses event's `response` or an Anthropic
    `message_start`'s `message`; Ollama's `prompt_eval_count` / `eval_count`."""
    if not isinstance(value, dict):
        return None
    for holder in (value, value.get("response"), value.get("message")):
        usage = holder.get("usage") if isinstance(holder, dict) else None
        if isinstance(usage, dict):
            return usage
    counts = {k: value[k] for k in ("prompt_eval_count", "eval_count") if k in value}
    return counts or None


def _last_line_usage(raw: bytes) -> dict[str, Any] | None:
    """The usage in an NDJSON stream's last line (Ollama's `done: true` object)."""
    lines = raw.rstrip().rsplit(b"\n", 1)
    try:
        return _usage(json.loads(lines[-1])) if lines[-1] else None
    except (UnicodeDecodeError, RecursionError, ValueError):
        return None


def _final(event: SseEvent) -> tuple[bool, dict[str, Any] | None]:
    """Whether the event ends the stream ([DONE], a finish_reason, or a Responses /
    Anthropic final event), and its chunk."""
    if event.data.strip() == "[DONE]":
        return True, None
    try:
        chunk = json.loads(event.data) if event.data else None
    except (ValueError, RecursionError):  # not JSON, or nested past Python's parser
        return False, None
    if not isinstance(chunk, dict):
        return False, None
    if chunk.get("type") in FINAL_EVENT_TYPES:
        return True, chunk
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
        api = _api(route.subpath)
        wanted = payload.get("stream", api is not None and api.streams_by_default)
        stream = wanted is True
        adapter = cls(request, route, body, stream)
        call = ToolCall(tool=endpoint, arguments=None, target="model", stream=stream)
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
        raw = await read_all(upstream, x.core.upstream.limits.max_response_bytes)
        parsed, why = parse_reply(raw, upstream.headers.get("Content-Type", ""))
        x.draft.usage = _usage(parsed) if parsed is not None else _last_line_usage(raw)
        if x.draft.trace is not None:
            x.draft.trace.model_reply(parsed)
        if not x.wants_reply:
            return self._pass(x, upstream, raw)
        effect = await x.after(upstream.status, parsed)
        if effect.action == "truncate" and parsed is None:
            return self._cut(x, upstream, raw)
        if why is not None:
            x.draft.note = why
        elif not effect.delivered:
            x.draft.note = _not_applied(x, upstream.status)
        if effect.action == "pass":
            return self._pass(x, upstream, raw)
        return render_effect(x, effect, parsed)

    def _cut(self, x: Exchange, upstream: UpstreamReply, raw: bytes) -> Answer:
        """StreamCut on a whole reply that is not JSON (an Ollama NDJSON stream read whole):
        its bytes cut at `keep_fraction`."""
        fault = x.decision.fault
        keep = float(fault.params.get("keep_fraction", 0.5)) if fault is not None else 0.5
        cut = max(1, min(len(raw) - 1, int(len(raw) * keep))) if len(raw) > 1 else 0
        return x.core.send(
            x.request,
            x.draft,
            status=upstream.status,
            body=raw[:cut],
            headers=response_headers(upstream.headers),
        )

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
        parser = SseParser(core.upstream.limits.max_response_bytes)
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
                    if draft.trace is not None:
                        draft.trace.model_reply(data)
                    if usage is not None:
                        draft.usage = {**(draft.usage or {}), **usage}
                    if cut_after is not None and (events >= cut_after or final):
                        log(RESET_STATUS, "reset")
                        reset_connection(request)
                        return response
                    last = data is None or data.get("type") in FINAL_EVENT_TYPES
                    if final and last and not draft.logged:
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


def _not_applied(x: Exchange, status: int) -> str | None:
    """Why the call's model fault did not act on the reply (known only once it came)."""
    fault = x.decision.fault
    if fault is None:
        return None
    if not 200 <= status < 300:
        return f"{fault.name} not applied: the model answered {status}"
    reason = NOTHING_TO_ACT_ON.get(fault.name)
    return f"{fault.name} not applied: {reason}" if reason is not None else None
