"""The REST face of a domain: `GET /health`, `GET /tools`, `POST /tools/{name}`."""

from __future__ import annotations

from typing import Any

from chaosproxy.domains.kit.schemas import ToolSchema
from chaosproxy.domains.kit.store import EpisodeStore, parse_step
from chaosproxy.domains.kit.web import (
    IDEMPOTENCY_HEADER,
    RESTARTED_HEADER,
    STEP_HEADER,
    episode_of,
    guarded,
    json_object,
)
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


def tool_listing(schema: ToolSchema) -> dict[str, Any]:
    return {
        "name": schema.name,
        "description": schema.spec.description,
        "input_schema": schema.input_schema,
        "output_schema": schema.output_schema,
        "idempotent": schema.spec.idempotent,
        "critical": {arg: spec.model_dump() for arg, spec in schema.spec.critical.items()},
    }


def openai_tool(schema: ToolSchema) -> dict[str, Any]:
    """The tool in OpenAI's function-calling format (also LiteLLM's and most SDKs')."""
    return {
        "type": "function",
        "function": {
            "name": schema.name,
            "description": schema.spec.description,
            "parameters": schema.input_schema,
        },
    }


LISTING_FORMATS = ("chaosproxy", "openai")


def rest_routes(store: EpisodeStore) -> list[Route]:
    async def health(request: Request) -> Response:
        return JSONResponse(
            {"status": "ok", "domain": store.domain.name, "episodes": len(store.episodes)}
        )

    async def tools(request: Request) -> Response:
        """`?format=openai` answers a list ready for `tools=` of a chat completion."""
        wanted = request.query_params.get("format", "chaosproxy")
        if wanted == "openai":
            return JSONResponse([openai_tool(t) for t in store.tools.values()])
        if wanted != "chaosproxy":
            message = f"format {wanted!r} is not one of {', '.join(LISTING_FORMATS)}"
            return JSONResponse(
                {"error": {"type": "bad_request", "message": message, "field": "format"}},
                status_code=400,
            )
        return JSONResponse(
            {"domain": store.domain.name, "tools": [tool_listing(t) for t in store.tools.values()]}
        )

    async def call(request: Request) -> Response:
        name = request.path_params["name"]
        store.tool(name)
        step = parse_step(request.headers.get(STEP_HEADER))
        arguments = await json_object(request, empty_is={})
        outcome = await store.call(
            name,
            arguments,
            episode=episode_of(request),
            step=step,
            transport="rest",
            idempotency_key=request.headers.get(IDEMPOTENCY_HEADER) or None,
        )
        headers = {RESTARTED_HEADER: "evicted"} if outcome.restarted else None
        return JSONResponse(outcome.result, headers=headers)

    return [
        Route("/health", guarded(health), methods=["GET"]),
        Route("/tools", guarded(tools), methods=["GET"]),
        Route("/tools/{name}", guarded(call), methods=["POST"]),
    ]
