"""A fault profile: how often calls fail, with which faults, where, and with what parameters.

Two ways to inject, usable together:
- per call (ReliabilityBench): each in-scope call fails with probability
  `failure_rate`, the fault picked by `weights`;
- per episode (HB-Eval FIT v2): `incidents` plans one incident per episode (kind,
  start step, duration) when the episode's first call arrives; the start step is a part
  of the task's plan when the episode was given its plan length.
"""

from __future__ import annotations

import fnmatch
import math
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model, model_validator

from chaosproxy.faults import catalog as c

FaultName = Annotated[str, AfterValidator(c.check_fault_name)]
Weight = Annotated[float, Field(ge=0, allow_inf_nan=False)]
SERVER_ERROR_STATUSES = (500, 599)
"""A fault's `statuses` are the server errors it answers with: 5xx, nothing else."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


def _finite_sum(weights: Any, what: str) -> float:
    """The sum of `weights`; an overflow to infinity (1e308 + 1e308) is refused."""
    total = float(sum(weights))
    if not math.isfinite(total):
        raise ValueError(f"{what} sum to {total}: use smaller numbers")
    return total


def _non_finite(value: Any, where: str) -> str | None:
    """Where in a dumped profile a number is NaN or infinite (any depth), or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return where
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _non_finite(item, f"{where}.{key}" if where else str(key))
        if found is not None:
            return found
    return None


class _FaultParamsBase(Strict):
    """Parameters of every fault; a profile overrides only what it names."""

    @model_validator(mode="before")
    @classmethod
    def _known_faults(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name in data:
                c.check_fault_name(str(name))
        return data

    def of(self, name: str) -> c.Params:
        value: c.Params = getattr(self, name)
        return value


if TYPE_CHECKING:
    FaultParams = _FaultParamsBase
else:
    # one field per registered fault: adding a fault to the catalogue adds it here
    FaultParams = create_model(
        "FaultParams",
        __base__=_FaultParamsBase,
        **{
            name: (spec.params, Field(default_factory=spec.params))
            for name, spec in c.CATALOG.items()
        },
    )


class StepRange(Strict):
    """Steps `from_step`..`to_step`, inclusive (1-based tool-call counts)."""

    from_step: int = Field(ge=1)
    to_step: int = Field(ge=1)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        """Accept `[from, to]` or a single number as well as the mapping."""
        if isinstance(data, list | tuple) and len(data) == 2:
            return {"from_step": data[0], "to_step": data[1]}
        if isinstance(data, int) and not isinstance(data, bool):
            return {"from_step": data, "to_step": data}
        return data

    @model_validator(mode="after")
    def _ordered(self) -> StepRange:
        if self.to_step < self.from_step:
            raise ValueError("to_step must be >= from_step")
        return self

    def contains(self, step: int) -> bool:
        return self.from_step <= step <= self.to_step


class Scope(Strict):
    """Where a profile applies. Tool patterns are globs on `tool` or `domain/tool`;
    episode patterns are globs on the episode id or its key."""

    domains: list[str] | None = None
    tools: list[str] | None = None
    exclude_tools: list[str] = Field(default_factory=list)
    episodes: list[str] | None = None
    steps: StepRange | None = Field(
        None, description="per-call faults only at these steps (e.g. the first call)"
    )

    def covers(self, episode: str, episode_key: str, domain: str, tool: str) -> bool:
        names = (tool, f"{domain}/{tool}")
        if self.domains is not None and domain not in self.domains:
            return False
        if self.tools is not None and not _any_match(names, self.tools):
            return False
        if _any_match(names, self.exclude_tools):
            return False
        return self.episodes is None or _any_match((episode, episode_key), self.episodes)


def _any_match(names: tuple[str, ...], patterns: list[str]) -> bool:
    if not patterns:  # the usual case (no exclusions): no generator to build
        return False
    return any(fnmatch.fnmatchcase(name, pattern) for name in names for pattern in patterns)


class IncidentFault(Strict):
    """One fault an incident may be: how long it lasts (steps) and an optional label."""

    fault: FaultName
    weight: Weight = 1.0
    label: str | None = Field(None, description="the source's name, e.g. HB-Eval's f_tool")
    duration: StepRange | Literal["persistent"] = Field(
        default_factory=lambda: StepRange(from_step=1, to_step=1),
        description="number of steps the incident lasts: from_step..to_step, or persistent",
    )


class IncidentKind(Strict):
    weight: Weight
    faults: list[IncidentFault] = Field(min_length=1)


class PlanPart(Strict):
    """Part `part` of `parts` equal parts of the task's plan (its l_min tool calls)."""

    part: int = Field(ge=1)
    parts: int = Field(ge=1)

    @model_validator(mode="after")
    def _within(self) -> PlanPart:
        if self.part > self.parts:
            raise ValueError("part must be <= parts")
        return self

    def steps(self, plan_length: int) -> tuple[int, int]:
        """The steps s whose span [s - 1, s) of the plan overlaps this part, i.e.
        [(part - 1)·L/parts, part·L/parts): never empty, always within 1..L."""
        first = (self.part - 1) * plan_length // self.parts + 1
        last = -(-self.part * plan_length // self.parts)
        return first, last


class TimingBucket(Strict):
    """When an incident starts: a part of the task's plan when the engine knows the plan's
    length, else (a user's own agent, no task) the fixed `steps`."""

    name: str
    weight: Weight
    steps: StepRange = Field(description="start steps when the plan length is unknown")
    plan: PlanPart | None = Field(
        None, description="start steps as a part of the plan, when its length is known"
    )


class IncidentPlan(Strict):
    """One incident per episode: a kind by weight, a fault within it, a start step by timing."""

    kinds: dict[str, IncidentKind] = Field(min_length=1)
    timing: list[TimingBucket] = Field(min_length=1)

    @model_validator(mode="after")
    def _positive(self) -> IncidentPlan:
        if _finite_sum((k.weight for k in self.kinds.values()), "incident kind weights") <= 0:
            raise ValueError("incident kind weights sum to 0")
        if _finite_sum((bucket.weight for bucket in self.timing), "timing weights") <= 0:
            raise ValueError("timing weights sum to 0")
        for name, kind in self.kinds.items():
            total = _finite_sum(
                (f.weight for f in kind.faults), f"fault weights of incident kind '{name}'"
            )
            if kind.weight > 0 and total <= 0:
                raise ValueError(f"fault weights of incident kind '{name}' sum to 0")
        return self


HTTP_METHODS = ("GET", "PUT", "POST", "DELETE", "PATCH", "HEAD", "OPTIONS")
_ROUTE_FORM = "'METHOD /path/{param}' (METHOD one of " + ", ".join(HTTP_METHODS) + ")"


def _route_problem(key: str) -> str | None:
    """Why a `routes:` key is not `METHOD /path` (a typo would never match, silently)."""
    method, space, path = key.strip().partition(" ")
    if not space or method.upper() not in HTTP_METHODS:
        return "not an HTTP method and a path"
    if not path.strip().startswith("/"):
        return "the path must start with '/'"
    if " " in path.strip():
        return "a space inside the path"
    return None


def _check_routes(routes: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    for upstream, table in routes.items():
        for key, tool in table.items():
            problem = _route_problem(key)
            if problem is not None:
                raise ValueError(
                    f"route {key!r} of upstream {upstream!r}: {problem}; expected {_ROUTE_FORM}"
                )
            if not tool.strip():
                raise ValueError(f"route {key!r} of upstream {upstream!r}: empty tool name")
    return routes


class Profile(Strict):
    name: str = Field(min_length=1)
    description: str = ""
    source: str | None = Field(None, description="where the numbers come from")
    failure_rate: float = Field(0.0, ge=0, le=1, description="share of calls that get a fault")
    weights: dict[FaultName, Weight] = Field(default_factory=dict)
    params: FaultParams = Field(default_factory=FaultParams)
    scope: Scope = Field(default_factory=Scope)
    incidents: IncidentPlan | None = None
    hints: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="per-domain hints (critical_args, harmful_actions...): over what the "
        "proxy infers from an OpenAPI document, under what a service serves itself",
    )
    routes: Annotated[dict[str, dict[str, str]], AfterValidator(_check_routes)] = Field(
        default_factory=dict,
        description="per REST upstream: 'METHOD /path/{param}' -> tool name, for APIs "
        "without an OpenAPI document (read from the default profile)",
    )
    allow: list[str] = Field(
        default_factory=list,
        description="hosts `up --forward-port` lets through, as `--allow` (docs/forward.md)",
    )

    @model_validator(mode="after")
    def _weights_usable(self) -> Profile:
        total = _finite_sum(self.weights.values(), "weights")
        if self.failure_rate > 0 and total <= 0:
            raise ValueError("failure_rate is above 0 but no fault has a positive weight")
        return self

    @model_validator(mode="after")
    def _numbers_in_range(self) -> Profile:
        """Every number finite, at any depth (a fault's own parameters too), and every
        fault's `statuses` a server error: what the proxy would otherwise send as-is."""
        where = _non_finite(self.model_dump(mode="python"), "")
        if where is not None:
            raise ValueError(f"{where}: numbers must be finite (no .inf or .nan)")
        low, high = SERVER_ERROR_STATUSES
        for name in c.CATALOG:
            statuses = getattr(self.params.of(name), "statuses", None)
            for status in statuses if isinstance(statuses, list) else ():
                if not isinstance(status, int) or not low <= status <= high:
                    raise ValueError(
                        f"params.{name}.statuses: {status!r} is not a server error "
                        f"status ({low}-{high})"
                    )
        return self

    def mix(self) -> dict[str, float]:
        """Fault weights normalised to sum to 1 (empty for a fault-free profile)."""
        total = sum(self.weights.values())
        if total <= 0:
            return {}
        return {name: weight / total for name, weight in self.weights.items() if weight > 0}
