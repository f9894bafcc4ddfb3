"""REST as tool calls: `POST /tools/{name}` with a JSON body, or any route of any REST API.

Arguments are the JSON body's fields, plus, for a generic route, its path parameters and
query string (a body field wins a name clash; the query's copy is then `query.NAME`).
ParameterCorruption can rewrite any of them and the request is rebuilt with the change in
place. Bodies that are not JSON pass untouched by body faults, and the log's `note` says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from yarl import URL

from chaosproxy.faults import ResponseEffect, SyntheticResponse
from chaosproxy.proxy import jsonbody
from chaosproxy.proxy.apimap import RouteMatch
from chaosproxy.proxy.listener import Answer, Request, error_body
from chaosproxy.proxy.pipeline import Exchange, Outgoing, Rendered, ToolCall, retry_after_seconds
from chaosproxy.proxy.routing import Route, with_raw_query
from chaosproxy.proxy.upstream import UpstreamReply, forward_headers, read_all, response_headers

JSON_HEADERS = {"Content-Type": "application/json"}


def encode_body(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def parse_object(body: bytes) -> dict[str, Any] | None:
    """A JSON object body ({} when empty); None when it is anything else.

    Raises `BadJson` for hostile JSON (see `jsonbody`): the handler answers it with a 400.
    """
    if not body:
        return {}
    value = jsonbody.loads(body)
    return value if isinstance(value, dict) else None


def parse_reply(raw: bytes, content_type: str) -> tuple[Any, str | None]:
    """The reply as JSON for the engine, or (None, why body faults cannot act on it)."""
    if not raw:
        return None, "empty response body: body faults pass it untouched"
    try:
        return json.loads(raw), None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError):
        kind = content_type.split(";")[0].strip() or "no content type"
        return None, f"response body is not JSON ({kind}): body faults pass it untouched"


@dataclass
class RestAdapter:
    """One REST call. `match` is None for `POST /tools/{name}` on a built-in domain."""

    request: Request
    route: Route
    body: bytes
    body_object: dict[str, Any] | None
    match: RouteMatch | None = None
    query: list[tuple[str, str]] = field(default_factory=list)
    arguments: dict[str, Any] | None = None
    origins: dict[str, tuple[str, str]] = field(default_factory=dict)

    @classmethod
    def tool(cls, request: Request, route: Route, body: bytes) -> tuple[RestAdapter, ToolCall]:
        """`POST /tools/{name}`: the arguments are the JSON body."""
        name = route.rest_tool() or ""
        parsed = parse_object(body)
        adapter = cls(request, route, body, parsed, arguments=parsed)
        return adapter, ToolCall(tool=name, arguments=parsed)

    @classmethod
    def api(
        cls, request: Request, route: Route, body: bytes, match: RouteMatch
    ) -> tuple[RestAdapter, ToolCall]:
        """Any REST route: path parameters, query and a JSON object body are the arguments."""
        query = parse_qsl(request.query, keep_blank_values=True)
        parsed = parse_object(body) if body else None
        arguments: dict[str, Any] = {}
        origins: dict[str, tuple[str, str]] = {}
        for name, value in match.params.items():
            arguments[name] = value
            origins[name] = ("path", name)
        for name, value in query:
            key = name if name not in arguments else f"query.{name}"
            if key in arguments:
                continue
            arguments[key] = value
            origins[key] = ("query", name)
        if parsed is not None:
            for name, value in parsed.items():
                if name in arguments:
                    moved = f"{origins[name][0]}.{name}"
                    arguments[moved] = arguments.pop(name)
                    origins[moved] = origins.pop(name)
                arguments[name] = value
                origins[name] = ("body", name)
        adapter = cls(request, route, body, parsed, match, query, arguments, origins)
        return adapter, ToolCall(tool=match.tool, arguments=arguments)

    @property
    def body_note(self) -> str | None:
        if self.body and self.body_object is None:
            return "request body is not a JSON object: ParameterCorruption leaves it untouched"
        return None

    # ---- forward ---------------------------------------------------------------

    def outgoing(
        self, call: ToolCall, forwarded: dict[str, Any] | None, extra: dict[str, str]
    ) -> Outgoing:
        changed = forwarded is not None and forwarded != self.arguments
        body = self.body
        url = self.route.target(self.request.query)
        if changed and forwarded is not None:
            if self.match is None:
                body = encode_body(forwarded)
                extra["Content-Type"] = "application/json"
            else:
                url, body = self._rebuild(forwarded, extra)
        headers = forward_headers(self.request.headers, extra)
        return Outgoing(self.request.method, url, headers, body)

    def _rebuild(self, forwarded: dict[str, Any], extra: dict[str, str]) -> tuple[URL, bytes]:
        assert self.match is not None and self.arguments is not None
        segments = self.route.subpath.split("/")
        query = list(self.query)
        body = dict(self.body_object) if self.body_object is not None else None
        for key, value in forwarded.items():
            if self.arguments.get(key) == value or key not in self.origins:
                continue
            where, name = self.origins[key]
            if where == "path":
                # the subpath starts with "/", so segment i of the match is index i + 1
                segments[self.match.positions[name] + 1] = quote(str(value), safe="")
            elif where == "query":
                query = [(k, str(value) if k == name else v) for k, v in query]
            elif body is not None:
                body[name] = value
        subpath = "/".join(segments)
        base = str(self.route.upstream).rstrip("/")
        url = URL(base + subpath, encoded=True)
        if query:
            url = with_raw_query(url, urlencode(query))
        if body is not None and body != self.body_object:
            extra["Content-Type"] = "application/json"
            return url, encode_body(body)
        return url, self.body

    # ---- replies ---------------------------------------------------------------

    def synthetic(self, call: ToolCall, response: SyntheticResponse) -> Rendered:
        return Rendered(
            status=response.status,
            body=encode_body(response.body),
            headers={**JSON_HEADERS, **response.headers},
        )

    async def reply(self, x: Exchange, upstream: UpstreamReply) -> Answer:
        raw = await read_all(upstream, x.core.upstream.limits.max_response_bytes)
        if not x.wants_reply:
            return x.core.send(
                x.request,
                x.draft,
                status=upstream.status,
                body=raw,
                headers=response_headers(upstream.headers),
            )
        parsed, why = parse_reply(raw, upstream.headers.get("Content-Type", ""))
        effect = await x.after(upstream.status, parsed)
        if why is not None and x.decision.planned:
            x.draft.note = why
        if effect.action == "pass":
            return x.core.send(
                x.request,
                x.draft,
                status=upstream.status,
                body=raw,
                headers=response_headers(upstream.headers),
            )
        return render_effect(x, effect, parsed)


def render_effect(x: Exchange, effect: ResponseEffect, parsed: Any) -> Answer:
    """A response fault on a JSON reply, as a REST client gets it."""
    headers = {**JSON_HEADERS, **effect.headers}
    x.draft.retry_after_s = retry_after_seconds(headers)
    status = effect.status or 200
    if effect.action == "reset":
        return x.core.reset(x.request, x.draft)
    if effect.action == "truncate":
        text = effect.truncated_text
        if text is None:
            full = encode_body(effect.body if effect.body is not None else parsed)
            text = full[: effect.truncate_at or 0].decode("utf-8", errors="ignore")
        body = text.encode()
    elif effect.action == "lost_reply":
        lost = effect.body if effect.body is not None else error_body("timeout", "timed out")
        status, body = effect.status or 504, encode_body(lost)
    else:
        body = encode_body(effect.body)
    return x.core.send(x.request, x.draft, status=status, body=body, headers=headers)
