"""The control API under /_chaos/, on its own listener: the operator's, never the agent's.

Every request needs `Authorization: Bearer TOKEN`, on loopback too: the agent under test
runs on the same machine and must not switch faults off, replay its draws or read them.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chaosproxy.errors import ChaosError
from chaosproxy.faults import Profile
from chaosproxy.faults.schedule import Schedule, ScheduleMode
from chaosproxy.proxy.core import Core
from chaosproxy.proxy.listener import error_body
from chaosproxy.proxy.routing import EpisodeCredentials, valid_name

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def json_response(status: int, body: Any) -> web.Response:
    return web.Response(
        status=status,
        body=json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode(),
        content_type="application/json",
    )


def refusal(status: int, kind: str, message: str) -> web.Response:
    return json_response(status, error_body(kind, message))


class ProfileChange(BaseModel):
    """PUT /_chaos/profile: a shipped profile's name or an inline profile (never a path)."""

    model_config = ConfigDict(extra="forbid")
    profile: str | dict[str, Any]


class EpisodeSettings(BaseModel):
    """PUT /_chaos/episodes/{id}: any of profile, seed, key (the draw key of the episode) and
    plan_length (the task's l_min: an incident plan times its incident within it); `task`
    (a built-in task id: the episode starts at its initial state and can be judged),
    `agent` (the name its verdict is recorded under), `attempt` (stamped on the
    episode's calls until it is forgotten) and `traceparent` (the runner's episode span,
    parent of the episode's call spans when tracing is on)."""

    model_config = ConfigDict(extra="forbid")
    profile: str | dict[str, Any] | None = None
    seed: int | None = None
    key: str | None = None
    plan_length: int | None = Field(None, ge=1)
    task: str | None = Field(None, min_length=1, max_length=200)
    agent: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,63}$")
    attempt: str | None = Field(None, min_length=1, max_length=64)
    traceparent: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$",
        description="the runner's episode span (W3C): the episode's call spans nest under it",
    )
    schedule: Schedule | None = Field(
        None, description="a fault schedule for this episode (docs/schedules.md)"
    )
    schedule_mode: ScheduleMode = Field(
        "replace", description="replace the profile's draws, or overlay them"
    )


class JudgeError(ChaosError):
    """A task or verdict request the judge refuses; `status` and `field` go to the reply."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.field = status, field


class EpisodeJudge(Protocol):
    """Starts an episode at a built-in task's initial state and judges it (the public API's
    `UpJudge`: the proxy itself imports no domain code)."""

    async def start(
        self, episode: str, task_id: str, agent: str | None, profile: str, key: str
    ) -> dict[str, object]: ...

    async def verdict(self, episode: str) -> dict[str, object]: ...


INLINE_PROFILE_NAME = "inline"
"""The name of an inline profile sent without one (as a file's name defaults to its stem)."""


def resolve_profile(value: str | dict[str, Any]) -> Profile:
    """A shipped profile by name or an inline mapping; ProfileError names what is wrong."""
    from chaosproxy.profiles import load_shipped_profile, validate_profile

    if isinstance(value, str):
        return load_shipped_profile(value)
    return validate_profile({"name": INLINE_PROFILE_NAME, **value}, source="inline profile")


def _judge_refusal(refused: JudgeError) -> web.Response:
    body = error_body("bad_task" if refused.field == "task" else "judge", str(refused))
    if refused.field is not None:
        body["error"]["field"] = refused.field
    return json_response(refused.status, body)


def _bad_request(message: str, field: str | None = None) -> web.HTTPBadRequest:
    error: dict[str, str] = {"type": "bad_request", "message": message}
    if field is not None:
        error["field"] = field
    return web.HTTPBadRequest(text=json.dumps({"error": error}), content_type="application/json")


async def _json_body(request: web.Request, model: type[BaseModel]) -> Any:
    try:
        return model.model_validate_json(await request.read())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise _bad_request(first["msg"], where) from None


class ControlApi:
    def __init__(
        self,
        core: Core,
        services: list[str],
        token: str,
        credentials: EpisodeCredentials | None = None,
    ) -> None:
        self.core = core
        self.services = services
        self.token = token
        self.credentials = credentials
        """`up --episode-credentials`: PUT issues the episode's credential, DELETE revokes it."""
        self.judge: EpisodeJudge | None = None

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/_chaos/health", self.health),
            web.get("/_chaos/profile", self.get_profile),
            web.put("/_chaos/profile", self.put_profile),
            web.get("/_chaos/episodes/{episode}", self.get_episode),
            web.put("/_chaos/episodes/{episode}", self.put_episode),
            web.delete("/_chaos/episodes/{episode}", self.delete_episode),
            web.post("/_chaos/episodes/{episode}/verdict", self.verdict),
            web.get("/_chaos/metrics", self.metrics),
            web.route("*", "/{rest:.*}", self.unknown),
        ]

    @web.middleware
    async def guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Every request to the control listener needs the bearer token."""
        given = request.headers.get("Authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
            return refusal(
                401, "unauthorized", "the control API needs 'Authorization: Bearer <token>'"
            )
        return await handler(request)

    async def health(self, request: web.Request) -> web.StreamResponse:
        return json_response(
            200,
            {
                "status": "ok",
                "services": self.services,
                "profile": self.core.engine.profile.name,
                "seed": self.core.run_seed,
                "calls_logged": self.core.log.count,
            },
        )

    async def get_profile(self, request: web.Request) -> web.StreamResponse:
        return json_response(200, {"profile": self.core.engine.profile.model_dump(mode="json")})

    async def put_profile(self, request: web.Request) -> web.StreamResponse:
        from chaosproxy.profiles import ProfileError

        change = await _json_body(request, ProfileChange)
        try:
            profile = resolve_profile(change.profile)
        except ProfileError as exc:
            return refusal(400, "bad_profile", str(exc))
        self.core.engine.set_profile(profile)
        return json_response(200, {"profile": profile.model_dump(mode="json")})

    def _episode(self, request: web.Request) -> str:
        episode = request.match_info["episode"]
        if not valid_name(episode):
            raise _bad_request(f"invalid episode id {episode!r}")
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
                "model_faults": self.core.book.model_faults.get(episode, []),
                "service_errors": self.core.book.service_errors.get(episode, 0),
                "engine": json.loads(json.dumps(summary, default=str)),
            },
        )

    async def put_episode(self, request: web.Request) -> web.StreamResponse:
        from chaosproxy.profiles import ProfileError

        episode = self._episode(request)
        settings = await _json_body(request, EpisodeSettings)
        try:
            profile = resolve_profile(settings.profile) if settings.profile is not None else None
        except ProfileError as exc:
            return refusal(400, "bad_profile", str(exc))
        started: dict[str, object] = {}
        plan_length = settings.plan_length
        if settings.task is not None:
            if self.judge is None:
                return refusal(400, "no_judge", "this proxy serves no built-in task to judge")
            profile_name = (profile or self.core.engine.profile).name
            try:
                started = await self.judge.start(
                    episode, settings.task, settings.agent, profile_name, settings.key or episode
                )
            except JudgeError as refused:
                return _judge_refusal(refused)
            if plan_length is None and isinstance(started.get("l_min"), int):
                plan_length = int(str(started["l_min"]))
        self.core.engine.configure_episode(
            episode,
            profile=profile,
            seed=settings.seed,
            key=settings.key,
            plan_length=plan_length,
            schedule=settings.schedule,
            schedule_mode=settings.schedule_mode,
        )
        self.core.book.forget(episode)
        if settings.attempt is not None:
            self.core.book.attempts[episode] = settings.attempt
        if settings.traceparent is not None:
            self.core.tracer.adopt(episode, settings.traceparent)
        for gone in self.core.book.touch(episode):
            self.core.engine.forget_episode(gone)
        answer: dict[str, Any] = {
            "episode": episode,
            "profile": profile.name if profile is not None else None,
            "seed": settings.seed,
            "key": settings.key,
            "plan_length": plan_length,
            "attempt": settings.attempt,
            "schedule": len(settings.schedule.faults) if settings.schedule else None,
            **started,
        }
        if self.credentials is not None:
            credential = self.credentials.issue(episode)
            answer["credential"] = credential
            answer["prefix"] = f"/e/{credential}"
        return json_response(200, answer)

    async def verdict(self, request: web.Request) -> web.StreamResponse:
        """POST /_chaos/episodes/{id}/verdict: the task's verifier on the episode's state,
        recorded in RUN_DIR/episodes.jsonl the first time it is asked."""
        episode = self._episode(request)
        if self.judge is None:
            return refusal(400, "no_judge", "this proxy serves no built-in task to judge")
        try:
            return json_response(200, await self.judge.verdict(episode))
        except JudgeError as refused:
            return _judge_refusal(refused)

    async def delete_episode(self, request: web.Request) -> web.StreamResponse:
        """Forget the episode in the proxy, the engine and every built-in service's oracle."""
        episode = self._episode(request)
        if self.credentials is not None:
            self.credentials.revoke(episode)
        services = await self.core.forget_episode(episode)
        self.core.tracer.forget(episode)
        return json_response(200, {"episode": episode, "forgotten": True, "services": services})

    async def metrics(self, request: web.Request) -> web.StreamResponse:
        return web.Response(
            body=self.core.metrics.render().encode("utf-8"),
            headers={
                "Content-Type": self.core.metrics.content_type,
                "X-Content-Type-Options": "nosniff",
            },
        )

    async def unknown(self, request: web.Request) -> web.StreamResponse:
        return refusal(404, "not_found", f"no control endpoint {request.path}")
