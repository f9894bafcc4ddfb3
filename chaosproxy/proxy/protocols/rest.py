"""REST as tool calls: `POST /tools/{name}` with a JSON body, or any route of any REST API.

Arguments are the JSON body's fields, plus, for a generic route, its path parameters and
query string (a body field wins a name clash; the query's copy is then `query.NAME`).
ParameterCorruption can rewrite any of them and the request is rebuilt with the change in
place. Bodies that are not JSON pass untouched by body faults, and the log's `note` says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from yarl import URL

from chaosproxy.faults import Decision, FaultInfo, ResponseEffect, SyntheticResponse
from chaosproxy.proxy.apimap import RouteMatch
from chaosproxy.proxy.effects import (
    JSON_HEADERS,
    AskEngine,
    Cut,
    Outgoing,
    Rendered,
    Reply,
    Said,
    ToolCall,
    encode_body,
)
from chaosproxy.proxy.protocols.common import parse_object, parse_reply, render_effect
from chaosproxy.proxy.routing import Route, with_raw_query


@dataclass(slots=True)
class RestAdapter:
    """One REST call. `match` is None for `POST /tools/{name}` on a built-in domain."""

    method: str
    raw_query: str
    route: Route
    body: bytes
    body_object: dict[str, Any] | None
    match: RouteMatch | None = None
    query: list[tuple[str, str]] = field(default_factory=list)
    arguments: dict[str, Any] | None = None
    origins: dict[str, tuple[str, str]] = field(default_factory=dict)
    said: Said = field(default_factory=Said)
    parsed: Any = None
    _why: str | None = None

    @classmethod
    def tool(
        cls, method: str, query: str, route: Route, body: bytes
    ) -> tuple[RestAdapter, ToolCall]:
        """`POST /tools/{name}`: the arguments are the JSON body."""
        name = route.rest_tool() or ""
        parsed = parse_object(body)
        adapter = cls(method, query, route, body, parsed, arguments=parsed)
        return adapter, ToolCall(tool=name, arguments=parsed)

    @classmethod
    def api(
        cls, method: str, raw_query: str, route: Route, body: bytes, match: RouteMatch
    ) -> tuple[RestAdapter, ToolCall]:
        """Any REST route: path parameters, query and a JSON object body are the arguments."""
        query = parse_qsl(raw_query, keep_blank_values=True)
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
        adapter = cls(method, raw_query, route, body, parsed, match, query, arguments, origins)
        return adapter, ToolCall(tool=match.tool, arguments=arguments)

    @property
    def body_note(self) -> str | None:
        if self.body and self.body_object is None:
            return "request body is not a JSON object: ParameterCorruption leaves it untouched"
        return None

    # ---- forward ---------------------------------------------------------------

    def outgoing(self, call: ToolCall, forwarded: dict[str, Any] | None) -> Outgoing:
        changed = forwarded is not None and forwarded != self.arguments
        body = self.body
        url = self.route.target(self.raw_query)
        extra: dict[str, str] = {}
        if changed and forwarded is not None:
            if self.match is None:
                body = encode_body(forwarded)
                extra["Content-Type"] = "application/json"
            else:
                url, body = self._rebuild(forwarded, extra)
        return Outgoing(self.method, url, body, extra)

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

    def synthetic(
        self, call: ToolCall, response: SyntheticResponse, fault: FaultInfo | None
    ) -> Rendered:
        return Rendered(
            status=response.status,
            body=encode_body(response.body),
            headers={**JSON_HEADERS, **response.headers},
        )

    def passed(self, reply: Reply) -> Rendered:
        return Rendered(reply.status, reply.raw, reply.headers)

    def ask(self, reply: Reply) -> AskEngine | None:
        parsed, why = parse_reply(reply.raw, reply.content_type)
        self.parsed = parsed
        self._why = why
        return AskEngine(reply.status, parsed, {})

    def render(self, effect: ResponseEffect, reply: Reply, decision: Decision) -> Rendered | Cut:
        if self._why is not None and decision.planned:
            self.said.note = self._why
        if effect.action == "pass":
            return self.passed(reply)
        return render_effect(self.said, effect, self.parsed)

    def streamer(self, status: int, headers: Any, decision: Decision) -> None:
        return None
