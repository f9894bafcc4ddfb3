"""The oracle routes (`/_oracle/...`): what the runner and the scorer read; never for agents.

With a token, every oracle route requires `Authorization: Bearer TOKEN` (401 otherwise):
the services under `chaosproxy up`/`run` always have one (the agent under test runs on the
same machine and could find their loopback ports), and `chaosproxy serve` off loopback.
"""

from __future__ import annotations

import hmac
from typing import Any

from chaosproxy.domains.kit.diff import diff
from chaosproxy.domains.kit.errors import KitError
from chaosproxy.domains.kit.schemas import problems
from chaosproxy.domains.kit.store import EpisodeStore
from chaosproxy.domains.kit.web import Endpoint, error_response, guarded, json_object
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


class ResetRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task_id: str | None = None
    state: dict[str, Any] | None = None


class DiffRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    before: Any
    after: Any


def _parse(model: type[BaseModel], body: dict[str, Any]) -> Any:
    try:
        return model.model_validate(body)
    except ValidationError as error:
        found = problems(error)
        raise KitError(
            422,
            "validation_error",
            "; ".join(f"{p.field}: {p.problem}" for p in found),
            field=found[0].field,
            fields=found,
        ) from None


def _changes(before: Any, after: Any) -> list[dict[str, Any]]:
    return [change.model_dump(mode="json") for change in diff(before, after)]


ORACLE_TOKEN_ENV = "CHAOSPROXY_ORACLE_TOKEN"


def require_token(token: str | None, endpoint: Endpoint) -> Endpoint:
    """`endpoint`, answering 401 unless the request carries the bearer token."""
    if token is None:
        return endpoint
    expected = f"Bearer {token}".encode()

    async def checked(request: Request) -> Response:
        given = request.headers.get("authorization", "").encode("latin-1", errors="replace")
        if not hmac.compare_digest(given, expected):
            response = error_response(
                KitError(
                    401,
                    "unauthorized",
                    "the oracle needs `Authorization: Bearer TOKEN` (the token printed by "
                    f"`chaosproxy serve`, or {ORACLE_TOKEN_ENV})",
                    field="Authorization",
                )
            )
            response.headers["WWW-Authenticate"] = 'Bearer realm="chaosproxy-oracle"'
            return response
        return await endpoint(request)

    return checked


def oracle_routes(store: EpisodeStore, token: str | None = None) -> list[Route]:
    async def reset(request: Request) -> Response:
        episode_id = request.path_params["episode"]
        body: ResetRequest = _parse(ResetRequest, await json_object(request, empty_is={}))
        episode = store.reset(episode_id, task_id=body.task_id, state=body.state)
        return JSONResponse(
            {"episode": episode.id, "task_id": episode.task_id, "state": episode.initial_state}
        )

    async def state(request: Request) -> Response:
        episode = await store.snapshot(request.path_params["episode"])
        return JSONResponse(episode.state.model_dump(mode="json"))

    async def journal(request: Request) -> Response:
        episode = await store.snapshot(request.path_params["episode"])
        return JSONResponse(episode.journal(store.domain.name).model_dump(mode="json"))

    async def episode_diff(request: Request) -> Response:
        episode = await store.snapshot(request.path_params["episode"])
        changes = _changes(episode.initial_state, episode.state.model_dump(mode="json"))
        return JSONResponse({"episode": episode.id, "changes": changes})

    async def delete(request: Request) -> Response:
        episode_id = request.path_params["episode"]
        store.delete(episode_id)
        return JSONResponse({"deleted": episode_id})

    async def episodes(request: Request) -> Response:
        return JSONResponse({"episodes": sorted(store.episodes)})

    async def any_diff(request: Request) -> Response:
        body: DiffRequest = _parse(DiffRequest, await json_object(request))
        return JSONResponse({"changes": _changes(body.before, body.after)})

    async def tasks(request: Request) -> Response:
        return JSONResponse(
            {
                "domain": store.domain.name,
                "tasks": [task.metadata() for task in store.domain.tasks.values()],
            }
        )

    async def hints(request: Request) -> Response:
        return JSONResponse(store.domain.hints())

    prefix = "/_oracle"
    routes: list[tuple[str, Endpoint, str]] = [
        ("/episodes", episodes, "GET"),
        ("/episodes/{episode}/reset", reset, "POST"),
        ("/episodes/{episode}/state", state, "GET"),
        ("/episodes/{episode}/journal", journal, "GET"),
        ("/episodes/{episode}/diff", episode_diff, "GET"),
        ("/episodes/{episode}", delete, "DELETE"),
        ("/diff", any_diff, "POST"),
        ("/tasks", tasks, "GET"),
        ("/hints", hints, "GET"),
    ]
    return [
        Route(prefix + path, require_token(token, guarded(endpoint)), methods=[method])
        for path, endpoint, method in routes
    ]
