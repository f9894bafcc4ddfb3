"""Small Starlette helpers shared by the REST and oracle routes."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from chaosproxy.domains.kit.errors import KitError
from chaosproxy.domains.kit.store import DEFAULT_EPISODE
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

EPISODE_HEADER = "x-chaos-episode"
STEP_HEADER = "x-chaos-step"
IDEMPOTENCY_HEADER = "idempotency-key"
IDEMPOTENCY_META = "io.chaosproxy/idempotency-key"

Endpoint = Callable[[Request], Awaitable[Response]]


def error_response(error: KitError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status)


def guarded(endpoint: Endpoint) -> Endpoint:
    """Turn KitError into its JSON error response, and any other exception into a JSON 500."""

    async def run(request: Request) -> Response:
        try:
            return await endpoint(request)
        except KitError as error:
            return error_response(error)
        except Exception as error:
            return error_response(
                KitError(
                    500, "internal_error", f"{request.url.path}: {type(error).__name__}: {error}"
                )
            )

    return run


async def json_object(
    request: Request, *, empty_is: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The request body as a JSON object; 400 naming the problem otherwise."""
    raw = await request.body()
    if not raw.strip():
        if empty_is is not None:
            return dict(empty_is)
        raise KitError(400, "bad_request", "the request body is empty; send a JSON object")
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise KitError(
            400, "malformed_json", f"the request body is not valid JSON: {error}"
        ) from None
    if not isinstance(body, dict):
        raise KitError(
            400, "bad_request", f"the request body must be a JSON object, got {type(body).__name__}"
        )
    return body


def episode_of(request: Request) -> str:
    return request.headers.get(EPISODE_HEADER) or DEFAULT_EPISODE
