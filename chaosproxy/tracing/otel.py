"""The one module that imports OpenTelemetry: SDK tracer, OTLP/HTTP exporter, batch processor.

Spans are built when a call finishes (from its CallRecord fields), with the call's real
start and end times, so the reply path only hands a finished span to the batch processor
(a queue append; export runs on the processor's own thread). The proxy span's id is chosen
when the request arrives, so the upstream can be told its parent before the span exists:
an id generator hands the SDK the chosen ids.

Parents, in order: the agent's W3C context (`traceparent`/`tracestate` headers, or MCP
`params._meta`); the runner's episode span (`episode()`); else a root span whose trace id
is derived from the episode id, so one episode's calls share a trace.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from chaosproxy.tracing import EpisodeSpan, Tracer, TraceSettings
from chaosproxy.tracing.attributes import (
    FAULT_EVENT,
    CallExtras,
    plan_span,
    wants_span,
)

SCOPE = "chaosproxy"
RETRY_MEMORY = 4096
"""Failed calls remembered (per tool and arguments) to link an agent's retry to them."""
ADOPTED_MEMORY = 4096
"""Episode parents sent by another process's runner (`adopt`), most recent kept."""

_KINDS = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT, "server": SpanKind.SERVER}
_PROPAGATOR = TraceContextTextMapPropagator()


def episode_trace_id(episode: str) -> int:
    """The trace id of an episode whose agent sent no context: the same for all its calls."""
    digest = hashlib.sha256(f"chaosproxy-episode:{episode}".encode()).digest()
    return int.from_bytes(digest[:16], "big") or 1


def _random_span_id() -> int:
    return random.getrandbits(64) or 1


def traceparent(context: SpanContext) -> str:
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


class _ChosenIds(IdGenerator):
    """Random ids, unless the caller chose the next span's (and a root's trace) id."""

    def __init__(self) -> None:
        self._local = threading.local()

    def choose(self, span_id: int, trace_id: int | None) -> None:
        self._local.span_id = span_id
        self._local.trace_id = trace_id

    def generate_span_id(self) -> int:
        chosen = getattr(self._local, "span_id", None)
        self._local.span_id = None
        return chosen if chosen else _random_span_id()

    def generate_trace_id(self) -> int:
        chosen = getattr(self._local, "trace_id", None)
        self._local.trace_id = None
        return chosen if chosen else random.getrandbits(128) or 1


def _parent_from(carrier: Any) -> SpanContext | None:
    if not isinstance(carrier, Mapping) or "traceparent" not in {str(k).lower() for k in carrier}:
        return None
    span = trace.get_current_span(_PROPAGATOR.extract(carrier))
    context = span.get_span_context()
    return context if context.is_valid else None


class _Call:
    """One request's trace: its chosen span id, the agent's context, and what the log lacks."""

    __slots__ = ("_body", "_resolved", "episode", "extras", "parent", "span_id", "tracer")

    def __init__(self, tracer: OtelTracer, episode: str, parent: SpanContext | None) -> None:
        self.tracer = tracer
        self.episode = episode
        self.span_id = _random_span_id()
        self.parent = parent
        self.extras = CallExtras()
        self._resolved: tuple[Context | None, int] | None = None
        self._body: bytes = b""

    def _context(self) -> tuple[Context | None, int]:
        """(the parent context or None for a root, the trace id), settled once."""
        if self._resolved is None:
            parent = self.parent or self.tracer.episode_parent(self.episode)
            if parent is not None:
                ctx = trace.set_span_in_context(NonRecordingSpan(parent))
                self._resolved = (ctx, parent.trace_id)
            else:
                self._resolved = (None, episode_trace_id(self.episode))
        return self._resolved

    def upstream(self, call: Any, extra: dict[str, str]) -> None:
        stream = getattr(call, "stream", None)
        if getattr(call, "target", None) == "model":
            self.extras.stream = bool(stream)
        _, trace_id = self._context()
        flags = int(self.parent.trace_flags) if self.parent is not None else 1
        extra["traceparent"] = f"00-{trace_id:032x}-{self.span_id:016x}-{flags:02x}"
        state = self.parent.trace_state.to_header() if self.parent is not None else ""
        if state:
            extra["tracestate"] = state

    def model_reply(self, body: Any) -> None:
        if not isinstance(body, dict):
            return
        model = body.get("model")
        if isinstance(model, str) and model:
            self.extras.response_model = model
        reasons = self.extras.finish_reasons
        for choice in body.get("choices") or ():
            reason = choice.get("finish_reason") if isinstance(choice, dict) else None
            if isinstance(reason, str) and reason not in reasons:
                reasons.append(reason)
        for key in ("stop_reason", "done_reason"):
            reason = body.get(key)
            if isinstance(reason, str) and reason not in reasons:
                reasons.append(reason)

    def finish(self, fields: dict[str, Any]) -> None:
        if not wants_span(fields):
            return
        if fields.get("kind") == "model_call":
            self._read_model_request()
        self.tracer.emit(self, fields)

    def reply(self, body: bytes) -> None:
        self.extras.reply = body

    def keep_body(self, body: bytes) -> None:
        self._body = body

    def _read_model_request(self) -> None:
        """The stream flag and model asked for, from the request body (only when tracing)."""
        try:
            payload = json.loads(self._body) if self._body else None
        except (ValueError, UnicodeDecodeError, RecursionError):
            return
        if isinstance(payload, dict):
            if self.extras.stream is None and "stream" in payload:
                self.extras.stream = payload.get("stream") is True
            model = payload.get("model")
            if isinstance(model, str):
                self.extras.request_model = model


class _Episode:
    def __init__(self, span: trace.Span) -> None:
        self.span = span
        self.traceparent: str | None = traceparent(span.get_span_context())

    def verdict(self, attributes: Mapping[str, Any], failed: bool) -> None:
        for key, value in attributes.items():
            if value is not None:
                self.span.set_attribute(key, value)
        if failed:
            self.span.set_status(Status(StatusCode.ERROR))


class OtelTracer(Tracer):
    """Tracing on: spans through the SDK to OTLP/HTTP (or to `processor`, for tests)."""

    on = True

    def __init__(self, settings: TraceSettings, processor: SpanProcessor | None = None) -> None:
        self.settings = settings
        self._ids = _ChosenIds()
        attributes: dict[str, str] = {}
        if not os.environ.get("OTEL_SERVICE_NAME"):
            attributes["service.name"] = SCOPE
        self.provider = TracerProvider(resource=Resource.create(attributes), id_generator=self._ids)
        if processor is None:
            url = settings.traces_url
            exporter = OTLPSpanExporter(endpoint=url) if url else OTLPSpanExporter()
            processor = BatchSpanProcessor(exporter)
        self.provider.add_span_processor(processor)
        self.tracer = self.provider.get_tracer(SCOPE)
        self._profile_of: Callable[[str], str] | None = None
        self._episodes: dict[str, SpanContext] = {}
        self._adopted: OrderedDict[str, SpanContext] = OrderedDict()
        self._failed: OrderedDict[tuple[str, str, str], str] = OrderedDict()
        self._lock = threading.Lock()

    # ---- the proxy's hooks ---------------------------------------------------------

    def incoming(
        self, headers: Mapping[str, str], body: bytes, messages: Any, episode: str
    ) -> _Call:
        parent = _parent_from(headers)
        message = messages[0] if isinstance(messages, list) and len(messages) == 1 else None
        if not isinstance(message, dict):
            message = None
        if parent is None and message is not None:
            params = message.get("params")
            meta = params.get("_meta") if isinstance(params, dict) else None
            parent = _parent_from(meta)
        call = _Call(self, episode, parent)
        extras = call.extras
        if message is not None:
            extras.rpc_id = message.get("id")
        extras.mcp_session = headers.get("Mcp-Session-Id")
        extras.mcp_protocol = headers.get("MCP-Protocol-Version")
        call.keep_body(body)
        return call

    def attach(self, profile_of: Callable[[str], str]) -> None:
        self._profile_of = profile_of

    def episode_parent(self, episode: str) -> SpanContext | None:
        return self._episodes.get(episode) or self._adopted.get(episode)

    def adopt(self, episode: str, traceparent: str) -> None:
        parent = _parent_from({"traceparent": traceparent})
        with self._lock:
            if parent is None:
                self._adopted.pop(episode, None)
                return
            self._adopted[episode] = parent
            self._adopted.move_to_end(episode)
            while len(self._adopted) > ADOPTED_MEMORY:
                self._adopted.popitem(last=False)

    def forget(self, episode: str) -> None:
        with self._lock:
            self._adopted.pop(episode, None)

    def emit(self, call: _Call, fields: dict[str, Any]) -> None:
        """Build the finished call's span and hand it to the processor."""
        episode = call.episode
        profile = self._profile_of(episode) if self._profile_of is not None else None
        retry_key = self._retry_key(fields)
        retry_of = self._failed.get(retry_key) if retry_key is not None else None
        plan = plan_span(
            fields,
            call.extras,
            profile=profile,
            content=self.settings.content,
            retry_of=retry_of,
        )
        context, trace_id = call._context()
        links = []
        if retry_of is not None:
            trace_hex, _, span_hex = retry_of.partition("-")
            links.append(
                Link(
                    SpanContext(int(trace_hex, 16), int(span_hex, 16), is_remote=True),
                    {"chaosproxy.link": "retry_of"},
                )
            )
        self._ids.choose(call.span_id, trace_id if context is None else None)
        span = self.tracer.start_span(
            plan.name,
            context=context,
            kind=_KINDS[plan.kind],
            attributes=plan.attributes,
            links=links,
            start_time=plan.start_ns,
        )
        if plan.fault_event is not None:
            span.add_event(FAULT_EVENT, plan.fault_event, timestamp=plan.start_ns)
        if plan.error is not None:
            span.set_status(Status(StatusCode.ERROR, plan.error))
        span.end(end_time=max(plan.end_ns, plan.start_ns))
        if retry_key is not None:
            self._remember(retry_key, span.get_span_context(), failed=plan.error is not None)

    # ---- an agent's retry ------------------------------------------------------------

    @staticmethod
    def _retry_key(fields: Mapping[str, Any]) -> tuple[str, str, str] | None:
        if fields.get("kind") != "tool_call":
            return None
        arguments = json.dumps(fields.get("arguments"), sort_keys=True, default=str)
        return (str(fields.get("episode")), str(fields.get("tool")), arguments)

    def _remember(self, key: tuple[str, str, str], context: SpanContext, failed: bool) -> None:
        with self._lock:
            if not failed:
                self._failed.pop(key, None)
                return
            self._failed[key] = f"{context.trace_id:032x}-{context.span_id:016x}"
            self._failed.move_to_end(key)
            while len(self._failed) > RETRY_MEMORY:
                self._failed.popitem(last=False)

    # ---- the runner's episode span --------------------------------------------------

    @contextmanager
    def episode(
        self, episode: str, name: str, attributes: Mapping[str, Any]
    ) -> Iterator[EpisodeSpan]:
        clean = {key: value for key, value in attributes.items() if value is not None}
        clean.setdefault("gen_ai.conversation.id", episode)
        clean.setdefault("session.id", episode)
        clean.setdefault("chaosproxy.episode.id", episode)
        span = self.tracer.start_span(name, kind=SpanKind.INTERNAL, attributes=clean)
        self._episodes[episode] = span.get_span_context()
        try:
            yield _Episode(span)
        except BaseException as failure:
            span.record_exception(failure)
            span.set_status(Status(StatusCode.ERROR, type(failure).__name__))
            raise
        finally:
            self._episodes.pop(episode, None)
            span.end()

    def shutdown(self) -> None:
        self.provider.shutdown()

    def describe(self) -> str:
        url = self.settings.traces_url or "OTEL_EXPORTER_OTLP_* (environment)"
        return f"OpenTelemetry spans to {url} (content: {self.settings.content})"
