"""The control API under /_chaos/: health, profile hot-swap, episodes, Prometheus metrics."""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, ValidationError

from chaosproxy.proxy.core import Core, refusal
from chaosproxy.proxy.exchange import json_response
from chaosproxy.proxy.routing import valid_name

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ProfileChange(BaseModel):
    """PUT /_chaos/profile: a shipped profile's name (or a YAML path) or an inline profile."""

    model_config = ConfigDict(extra="forbid")
    profile: str | dict[str, Any]


class EpisodeSettings(BaseModel):
    """PUT /_chaos/episodes/{id}: any of profile, seed and key (the draw key of the episode)."""

    model_config = ConfigDict(extra="forbid")
    profile: str | dict[str, Any] | None = None
    seed: int | None = None
    key: str | None = None


def resolve_profile(value: str | dict[str, Any]) -> Any:
    """A Profile from a name/path or an inline mapping; ProfileError names what is wrong."""
    from chaosproxy.profiles.loader import load_profile, validate_profile

    if isinstance(value, str):
        return load_profile(value)
    return validate_profile(value, source="inline profile")


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return json.loads(json.dumps(value, default=str))


def default_profile(engine: Any) -> Any:
    return engine.profile


def set_default_profile(engine: Any, profile: Any) -> None:
    engine.set_profile(profile)


async def _json_body(request: web.Request, model: type[BaseModel]) -> Any:
    try:
        return model.model_validate_json(await request.read())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise web.HTTPBadRequest(
            text=json.dumps(
                {"error": {"type": "bad_request", "field": where, "message": first["msg"]}}
            ),
            content_type="application/json",
        ) from None


class ControlApi:
    def __init__(self, core: Core, services: list[str], token: str | None) -> None:
        self.core = core
        self.services = services
        self.token = token

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/_chaos/health", self.health),
            web.get("/_chaos/profile", self.get_profile),
            web.put("/_chaos/profile", self.put_profile),
            web.get("/_chaos/episodes/{episode}", self.get_episode),
            web.put("/_chaos/episodes/{episode}", self.put_episode),
            web.get("/_chaos/metrics", self.metrics),
            web.route("*", "/_chaos/{rest:.*}", self.unknown),
        ]

    @web.middleware
    async def guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """A token is required on /_chaos/ when the proxy listens beyond loopback."""
        if self.token is not None and request.path.startswith("/_chaos/"):
            given = request.headers.get("Authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
                return refusal(
                    401, "unauthorized", "the control API needs 'Authorization: Bearer <token>'"
                )
        return await handler(request)

    async def health(self, request: web.Request) -> web.StreamResponse:
        profile = default_profile(self.core.engine)
        return json_response(
            200,
            {
                "status": "ok",
                "services": self.services,
                "profile": getattr(profile, "name", None),
                "seed": self.core.run_seed,
                "calls_logged": self.core.log.count,
            },
        )

    async def get_profile(self, request: web.Request) -> web.StreamResponse:
        profile = default_profile(self.core.engine)
        return json_response(200, {"profile": _jsonable(profile)})

    async def put_profile(self, request: web.Request) -> web.StreamResponse:
        from chaosproxy.profiles.loader import ProfileError

        change = await _json_body(request, ProfileChange)
        try:
            profile = resolve_profile(change.profile)
        except ProfileError as exc:
            return refusal(400, "bad_profile", str(exc))
        set_default_profile(self.core.engine, profile)
        return json_response(200, {"profile": _jsonable(profile)})

    def _episode(self, request: web.Request) -> str:
        episode = request.match_info["episode"]
        if not valid_name(episode):
            raise web.HTTPBadRequest(
                text=json.dumps(
                    {"error": {"type": "bad_request", "message": f"invalid episode id {episode!r}"}}
                ),
                content_type="application/json",
            )
        return episode

    async def get_episode(self, request: web.Request) -> web.StreamResponse:
        episode = self._episode(request)
        summary = self.core.engine.episode_summary(episode)
        return json_response(
            200,
            {
                "episode": episode,
                "steps": self.core.book.steps.get(episode, 0),
                "faults": self.core.book.faults.get(episode, []),
                "service_errors": self.core.book.service_errors.get(episode, 0),
                "engine": _jsonable(summary),
            },
        )

    async def put_episode(self, request: web.Request) -> web.StreamResponse:
        from chaosproxy.profiles.loader import ProfileError

        episode = self._episode(request)
        settings = await _json_body(request, EpisodeSettings)
        try:
            profile = resolve_profile(settings.profile) if settings.profile is not None else None
        except ProfileError as exc:
            return refusal(400, "bad_profile", str(exc))
        self.core.engine.configure_episode(
            episode, profile=profile, seed=settings.seed, key=settings.key
        )
        self.core.book.forget(episode)
        return json_response(
            200,
            {
                "episode": episode,
                "profile": getattr(profile, "name", None),
                "seed": settings.seed,
                "key": settings.key,
            },
        )

    async def metrics(self, request: web.Request) -> web.StreamResponse:
        return web.Response(
            text=self.core.metrics.render(),
            content_type="text/plain",
            charset="utf-8",
            headers={"X-Content-Type-Options": "nosniff"},
        )

    async def unknown(self, request: web.Request) -> web.StreamResponse:
        return refusal(404, "not_found", f"no control endpoint {request.path}")
