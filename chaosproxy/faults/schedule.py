"""A fault schedule: an explicit per-episode plan of faults, as data.

"Call 2 of `travel/search_flights`: SoftRateLimit{retry_after: 1}; from step 4:
SchemaDrift" is a schedule of two entries. The engine applies a schedule in place of the
profile's draws (`replace`) or on top of them (`overlay`: the profile still draws on
calls the schedule does not name). `chaosproxy schedule` prints the schedule an episode
received, and `chaosproxy shrink` searches for the smallest one that still fails.

`call` is the draw position: the n-th call of that `domain/tool` in the episode, from 1.
A step-based entry (`from_step`, optionally `to_step`) starts an incident at that step
of the episode's tool calls, like an incident plan's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from chaosproxy.errors import ChaosError
from chaosproxy.faults import catalog as c

ScheduleMode = Literal["replace", "overlay"]


class ScheduledFault(BaseModel):
    """One fault of a schedule: on a call of a tool, or from a step on."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(
        min_length=1,
        description="`domain/tool` (or a bare tool name, any domain); `*` with from_step: any tool",
    )
    call: int | None = Field(
        None, ge=1, description="the n-th call of this tool in the episode, from 1"
    )
    from_step: int | None = Field(
        None, ge=1, description="instead of `call`: an incident from this step (1-based) on"
    )
    to_step: int | None = Field(
        None, ge=1, description="with from_step: the incident's last step (none: persistent)"
    )
    fault: Annotated[str, AfterValidator(c.check_fault_name)] = Field(
        description="a fault name from the catalogue (`chaosproxy profiles`)"
    )
    params: dict[str, Any] = Field(
        default_factory=dict, description="the fault's parameters (over the profile's)"
    )
    logged: dict[str, Any] = Field(
        default_factory=dict,
        description="notes logged with the fault as the episode received it (e.g. "
        "repicked_from); they change nothing, and keep a replayed log identical",
    )

    @model_validator(mode="after")
    def _valid(self) -> ScheduledFault:
        if (self.call is None) == (self.from_step is None):
            raise ValueError("give exactly one of 'call' and 'from_step'")
        if self.to_step is not None:
            if self.from_step is None:
                raise ValueError("'to_step' goes with 'from_step'")
            if self.to_step < self.from_step:
                raise ValueError("'to_step' must be >= 'from_step'")
        if self.tool == "*" and self.call is not None:
            raise ValueError("tool '*' only goes with 'from_step'")
        try:
            c.CATALOG[self.fault].params.model_validate(self.params)
        except ValidationError as bad:
            first = bad.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ValueError(f"'params.{where}' of {self.fault}: {first['msg']}") from None
        return self

    def settings(self, base: c.Params) -> c.Params:
        """The fault's parameters: the profile's (`base`), with this entry's over them."""
        merged = {**base.model_dump(), **self.params}
        return c.CATALOG[self.fault].params.model_validate(merged)

    def matches(self, domain: str, tool: str) -> bool:
        return self.tool in (f"{domain}/{tool}", tool)

    def label(self) -> str:
        where = f"call {self.call}" if self.call is not None else f"from step {self.from_step}"
        params = ", ".join(f"{k}: {v}" for k, v in self.params.items())
        return f"{where} of {self.tool}: {self.fault}" + (f"{{{params}}}" if params else "")


class Schedule(BaseModel):
    """A per-episode plan of faults (`faults`, in any order)."""

    model_config = ConfigDict(extra="forbid")

    faults: list[ScheduledFault] = Field(default_factory=list)
    note: str | None = Field(None, description="free text: where the schedule came from")

    @model_validator(mode="after")
    def _distinct(self) -> Schedule:
        seen: set[tuple[str, int]] = set()
        for index, entry in enumerate(self.faults):
            if entry.call is None:
                continue
            if (entry.tool, entry.call) in seen:
                raise ValueError(
                    f"faults.{index}: call {entry.call} of {entry.tool} is scheduled twice"
                )
            seen.add((entry.tool, entry.call))
        return self

    def at_call(self, domain: str, tool: str, position: int) -> ScheduledFault | None:
        """The entry for this call of the tool, if any."""
        for entry in self.faults:
            if entry.call == position and entry.matches(domain, tool):
                return entry
        return None

    def names_call(self, domain: str, tool: str, position: int) -> bool:
        return self.at_call(domain, tool, position) is not None

    def steps(self) -> list[ScheduledFault]:
        return [entry for entry in self.faults if entry.from_step is not None]

    def without(self, indices: set[int]) -> Schedule:
        return Schedule(faults=[f for i, f in enumerate(self.faults) if i not in indices])


class ScheduleError(ChaosError, ValueError):
    """A schedule that does not validate; the message names the field."""


def parse_schedule(data: Any, source: str = "schedule") -> Schedule:
    """A schedule from parsed JSON/YAML, or ScheduleError naming the bad field."""
    if isinstance(data, list):
        data = {"faults": data}
    try:
        return Schedule.model_validate(data)
    except ValidationError as bad:
        first = bad.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        message = str(first["msg"]).removeprefix("Value error, ")
        raise ScheduleError(f"{source}: field '{where}': {message}") from None


def schedule_schema() -> dict[str, Any]:
    """The published JSON schema of a schedule file."""
    schema = Schedule.model_json_schema()
    schema["$id"] = "https://chaosproxy.dev/schemas/schedule.json"
    schema["title"] = "chaosproxy fault schedule"
    return schema
