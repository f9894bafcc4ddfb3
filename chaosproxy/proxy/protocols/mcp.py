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

import asyncio
import copy
import json
from dataclasses import dataclass
from typing import Any

from chaosproxy.faults import ResponseEffect, SyntheticResponse
from chaosproxy.proxy.core import Core
from chaosproxy.proxy.exchange import Draft, Outcome
from chaosproxy.proxy.listener import Answer, Request
from chaosproxy.proxy.pipeline import Exchange, Outgoing, Rendered, ToolCall, retry_after_seconds
from chaosproxy.proxy.protocols import mcp_render as render
from chaosproxy.proxy.protocols.mcp_session import SESSION_HEADER, SessionBook, SessionKey
from chaosproxy.proxy.relay import (
    Reply,
    ReplyHook,
    relay_plain,
    relay_sse,
    rpc_outcome,
    sse_events,
)
from chaosproxy.proxy.routing import Route
from chaosproxy.proxy.upstream import UpstreamReply, forward_headers, read_all

JSON_HEADERS = {"Content-Type": "application/json"}


def render_refusal(
    request_id: Any,
    status: int,
    body: Any,
    how: str,
    headers: dict[str, str],
    in_band: bool,
    base: dict[str, Any],
) -> Reply:
    """An error the way the fault asks: the HTTP status, a JSON-RPC error, or `isError`."""
    retry_after = retry_after_seconds(headers)
    if how == "tool_error":
        result = render.error_result(status, body, base)
        return Reply(render.response(request_id, result), headers=headers)
    message = render.rpc_error(request_id, status, body, retry_after)
    if how == "http" and not in_band:
        return Reply(message, status=status, headers=headers)
    return Reply(message, headers=headers)


def render_after(
    request_id: Any, effect: ResponseEffect, body: Any, in_band: bool, base: dict[str, Any]
) -> Reply:
    status = effect.status or 200
    if effect.action == "reset":
        return Reply(cut=True)
    if effect.action == "lost_reply":
        if in_band:
            return Reply(cut=True)
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
        return Reply(render.response(request_id, result), headers=effect.headers)
    if status >= 400:
        return render_refusal(
            request_id, status, effect.body, effect.mcp_render, effect.headers, in_band, base
        )
    return Reply(
        render.response(request_id, render.ok_result(effect.body, base)), headers=effect.headers
    )


def session_key(request: Request, route: Route) -> SessionKey | None:
    session = request.headers.get(SESSION_HEADER)
    return None if session is None else (route.episode, route.domain, session)


def has_stream(request: Request) -> bool:
    """Where a server can announce: a session whose client accepts SSE replies."""
    return SESSION_HEADER in request.headers and "text/event-stream" in request.headers.get(
        "Accept", ""
    )


def announcements(
    core: Core, sessions: SessionBook, request: Request, route: Route
) -> list[dict[str, Any]]:
    """`[list_changed]` when this session has a stream and its tool list changed since it
    last saw it; else nothing."""
    key = session_key(request, route)
    if key is None or not has_stream(request):
        return []
    marks = core.engine.tool_list_marks(route.episode, route.domain)
    return [render.LIST_CHANGED] if sessions.announce(key, marks) else []


def expired_session(
    core: Core, sessions: SessionBook, request: Request, draft: Draft, request_id: Any
) -> Answer | None:
    """A request on a session a SessionExpired made the server forget: 404, like a server
    that no longer knows the `Mcp-Session-Id` (logged; the upstream is not called)."""
    key = session_key(request, draft.route)
    fault = sessions.expired(key) if key is not None else None
    if fault is None:
        return None
    draft.error = f"session forgotten earlier ({fault})"
    body = render.session_not_found(request_id)
    return core.send(
        request,
        draft,
        status=404,
        body=json.dumps(body).encode(),
        headers=JSON_HEADERS,
        outcome="http_error",
    )


async def hold_initialize(core: Core, draft: Draft) -> None:
    """The request that opens a connection (`initialize`; 2026-07-28's `server/discover`):
    the engine may hold it (SlowInitialize); the log line names the fault."""
    fault = core.engine.before_initialize(draft.route.episode, draft.route.domain)
    if fault is None:
        return
    draft.fault = fault
    delay = fault.params.get("delay_s")
    if isinstance(delay, int | float) and delay > 0:
        await asyncio.sleep(delay)


@dataclass
class McpAdapter:
    request: Request
    route: Route
    body: bytes
    message: dict[str, Any]
    arguments: dict[str, Any] | None
    core: Core
    sessions: SessionBook

    @classmethod
    def parse(
        cls,
        request: Request,
        route: Route,
        body: bytes,
        message: dict[str, Any],
        core: Core,
        sessions: SessionBook,
    ) -> tuple[McpAdapter, ToolCall]:
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        assert isinstance(params, dict)
        raw = params.get("arguments")
        arguments = raw if isinstance(raw, dict) else ({} if raw is None else None)
        adapter = cls(request, route, body, message, arguments, core, sessions)
        call = ToolCall(
            tool=str(params.get("name", "")),
            arguments=arguments,
            session=SESSION_HEADER in request.headers,
        )
        return adapter, call

    def _announcements(self) -> list[dict[str, Any]]:
        return announcements(self.core, self.sessions, self.request, self.route)

    @property
    def request_id(self) -> Any:
        return self.message.get("id")

    def outgoing(
        self, call: ToolCall, forwarded: dict[str, Any] | None, extra: dict[str, str]
    ) -> Outgoing:
        body = self.body
        if self.arguments is not None and forwarded is not None and forwarded != self.arguments:
            changed = copy.deepcopy(self.message)
            changed["params"]["arguments"] = forwarded
            body = json.dumps(changed, ensure_ascii=False).encode()
        headers = forward_headers(self.request.headers, extra)
        url = self.route.target(self.request.query)
        return Outgoing("POST", url, headers, body)

    def synthetic(self, call: ToolCall, response: SyntheticResponse) -> Rendered:
        base = render.request_envelope(
            self.message, self.request.headers.get("MCP-Protocol-Version")
        )
        headers = dict(response.headers)
        if response.mcp_effect == "session_expired":
            key = session_key(self.request, self.route)
            if key is not None:
                self.sessions.expire(key, "SessionExpired")
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

    def _hook(self, x: Exchange) -> ReplyHook:
        request_id = self.request_id

        async def hook(reply: dict[str, Any], in_band: bool) -> Reply:
            if not x.wants_reply:
                return Reply(before=self._announcements())
            status, result_body = render.tool_outcome(reply)
            if x.draft.upstream_status is not None and x.draft.upstream_status >= 400:
                status = x.draft.upstream_status
            effect = await x.after(status, result_body)
            if effect.action == "end_stream":
                return Reply(end=True)
            if effect.action == "pass":
                return Reply(before=self._announcements())
            base = render.envelope(reply.get("result"))
            rendered = render_after(request_id, effect, result_body, in_band, base)
            x.draft.retry_after_s = retry_after_seconds(rendered.headers)
            if rendered.status is None and not rendered.cut:
                rendered.before = self._announcements()
            return rendered

        return hook

    async def reply(self, x: Exchange, upstream: UpstreamReply) -> Answer:
        hook = self._hook(x)
        if upstream.headers.get("Content-Type", "").startswith("text/event-stream"):
            return await relay_sse(x.core, x.request, x.draft, upstream, self.request_id, hook)
        raw = await read_all(upstream, x.core.upstream.limits.max_response_bytes)
        return await relay_plain(x.core, x.request, x.draft, upstream, raw, self.request_id, hook)


def tool_list_hook(core: Core, request: Request, route: Route, sessions: SessionBook) -> ReplyHook:
    """Rewrite `tools/list` replies through the engine (drifted, removed, changed tools);
    the session has now seen the current list (nothing left to announce)."""
    episode, domain = route.episode, route.domain

    async def hook(reply: dict[str, Any], in_band: bool) -> Reply:
        result = reply.get("result")
        if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
            return Reply()
        key = session_key(request, route)
        if key is not None:
            sessions.shown(key, core.engine.tool_list_marks(episode, domain))
        tools = core.engine.rewrite_tool_list(episode=episode, domain=domain, tools=result["tools"])
        if tools == result["tools"]:
            return Reply()
        return Reply({**reply, "result": {**result, "tools": tools}})

    return hook
