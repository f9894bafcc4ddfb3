"""An MCP `tools/call` (one JSON-RPC request) through the engine, in either protocol era."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

from aiohttp import web

from chaosproxy.proxy import mcp_render as render
from chaosproxy.proxy.core import Core
from chaosproxy.proxy.engine_api import After, Synthetic, read_after, retry_after_seconds
from chaosproxy.proxy.exchange import Draft
from chaosproxy.proxy.relay import Reply, relay_plain, relay_sse, rpc_outcome
from chaosproxy.proxy.rest_flow import ask_before
from chaosproxy.proxy.routing import EPISODE_HEADER, STEP_HEADER
from chaosproxy.proxy.upstream import UpstreamFailure, forward_headers, read_all

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


def render_synthetic(
    request_id: Any, synthetic: Synthetic, base: dict[str, Any]
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """A before-stage synthetic reply as (HTTP status, JSON-RPC message, headers)."""
    headers = dict(synthetic.headers)
    if synthetic.status < 400:
        return 200, render.response(request_id, render.ok_result(synthetic.body, base)), headers
    reply = render_refusal(
        request_id, synthetic.status, synthetic.body, synthetic.mcp_render, headers, False, base
    )
    assert reply.message is not None
    return reply.status or 200, reply.message, headers


def render_after(
    request_id: Any, after: After, body: Any, in_band: bool, base: dict[str, Any]
) -> Reply:
    status = after.status or 200
    if after.action == "reset":
        return Reply(cut=True)
    if after.action == "lost_reply":
        if in_band:
            return Reply(cut=True)
        lost = (
            after.body if after.body is not None else {"error": {"message": "upstream timed out"}}
        )
        return render_refusal(
            request_id, after.status or 504, lost, after.mcp_render, after.headers, False, base
        )
    if after.action == "truncate":
        source = after.body if after.body is not None else body
        result = render.truncated_result(source, after.truncate_at or 0, base, after.truncated_text)
        return Reply(render.response(request_id, result), headers=after.headers)
    if status >= 400:
        return render_refusal(
            request_id, status, after.body, after.mcp_render, after.headers, in_band, base
        )
    return Reply(
        render.response(request_id, render.ok_result(after.body, base)), headers=after.headers
    )


async def mcp_tool_call(
    core: Core, request: web.Request, draft: Draft, message: dict[str, Any], body: bytes
) -> web.StreamResponse:
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    assert isinstance(params, dict)
    raw_args = params.get("arguments")
    arguments = raw_args if isinstance(raw_args, dict) else ({} if raw_args is None else None)
    draft.rpc_method = "tools/call"
    draft.tool = str(params.get("name", ""))
    draft.arguments = arguments
    request_id = message.get("id")
    before = ask_before(core, draft, arguments)
    if before.delay_s > 0:
        await asyncio.sleep(before.delay_s)
    if before.action == "reset":
        return core.reset(request, draft)
    if before.action == "respond" and before.response is not None:
        base = render.request_envelope(message, request.headers.get("MCP-Protocol-Version"))
        status, reply, headers = render_synthetic(request_id, before.response, base)
        draft.retry_after_s = retry_after_seconds(headers)
        payload = json.dumps(reply, ensure_ascii=False).encode()
        return core.send(
            request,
            draft,
            status=status,
            body=payload,
            headers={**headers, **JSON_HEADERS},
            outcome=rpc_outcome(reply, status, tool_call=True),
        )
    forwarded = before.arguments if before.arguments is not None else arguments
    draft.forwarded_arguments = forwarded
    out_body = body
    if arguments is not None and forwarded != arguments:
        changed = copy.deepcopy(message)
        changed["params"]["arguments"] = forwarded
        out_body = json.dumps(changed, ensure_ascii=False).encode()
    upstream_headers = forward_headers(
        request.headers, {EPISODE_HEADER: draft.route.episode, STEP_HEADER: str(draft.step)}
    )

    async def hook(reply: dict[str, Any], in_band: bool) -> Reply:
        status, result_body = render.tool_outcome(reply)
        if draft.upstream_status is not None and draft.upstream_status >= 400:
            status = draft.upstream_status
        after = read_after(core.engine.after_call(before.raw, status=status, body=result_body))
        if not after.delivered:
            draft.fault_effective = False
        if after.action == "pass":
            return Reply()
        if after.delay_s > 0:
            await asyncio.sleep(after.delay_s)
        base = render.envelope(reply.get("result"))
        rendered = render_after(request_id, after, result_body, in_band, base)
        draft.retry_after_s = retry_after_seconds(rendered.headers)
        return rendered

    try:
        async with core.upstream.request(
            "POST", draft.route.target(request.rel_url.raw_query_string), upstream_headers, out_body
        ) as upstream:
            draft.upstream_called = True
            draft.upstream_status = upstream.status
            if upstream.headers.get("Content-Type", "").startswith("text/event-stream"):
                return await relay_sse(core, request, draft, upstream, request_id, hook)
            raw = await read_all(upstream)
            return await relay_plain(core, request, draft, upstream, raw, request_id, hook)
    except UpstreamFailure as failure:
        return core.upstream_failed(request, draft, failure)


def tool_list_hook(core: Core, draft: Draft) -> Any:
    """Rewrite `tools/list` replies through the engine (SchemaDrift renames fields there too)."""

    async def hook(reply: dict[str, Any], in_band: bool) -> Reply:
        result = reply.get("result")
        if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
            return Reply()
        tools = core.engine.rewrite_tool_list(
            episode=draft.route.episode, domain=draft.route.domain, tools=result["tools"]
        )
        if tools == result["tools"]:
            return Reply()
        return Reply({**reply, "result": {**result, "tools": tools}})

    return hook
