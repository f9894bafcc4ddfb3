"""One ASGI app per domain: REST, OpenAPI, MCP at `/mcp` and the oracle, on one port.

MCP Host/Origin protection is fastmcp's "auto" mode: when the service is bound to a
loopback address it accepts any loopback Host (any port, so requests forwarded by the
proxy on 127.0.0.1:8700 pass) and rejects others; bound elsewhere (a container on
0.0.0.0), the deployment's network is the boundary.
"""

from __future__ import annotations

from typing import Any

from chaosproxy.domains.kit.declare import Domain
from chaosproxy.domains.kit.errors import KitError
from chaosproxy.domains.kit.mcp import mcp_server
from chaosproxy.domains.kit.openapi import openapi_document
from chaosproxy.domains.kit.oracle import oracle_routes
from chaosproxy.domains.kit.rest import rest_routes
from chaosproxy.domains.kit.store import EpisodeLimits, EpisodeStore
from chaosproxy.domains.kit.web import error_response
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


def public_base_url(request: Request) -> str:
    """The URL the caller used, honouring X-Forwarded-Proto/-Host/-Prefix set by a proxy."""
    headers = request.headers
    scheme = headers.get("x-forwarded-proto") or request.url.scheme
    host = headers.get("x-forwarded-host") or headers.get("host") or request.url.netloc
    prefix = (headers.get("x-forwarded-prefix") or "").rstrip("/")
    return f"{scheme}://{host}{prefix}"


def asgi_app(
    domain: Domain[Any], limits: EpisodeLimits | None = None, *, oracle_token: str | None = None
) -> Starlette:
    """`limits` default to CHAOSPROXY_MAX_IDLE_EPISODES / CHAOSPROXY_EPISODE_IDLE_TTL; with
    `oracle_token`, `/_oracle/` answers 401 without `Authorization: Bearer TOKEN`."""
    store = EpisodeStore(domain, limits or EpisodeLimits.from_env())
    mcp_app = mcp_server(store).http_app(path="/mcp", host_origin_protection="auto")

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_document(store, public_base_url(request)))

    async def not_found(request: Request, exc: Exception) -> Response:
        return error_response(
            KitError(404, "not_found", f"no route {request.method} {request.url.path}")
        )

    async def not_allowed(request: Request, exc: Exception) -> Response:
        return error_response(
            KitError(
                405, "method_not_allowed", f"{request.method} is not allowed on {request.url.path}"
            )
        )

    async def server_error(request: Request, exc: Exception) -> Response:
        return error_response(KitError(500, "internal_error", f"{type(exc).__name__}: {exc}"))

    routes = [
        *rest_routes(store),
        Route("/openapi.json", openapi, methods=["GET"]),
        *oracle_routes(store, oracle_token),
        Route("/mcp", mcp_app),
    ]
    app = Starlette(
        routes=routes,
        lifespan=mcp_app.lifespan,
        exception_handlers={404: not_found, 405: not_allowed, 500: server_error},
    )
    app.state.store = store
    app.state.domain = domain
    return app
