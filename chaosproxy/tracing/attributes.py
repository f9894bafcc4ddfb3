"""A call's span, worked out from its CallRecord fields: name, kind, attributes, fault event.

Pure (no SDK): the otel module turns a `SpanPlan` into a span. The attribute names follow
the OpenTelemetry GenAI, MCP and HTTP semantic conventions; the injected fault has no
standard attribute yet (open-telemetry/semantic-conventions#2355), so it lives in the
`chaosproxy.*` namespace. docs/observability.md lists every name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

AttributeValue = str | bool | int | float

SpanKindName = Literal["internal", "client", "server"]

GENAI_TOOL = (
    "gen_ai.operation.name",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
)
MCP = (
    "mcp.method.name",
    "mcp.protocol.version",
    "mcp.session.id",
    "jsonrpc.request.id",
)
GENAI_MODEL = (
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.request.stream",
    "gen_ai.response.finish_reasons",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
)
COMMON = (
    "gen_ai.conversation.id",
    "session.id",
    "error.type",
    "http.request.method",
    "http.response.status_code",
    "http.request.resend_count",
)
CHAOSPROXY = (
    "chaosproxy.episode.id",
    "chaosproxy.episode.key",
    "chaosproxy.step",
    "chaosproxy.profile",
    "chaosproxy.domain",
    "chaosproxy.transport",
    "chaosproxy.kind",
    "chaosproxy.outcome",
    "chaosproxy.retry_of",
    "chaosproxy.forwarded_arguments",
    "chaosproxy.note",
    "chaosproxy.fault.name",
    "chaosproxy.fault.stage",
    "chaosproxy.fault.delivered",
    "chaosproxy.fault.fresh",
    "chaosproxy.fault.recoverable",
    "chaosproxy.fault.incident",
)
ALL_ATTRIBUTES = frozenset(GENAI_TOOL + MCP + GENAI_MODEL + COMMON + CHAOSPROXY)
"""Every attribute name a call span may carry (docs/observability.md lists them)."""

FAULT_EVENT = "chaosproxy.fault"
"""The span event on a faulted call; its attributes: `chaosproxy.fault.name`, `.stage`
and the fault's params as `chaosproxy.fault.params.<name>`."""

MAX_CONTENT_CHARS = 8192
"""Arguments longer than this (as JSON) are cut, so one call cannot flood the backend."""

_PROVIDERS = (
    ("/v1/messages", "anthropic"),
    ("/api/chat", "ollama"),
    ("/api/generate", "ollama"),
    (":generateContent", "gcp.gemini"),
    (":streamGenerateContent", "gcp.gemini"),
    ("/v1/", "openai"),
)


@dataclass
class CallExtras:
    """What the log line does not hold but the request did (read when it arrived)."""

    rpc_id: Any = None
    mcp_session: str | None = None
    mcp_protocol: str | None = None
    stream: bool | None = None
    request_model: str | None = None
    response_model: str | None = None
    finish_reasons: list[str] = field(default_factory=list)
    reply: bytes | None = None
    """The reply body the agent got (a whole body, or the stream event carrying the call's
    reply); turned into `gen_ai.tool.call.result` only when `--otlp-content` shows it."""


@dataclass
class SpanPlan:
    name: str
    kind: SpanKindName
    attributes: dict[str, AttributeValue]
    error: str | None
    """`error.type`, set when the call failed (span status ERROR)."""
    fault_event: dict[str, AttributeValue] | None
    start_ns: int
    end_ns: int


def wants_span(fields: Mapping[str, Any]) -> bool:
    """Tool and model calls always; protocol traffic only when a fault acted on it."""
    return fields.get("kind") != "protocol" or fields.get("fault") is not None


def provider_for(path: str) -> str:
    for marker, name in _PROVIDERS:
        if marker in path:
            return name
    return "openai"


def error_type(fields: Mapping[str, Any]) -> str | None:
    """`error.type` of a failed call, None when it succeeded."""
    outcome = fields.get("outcome", "ok")
    status = int(fields.get("status") or 0)
    if outcome == "ok":
        return None
    if status == 499:
        return "client_disconnected"
    if outcome == "reset":
        return "connection_reset"
    if outcome == "tool_error":
        return "tool_error"
    if outcome == "rpc_error":
        return "jsonrpc_error"
    if outcome == "timeout":
        return "timeout"
    return str(status) if status else str(outcome)


def _json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
    return text if len(text) <= MAX_CONTENT_CHARS else text[:MAX_CONTENT_CHARS] + "…"


def _scalar(value: Any) -> AttributeValue:
    if isinstance(value, (str, bool, int, float)):
        return value
    return _json(value)


def plan_span(
    fields: Mapping[str, Any],
    extras: CallExtras,
    *,
    profile: str | None,
    content: str,
    retry_of: str | None = None,
) -> SpanPlan:
    """The span of one finished call (`fields`: the CallRecord fields)."""
    kind = fields.get("kind")
    transport = fields.get("transport")
    tool = fields.get("tool") or ""
    episode = str(fields.get("episode", ""))
    fault = fields.get("fault")
    attrs: dict[str, AttributeValue] = {
        "gen_ai.conversation.id": episode,
        "session.id": episode,
        "chaosproxy.episode.id": episode,
        "chaosproxy.episode.key": str(fields.get("episode_key") or episode),
        "chaosproxy.domain": str(fields.get("domain", "")),
        "chaosproxy.transport": str(transport),
        "chaosproxy.kind": str(kind),
        "chaosproxy.outcome": str(fields.get("outcome", "ok")),
        "http.request.method": str(fields.get("method", "")),
    }
    status = fields.get("status")
    if status:
        attrs["http.response.status_code"] = int(status)
    if fields.get("step") is not None:
        attrs["chaosproxy.step"] = int(fields["step"])
    if profile:
        attrs["chaosproxy.profile"] = profile
    if fields.get("note"):
        attrs["chaosproxy.note"] = str(fields["note"])
    if retry_of:
        attrs["chaosproxy.retry_of"] = retry_of
    resent = fields.get("provider_retries")
    if isinstance(resent, int) and resent > 0:  # the proxy's own re-sends upstream only
        attrs["http.request.resend_count"] = resent
    span_kind: SpanKindName = "internal"
    if kind == "model_call":
        model = extras.request_model or fields.get("model") or "unknown"
        name = f"chat {model}"
        span_kind = "client"
        attrs["gen_ai.operation.name"] = "chat"
        attrs["gen_ai.provider.name"] = provider_for(str(fields.get("path", "")))
        attrs["gen_ai.request.model"] = str(model)
        if extras.stream is not None:
            attrs["gen_ai.request.stream"] = extras.stream
        if extras.response_model:
            attrs["gen_ai.response.model"] = extras.response_model
        if extras.finish_reasons:
            attrs["gen_ai.response.finish_reasons"] = _json(extras.finish_reasons)
        _usage(fields.get("usage"), attrs)
    elif kind == "tool_call" and transport == "mcp":
        name = f"tools/call {tool}"
        span_kind = "client"
        attrs["mcp.method.name"] = "tools/call"
        attrs["gen_ai.operation.name"] = "execute_tool"
        attrs["gen_ai.tool.name"] = tool
        if extras.rpc_id is not None:
            attrs["gen_ai.tool.call.id"] = str(extras.rpc_id)
        _mcp(extras, attrs)
    elif kind == "tool_call":
        name = f"execute_tool {tool}"
        attrs["gen_ai.operation.name"] = "execute_tool"
        attrs["gen_ai.tool.name"] = tool
    else:
        method = fields.get("rpc_method")
        name = str(method) if method else f"{fields.get('method', '')} {fields.get('path', '')}"
        span_kind = "server"
        if transport == "mcp" and method:
            attrs["mcp.method.name"] = str(method)
            _mcp(extras, attrs)
    show = content == "all" or (content == "faults" and fault is not None)
    if show and kind == "tool_call" and fields.get("arguments") is not None:
        attrs["gen_ai.tool.call.arguments"] = _json(fields["arguments"])
        forwarded = fields.get("forwarded_arguments")
        if forwarded is not None and forwarded != fields["arguments"]:
            attrs["chaosproxy.forwarded_arguments"] = _json(forwarded)
    if show and kind == "tool_call" and extras.reply is not None:
        attrs["gen_ai.tool.call.result"] = tool_result(extras.reply, transport == "mcp")
    event: dict[str, AttributeValue] | None = None
    if isinstance(fault, Mapping):
        attrs["chaosproxy.fault.name"] = str(fault.get("name"))
        attrs["chaosproxy.fault.stage"] = str(fault.get("stage"))
        attrs["chaosproxy.fault.delivered"] = bool(fields.get("fault_delivered"))
        attrs["chaosproxy.fault.fresh"] = bool(fault.get("fresh", True))
        attrs["chaosproxy.fault.recoverable"] = bool(fault.get("recoverable"))
        if fault.get("incident"):
            attrs["chaosproxy.fault.incident"] = str(fault["incident"])
        event = {
            "chaosproxy.fault.name": str(fault.get("name")),
            "chaosproxy.fault.stage": str(fault.get("stage")),
        }
        for key, value in sorted((fault.get("params") or {}).items()):
            event[f"chaosproxy.fault.params.{key}"] = _scalar(value)
    error = error_type(fields)
    if error is not None:
        attrs["error.type"] = error
    start = int(float(fields.get("ts", 0.0)) * 1e9)
    end = start + int(float(fields.get("latency_ms", 0.0)) * 1e6)
    return SpanPlan(name, span_kind, attrs, error, event, start, end)


def tool_result(reply: bytes, mcp: bool) -> str:
    """What a tool answered, as the agent got it: a REST body as JSON (or its text); for
    MCP the JSON-RPC `result` (or `error`), read from a JSON body or from the SSE event
    that carried it. Cut at 8 KiB like the arguments."""
    text = reply.decode("utf-8", errors="replace")
    if mcp and text.lstrip().startswith(("data:", "event:", "id:", ":")):
        data = [line[5:].lstrip() for line in text.splitlines() if line.startswith("data:")]
        text = "\n".join(data)
    try:
        value = json.loads(text) if text else None
    except (ValueError, RecursionError):
        return text if len(text) <= MAX_CONTENT_CHARS else text[:MAX_CONTENT_CHARS] + "…"
    if mcp and isinstance(value, Mapping):
        value = value["result"] if "result" in value else value.get("error", value)
    return _json(value)


def _mcp(extras: CallExtras, attrs: dict[str, AttributeValue]) -> None:
    if extras.mcp_protocol:
        attrs["mcp.protocol.version"] = extras.mcp_protocol
    if extras.mcp_session:
        attrs["mcp.session.id"] = extras.mcp_session
    if extras.rpc_id is not None:
        attrs["jsonrpc.request.id"] = str(extras.rpc_id)


def _usage(usage: Any, attrs: dict[str, AttributeValue]) -> None:
    """Token counts under the provider's own keys (OpenAI, Anthropic, Ollama)."""
    if not isinstance(usage, Mapping):
        return
    for target, keys in (
        ("gen_ai.usage.input_tokens", ("prompt_tokens", "input_tokens", "prompt_eval_count")),
        ("gen_ai.usage.output_tokens", ("completion_tokens", "output_tokens", "eval_count")),
    ):
        for key in keys:
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                attrs[target] = value
                break
