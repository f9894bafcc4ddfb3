"""Small Starlette helpers shared by the REST and oracle routes."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from chaosproxy.domains.kit.edge import check_input
from chaosproxy.domains.kit.errors import KitError
from chaosproxy.domains.kit.store import DEFAULT_EPISODE
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

EPISODE_HEADER = "x-chaos-episode"
STEP_HEADER = "x-chaos-step"
IDEMPOTENCY_HEADER = "idempotency-key"
IDEMPOTENCY_META = "io.chaosproxy/idempotency-key"
RESTARTED_HEADER = "X-Chaos-Episode-Restarted"
"""Set (to "evicted") on the reply of a call that started an evicted idle episode afresh."""
RESTARTED_META = "io.chaosproxy/episode-restarted"

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
        raise KitError(
            400, "bad_request", "the request body is empty; send a JSON object", field="(body)"
        )
    try:
        body = json.loads(raw, parse_constant=_no_constants)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise KitError(
            400, "malformed_json", f"the request body is not valid JSON: {error}", field="(body)"
        ) from None
    except (ValueError, RecursionError) as error:
        # an integer over 4,300 digits (ValueError) or nesting deeper than the parser's stack
        raise KitError(
            400,
            "malformed_json",
            f"the request body cannot be parsed: {error}"[:300],
            field="(body)",
        ) from None
    if not isinstance(body, dict):
        raise KitError(
            400,
            "bad_request",
            f"the request body must be a JSON object, got {type(body).__name__}",
            field="(body)",
        )
    check_input(body, what="request body", max_magnitude=None)
    return body


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (numbers must be finite)")


def episode_of(request: Request) -> str:
    return request.headers.get(EPISODE_HEADER) or DEFAULT_EPISODE
