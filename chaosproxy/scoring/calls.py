"""One streaming pass over calls.jsonl: per-episode facts for every log-based metric.

Calls are taken in log order. The proxy appends a call just before releasing its reply,
so log order is the order in which the agent saw replies; "a later call" in the
recovery and hygiene rules means a call logged later. Only faults and a little state
per (episode, tool) are kept, so memory grows with faults, not with calls.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from chaosproxy.records import CallRecord
from chaosproxy.scoring.faultnames import (
    INVISIBLE,
    PERSISTENT_DATA,
    canonical,
)

# A retry this much sooner than Retry-After still counts as honouring it (clock jitter).
RETRY_AFTER_SLACK_S = 0.05
# A storm: this many back-to-back retries of a failed call whose waits did not grow.
STORM_RETRIES = 3
STORM_GROWTH = 1.5
STORM_MIN_WAIT_S = 0.05
ESCALATION_TOOL = "escalate_to_human"

_ORIGINAL_KEYS = ("original", "original_value", "from", "old", "before")
_CORRUPTED_KEYS = ("corrupted", "corrupted_value", "to", "new", "after", "value")
_ARGUMENT_KEYS = ("argument", "arg", "param", "parameter", "field", "name")


@dataclass(slots=True)
class FaultHit:
    """A fault that reached the agent, and what the agent did about it."""

    name: str
    step: int | None
    tool: str | None
    t_reply: float
    recoverable: bool
    params: dict[str, Any]
    arguments: dict[str, Any] | None
    visible: bool
    extra_calls: int = 0
    recovered_step: int | None = None
    recovered_t: float | None = None
    corrupted: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    corrected: bool | None = None


@dataclass(slots=True)
class _ToolTrack:
    open: list[FaultHit] = field(default_factory=list)
    pc_watch: list[FaultHit] = field(default_factory=list)
    last_args: dict[str, Any] | None = None
    last_t_reply: float = 0.0
    last_error: bool = False
    last_retry_after: float | None = None
    last_fault: str | None = None
    hard_limited: bool = False
    chain: int = 0
    chain_first_wait: float = 0.0


@dataclass(slots=True)
class EpisodeCalls:
    """What the log says about one episode."""

    tool_calls: int = 0
    faults: list[FaultHit] = field(default_factory=list)
    first_fault_step: int | None = None
    uninjected_errors: int = 0
    retries: int = 0
    ignored_retry_after: int = 0
    retried_non_retryable: int = 0
    storms: int = 0
    escalated: bool = False
    tracks: dict[str, _ToolTrack] = field(default_factory=dict)


def corrupted_arguments(call: CallRecord) -> dict[str, tuple[Any, Any]]:
    """argument -> (what the agent sent, what the service got), from the log or the params."""
    sent, forwarded = call.arguments or {}, call.forwarded_arguments
    if forwarded is not None:
        diff = {
            key: (sent.get(key), forwarded.get(key))
            for key in sent.keys() | forwarded.keys()
            if sent.get(key) != forwarded.get(key)
        }
        if diff:
            return diff
    params = call.fault.params if call.fault else {}
    argument = next((params[k] for k in _ARGUMENT_KEYS if isinstance(params.get(k), str)), None)
    original = next((params[k] for k in _ORIGINAL_KEYS if k in params), None)
    corrupted = next((params[k] for k in _CORRUPTED_KEYS if k in params), None)
    if argument is not None and original is not None:
        return {argument: (original, corrupted)}
    return {}


def _observe(episode: EpisodeCalls, call: CallRecord) -> None:
    fault = call.fault if call.fault is not None and call.fault_delivered else None
    if fault is not None and fault.params.get("applied") is False:
        fault = None  # e.g. a ParameterCorruption that found nothing to corrupt
    name = canonical(fault.name) if fault is not None else None
    if call.kind != "tool_call" or call.tool is None:
        return
    episode.tool_calls += 1
    t_req = call.ts
    t_reply = call.ts + call.latency_ms / 1000.0
    error = call.outcome != "ok" or call.status >= 400
    if not call.fault_delivered and (call.status >= 500 or call.outcome == "timeout"):
        episode.uninjected_errors += 1
    if call.tool == ESCALATION_TOOL and not error:
        episode.escalated = True
    track = episode.tracks.get(call.tool)
    if track is None:
        track = episode.tracks[call.tool] = _ToolTrack()
    wait = t_req - track.last_t_reply
    same_call = track.last_args is not None and call.arguments == track.last_args

    if track.last_retry_after is not None and wait + RETRY_AFTER_SLACK_S < track.last_retry_after:
        episode.ignored_retry_after += 1
    if track.hard_limited or (track.last_fault == "SchemaDrift" and same_call):
        episode.retried_non_retryable += 1
    if same_call and track.last_error:
        episode.retries += 1
        track.chain += 1
        if track.chain == 1:
            track.chain_first_wait = wait
        threshold = max(STORM_GROWTH * track.chain_first_wait, STORM_MIN_WAIT_S)
        if track.chain == STORM_RETRIES and wait < threshold:
            episode.storms += 1
    else:
        track.chain = 0

    clean = not error and (name is None or name in INVISIBLE or name in PERSISTENT_DATA)
    for hit in track.open:
        hit.extra_calls += 1
        if clean:
            hit.recovered_step, hit.recovered_t = call.step, t_reply
    if clean:
        track.open.clear()
    sent = call.arguments or {}
    for hit in track.pc_watch:
        if hit.corrected is False and any(
            key in sent and sent[key] == original for key, (original, _) in hit.corrupted.items()
        ):
            hit.corrected = True

    if fault is not None and name is not None:
        hit = FaultHit(
            name=name,
            step=call.step,
            tool=call.tool,
            t_reply=t_reply,
            recoverable=fault.recoverable,
            params=fault.params,
            arguments=call.arguments,
            visible=name not in INVISIBLE,
        )
        episode.faults.append(hit)
        if call.step is not None and (
            episode.first_fault_step is None or call.step < episode.first_fault_step
        ):
            episode.first_fault_step = call.step
        if hit.visible:
            track.open.append(hit)
        if name == "ParameterCorruption":
            hit.corrupted = corrupted_arguments(call)
            hit.corrected = False if hit.corrupted else None
            track.pc_watch.append(hit)
        if name == "HardRateLimit":
            track.hard_limited = True

    track.last_args = call.arguments
    track.last_t_reply = t_reply
    track.last_error = error
    track.last_fault = name
    track.last_retry_after = call.retry_after_s if error else None


def collect(calls: Iterable[CallRecord]) -> dict[str, EpisodeCalls]:
    """Fold the log into per-episode facts."""
    episodes: dict[str, EpisodeCalls] = {}
    for call in calls:
        episode = episodes.get(call.episode)
        if episode is None:
            episode = episodes[call.episode] = EpisodeCalls()
        _observe(episode, call)
    return episodes
