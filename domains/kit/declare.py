"""How a domain is declared: its state model, its tools, its tasks and its chaos hints.

A domain module builds one `Domain`, registers tools with `@domain.tool(...)` and tasks
with `domain.task(...)`. Everything the kit serves (REST, OpenAPI, MCP, oracle) is derived
from this one declaration, so the two transports can never disagree.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar, get_type_hints

from pydantic import BaseModel, Field

Difficulty = Literal["simple", "medium", "complex"]

DEFAULT_MAX_MAGNITUDE = 1e12
"""The largest absolute number a tool argument may carry (see kit/edge.py): a trillion is
more than any amount, count or quantity a task uses, and leaves room for cents and products
within `Decimal`'s 28 significant digits. A domain may set its own `max_magnitude`."""


class Escalation(BaseModel):
    """A hand-off to a human: how an agent performs a Safe Halt."""

    escalation_id: str
    reason: str
    step: int | None = None


class DomainState(BaseModel):
    """Base of every domain's state. Tools mutate it in place; the kit snapshots it."""

    escalations: list[Escalation] = Field(default_factory=list)


StateT = TypeVar("StateT", bound=DomainState)

_current_step: ContextVar[int | None] = ContextVar("chaosproxy_current_step", default=None)


def current_step() -> int | None:
    """The proxy's step number (X-Chaos-Step) of the call being served, if any; for tools."""
    return _current_step.get()


_current_episode: ContextVar[str | None] = ContextVar("chaosproxy_current_episode", default=None)


def current_episode() -> str | None:
    """The episode of the call being served, if any: for tools that share a resource fairly
    between episodes (the coding sandbox's slots)."""
    return _current_episode.get()


class ToolError(Exception):
    """A domain-level refusal (not found, conflict, bad value): a 4xx, or an MCP tool error."""

    def __init__(self, message: str, *, status: int = 400, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.field = field


class CriticalArg(BaseModel):
    """How ParameterCorruption may rewrite an argument to a wrong but schema-valid value."""

    kind: Literal["choice", "date_shift", "number", "id_bump"]
    values: list[Any] = Field(default_factory=list)
    days: list[int] = Field(default_factory=list)
    factors: list[float] = Field(default_factory=list)

    @classmethod
    def choice(cls, values: Sequence[Any]) -> CriticalArg:
        return cls(kind="choice", values=list(values))

    @classmethod
    def date_shift(cls, days: Sequence[int] = (1, -1, 7)) -> CriticalArg:
        return cls(kind="date_shift", days=list(days))

    @classmethod
    def number(cls, factors: Sequence[float] = (0.5, 2.0)) -> CriticalArg:
        return cls(kind="number", factors=list(factors))

    @classmethod
    def id_bump(cls) -> CriticalArg:
        return cls(kind="id_bump")


class HarmfulAction(BaseModel):
    """An action an AdversarialPayload may ask for; the scorer looks for it in the journal."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    pretext: str = ""


class ToolCallFailed(Exception):
    """A tool call that did not return a result: an HTTP error, an MCP error, a broken body."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        retry_after: float | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.retry_after = retry_after
        self.body = body


class ToolClient(Protocol):
    """What reference solutions and agents call tools through (REST or MCP)."""

    async def call(self, tool: str, /, **arguments: Any) -> dict[str, Any]: ...


Solver = Callable[[ToolClient], Awaitable[None]]


@dataclass(frozen=True)
class ToolSpec:
    """A registered tool: the function and what the kit and the proxy need to know about it."""

    name: str
    function: Callable[..., BaseModel]
    description: str
    parameters: tuple[inspect.Parameter, ...]
    type_hints: dict[str, Any]
    result_model: type[BaseModel]
    idempotent: bool
    critical: dict[str, CriticalArg]
    slow: bool = False


@dataclass(frozen=True)
class Task(Generic[StateT]):
    """One task of a domain's suite. `verify` judges typed state, never text."""

    id: str
    domain: str
    description: str
    initial_state: Callable[[], StateT]
    verify: Callable[[StateT, StateT], bool]
    solve: Solver
    l_min: int
    difficulty: Difficulty
    tags: tuple[str, ...] = ()
    escalation_acceptable: bool = False
    quality_rules: tuple[str, ...] = ()

    def metadata(self) -> dict[str, Any]:
        """The code-free description the runner writes to tasks.jsonl."""
        return {
            "id": self.id,
            "domain": self.domain,
            "description": self.description,
            "l_min": self.l_min,
            "difficulty": self.difficulty,
            "tags": list(self.tags),
            "escalation_acceptable": self.escalation_acceptable,
            "quality_rules": list(self.quality_rules),
        }


@dataclass
class Domain(Generic[StateT]):
    """One declared domain. Serve it with the kit's `asgi_app(domain)`."""

    name: str
    title: str
    state_model: type[StateT]
    default_state: Callable[[], StateT]
    description: str = ""
    harmful_actions: list[HarmfulAction] = field(default_factory=list)
    tools: dict[str, ToolSpec] = field(default_factory=dict)
    tasks: dict[str, Task[StateT]] = field(default_factory=dict)
    max_magnitude: float = DEFAULT_MAX_MAGNITUDE

    def __post_init__(self) -> None:
        self.tool(idempotent=False)(escalate_to_human)

    def tool(
        self,
        *,
        idempotent: bool = True,
        critical: dict[str, CriticalArg] | None = None,
        name: str | None = None,
        slow: bool = False,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a tool. Its first parameter is the episode state; the rest are its arguments.

        Tools run on the server's event loop, one call at a time per episode. Mark a tool
        `slow=True` when it blocks for long (a subprocess, heavy CPU): it then runs in a worker
        thread while other episodes keep being served.
        """

        def register(function: Callable[..., Any]) -> Callable[..., Any]:
            spec = _tool_spec(function, name or function.__name__, idempotent, critical or {}, slow)
            if spec.name in self.tools:
                raise ValueError(f"domain {self.name!r}: tool {spec.name!r} registered twice")
            self.tools[spec.name] = spec
            return function

        return register

    def task(
        self,
        *,
        id: str,
        description: str,
        initial_state: Callable[[], StateT],
        verify: Callable[[StateT, StateT], bool],
        solve: Solver,
        l_min: int,
        difficulty: Difficulty,
        tags: Sequence[str] = (),
        escalation_acceptable: bool = False,
        quality_rules: Sequence[str] = (),
    ) -> Task[StateT]:
        """Register a task of this domain's suite."""
        if id in self.tasks:
            raise ValueError(f"domain {self.name!r}: task {id!r} registered twice")
        task = Task(
            id=id,
            domain=self.name,
            description=description,
            initial_state=initial_state,
            verify=verify,
            solve=solve,
            l_min=l_min,
            difficulty=difficulty,
            tags=tuple(tags),
            escalation_acceptable=escalation_acceptable,
            quality_rules=tuple(quality_rules),
        )
        self.tasks[id] = task
        return task

    def asgi_app(self, limits: Any = None, oracle_token: str | None = None) -> Any:
        """The Starlette app serving this domain (REST, OpenAPI, MCP, oracle) on one port.

        `limits` is an `EpisodeLimits` (default: from the environment); with `oracle_token`,
        `/_oracle/` requires `Authorization: Bearer TOKEN`.
        """
        from chaosproxy.domains.kit.app import asgi_app

        return asgi_app(self, limits, oracle_token=oracle_token)

    def solution(
        self,
        *,
        id: str,
        description: str,
        verify: Callable[[StateT, StateT], bool],
        l_min: int,
        difficulty: Difficulty,
        tags: Sequence[str] = (),
        escalation_acceptable: bool = False,
        initial_state: Callable[[], StateT] | None = None,
    ) -> Callable[[Solver], Solver]:
        """Decorator form of `task`: the decorated coroutine is the reference solution.

        The task starts from `initial_state`, or from the domain's default world.
        """

        def register(solve: Solver) -> Solver:
            self.task(
                id=id,
                description=description,
                initial_state=initial_state or self.default_state,
                verify=verify,
                solve=solve,
                l_min=l_min,
                difficulty=difficulty,
                tags=tags,
                escalation_acceptable=escalation_acceptable,
            )
            return solve

        return register

    def hints(self) -> dict[str, Any]:
        """What the fault engine may use: critical arguments, harmful actions, idempotency."""
        return {
            "critical_args": {
                tool.name: {arg: spec.model_dump() for arg, spec in tool.critical.items()}
                for tool in self.tools.values()
                if tool.critical
            },
            "harmful_actions": [action.model_dump() for action in self.harmful_actions],
            "tools": {tool.name: {"idempotent": tool.idempotent} for tool in self.tools.values()},
        }


class EscalationResult(BaseModel):
    escalation_id: str
    status: Literal["queued"]
    reason: str
    message: str


def escalate_to_human(state: DomainState, reason: str) -> EscalationResult:
    """Hand the task to a human operator and stop. Use when the task cannot be completed safely."""
    if not reason.strip():
        raise ToolError("reason must not be empty", status=422, field="reason")
    escalation_id = f"ESC-{len(state.escalations) + 1:04d}"
    state.escalations.append(
        Escalation(escalation_id=escalation_id, reason=reason, step=current_step())
    )
    return EscalationResult(
        escalation_id=escalation_id,
        status="queued",
        reason=reason,
        message="A human operator will take over this request.",
    )


def _tool_spec(
    function: Callable[..., Any],
    name: str,
    idempotent: bool,
    critical: dict[str, CriticalArg],
    slow: bool = False,
) -> ToolSpec:
    signature = inspect.signature(function)
    parameters = tuple(signature.parameters.values())
    if not parameters:
        raise TypeError(f"tool {name!r}: the first parameter must be the episode state")
    hints = get_type_hints(function, include_extras=True)
    result_model = hints.get("return")
    if not (isinstance(result_model, type) and issubclass(result_model, BaseModel)):
        raise TypeError(f"tool {name!r} must be annotated to return a pydantic model")
    arguments = parameters[1:]
    for parameter in arguments:
        if parameter.name not in hints:
            raise TypeError(f"tool {name!r}: parameter {parameter.name!r} has no type annotation")
    unknown = set(critical) - {parameter.name for parameter in arguments}
    if unknown:
        raise ValueError(f"tool {name!r}: critical names unknown parameters {sorted(unknown)}")
    description = inspect.cleandoc(function.__doc__ or "").strip()
    if not description:
        raise ValueError(f"tool {name!r} needs a docstring: it is the tool's description")
    return ToolSpec(
        name=name,
        function=function,
        description=description,
        parameters=arguments,
        type_hints={p.name: hints[p.name] for p in arguments},
        result_model=result_model,
        idempotent=idempotent,
        critical=critical,
        slow=slow,
    )
