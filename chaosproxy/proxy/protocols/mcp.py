"""MCP `tools/call` (one JSON-RPC request, either protocol era) as a tool call.

Faults are rendered the way a real MCP server or gateway fails (`mcp_render`); a reply in
an SSE stream is rewritten in place, the other events pass as they arrive (relay.py).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from chaosproxy.faults import ResponseEffect, SyntheticResponse
from chaosproxy.proxy.core import Core
from chaosproxy.proxy.pipeline import Exchange, Outgoing, Rendered, ToolCall, retry_after_seconds
from chaosproxy.proxy.protocols import mcp_render as render
from chaosproxy.proxy.relay import Reply, ReplyHook, relay_plain, relay_sse, rpc_outcome
from chaosproxy.proxy.routing import Route
from chaosproxy.proxy.upstream import forward_headers, read_all

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


@dataclass
class McpAdapter:
    request: web.Request
    route: Route
    body: bytes
    message: dict[str, Any]
    arguments: dict[str, Any] | None

    @classmethod
    def parse(
        cls, request: web.Request, route: Route, body: bytes, message: dict[str, Any]
    ) -> tuple[McpAdapter, ToolCall]:
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        assert isinstance(params, dict)
        raw = params.get("arguments")
        arguments = raw if isinstance(raw, dict) else ({} if raw is None else None)
        adapter = cls(request, route, body, message, arguments)
        return adapter, ToolCall(tool=str(params.get("name", "")), arguments=arguments)

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
        url = self.route.target(self.request.rel_url.raw_query_string)
        return Outgoing("POST", url, headers, body)

    def synthetic(self, call: ToolCall, response: SyntheticResponse) -> Rendered:
        base = render.request_envelope(
            self.message, self.request.headers.get("MCP-Protocol-Version")
        )
        headers = dict(response.headers)
        if response.status < 400:
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
        return Rendered(
            status=status,
            body=json.dumps(message, ensure_ascii=False).encode(),
            headers={**headers, **JSON_HEADERS},
            outcome=rpc_outcome(message, status, tool_call=True),
        )

    def _hook(self, x: Exchange) -> ReplyHook:
        request_id = self.request_id

        async def hook(reply: dict[str, Any], in_band: bool) -> Reply:
            if not x.wants_reply:
                return Reply()
            status, result_body = render.tool_outcome(reply)
            if x.draft.upstream_status is not None and x.draft.upstream_status >= 400:
                status = x.draft.upstream_status
            effect = await x.after(status, result_body)
            if effect.action == "pass":
                return Reply()
            base = render.envelope(reply.get("result"))
            rendered = render_after(request_id, effect, result_body, in_band, base)
            x.draft.retry_after_s = retry_after_seconds(rendered.headers)
            return rendered

        return hook

    async def reply(self, x: Exchange, upstream: aiohttp.ClientResponse) -> web.StreamResponse:
        hook = self._hook(x)
        if upstream.headers.get("Content-Type", "").startswith("text/event-stream"):
            return await relay_sse(x.core, x.request, x.draft, upstream, self.request_id, hook)
        raw = await read_all(upstream)
        return await relay_plain(x.core, x.request, x.draft, upstream, raw, self.request_id, hook)


def tool_list_hook(core: Core, episode: str, domain: str) -> ReplyHook:
    """Rewrite `tools/list` replies through the engine (SchemaDrift renames fields there too)."""

    async def hook(reply: dict[str, Any], in_band: bool) -> Reply:
        result = reply.get("result")
        if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
            return Reply()
        tools = core.engine.rewrite_tool_list(episode=episode, domain=domain, tools=result["tools"])
        if tools == result["tools"]:
            return Reply()
        return Reply({**reply, "result": {**result, "tools": tools}})

    return hook
