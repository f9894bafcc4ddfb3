"""MCP `tools/call` (one JSON-RPC request, either protocol era) as a tool call.

Faults are rendered the way a real MCP server or gateway fails (`mcp_render`); a reply in
an SSE stream is rewritten in place, the other events pass as they arrive (relay.py).

MCP-native faults act on the session as a real server would: a session the fault made the
server forget answers 404 from then on (`SessionBook`); a tools/list changed by an
incident (SchemaDrift, ToolRemoved, ToolChanged) is announced with
`notifications/tools/list_changed` on the session's next stream (a reply sent as SSE,
where the client holds a session and accepts SSE); `initialize` may be held
(SlowInitialize); a reply's stream may end before the reply (StreamClosed).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from multidict import CIMultiDict

from chaosproxy.faults import Decision, FaultInfo, ResponseEffect, SyntheticResponse
from chaosproxy.proxy.effects import (
    JSON_HEADERS,
    AskEngine,
    Cut,
    EndStream,
    EventStep,
    Forward,
    InStream,
    Outcome,
    Outgoing,
    Rendered,
    Reply,
    ReplyEvent,
    Said,
    ToolCall,
    outcome_for,
    retry_after_seconds,
)
from chaosproxy.proxy.jsonrpc import SseEvent, is_reply_to, rpc_outcome, sse_events
from chaosproxy.proxy.protocols import mcp_render as render
from chaosproxy.proxy.protocols.mcp_session import SESSION_HEADER, SessionBook, SessionKey
from chaosproxy.proxy.routing import Route

Marks = Callable[[], Any]
"""The episode's current tool-list marks (the engine's), to know what to announce."""


@dataclass(slots=True)
class McpReply:
    """How a fault renders the JSON-RPC reply: send `message` (None: the original), or cut.

    `status` and `headers` replace the HTTP status and add headers (whole bodies only)."""

    message: dict[str, Any] | None = None
    cut: bool = False
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)


def render_refusal(
    request_id: Any,
    status: int,
    body: Any,
    how: str,
    headers: dict[str, str],
    in_band: bool,
    base: dict[str, Any],
) -> McpReply:
    """An error the way the fault asks: the HTTP status, a JSON-RPC error, or `isError`."""
    retry_after = retry_after_seconds(headers)
    if how == "tool_error":
        result = render.error_result(status, body, base)
        return McpReply(render.response(request_id, result), headers=headers)
    message = render.rpc_error(request_id, status, body, retry_after)
    if how == "http" and not in_band:
        return McpReply(message, status=status, headers=headers)
    return McpReply(message, headers=headers)


def render_after(
    request_id: Any, effect: ResponseEffect, body: Any, in_band: bool, base: dict[str, Any]
) -> McpReply:
    status = effect.status or 200
    if effect.action == "reset":
        return McpReply(cut=True)
    if effect.action == "lost_reply":
        if in_band:
            return McpReply(cut=True)
        lost = (
            effect.body if effect.body is not None else {"error": {"message": "upstream timed out"}}
        )
        return render_refusal(
            request_id, effect.status or 504, lost, effect.mcp_render, effect.headers, False, base
        )
    if effect.action == "truncate":
        source = effect.body if effect.body is not None else body
        result = render.truncated_result(
            source, effect.truncate_at or 0, base, effect.truncated_text
        )
        return McpReply(render.response(request_id, result), headers=effect.headers)
    if status >= 400:
        return render_refusal(
            request_id, status, effect.body, effect.mcp_render, effect.headers, in_band, base
        )
    return McpReply(
        render.response(request_id, render.ok_result(effect.body, base)), headers=effect.headers
    )


def session_key(headers: Mapping[str, str], route: Route) -> SessionKey | None:
    session = headers.get(SESSION_HEADER)
    return None if session is None else (route.episode, route.domain, session)


def announcements(
    sessions: SessionBook, headers: Mapping[str, str], route: Route, marks: Marks
) -> list[dict[str, Any]]:
    """`[list_changed]` when this session has a stream (where a server can announce: a
    session whose client accepts SSE replies) and its tool list changed since it last saw
    it; else nothing."""
    session = headers.get(SESSION_HEADER)
    if session is None or "text/event-stream" not in headers.get("Accept", ""):
        return []
    key = (route.episode, route.domain, session)
    return [render.LIST_CHANGED] if sessions.announce(key, marks()) else []


def expired_session(
    sessions: SessionBook, headers: Mapping[str, str], route: Route, request_id: Any
) -> tuple[Rendered, str] | None:
    """A request on a session a SessionExpired made the server forget: 404, like a server
    that no longer knows the `Mcp-Session-Id` (the upstream is not called); with the
    log's error text."""
    if not sessions.any_expired:
        return None
    key = session_key(headers, route)
    fault = sessions.expired(key) if key is not None else None
    if fault is None:
        return None
    body = json.dumps(render.session_not_found(request_id)).encode()
    rendered = Rendered(404, body, JSON_HEADERS, "http_error")
    return rendered, f"session forgotten earlier ({fault})"


def tool_list_rewrite(
    sessions: SessionBook,
    headers: Mapping[str, str],
    route: Route,
    marks: Marks,
    rewrite_tools: Callable[[list[Any]], list[Any]],
) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    """Rewrite `tools/list` replies through the engine (drifted, removed, changed tools);
    the session has now seen the current list (nothing left to announce)."""

    def rewrite(reply: dict[str, Any]) -> dict[str, Any] | None:
        result = reply.get("result")
        if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
            return None
        key = session_key(headers, route)
        if key is not None:
            sessions.shown(key, marks())
        tools = rewrite_tools(result["tools"])
        if tools == result["tools"]:
            return None
        return {**reply, "result": {**result, "tools": tools}}

    return rewrite


def _reply_message(raw: bytes, request_id: Any) -> dict[str, Any] | None:
    """The JSON-RPC reply to `request_id` in a whole body, if it is one."""
    if request_id is None or not raw:
        return None
    try:
        message = json.loads(raw)
    except (UnicodeDecodeError, RecursionError, ValueError):
        return None
    return message if isinstance(message, dict) and is_reply_to(message, request_id) else None


@dataclass
class McpAdapter:
    headers: CIMultiDict[str]
    raw_query: str
    route: Route
    body: bytes
    message: dict[str, Any]
    arguments: dict[str, Any] | None
    sessions: SessionBook
    marks: Marks
    said: Said = field(default_factory=Said)
    _reply: dict[str, Any] | None = None
    _result_body: Any = None

    @classmethod
    def parse(
        cls,
        headers: CIMultiDict[str],
        raw_query: str,
        route: Route,
        body: bytes,
        message: dict[str, Any],
        sessions: SessionBook,
        marks: Marks,
    ) -> tuple[McpAdapter, ToolCall]:
        params = message.get("params")
        if not isinstance(params, dict):
            params = {}
        raw = params.get("arguments")
        arguments = raw if isinstance(raw, dict) else ({} if raw is None else None)
        adapter = cls(headers, raw_query, route, body, message, arguments, sessions, marks)
        call = ToolCall(
            tool=str(params.get("name", "")),
            arguments=arguments,
            session=SESSION_HEADER in headers,
        )
        return adapter, call

    def _announcements(self) -> list[dict[str, Any]]:
        return announcements(self.sessions, self.headers, self.route, self.marks)

    @property
    def request_id(self) -> Any:
        return self.message.get("id")

    def outgoing(self, call: ToolCall, forwarded: dict[str, Any] | None) -> Outgoing:
        body = self.body
        if self.arguments is not None and forwarded is not None and forwarded != self.arguments:
            changed = copy.deepcopy(self.message)
            changed["params"]["arguments"] = forwarded
            body = json.dumps(changed, ensure_ascii=False).encode()
        return Outgoing("POST", self.route.target(self.raw_query), body)

    def synthetic(
        self, call: ToolCall, response: SyntheticResponse, fault: FaultInfo | None
    ) -> Rendered:
        base = render.request_envelope(self.message, self.headers.get("MCP-Protocol-Version"))
        headers = dict(response.headers)
        if response.mcp_effect == "session_expired":
            key = session_key(self.headers, self.route)
            if key is not None:
                self.sessions.expire(key, fault.name if fault is not None else "a fault")
            status, message = 404, render.session_not_found(self.request_id)
        elif response.mcp_effect == "unknown_tool":
            status = 200
            result = render.unknown_tool_result(response.body, base)
            message = render.response(self.request_id, result)
        elif response.mcp_effect == "invalid_arguments":
            status = 200
            message = render.response(self.request_id, render.kit_error_result(response.body, base))
        elif response.status < 400:
            status = 200
            message = render.response(self.request_id, render.ok_result(response.body, base))
        else:
            reply = render_refusal(
                self.request_id,
                response.status,
                response.body,
                response.mcp_render,
                headers,
                False,
                base,
            )
            assert reply.message is not None
            status, message = reply.status or 200, reply.message
        outcome: Outcome = (
            "http_error"
            if response.mcp_effect == "session_expired"
            else rpc_outcome(message, status, tool_call=True)
        )
        before = self._announcements() if status == 200 else []
        if before:
            body = sse_events([*before, message])
            headers["Content-Type"] = "text/event-stream"
            return Rendered(status=status, body=body, headers=headers, outcome=outcome)
        return Rendered(
            status=status,
            body=json.dumps(message, ensure_ascii=False).encode(),
            headers={**headers, **JSON_HEADERS},
            outcome=outcome,
        )

    # ---- a whole reply -----------------------------------------------------------

    def passed(self, reply: Reply) -> Rendered:
        message = (
            self._reply if self._reply is not None else _reply_message(reply.raw, self.request_id)
        )
        if message is None:
            return Rendered(reply.status, reply.raw, reply.headers)
        return self._whole(reply, McpReply(), message, self._announcements())

    def ask(self, reply: Reply) -> AskEngine | None:
        message = self._reply = _reply_message(reply.raw, self.request_id)
        if message is None:
            return None
        return self._ask(reply.status, message)

    def _ask(self, upstream_status: int, message: dict[str, Any]) -> AskEngine:
        status, result_body = render.tool_outcome(message)
        if upstream_status >= 400:
            status = upstream_status
        self._result_body = result_body
        return AskEngine(status, result_body, message)

    def render(self, effect: ResponseEffect, reply: Reply, decision: Decision) -> Rendered | Cut:
        message = self._reply
        assert message is not None
        if effect.action == "end_stream":
            headers = reply.headers.copy()
            headers["Content-Type"] = "text/event-stream"
            return Rendered(reply.status, b"", headers, "reset")
        if effect.action == "pass":
            return self._whole(reply, McpReply(), message, self._announcements())
        rendered = self._rendered(effect, message, in_band=False)
        if rendered.cut:
            return Cut()
        before = self._announcements() if rendered.status is None else []
        return self._whole(reply, rendered, message, before)

    def _rendered(self, effect: ResponseEffect, message: dict[str, Any], in_band: bool) -> McpReply:
        base = render.envelope(message.get("result"))
        rendered = render_after(self.request_id, effect, self._result_body, in_band, base)
        self.said.retry_after_s = retry_after_seconds(rendered.headers)
        return rendered

    def _whole(
        self,
        reply: Reply,
        rendered: McpReply,
        message: dict[str, Any],
        before: list[dict[str, Any]],
    ) -> Rendered:
        headers = reply.headers.copy()
        final = rendered.message or message
        body = (
            reply.raw
            if rendered.message is None
            else json.dumps(final, ensure_ascii=False).encode()
        )
        if before:
            body = sse_events([*before, final])
            headers["Content-Type"] = "text/event-stream"
        status = rendered.status or reply.status
        for key, value in rendered.headers.items():
            headers[key] = value
        return Rendered(status, body, headers, rpc_outcome(final, status, tool_call=True))

    # ---- a streamed reply ----------------------------------------------------------

    def streamer(self, status: int, headers: CIMultiDict[str], decision: Decision) -> McpStream:
        return McpStream(self, status, headers, decision.wants_reply)


class McpStream:
    """A `tools/call` answered as SSE: the reply event goes through the engine, the other
    events pass as they arrive."""

    head_with_first_chunk = True

    def __init__(
        self, adapter: McpAdapter, status: int, headers: CIMultiDict[str], wants_reply: bool
    ) -> None:
        self.adapter = adapter
        self.status = status
        self.headers = headers
        self.wants_reply = wants_reply
        self.request_id = adapter.request_id

    def opening(self) -> AskEngine | None:
        return None

    def opened(self, effect: ResponseEffect) -> None:
        return None

    def event(self, event: SseEvent, sent: int) -> EventStep:
        message = event.message()
        if not is_reply_to(message, self.request_id):
            return Forward(event.raw)
        assert message is not None
        if not self.wants_reply:
            return self._reply_event(event.raw, message, self.adapter._announcements())
        return self.adapter._ask(self.status, message)

    def render(
        self, effect: ResponseEffect, ask: AskEngine, event: SseEvent, prepared: bool, sent: int
    ) -> EventStep:
        message = ask.message
        if effect.action == "end_stream":
            return EndStream(self.status)
        if effect.action == "pass":
            return self._reply_event(event.raw, message, self.adapter._announcements())
        rendered = self.adapter._rendered(effect, message, in_band=prepared)
        if rendered.cut:
            return Cut()
        final = rendered.message or message
        if rendered.status is not None and not prepared:
            headers = self.headers.copy()
            headers["Content-Type"] = "application/json"
            headers.update(rendered.headers)
            body = json.dumps(final, ensure_ascii=False).encode()
            return Rendered(
                rendered.status, body, headers, rpc_outcome(final, rendered.status, tool_call=True)
            )
        out = event.raw if rendered.message is None else event.with_message(rendered.message)
        before = self.adapter._announcements() if rendered.status is None else []
        return self._reply_event(out, final, before)

    def _reply_event(
        self, data: bytes, message: dict[str, Any], before: list[dict[str, Any]]
    ) -> ReplyEvent:
        out = sse_events(before) + data if before else data
        return ReplyEvent(out, self.status, rpc_outcome(message, self.status, tool_call=True))

    def ended(self, sent: int) -> InStream:
        return InStream(
            self.status,
            outcome_for(self.status, tool_call=True),
            sent,
            "stream ended without a reply",
        )
