"""The catch-all route: resolve the service, read the body, pick the flow."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import unquote

from aiohttp import web

from chaosproxy.proxy.core import Core, refusal
from chaosproxy.proxy.exchange import Draft
from chaosproxy.proxy.jsonrpc import is_batch, parse_messages
from chaosproxy.proxy.mcp_flow import mcp_tool_call, tool_list_hook
from chaosproxy.proxy.relay import ReplyHook, relay_plain, relay_sse
from chaosproxy.proxy.rest_flow import rest_tool_call
from chaosproxy.proxy.routing import EPISODE_HEADER, Route, RouteError, Router
from chaosproxy.proxy.upstream import UpstreamFailure, forward_headers, read_all

BLOCKED_PREFIXES = ("/_oracle",)
"""Service paths agents must not reach through the proxy (the oracle reads state)."""

CONTROL_SEGMENT = "_chaos"
"""The control API lives on its own listener; on the agent port it is not found, however
the path is spelled (percent-encoded, double-encoded, any case, under /e/{episode}/...)."""


def _decoded(raw_path: str) -> str:
    """The path with percent-encoding undone until it no longer changes (double encoding)."""
    previous, current = None, raw_path
    for _ in range(4):
        if previous == current:
            break
        previous, current = current, unquote(current)
    return current


def _names_control(raw_path: str) -> bool:
    decoded = _decoded(raw_path).replace("\\", "/").lower()
    return any(part.strip() == CONTROL_SEGMENT for part in decoded.split("/"))


class Refused(Exception):
    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


def _check_subpath(route: Route) -> None:
    decoded = unquote(route.subpath)
    if any(part in {"..", "."} for part in decoded.split("/")):
        raise Refused(400, "bad_path", "path segments '.' and '..' are not allowed")
    if any(decoded == p or decoded.startswith(p + "/") for p in BLOCKED_PREFIXES):
        raise Refused(404, "not_found", "oracle endpoints are not served through the proxy")


def _is_mcp(route: Route, request: web.Request, messages: list[dict[str, Any]] | None) -> bool:
    if messages is not None or "Mcp-Session-Id" in request.headers:
        return True
    return route.subpath.rstrip("/").endswith("/mcp") or (
        request.method == "GET" and "text/event-stream" in request.headers.get("Accept", "")
    )


def _rewrite_openapi(route: Route, raw: bytes) -> bytes:
    """Point the document's `servers` at the proxy prefix, so OpenAPI clients call through it."""
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return raw
    if not isinstance(document, dict) or "openapi" not in document:
        return raw
    document["servers"] = [{"url": route.prefix}]
    return json.dumps(document, ensure_ascii=False).encode()


class ProxyHandler:
    def __init__(self, core: Core, router: Router) -> None:
        self.core = core
        self.router = router

    async def __call__(self, request: web.Request) -> web.StreamResponse:
        if _names_control(request.rel_url.raw_path):
            return refusal(404, "not_found", "not found")
        try:
            route = self.router.resolve(
                request.rel_url.raw_path, request.headers.get(EPISODE_HEADER)
            )
            _check_subpath(route)
            body = await self._read_body(request)
        except RouteError as exc:
            return refusal(
                exc.status, "not_found" if exc.status == 404 else "bad_request", str(exc)
            )
        except Refused as exc:
            return refusal(exc.status, exc.kind, str(exc))
        messages = parse_messages(body) if request.method == "POST" and body else None
        draft = Draft(
            route=route,
            method=request.method,
            path=request.rel_url.raw_path,
            transport="mcp" if _is_mcp(route, request, messages) else "rest",
            bytes_in=len(body),
        )
        try:
            return await self._dispatch(request, draft, body, messages)
        except asyncio.CancelledError:
            self.core.gone(draft)
            raise

    async def _dispatch(
        self,
        request: web.Request,
        draft: Draft,
        body: bytes,
        messages: list[dict[str, Any]] | None,
    ) -> web.StreamResponse:
        if draft.transport == "rest" and request.method == "POST":
            tool = draft.route.rest_tool()
            if tool is not None:
                return await rest_tool_call(self.core, request, draft, tool, body)
        if messages is None:
            hook = None
            return await self._pass(request, draft, body, None, hook)
        if is_batch(body):
            draft.rpc_method = "batch"
            if any(m.get("method") == "tools/call" for m in messages):
                return refusal(
                    400,
                    "batch_not_supported",
                    "JSON-RPC batches containing tools/call are not supported: MCP dropped "
                    "batching in 2025-06-18; send one tools/call per request",
                )
            return await self._pass(request, draft, body, None, None)
        message = messages[0]
        method = message.get("method")
        draft.rpc_method = str(method) if method is not None else "response"
        if method == "tools/call" and "id" in message:
            return await mcp_tool_call(self.core, request, draft, message, body)
        hook = tool_list_hook(self.core, draft) if method == "tools/list" else None
        return await self._pass(request, draft, body, message.get("id"), hook)

    async def _read_body(self, request: web.Request) -> bytes:
        if not request.body_exists:
            return b""
        limit = self.core.limits.max_body_bytes
        if request.content_length is not None and request.content_length > limit:
            raise Refused(413, "body_too_large", f"request body over {limit} bytes")
        try:
            return await asyncio.wait_for(request.read(), self.core.limits.body_timeout_s)
        except web.HTTPRequestEntityTooLarge:
            raise Refused(413, "body_too_large", f"request body over {limit} bytes") from None
        except TimeoutError:
            raise Refused(
                408,
                "body_timeout",
                f"request body not received in {self.core.limits.body_timeout_s}s",
            ) from None

    async def _pass(
        self,
        request: web.Request,
        draft: Draft,
        body: bytes,
        request_id: Any,
        hook: ReplyHook | None,
    ) -> web.StreamResponse:
        route = draft.route
        headers = forward_headers(request.headers, {EPISODE_HEADER: route.episode})
        streaming = request.method == "GET" and "text/event-stream" in request.headers.get(
            "Accept", ""
        )
        try:
            async with self.core.upstream.request(
                request.method,
                route.target(request.rel_url.raw_query_string),
                headers,
                body,
                streaming=streaming,
            ) as upstream:
                draft.upstream_called = True
                draft.upstream_status = upstream.status
                if upstream.headers.get("Content-Type", "").startswith("text/event-stream"):
                    return await relay_sse(self.core, request, draft, upstream, request_id, hook)
                raw = await read_all(upstream)
                if route.subpath.endswith("/openapi.json") and upstream.status == 200:
                    raw = _rewrite_openapi(route, raw)
                return await relay_plain(self.core, request, draft, upstream, raw, request_id, hook)
        except UpstreamFailure as failure:
            return self.core.upstream_failed(request, draft, failure)
