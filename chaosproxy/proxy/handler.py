"""The agent-facing route: refuse what is not served, read the body, pick the protocol.

Tool calls (and model calls) go to the pipeline through their protocol's adapter;
everything else (MCP initialize, tools/list, GET streams, API descriptions, a built-in
domain's other routes) passes through `relay`, logged as protocol traffic.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable
from functools import partial
from typing import Any
from urllib.parse import unquote

from chaosproxy.errors import ChaosError
from chaosproxy.faults import Profile
from chaosproxy.proxy import pipeline, relay
from chaosproxy.proxy.apimap import TOOL_TEMPLATE, ApiMap, RouteMatch, identify
from chaosproxy.proxy.core import Core
from chaosproxy.proxy.effects import JSON_HEADERS, Gone, Rendered, encode_body, error_body
from chaosproxy.proxy.exchange import Draft, Exchange
from chaosproxy.proxy.finish import finish
from chaosproxy.proxy.jsonbody import BadJson
from chaosproxy.proxy.jsonrpc import is_batch, parse_messages
from chaosproxy.proxy.listener import Answer, Request, json_response, refusal
from chaosproxy.proxy.protocols.mcp import McpAdapter, expired_session, tool_list_rewrite
from chaosproxy.proxy.protocols.mcp_auth import oauth_answer
from chaosproxy.proxy.protocols.mcp_session import SessionBook
from chaosproxy.proxy.protocols.model import ModelAdapter, model_endpoint, model_protocol
from chaosproxy.proxy.protocols.rest import RestAdapter
from chaosproxy.proxy.routing import EPISODE_HEADER, STEP_HEADER, Route, RouteError, Router
from chaosproxy.proxy.upstream import (
    UpstreamFailure,
    forward_headers,
    read_all,
    response_headers,
)

log = logging.getLogger("chaosproxy.proxy")

IDENTIFIED_CACHE_SIZE = 4096
"""REST requests' identities kept per (service, method, path); started over when full."""

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
    if "_" not in raw_path and "%" not in raw_path:
        return False
    decoded = _decoded(raw_path).replace("\\", "/").lower()
    return any(part.strip() == CONTROL_SEGMENT for part in decoded.split("/"))


class Refused(ChaosError):
    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


def _check_subpath(route: Route) -> None:
    decoded = unquote(route.subpath) if "%" in route.subpath else route.subpath
    if "/." in decoded and any(part in {"..", "."} for part in decoded.split("/")):
        raise Refused(400, "bad_path", "path segments '.' and '..' are not allowed")
    for prefix in BLOCKED_PREFIXES:
        if decoded.startswith(prefix) and decoded[len(prefix) : len(prefix) + 1] in ("", "/"):
            raise Refused(404, "not_found", "oracle endpoints are not served through the proxy")


def _named(raw_path: str, route: Route) -> str:
    """The path as logged: the episode's readable id in place of its credential (the log is
    the operator's, and a credential in it would be one more place to steal it from)."""
    if not raw_path.startswith("/e/"):
        return raw_path  # the credential came in the episode header
    credential = raw_path[3:].split("/", 1)[0]
    return f"/e/{route.episode}{raw_path[3 + len(credential) :]}"


def _is_mcp(route: Route, request: Request) -> bool:
    if "Mcp-Session-Id" in request.headers or route.subpath.rstrip("/").endswith("/mcp"):
        return True
    return request.method == "GET" and "text/event-stream" in request.headers.get("Accept", "")


def _messages(request: Request, body: bytes) -> list[dict[str, Any]] | None:
    """JSON-RPC messages of a POST body; parsed only when the body can be one."""
    if request.method != "POST" or not body or b"jsonrpc" not in body:
        return None
    return parse_messages(body)


def _rewrite_openapi(route: Route, raw: bytes) -> bytes:
    """Point the document's `servers` at the proxy prefix, so OpenAPI clients call through it."""
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, RecursionError, ValueError):
        return raw
    if not isinstance(document, dict) or "openapi" not in document:
        return raw
    document["servers"] = [{"url": route.prefix}]
    return json.dumps(document, ensure_ascii=False).encode()


class ProxyHandler:
    """`tool_services`: built-in domains, whose only tool calls are `POST /tools/{name}`;
    every other upstream is a REST API whose every route is a tool (`apis`: their OpenAPI)."""

    def __init__(
        self,
        core: Core,
        router: Router,
        tool_services: frozenset[str] = frozenset(),
        apis: dict[str, ApiMap] | None = None,
    ) -> None:
        self.core = core
        self.router = router
        self.tool_services = tool_services
        self.apis = apis if apis is not None else {}
        self._routes: tuple[Profile, dict[str, ApiMap]] | None = None
        self._identified: dict[tuple[str, str, str], RouteMatch | None] = {}
        self.mcp_sessions = SessionBook()

    def profile_routes(self, domain: str) -> ApiMap | None:
        """The default profile's `routes:` for `domain`, compiled once per profile."""
        profile = self.core.engine.profile
        if self._routes is None or self._routes[0] is not profile:
            self._routes = (
                profile,
                {name: ApiMap.from_routes(routes) for name, routes in profile.routes.items()},
            )
            self._identified.clear()
        return self._routes[1].get(domain)

    def _identify(self, method: str, route: Route) -> RouteMatch | None:
        """`identify` for a REST upstream's request, kept per (service, method, path)."""
        routes = self.profile_routes(route.domain)
        key = (route.domain, method, route.subpath)
        if key in self._identified:
            return self._identified[key]
        match = identify(method, route.subpath, self.apis.get(route.domain), routes)
        if len(self._identified) >= IDENTIFIED_CACHE_SIZE:
            self._identified.clear()
        self._identified[key] = match
        return match

    async def __call__(self, request: Request) -> Answer:
        raw_path = request.path
        if _names_control(raw_path):
            return refusal(404, "not_found", "not found")
        if raw_path.startswith(("/.well-known/", "/register", "/authorize", "/token")):
            oauth = oauth_answer(raw_path)
            if oauth is not None:
                return json_response(404, oauth)
        try:
            route = self.router.resolve(raw_path, request.headers.get(EPISODE_HEADER))
            _check_subpath(route)
        except RouteError as exc:
            kinds = {404: "not_found", 403: "forbidden"}
            return refusal(exc.status, kinds.get(exc.status, "bad_request"), str(exc))
        except Refused as exc:
            return refusal(exc.status, exc.kind, str(exc))
        body = request.body
        bad: BadJson | None = None
        try:
            messages = _messages(request, body)
        except BadJson as exc:
            messages, bad = None, exc
        draft = Draft(
            route=route,
            method=request.method,
            path=raw_path if self.router.credentials is None else _named(raw_path, route),
            transport="mcp" if messages is not None or _is_mcp(route, request) else "rest",
            bytes_in=len(body),
        )
        draft.restarted = self.core.begin(route.episode)
        draft.attempt = self.core.book.attempts.get(route.episode)
        if self.core.tracer.on:
            draft.trace = self.core.tracer.incoming(request.headers, body, messages, route.episode)
        try:
            if bad is not None:
                return self._bad_json(request, draft, body, bad)
            if draft.transport == "mcp":
                return await self._mcp(request, draft, body, messages)
            return await self._dispatch(request, draft, body)
        except BadJson as exc:
            return self._bad_json(request, draft, body, exc)
        except asyncio.CancelledError:
            finish(Exchange(self.core, request, draft), Gone())
            raise
        except Exception as exc:  # still one logged answer (unless a stream is under way)
            if draft.logged:
                raise
            log.exception("chaosproxy: the handler crashed on %s %s", request.method, raw_path)
            return finish(Exchange(self.core, request, draft), pipeline.crashed(exc))
        finally:
            self.core.end(route.episode)

    def _bad_json(self, request: Request, draft: Draft, body: bytes, problem: BadJson) -> Answer:
        """Hostile JSON from the client: a logged 400 that names the problem, upstream untouched.

        JSON-RPC (MCP) gets a -32700 parse error with a null id (the id could not be read).
        """
        draft.error = f"bad_json: {problem}"
        if isinstance(problem.value, dict):
            params = problem.value.get("params")
            arguments = params.get("arguments") if isinstance(params, dict) else None
            draft.arguments = arguments if isinstance(arguments, dict) else problem.value
        if draft.transport == "mcp" or b'"jsonrpc"' in body:
            draft.transport = "mcp"
            reply: dict[str, Any] = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32700, "message": f"Parse error: {problem}"},
            }
        else:
            reply = error_body("bad_json", str(problem))
        return finish(
            Exchange(self.core, request, draft), Rendered(400, encode_body(reply), JSON_HEADERS)
        )

    def _dispatch(self, request: Request, draft: Draft, body: bytes) -> Awaitable[Answer]:
        """The call's coroutine (pipeline or pass-through), for `__call__` to await: no
        frame of its own on the await chain, which every resumption walks."""
        route = draft.route
        if route.domain in self.tool_services:
            if request.method == "POST" and route.rest_tool() is not None:
                adapter, call = RestAdapter.tool(request.method, request.query, route, body)
                return pipeline.run(self.core, request, draft, call, adapter)
            return self._pass(request, draft, body, None, None)
        endpoint = model_endpoint(request.method, route.subpath)
        if endpoint is not None:
            model, call, draft.model = ModelAdapter.parse(request.query, route, body, endpoint)
            return pipeline.run(self.core, request, draft, call, model)
        if model_protocol(request.method, route.subpath):
            return self._pass(request, draft, body, None, None)
        match = self._identify(request.method, route)
        if match is None:
            return self._pass(request, draft, body, None, None)
        if match.template == TOOL_TEMPLATE:
            adapter, call = RestAdapter.tool(request.method, request.query, route, body)
        else:
            adapter, call = RestAdapter.api(request.method, request.query, route, body, match)
            draft.api_route = f"{request.method} {match.template}"
        draft.note = adapter.body_note
        return pipeline.run(self.core, request, draft, call, adapter)

    async def _mcp(
        self,
        request: Request,
        draft: Draft,
        body: bytes,
        messages: list[dict[str, Any]] | None,
    ) -> Answer:
        first = messages[0] if messages else None
        route = draft.route
        gone = expired_session(
            self.mcp_sessions, request.headers, route, first.get("id") if first else None
        )
        if gone is not None:
            draft.error = gone[1]
            return finish(Exchange(self.core, request, draft), gone[0])
        if messages is None:
            return await self._pass(request, draft, body, None, None)
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
        engine = self.core.engine
        marks = partial(engine.tool_list_marks, route.episode, route.domain)

        if method == "tools/call" and "id" in message:
            adapter, call = McpAdapter.parse(
                request.headers, request.query, route, body, message, self.mcp_sessions, marks
            )
            return await pipeline.run(self.core, request, draft, call, adapter)
        if method in ("initialize", "server/discover"):
            await self._hold_initialize(draft)
        rewrite = None
        if method == "tools/list":
            rewrite = tool_list_rewrite(
                self.mcp_sessions,
                request.headers,
                route,
                marks,
                partial(engine.rewrite_tool_list, route.episode, route.domain),
            )
        return await self._pass(request, draft, body, message.get("id"), rewrite)

    async def _hold_initialize(self, draft: Draft) -> None:
        """The request that opens a connection (`initialize`; 2026-07-28's `server/discover`):
        the engine may hold it (SlowInitialize); the log line names the fault."""
        held = self.core.engine.initialize(draft.route.episode, draft.route.domain)
        if held is None:
            return
        draft.fault, delay_s = held
        if delay_s > 0:
            await asyncio.sleep(delay_s)

    async def _pass(
        self,
        request: Request,
        draft: Draft,
        body: bytes,
        request_id: Any,
        rewrite: relay.Rewrite | None,
    ) -> Answer:
        """Protocol traffic: forwarded and logged, never faulted."""
        route = draft.route
        headers = forward_headers(request.headers, {EPISODE_HEADER: route.episode})
        headers.popall(STEP_HEADER, None)  # the proxy's to set, on tool calls only
        streaming = request.method == "GET" and "text/event-stream" in request.headers.get(
            "Accept", ""
        )
        x = Exchange(self.core, request, draft)
        try:
            async with self.core.upstream.request(
                request.method,
                route.target(request.query),
                headers,
                body,
                streaming=streaming,
            ) as upstream:
                draft.upstream_called = True
                draft.upstream_status = upstream.status
                reply_headers = response_headers(upstream.headers)
                if reply_headers.get("Content-Type", "").startswith("text/event-stream"):
                    rules = relay.PassRules(upstream.status, request_id, rewrite)
                    return await relay.stream(x, upstream, reply_headers, rules)
                raw = await read_all(upstream, self.core.upstream.limits.max_response_bytes)
            if route.subpath.endswith("/openapi.json") and upstream.status == 200:
                raw = _rewrite_openapi(route, raw)
            return finish(x, relay.whole(upstream.status, reply_headers, raw, request_id, rewrite))
        except UpstreamFailure as failure:
            return finish(x, pipeline.upstream_failed(failure))
