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
from dataclasses import dataclass, field
from typing import Any

from multidict import CIMultiDict

from chaosproxy.faults import Decision, FaultInfo, ResponseEffect, SyntheticResponse
from chaosproxy.proxy.effects import (
    AskEngine,
    Cut,
    EventStep,
    Forward,
    InStream,
    Outgoing,
    Rendered,
    Reply,
    ReplyEvent,
    Said,
    ToolCall,
    encode_body,
)
from chaosproxy.proxy.jsonrpc import SseEvent
from chaosproxy.proxy.protocols.common import parse_object, parse_reply, render_effect
from chaosproxy.proxy.routing import Route


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
    raw_query: str
    route: Route
    body: bytes
    stream: bool
    said: Said = field(default_factory=Said)
    _parsed: Any = None
    _why: str | None = None

    @classmethod
    def parse(
        cls, raw_query: str, route: Route, body: bytes, endpoint: str
    ) -> tuple[ModelAdapter, ToolCall, str | None]:
        """(adapter, call, the model asked for). The prompt is not logged as arguments."""
        payload = parse_object(body) or {}
        model = payload.get("model")
        api = _api(route.subpath)
        wanted = payload.get("stream", api is not None and api.streams_by_default)
        stream = wanted is True
        adapter = cls(raw_query, route, body, stream)
        call = ToolCall(tool=endpoint, arguments=None, target="model", stream=stream)
        return adapter, call, str(model) if model is not None else None

    def outgoing(self, call: ToolCall, forwarded: dict[str, Any] | None) -> Outgoing:
        url = self.route.target(self.raw_query)
        return Outgoing("POST", url, self.body, streaming=self.stream)

    def synthetic(
        self, call: ToolCall, response: SyntheticResponse, fault: FaultInfo | None
    ) -> Rendered:
        return Rendered(
            status=response.status,
            body=encode_body(response.body),
            headers={**JSON_HEADERS, **response.headers},
        )

    def _read(self, reply: Reply) -> None:
        parsed, self._why = parse_reply(reply.raw, reply.content_type)
        self._parsed = parsed
        self.said.usage = _usage(parsed) if parsed is not None else _last_line_usage(reply.raw)
        if self.said.seen is not None:
            self.said.seen(parsed)

    def passed(self, reply: Reply) -> Rendered:
        if self._parsed is None and self._why is None:
            self._read(reply)
        return Rendered(reply.status, reply.raw, reply.headers)

    def ask(self, reply: Reply) -> AskEngine | None:
        self._read(reply)
        return AskEngine(reply.status, self._parsed, {})

    def render(self, effect: ResponseEffect, reply: Reply, decision: Decision) -> Rendered | Cut:
        parsed = self._parsed
        if effect.action == "truncate" and parsed is None:
            return _cut(reply, effect.keep_fraction)
        if self._why is not None:
            self.said.note = self._why
        elif not effect.delivered:
            self.said.note = effect.reason
        if effect.action == "pass":
            return Rendered(reply.status, reply.raw, reply.headers)
        return render_effect(self.said, effect, parsed)

    def streamer(self, status: int, headers: CIMultiDict[str], decision: Decision) -> ModelStream:
        return ModelStream(self.said, status)


def _cut(reply: Reply, keep_fraction: float | None) -> Rendered:
    """A cut (StreamCut) on a whole reply that is not JSON (an Ollama NDJSON stream read
    whole): its first `keep_fraction` of bytes."""
    raw = reply.raw
    keep = keep_fraction if keep_fraction is not None else 0.5
    cut = max(1, min(len(raw) - 1, int(len(raw) * keep))) if len(raw) > 1 else 0
    return Rendered(reply.status, raw[:cut], reply.headers)


class ModelStream:
    """A streamed model reply: events pass as they come; the log line goes out before the
    final event (`[DONE]`, or the cut, or the end); StreamCut cuts after some events."""

    head_with_first_chunk = False

    def __init__(self, said: Said, status: int) -> None:
        self.said = said
        self.status = status
        self.cut_after: int | None = None
        self.events = 0
        self.replied = False

    def opening(self) -> AskEngine | None:
        return AskEngine(self.status, None, {})

    def opened(self, effect: ResponseEffect) -> None:
        if effect.action == "truncate" and effect.cut_after_events is not None:
            self.cut_after = effect.cut_after_events
        elif effect.reason is not None:
            self.said.note = effect.reason

    def event(self, event: SseEvent, sent: int) -> EventStep:
        final, data = _final(event)
        if self.said.seen is not None:
            self.said.seen(data)
        usage = _usage(data)
        if usage is not None:
            self.said.usage = {**(self.said.usage or {}), **usage}
        if self.cut_after is not None and (self.events >= self.cut_after or final):
            return Cut()
        self.events += 0 if event.data.strip() == "[DONE]" else 1
        last = data is None or data.get("type") in FINAL_EVENT_TYPES
        if final and last and not self.replied:
            self.replied = True
            return ReplyEvent(event.raw, self.status, "ok")
        return Forward(event.raw)

    def render(
        self, effect: ResponseEffect, ask: AskEngine, event: SseEvent, prepared: bool, sent: int
    ) -> EventStep:
        return Forward(event.raw)

    def ended(self, sent: int) -> InStream:
        return InStream(self.status, "ok", sent)
