"""Per-episode state, journal and the one place tools are executed.

Both transports call `EpisodeStore.invoke`, so validation, rollback and journaling are
identical for REST and MCP. Every call holds its episode's lock, so it is atomic with
respect to every other call (and oracle read) of the same episode; episodes never share a
state object. Tools run on the event loop, except those declared `slow`, which run in a
worker thread so that one episode's long call does not stall the others.

Episodes have a lifecycle: `delete` ends one (the oracle's DELETE; the runner calls it),
and the store keeps at most `EpisodeLimits.max_idle` *idle* episodes (no call or oracle read
running), optionally only for `idle_ttl_s`, evicting the least recently used first. An
episode in use is never evicted. An evicted id that comes back starts afresh, and says so:
the call's outcome carries `restarted=True` (REST: header X-Chaos-Episode-Restarted, MCP:
`_meta`), a warning is logged, and the oracle answers 410 for it until it is reset.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import re
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from chaosproxy.domains.kit.declare import (
    Domain,
    DomainState,
    ToolError,
    _current_episode,
    _current_step,
)
from chaosproxy.domains.kit.edge import UnsendableResult, check_input, sendable
from chaosproxy.domains.kit.errors import KitError
from chaosproxy.domains.kit.journal import Journal, JournalEntry
from chaosproxy.domains.kit.schemas import ToolSchema, problems, tool_schema
from pydantic import BaseModel, ValidationError

from chaosproxy.types import Transport

DEFAULT_EPISODE = "default"
MAX_EPISODE_ID = 128
EPISODE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.~-]{0,127}$"
"""The one episode-id rule, shared with the proxy (proxy/routing.py) and the OpenAPI document:
ids travel in URL paths (/e/{episode}/...) and run-directory names, so they are URL- and
file-safe."""
_EPISODE_ID = re.compile(EPISODE_PATTERN)
log = logging.getLogger("chaosproxy.domains")

MAX_IDLE_ENV = "CHAOSPROXY_MAX_IDLE_EPISODES"
IDLE_TTL_ENV = "CHAOSPROXY_EPISODE_IDLE_TTL"


@dataclass(frozen=True)
class EpisodeLimits:
    """How many idle episodes a service keeps, and for how long (0: no time limit).

    256 idle episodes of ≈ 90 KB bound a service near 25 MB of episode state whatever the
    clients do; the runner ends each episode itself, so it never meets the bound.
    """

    max_idle: int = 256
    idle_ttl_s: float = 0.0

    @classmethod
    def from_env(cls) -> EpisodeLimits:
        """From CHAOSPROXY_MAX_IDLE_EPISODES / CHAOSPROXY_EPISODE_IDLE_TTL, else defaults."""
        default = cls()
        try:
            max_idle = int(os.environ.get(MAX_IDLE_ENV, default.max_idle))
            idle_ttl_s = float(os.environ.get(IDLE_TTL_ENV, default.idle_ttl_s))
        except ValueError as error:
            raise ValueError(f"{MAX_IDLE_ENV} / {IDLE_TTL_ENV}: {error}") from None
        if max_idle < 1 or idle_ttl_s < 0:
            raise ValueError(f"{MAX_IDLE_ENV} must be >= 1 and {IDLE_TTL_ENV} >= 0")
        return cls(max_idle=max_idle, idle_ttl_s=idle_ttl_s)


@dataclass(frozen=True)
class CallOutcome:
    result: dict[str, Any]
    restarted: bool = False
    """The episode had been evicted while idle; this call started it afresh."""


@dataclass(frozen=True)
class StoredReply:
    """The result of a call made with an idempotency key, replayed to a retry with the same key."""

    tool: str
    arguments: dict[str, Any]
    result: dict[str, Any]


@dataclass
class Episode:
    id: str
    state: DomainState
    initial_state: dict[str, Any]
    task_id: str | None = None
    entries: list[JournalEntry] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    replies: dict[str, StoredReply] = field(default_factory=dict)
    users: int = 0
    """Calls and oracle reads running on this episode: while > 0 it is never evicted."""
    last_used: float = field(default_factory=time.monotonic)

    def journal(self, domain: str) -> Journal:
        return Journal(
            episode=self.id,
            domain=domain,
            task_id=self.task_id,
            initial_state=self.initial_state,
            entries=list(self.entries),
            final_state=self.state.model_dump(mode="json"),
        )


def check_episode_id(episode: str) -> str:
    if _EPISODE_ID.fullmatch(episode) is None:
        raise KitError(
            400,
            "bad_episode",
            "episode id must be a letter or digit followed by up to 127 letters, digits "
            f"or _.~- ; got {episode[:40]!r}",
            field="X-Chaos-Episode",
        )
    return episode


def parse_step(raw: str | None) -> int | None:
    """The proxy's step number from header X-Chaos-Step; absent means None."""
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise KitError(
            400,
            "bad_header",
            f"X-Chaos-Step must be an integer, got {raw[:40]!r}",
            field="X-Chaos-Step",
        ) from None


class EpisodeStore:
    """All episodes of one served domain."""

    def __init__(self, domain: Domain[Any], limits: EpisodeLimits | None = None) -> None:
        self.domain = domain
        self.limits = limits or EpisodeLimits()
        self.tools: dict[str, ToolSchema] = {
            name: tool_schema(spec, domain.max_magnitude) for name, spec in domain.tools.items()
        }
        self.episodes: OrderedDict[str, Episode] = OrderedDict()
        """Least recently used first."""
        self.evicted: OrderedDict[str, None] = OrderedDict()
        """Ids evicted while idle (bounded), so a returning one can be told it restarted."""

    def _new_episode(self, episode: str, state: DomainState, task_id: str | None) -> Episode:
        created = Episode(
            id=episode, state=state, initial_state=state.model_dump(mode="json"), task_id=task_id
        )
        self.episodes.pop(episode, None)
        self.episodes[episode] = created
        self.evicted.pop(episode, None)
        self.evict_idle()
        return created

    def _touch(self, found: Episode) -> None:
        found.last_used = time.monotonic()
        if found.id in self.episodes:
            self.episodes.move_to_end(found.id)

    def evict_idle(self, now: float | None = None) -> list[str]:
        """Forget idle episodes beyond the count bound or past the idle time; never busy ones."""
        now = time.monotonic() if now is None else now
        idle = [e for e in self.episodes.values() if e.users == 0 and not e.lock.locked()]
        excess = len(idle) - self.limits.max_idle
        ttl = self.limits.idle_ttl_s
        gone: list[str] = []
        for candidate in idle:  # least recently used first
            too_old = ttl > 0 and now - candidate.last_used > ttl
            if excess <= 0 and not too_old:
                continue
            del self.episodes[candidate.id]
            self.evicted[candidate.id] = None
            excess -= 1
            gone.append(candidate.id)
        while len(self.evicted) > 16 * self.limits.max_idle:
            self.evicted.popitem(last=False)
        if gone:
            log.info(
                "%s: evicted %d idle episode(s), e.g. %r (limits: %s)",
                self.domain.name,
                len(gone),
                gone[0],
                self.limits,
            )
        return gone

    def get(self, episode: str) -> Episode:
        """An existing episode; the oracle never invents one (404 naming it, 410 if evicted)."""
        found = self.episodes.get(episode)
        if found is None:
            if episode in self.evicted:
                raise KitError(
                    410,
                    "evicted_episode",
                    f"episode {episode!r} was evicted after being idle "
                    f"(limits: at most {self.limits.max_idle} idle episodes"
                    + (f", {self.limits.idle_ttl_s:g} s idle" if self.limits.idle_ttl_s else "")
                    + "); reset it to start again",
                    field="episode",
                )
            raise KitError(
                404, "unknown_episode", f"episode {episode!r} does not exist", field="episode"
            )
        return found

    def get_or_create(self, episode: str) -> tuple[Episode, bool]:
        """The episode, and whether it was just recreated after an eviction."""
        found = self.episodes.get(check_episode_id(episode))
        if found is not None:
            return found, False
        restarted = episode in self.evicted
        if restarted:
            log.warning(
                "%s: episode %r was evicted while idle and starts afresh", self.domain.name, episode
            )
        return self._new_episode(episode, self.domain.default_state(), None), restarted

    def reset(
        self, episode: str, *, task_id: str | None = None, state: dict[str, Any] | None = None
    ) -> Episode:
        check_episode_id(episode)
        if task_id is not None and state is not None:
            raise KitError(
                422, "validation_error", "give either task_id or state, not both", field="task_id"
            )
        if task_id is not None:
            task = self.domain.tasks.get(task_id)
            if task is None:
                raise KitError(
                    404,
                    "unknown_task",
                    f"task {task_id!r} does not exist in domain {self.domain.name!r}",
                    field="task_id",
                )
            return self._new_episode(episode, task.initial_state(), task_id)
        if state is not None:
            try:
                typed = self.domain.state_model.model_validate(state)
            except ValidationError as error:
                found = [
                    p.model_copy(update={"field": f"state.{p.field}"}) for p in problems(error)
                ]
                raise KitError(
                    422,
                    "validation_error",
                    "invalid state: " + "; ".join(f"{p.field}: {p.problem}" for p in found),
                    field=found[0].field,
                    fields=found,
                ) from None
            return self._new_episode(episode, typed, None)
        return self._new_episode(episode, self.domain.default_state(), None)

    async def snapshot(self, episode: str) -> Episode:
        """An existing episode, once no call of it is running (so its state is whole)."""
        found = self.get(episode)
        found.users += 1
        try:
            async with found.lock:
                self._touch(found)
                return found
        finally:
            found.users -= 1

    def delete(self, episode: str) -> None:
        """End an episode: its state, journal and stored replies go with it."""
        self.get(episode)
        del self.episodes[episode]

    def tool(self, name: str) -> ToolSchema:
        found = self.tools.get(name)
        if found is None:
            raise KitError(
                404,
                "unknown_tool",
                f"unknown tool {name!r}; tools of {self.domain.name!r}: "
                + ", ".join(sorted(self.tools)),
                field="tool",
            )
        return found

    def validate(self, name: str, arguments: Any) -> tuple[ToolSchema, BaseModel]:
        schema = self.tool(name)
        if not isinstance(arguments, dict):
            raise KitError(
                400,
                "bad_request",
                f"the arguments of {name!r} must be a JSON object, got {type(arguments).__name__}",
            )
        check_input(
            arguments, what=f"arguments for {name!r}", max_magnitude=self.domain.max_magnitude
        )
        try:
            return schema, schema.arguments_model.model_validate(arguments)
        except ValidationError as error:
            found = problems(error)
            raise KitError(
                422,
                "validation_error",
                f"invalid arguments for {name!r}: "
                + "; ".join(f"{p.field}: {p.problem}" for p in found),
                field=found[0].field,
                fields=found,
            ) from None

    async def invoke(
        self,
        name: str,
        arguments: Any,
        *,
        episode: str = DEFAULT_EPISODE,
        step: int | None = None,
        transport: Transport = "rest",
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """`call`, for callers that need only the result."""
        outcome = await self.call(
            name,
            arguments,
            episode=episode,
            step=step,
            transport=transport,
            idempotency_key=idempotency_key,
        )
        return outcome.result

    async def call(
        self,
        name: str,
        arguments: Any,
        *,
        episode: str = DEFAULT_EPISODE,
        step: int | None = None,
        transport: Transport = "rest",
        idempotency_key: str | None = None,
    ) -> CallOutcome:
        """Validate, run the tool on the episode's state, journal it if state changed.

        A failed call (ToolError or a bug) leaves the state exactly as it was. A call that
        repeats an earlier successful call's idempotency key gets that call's result again
        and changes nothing: how a careful client retries a write whose reply was lost.
        """
        schema, validated = self.validate(name, arguments)
        current, restarted = self.get_or_create(episode)
        current.users += 1
        try:
            result = await self._run(current, schema, validated, step, transport, idempotency_key)
        finally:
            current.users -= 1
            self._touch(current)
        return CallOutcome(result, restarted)

    async def _run(
        self,
        current: Episode,
        schema: ToolSchema,
        validated: BaseModel,
        step: int | None,
        transport: Transport,
        idempotency_key: str | None,
    ) -> dict[str, Any]:
        name = schema.name
        async with current.lock:
            if idempotency_key is not None and idempotency_key in current.replies:
                return replay(
                    current.replies[idempotency_key], name, validated.model_dump(mode="json")
                )
            before = current.state.model_dump(mode="json")
            kwargs = {
                parameter.name: getattr(validated, parameter.name)
                for parameter in schema.spec.parameters
            }
            token = _current_step.set(step)
            episode_token = _current_episode.set(current.id)
            try:
                if schema.spec.slow:
                    outcome: Any = await asyncio.to_thread(
                        schema.spec.function, current.state, **kwargs
                    )
                else:
                    outcome = schema.spec.function(current.state, **kwargs)
                if inspect.isawaitable(outcome):
                    outcome = await outcome
                if not isinstance(outcome, BaseModel):
                    raise TypeError(f"returned {type(outcome).__name__}, not a pydantic model")
                result = _sendable(outcome)
            except ToolError as error:
                current.state = self.domain.state_model.model_validate(before)
                raise KitError(
                    error.status, "tool_error", error.message, field=error.field
                ) from None
            except UnsendableResult as error:
                current.state = self.domain.state_model.model_validate(before)
                raise KitError(
                    422,
                    "unsendable_result",
                    f"tool {name!r} produced a result JSON cannot carry ({error}); "
                    "the call changed nothing",
                ) from None
            except Exception as error:
                current.state = self.domain.state_model.model_validate(before)
                raise KitError(
                    500, "internal_error", f"tool {name!r} failed: {type(error).__name__}: {error}"
                ) from error
            finally:
                _current_step.reset(token)
                _current_episode.reset(episode_token)
            after = current.state.model_dump(mode="json")
            if after != before:
                current.entries.append(
                    JournalEntry(
                        seq=len(current.entries) + 1,
                        step=step,
                        tool=name,
                        arguments=validated.model_dump(mode="json"),
                        result=result,
                        state_after=after,
                        transport=transport,
                    )
                )
            if idempotency_key is not None:
                current.replies[idempotency_key] = StoredReply(
                    name, validated.model_dump(mode="json"), result
                )
            return result


def _sendable(outcome: BaseModel) -> dict[str, Any]:
    """The tool's result as the reply carries it. Its content may be the agent's (what a
    sandboxed snippet printed): odd content is escaped or refused, never a 500."""
    try:
        dumped = outcome.model_dump(mode="json")
    except (ValueError, RecursionError) as error:  # pydantic's depth bound, a cycle
        raise UnsendableResult(str(error)[:300]) from None
    result: dict[str, Any] = sendable(dumped)
    return result


def replay(stored: StoredReply, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The stored result, if the key is reused for the same call; a 422 otherwise."""
    if stored.tool != tool or stored.arguments != arguments:
        raise KitError(
            422,
            "idempotency_key_reused",
            f"this idempotency key was already used for a different call ({stored.tool})",
            field="Idempotency-Key",
        )
    return stored.result
