"""The small per-episode record the engine owns: positions, incidents, remembered replies."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

import orjson

from chaosproxy.faults.models import DrawKey, Params
from chaosproxy.faults.profile import Profile
from chaosproxy.faults.schedule import Schedule, ScheduleMode

STALE_LIMIT = 512
"""Replies remembered per episode for StaleData; later calls simply find none."""

SAME_CALL = "first reply to the same call"
SAME_TOOL = "first reply of the same tool (other arguments)"
"""What a stale reply is: the cache's entry for this very call, else the tool's (a cache
keyed too coarsely), so StaleData can land on every call of a tool that answered before."""


def args_key(arguments: dict[str, Any]) -> str:
    """A canonical text of arguments: the same call gives the same key.

    orjson (compact, keys sorted) where it can: several times faster than `json` on the
    hot path. Where orjson refuses (integers over 64 bits, lone surrogates, keys that are
    not text) or would hide a difference (NaN and infinities, which it writes as null),
    `json` writes the key, with its spaced separators, so the two never give one key for
    different arguments. The key only ever meets other keys (never a draw or the log)."""
    try:
        fast = orjson.dumps(arguments, default=str, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        fast = b"null"
    if b"null" not in fast:
        return fast.decode()
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


def json_copy(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, text, numbers): what `copy.deepcopy`
    gives, without its memo (parsed JSON shares no objects); anything else is deep-copied."""
    kind = type(value)
    if kind is dict:
        return {key: json_copy(item) for key, item in value.items()}
    if kind is list:
        return [json_copy(item) for item in value]
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    return copy.deepcopy(value)


def upstream_arguments(
    arguments: dict[str, Any], renames: dict[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """Arguments sent under names a rewritten tool list showed (SchemaDrift), mapped back to
    the upstream's; old names pass unchanged (lenient v1 compatibility)."""
    applied = {name: renames[name] for name in arguments if name in renames}
    mapped = {applied.get(name, name): value for name, value in arguments.items()}
    return mapped, applied


@dataclass
class Incident:
    """A fault that outlives one call: a window of steps, possibly on one tool only.

    `end_step` None means persistent (the rest of the episode).
    """

    id: str
    fault: str
    start_step: int
    end_step: int | None
    tool: str | None
    draw: DrawKey | None
    """None for an incident a schedule placed (no draw chose it)."""
    salt: float
    settings: Params
    params: dict[str, Any] = field(default_factory=dict)
    args_key: str | None = None
    origin: str = "call"
    touched: int = 0

    def covers(self, step: int, tool: str, key: str | None = None) -> bool:
        if step < self.start_step or (self.end_step is not None and step > self.end_step):
            return False
        if self.tool is not None and self.tool != tool:
            return False
        return self.args_key is None or self.args_key == key

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "fault": self.fault,
            "start_step": self.start_step,
            "end_step": self.end_step,
            "tool": self.tool,
            "origin": self.origin,
            "calls_touched": self.touched,
            "params": self.params,
            "draw": self.draw.model_dump() if self.draw is not None else None,
        }


@dataclass
class EpisodeState:
    episode: str
    key: str
    seed: int
    profile: Profile | None = None
    plan_length: int | None = None
    """The task's l_min (tool calls of its shortest plan), when known: incident timing."""
    positions: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    last_step: int = 0
    incidents: list[Incident] = field(default_factory=list)
    planned_for: str | None = None
    stale: dict[tuple[str, str], Any] = field(default_factory=dict)
    tool_replies: dict[str, Any] = field(default_factory=dict)
    """The first reply of each tool in the episode (any arguments): StaleData's fallback."""
    owed: dict[str, int] = field(default_factory=dict)
    """Replay faults (StaleData) picked where they could not land (no earlier reply of the
    tool): each is paid at the next fresh draw in the episode where it can, so the
    profile's mix holds (ReliabilityBench App. B) while the rate stays the profile's."""
    argument_renames: dict[str, dict[str, str]] = field(default_factory=dict)
    initializes: int = 0
    """MCP initializes seen (each is drawn for SlowInitialize under its own position)."""
    faults: list[dict[str, Any]] = field(default_factory=list)
    rolling_calls: int = 0
    """Calls per rolling episode (calls without an episode id): every `rolling_calls`
    tool calls a fresh record replaces this one, with its own key; 0: no rolling."""
    window: int = 0
    """Which rolling episode of the id this record is (0: the first)."""
    schedule: Schedule | None = None
    """An explicit plan of faults for this episode (`faults/schedule.py`)."""
    schedule_mode: ScheduleMode = "replace"
    """`replace`: the schedule's faults only; `overlay`: the profile's draws as well, on
    calls the schedule does not name."""
    schedule_missed: list[dict[str, Any]] = field(default_factory=list)
    """Scheduled faults that met their call but could not land on it, with why."""

    @property
    def keyed_incidents(self) -> bool:
        return any(incident.args_key is not None for incident in self.incidents)

    def next_position(self, tool: str, step: int) -> int:
        self.positions[tool] = self.positions.get(tool, 0) + 1
        self.calls += 1
        self.last_step = max(self.last_step, step)
        return self.positions[tool]

    def has_reply(self, tool: str, key: str) -> bool:
        """Whether a reply to this very call is kept."""
        return (tool, key) in self.stale

    def has_tool_reply(self, tool: str) -> bool:
        """Whether the tool answered before in this episode, i.e. StaleData can serve now."""
        return tool in self.tool_replies

    def earlier(self, tool: str, key: str) -> tuple[Any, str | None]:
        """The reply a stale cache gives this call (a copy) and what it is (`SAME_CALL`,
        `SAME_TOOL`), or (None, None) when the tool has not answered yet."""
        kept = self.stale.get((tool, key))
        if kept is not None:
            return json_copy(kept), SAME_CALL
        kept = self.tool_replies.get(tool)
        if kept is not None:
            return json_copy(kept), SAME_TOOL
        return None, None

    def remember(self, tool: str, key: str, body: Any) -> None:
        """Keep the first reply to a call (a stale cache then holds that one) and the
        tool's first reply."""
        same_call = (tool, key) not in self.stale and len(self.stale) < STALE_LIMIT
        first_of_tool = tool not in self.tool_replies
        if not same_call and not first_of_tool:
            return
        kept = json_copy(body)  # one copy for both: kept replies are only ever read
        if same_call:
            self.stale[(tool, key)] = kept
        if first_of_tool:
            self.tool_replies[tool] = kept
