"""The schedule an episode actually received, rebuilt from RUN_DIR/calls.jsonl.

Every fault a draw chose on a call of the episode (a fresh fault: not a later call of an
incident already running) becomes one entry: `tool` and `call` are its draw's tool and
position, `fault` and `params` what the log says (the unit's own parameters where they
differ from its defaults; notes the engine added, such as `repicked_from`, go to
`logged`). An incident a profile's plan
started (FIT v2, draw tool `*`) becomes a step entry from the step it first touched.
Faults a draw chose but that could not act (`fault_delivered` false) are kept too, so
that a replay logs the very same calls. A connection fault (SlowInitialize), logged on the
protocol line of an MCP `initialize`, becomes an entry on `domain/initialize`, call n:
the n-th initialize of the episode.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaosproxy.errors import ChaosError
from chaosproxy.faults import catalog as c
from chaosproxy.faults.schedule import Schedule, ScheduledFault
from chaosproxy.records import (
    CALLS_FILE,
    EPISODES_FILE,
    CallRecord,
    EpisodeRecord,
    read_jsonl,
)

CONNECTION_METHODS = frozenset({"initialize", "server/discover"})
"""The requests that open an MCP connection (where SlowInitialize lands)."""

ENGINE_NOTES = ("repicked_from", "owed_instead_of")
"""Keys the engine adds to a fresh fault's logged params (not the unit's parameters)."""
PLAN_NOTES = (
    "kind",
    "label",
    "timing",
    "timing_basis",
    "timing_steps",
    "plan_length",
    "duration_steps",
)
"""Keys an incident plan adds to its incident's params."""


class ReplayError(ChaosError, ValueError):
    """A run directory or episode that cannot be replayed; the message says why."""


@dataclass(frozen=True)
class Received:
    """An episode's record, its calls (the recorded attempt's), and its schedule."""

    episode: EpisodeRecord
    calls: list[CallRecord]
    schedule: Schedule


def episode_record(run_dir: Path, episode: str) -> EpisodeRecord:
    """The last record of `episode` in RUN_DIR/episodes.jsonl."""
    path = run_dir / EPISODES_FILE
    if not path.is_file():
        raise ReplayError(f"{run_dir}: no {EPISODES_FILE} (not a run directory?)")
    found = [record for record in read_jsonl(path, EpisodeRecord) if record.episode == episode]
    if not found:
        raise ReplayError(f"{run_dir}: no episode {episode!r} in {EPISODES_FILE}")
    return found[-1]


def episode_calls(run_dir: Path, record: EpisodeRecord) -> list[CallRecord]:
    """The episode's calls in log order, of its recorded attempt when one is stamped."""
    path = run_dir / CALLS_FILE
    if not path.is_file():
        return []
    return [
        call
        for call in read_jsonl(path, CallRecord)
        if call.episode == record.episode
        and (record.attempt is None or call.attempt is None or call.attempt == record.attempt)
    ]


def received(run_dir: Path, episode: str) -> Received:
    record = episode_record(run_dir, episode)
    calls = episode_calls(run_dir, record)
    return Received(record, calls, schedule_of(calls))


def schedule_of(calls: list[CallRecord]) -> Schedule:
    """The schedule of fresh faults these calls received, in the order they met them."""
    entries: list[ScheduledFault] = []
    positions: dict[str, int] = {}
    for call in calls:
        if call.kind == "protocol" and call.rpc_method in CONNECTION_METHODS:
            tool_id = f"{call.domain}/initialize"  # SlowInitialize: the n-th initialize
            positions[tool_id] = positions.get(tool_id, 0) + 1
            fault = call.fault
            if fault is not None and fault.name in c.CONNECTION_FAULTS:
                entries.append(_entry(call, fault.name, dict(fault.params), positions[tool_id]))
            continue
        if call.kind == "protocol" or call.tool is None:
            continue
        tool_id = f"{call.domain}/{call.tool}"
        positions[tool_id] = positions.get(tool_id, 0) + 1
        fault = call.fault
        if fault is None or getattr(fault, "fresh", None) is False:  # None: an older log
            continue
        if fault.name not in c.CATALOG:
            continue
        entries.append(_entry(call, fault.name, dict(fault.params), positions[tool_id]))
    return Schedule(faults=entries)


def _entry(call: CallRecord, name: str, logged: dict[str, Any], counted: int) -> ScheduledFault:
    """One entry; `counted` is the call's place among its tool's calls in the log (the
    position when no draw says it: a replayed, scheduled fault)."""
    assert call.fault is not None
    defaults = c.CATALOG[name].params().model_dump()
    params = {
        key: value
        for key, value in logged.items()
        if key in defaults and value != defaults[key]  # the rest: the unit's defaults
    }
    draw = call.fault.draw
    planned = draw.tool == "*" if draw is not None else "@episode" in (call.fault.incident or "")
    if planned:
        notes = {key: logged[key] for key in PLAN_NOTES if key in logged}
        length = logged.get("duration_steps")
        step = call.step or 1
        return ScheduledFault(
            tool="*",
            from_step=step,
            to_step=step + length - 1 if isinstance(length, int) else None,
            fault=name,
            params=params,
            logged=notes,
        )
    notes = {key: logged[key] for key in ENGINE_NOTES if key in logged}
    own = "initialize" if call.kind == "protocol" else call.tool
    tool = draw.tool if draw is not None else f"{call.domain}/{own}"
    position = draw.position if draw is not None else counted
    return ScheduledFault(tool=tool, call=position, fault=name, params=params, logged=notes)
