"""A REST tool call (`POST /tools/{name}`): ask the engine, apply its decisions, log."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from chaosproxy.proxy.core import Core, encode_body
from chaosproxy.proxy.engine_api import After, Before, read_after, read_before, retry_after_seconds
from chaosproxy.proxy.exchange import Draft, error_body
from chaosproxy.proxy.routing import EPISODE_HEADER, STEP_HEADER
from chaosproxy.proxy.upstream import UpstreamFailure, forward_headers, read_all, response_headers

JSON_HEADERS = {"Content-Type": "application/json"}


def parse_object(body: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(body) if body else {}
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def ask_before(core: Core, draft: Draft, arguments: dict[str, Any] | None) -> Before:
    """Count the step and ask the engine: every tool call, whether or not it is forwarded."""
    from chaosproxy.faults import CallContext

    draft.kind = "tool_call"
    draft.step = core.book.next_step(draft.route.episode)
    context = CallContext(
        episode=draft.route.episode,
        step=draft.step,
        domain=draft.route.domain,
        tool=draft.tool or "",
        transport=draft.transport,
        arguments=arguments or {},
    )
    before = read_before(core.engine.before_call(context))
    draft.fault = before.fault
    draft.episode_key = before.episode_key
    return before


async def rest_tool_call(
    core: Core, request: web.Request, draft: Draft, tool: str, body: bytes
) -> web.StreamResponse:
    draft.tool = tool
    arguments = parse_object(body)
    draft.arguments = arguments
    before = ask_before(core, draft, arguments)
    if before.delay_s > 0:
        await asyncio.sleep(before.delay_s)
    if before.action == "reset":
        return core.reset(request, draft)
    if before.action == "respond" and before.response is not None:
        synthetic = before.response
        headers = {**JSON_HEADERS, **synthetic.headers}
        draft.retry_after_s = retry_after_seconds(headers)
        return core.send(
            request,
            draft,
            status=synthetic.status,
            body=encode_body(synthetic.body),
            headers=headers,
        )
    forwarded = before.arguments if before.arguments is not None else arguments
    draft.forwarded_arguments = forwarded
    out_body = body if arguments is None or forwarded == arguments else encode_body(forwarded)
    extra = {EPISODE_HEADER: draft.route.episode, STEP_HEADER: str(draft.step)}
    if out_body is not body:
        extra["Content-Type"] = "application/json"
    upstream_headers = forward_headers(request.headers, extra)
    try:
        async with core.upstream.request(
            "POST", draft.route.target(request.rel_url.raw_query_string), upstream_headers, out_body
        ) as upstream:
            draft.upstream_called = True
            draft.upstream_status = upstream.status
            raw = await read_all(upstream)
            parsed: Any = None
            try:
                parsed = json.loads(raw) if raw else None
            except (UnicodeDecodeError, json.JSONDecodeError):
                parsed = None
            after = read_after(
                core.engine.after_call(before.raw, status=upstream.status, body=parsed)
            )
            if not after.delivered:
                draft.fault_effective = False
            if after.action == "pass":
                return core.send(
                    request,
                    draft,
                    status=upstream.status,
                    body=raw,
                    headers=response_headers(upstream.headers),
                )
    except UpstreamFailure as failure:
        return core.upstream_failed(request, draft, failure)
    return await apply_rest_effect(core, request, draft, after, parsed)


async def apply_rest_effect(
    core: Core, request: web.Request, draft: Draft, after: After, parsed: Any
) -> web.StreamResponse:
    if after.delay_s > 0:
        await asyncio.sleep(after.delay_s)
    headers = {**JSON_HEADERS, **after.headers}
    draft.retry_after_s = retry_after_seconds(headers)
    status = after.status or 200
    if after.action == "reset":
        return core.reset(request, draft)
    if after.action == "truncate":
        text = after.truncated_text
        if text is None:
            full = encode_body(after.body if after.body is not None else parsed)
            text = full[: after.truncate_at or 0].decode("utf-8", errors="ignore")
        return core.send(request, draft, status=status, body=text.encode(), headers=headers)
    if after.action == "lost_reply":
        body = after.body if after.body is not None else error_body("timeout", "upstream timed out")
        return core.send(
            request, draft, status=after.status or 504, body=encode_body(body), headers=headers
        )
    return core.send(request, draft, status=status, body=encode_body(after.body), headers=headers)
