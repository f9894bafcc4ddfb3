"""The agent port's HTTP layer: what aiohttp answers before the proxy's handler runs.

aiohttp answers a request it cannot parse (bad request line, oversized header, ...) with
plain text, and `CONNECT` (the verb of a forward proxy) never reaches a route. Agents and
their SDKs read JSON errors, so both are answered in the proxy's own error shape.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from http import HTTPStatus

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from chaosproxy.proxy.exchange import error_body, json_response

LISTEN_BACKLOG = 1024
"""Pending connections the kernel queues for the proxy (capped by net.core.somaxconn)."""

NOT_A_FORWARD_PROXY = (
    "CONNECT is for forward proxies; this port is chaosproxy's reverse proxy "
    "(/{service}/... or /e/{episode}/{service}/...). For a forward proxy, start "
    "`chaosproxy up --forward-port PORT`"
)
_ALLOW = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"


class JsonErrorRequestHandler(RequestHandler):
    """aiohttp's connection handler, with its own error replies (parser 400s, 413s, 500s)
    in the proxy's JSON error shape instead of plain text."""

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        super().handle_error(request, status, exc, message)
        if status >= 500:
            kind, text = "proxy_error", "internal error in chaosproxy (not an injected fault)"
        else:
            kind = "bad_request"
            text = message or HTTPStatus(status).phrase
        response = web.Response(
            status=status,
            body=json.dumps(error_body(kind, text), ensure_ascii=True).encode(),
            content_type="application/json",
        )
        response.force_close()
        return response


class JsonErrorServer(web.Server):
    """A `web.Server` whose connections are `JsonErrorRequestHandler`s."""

    def __call__(self) -> RequestHandler:
        return JsonErrorRequestHandler(self, loop=self._loop, **self._kwargs)


class JsonErrorRunner(web.AppRunner):
    """`web.AppRunner` serving the app through a `JsonErrorServer`."""

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        return JsonErrorServer(
            server.request_handler,
            request_factory=server.request_factory,
            handler_cancellation=server.handler_cancellation,
            loop=asyncio.get_running_loop(),
            **server._kwargs,
        )


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def refuse_connect(request: web.Request, handler: Handler) -> web.StreamResponse:
    """`CONNECT host:port` on the reverse proxy: a JSON 405 that points to `--forward-port`."""
    if request.method == "CONNECT":
        return json_response(
            405, error_body("not_a_forward_proxy", NOT_A_FORWARD_PROXY), {"Allow": _ALLOW}
        )
    return await handler(request)
