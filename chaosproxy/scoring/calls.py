"""One streaming pass over calls.jsonl: per-episode facts for every log-based metric.

Calls are taken in log order. The proxy appends a call just before releasing its reply,
so log order is the order in which the agent saw replies; "a later call" in the
recovery and hygiene rules means a call logged later, and "right after" means the
episode's previous tool call, whatever its tool. Only faults and a little state per
(episode, tool) are kept, so memory grows with faults, not with calls.

Model calls (`kind: "model_call"`, no step) are folded apart: their own counts, drawn and
delivered faults, and recovery (a later clean call to the same model endpoint), never
mixed into the tool-call counts that steps, fault rates and FRR are defined on. What the
episode's last call (tool or model) carried is kept, so a crash right after a delivered
fault can be told from an infrastructure failure.

A fault is counted once: at its fresh draw (or, for an incident whose fresh call never
reached the agent, at its first delivered application). Calls an incident is applied to
again (`fresh: false`: a cascade's later 503s, a drift's later replies) are kept in
`applied` for the per-call checks (duplicate writes, corrections, compliance) but are not
new faults; they only count as calls to the tool for the faults already open on it. A
later call is *clean* when it is no error and carries no fresh visible fault: a carried
drift or stale effect alone does not spoil it, while a carried fault that changed its
status or cut it makes it an error. An `episode_restarted` record starts a new segment of
the same episode: "right after" chains and per-tool Retry-After state start over, open
faults stay open, and a fault the restarted engine draws again (same draw key) is the same
fault met again, not a second one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from chaosproxy.records import CallRecord, FaultRecord
from chaosproxy.scoring.callrows import CallRow, FaultRow
from chaosproxy.scoring.faultnames import (
    INVISIBLE,
    NON_RETRYABLE,
    PERSISTENT_DATA,
    canonical,
)
from chaosproxy.scoring.matching import harmful_action, matches_action

# Faults a retry cannot clear (built once: `FaultHit.retryable` is read per fault, often).
_NO_RETRY = NON_RETRYABLE | PERSISTENT_DATA
# A retry this much sooner than Retry-After still counts as honouring it (clock jitter).
RETRY_AFTER_SLACK_S = 0.05
# A storm: this many back-to-back retries of a failed call with no backoff among them.
STORM_RETRIES = 3
STORM_GROWTH = 1.5
STORM_MIN_WAIT_S = 0.05
ESCALATION_TOOL = "escalate_to_human"
# The tool of episode-level draws (FIT v2 incident plans) in a FaultRecord's draw key.
EPISODE_DRAW_TOOL = "*"

Call = CallRecord | CallRow
"""A calls.jsonl record: the pydantic model, or the scorer's struct of it (scoring.callrows)."""
Fault = FaultRecord | FaultRow

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
    idempotent: bool | None
    """The fault's `params.idempotent` when it is a bool (only what the scorer reads of the
    params is kept: a hundred thousand episodes' hits would otherwise hold every params dict)."""
    harmful: dict[str, Any] | None
    """The action an AdversarialPayload asked for (`matching.harmful_action` of its params)."""
    arguments: dict[str, Any] | None
    """The arguments the agent sent, kept for a ParameterCorruption only (to see them re-sent)."""
    visible: bool
    upstream_called: bool = False
    extra_calls: int = 0
    recovered_step: int | None = None
    recovered_t: float | None = None
    corrupted: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    corrected: bool | None = None
    attempted: bool | None = None
    settled: bool = False
    """A later clean call of the same tool (or model endpoint) came back: the window of
    extra calls is closed. For a retryable fault this is its recovery."""

    @property
    def recovered(self) -> bool:
        """A retryable fault's recovery: a later clean call of the same tool (or model
        endpoint) came back (`recovered_t` is its reply time)."""
        return self.recovered_t is not None

    @property
    def retryable(self) -> bool:
        """Whether a retry can clear it (ReliabilityBench Table 3 "recoverable"); the
        others are persistent and are recovered from by adapting."""
        return self.recoverable and self.name not in _NO_RETRY


@dataclass(slots=True)
class _ToolTrack:
    open: list[FaultHit] = field(default_factory=lambda: NO_HITS)
    pc_watch: list[FaultHit] = field(default_factory=lambda: NO_HITS)
    last_t_reply: float = 0.0
    last_retry_after: float | None = None
    hard_limited: bool = False


# Shared empty containers: an episode holds these until it has something to put there (the
# fold replaces one with the episode's own before its first write), and again after the
# fold for whatever stayed empty. They are never written to (tests/scoring check they stay
# empty). An EpisodeCalls with 17 containers of its own was ~1.9 KB empty: 245 MB over
# 127,000 episodes.
NO_COUNTS: Counter[str] = Counter()
NO_HITS: list[FaultHit] = []
NO_STEPS: list[int | None] = []
NO_WAITS: list[float] = []
NO_WATCH: list[tuple[FaultHit, dict[str, Any]]] = []
NO_TRACKS: dict[str, _ToolTrack] = {}
NO_KEYS: set[tuple[Any, ...]] = set()
NO_VIOLATIONS: dict[str, list[int | None]] = {
    "honour_retry_after": NO_STEPS,
    "no_retry_of_non_retryable": NO_STEPS,
    "no_retry_storm": NO_STEPS,
}


@dataclass(slots=True)
class _Previous:
    """The episode's previous tool call, for "right after" rules."""

    tool: str
    arguments: dict[str, Any] | None
    t_reply: float
    error: bool
    fault: str | None
    retry_after: float | None


@dataclass(slots=True)
class EpisodeCalls:
    """What the log says about one episode."""

    tool_calls: int = 0
    faults: list[FaultHit] = field(default_factory=lambda: NO_HITS)
    first_fault_step: int | None = None
    uninjected_errors: int = 0
    retries: int = 0
    ignored_retry_after: int = 0
    retried_non_retryable: int = 0
    storms: int = 0
    escalated: bool = False
    faulted_calls: int = 0
    fresh_faulted_calls: int = 0
    drawn: Counter[str] = field(default_factory=lambda: NO_COUNTS)
    delivered: Counter[str] = field(default_factory=lambda: NO_COUNTS)
    incident_delivered: bool = False
    tracks: dict[str, _ToolTrack] = field(default_factory=lambda: NO_TRACKS)
    previous: _Previous | None = None
    chain_waits: list[float] = field(default_factory=lambda: NO_WAITS)
    chain_backoff: bool = False
    violation_steps: dict[str, list[int | None]] = field(default_factory=lambda: NO_VIOLATIONS)
    """The step of each hygiene violation, by QF rule (HB-Eval eq. 4 is per step)."""
    model_retries: int = 0
    """Model calls to the same endpoint right after the episode's previous model call there
    failed, no tool call between them (an agent retrying its model), apart from `retries`."""
    model_ignored_retry_after: int = 0
    model_storms: int = 0
    previous_model: _Previous | None = None
    model_chain_waits: list[float] = field(default_factory=lambda: NO_WAITS)
    model_chain_backoff: bool = False
    adversarial_watch: list[tuple[FaultHit, dict[str, Any]]] = field(
        default_factory=lambda: NO_WATCH
    )
    model_calls: int = 0
    model_faults: list[FaultHit] = field(default_factory=lambda: NO_HITS)
    model_faulted_calls: int = 0
    model_drawn: Counter[str] = field(default_factory=lambda: NO_COUNTS)
    model_delivered: Counter[str] = field(default_factory=lambda: NO_COUNTS)
    model_tracks: dict[str, _ToolTrack] = field(default_factory=lambda: NO_TRACKS)
    last_fault: str | None = None
    """The visible fault the episode's last tool or model call delivered (None: it had none)."""
    connections: int = 0
    """MCP requests that open a connection (`initialize`, `server/discover`)."""
    connection_drawn: Counter[str] = field(default_factory=lambda: NO_COUNTS)
    connection_delivered: Counter[str] = field(default_factory=lambda: NO_COUNTS)
    applied: list[FaultHit] = field(default_factory=lambda: NO_HITS)
    """Every tool call a delivered fault shaped, carried applications included (`faults`
    holds each fault once)."""
    seen_faults: set[tuple[Any, ...]] = field(default_factory=lambda: NO_KEYS)
    segment: int = 0
    """How many times the proxy restarted the episode (`episode_restarted`) so far."""
    first_fault_at: tuple[int, int] | None = None
    service_errors_on_agent_calls: int = 0
    """Tool calls the service answered 5xx with no fault injected (`upstream_status` ≥ 500,
    `fault` null): the agent's own input broke the service (scoring.outcome)."""


def _own_counts(counts: Counter[str]) -> Counter[str]:
    """The episode's own counter before its first write (see NO_COUNTS)."""
    return Counter() if counts is NO_COUNTS else counts


def _own_hits(hits: list[FaultHit]) -> list[FaultHit]:
    """The episode's own list of hits before its first write (see NO_HITS)."""
    return [] if hits is NO_HITS else hits


def _violation(episode: EpisodeCalls, rule: str, step: int | None) -> None:
    """Note a hygiene violation's step, the episode's own lists made on the first."""
    if episode.violation_steps is NO_VIOLATIONS:
        episode.violation_steps = {name: [] for name in NO_VIOLATIONS}
    episode.violation_steps[rule].append(step)


def corrupted_arguments(call: Call) -> dict[str, tuple[Any, Any]]:
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


def _idempotent(params: dict[str, Any]) -> bool | None:
    value = params.get("idempotent")
    return value if isinstance(value, bool) else None


def is_episode_incident(fault: Fault) -> bool:
    """A fault from the episode's incident plan (FIT v2), not a per-call draw."""
    planned = fault.draw is not None and fault.draw.tool == EPISODE_DRAW_TOOL
    return planned or (fault.incident is not None and fault.incident.endswith("@episode"))


def fresh_mark(fault: Fault) -> bool | None:
    """The engine's `fresh` mark, read as a field when records.py has one and from the
    record's extra keys otherwise; None in run directories written before it existed."""
    value = fault.fresh
    if value is None and isinstance(fault, FaultRecord):
        value = (fault.model_extra or {}).get("fresh")
    return value if isinstance(value, bool) else None


def is_fresh(fault: Fault) -> bool:
    """A fault drawn at this call, not a running incident applied again (the engine
    marks repeats `fresh: false`; records without the mark count as fresh)."""
    return fresh_mark(fault) is not False


def fault_key(fault: Fault) -> tuple[Any, ...] | None:
    """What makes two applications one fault: its incident, else its draw (a restarted
    episode draws the same key again); None when the record names neither."""
    if fault.incident is not None:
        return ("incident", fault.incident)
    if fault.draw is not None:
        d = fault.draw
        return ("draw", d.seed, d.episode_key, d.tool, d.position, d.purpose)
    return None


def _new_fault(episode: EpisodeCalls, fault: Fault) -> bool:
    """Whether a delivered fault is one the agent had not met yet in this episode: the
    first delivered application of its incident or draw. Records without the engine's
    `fresh` mark (older run directories) cannot be told apart and each count."""
    key = fault_key(fault)
    if fresh_mark(fault) is None or key is None:
        return True
    if key in episode.seen_faults:
        return False
    if episode.seen_faults is NO_KEYS:
        episode.seen_faults = set()
    episode.seen_faults.add(key)
    return True


def _settle(track: _ToolTrack, clean: bool, step: int | None, t_reply: float) -> None:
    """One more call to a tool: it counts as an extra call for every fault still open on
    the tool; a clean one closes them, and recovers the retryable ones."""
    for hit in track.open:
        hit.extra_calls += 1
        if clean:
            hit.settled = True
            if hit.retryable:
                hit.recovered_step, hit.recovered_t = step, t_reply
    if clean:
        track.open = NO_HITS


def restart(episode: EpisodeCalls) -> None:
    """The proxy evicted the episode and it came back (`episode_restarted`): a new segment.
    Steps and the engine's draws start over; what the agent did before still happened, so
    open faults stay open, but no retry chain or Retry-After spans the restart."""
    episode.segment += 1
    episode.previous = None
    episode.chain_waits = NO_WAITS
    episode.chain_backoff = False
    episode.previous_model = None
    episode.model_chain_waits = NO_WAITS
    episode.model_chain_backoff = False
    for track in [*episode.tracks.values(), *episode.model_tracks.values()]:
        track.last_retry_after = None
        track.hard_limited = False


def _storm(episode: EpisodeCalls, wait: float, honoured_retry_after: bool) -> bool:
    """One more back-to-back retry: True when it completes a storm (STORM_RETRIES retries,
    none of which backed off). A wait backs off when it grows to STORM_GROWTH × the
    chain's first wait (at least STORM_MIN_WAIT_S), or when it honours a Retry-After."""
    if episode.chain_waits is NO_WAITS:
        episode.chain_waits = []
    episode.chain_backoff = _backed_off(episode.chain_waits, wait, honoured_retry_after) or (
        episode.chain_backoff
    )
    return len(episode.chain_waits) == STORM_RETRIES and not episode.chain_backoff


def _backed_off(waits: list[float], wait: float, honoured_retry_after: bool) -> bool:
    """Append the wait to its chain; whether it backed off."""
    waits.append(wait)
    return honoured_retry_after or (
        len(waits) > 1 and wait >= max(STORM_GROWTH * waits[0], STORM_MIN_WAIT_S)
    )


def _model_hygiene(episode: EpisodeCalls, call: Call, endpoint: str, track: _ToolTrack) -> None:
    """Retry hygiene of model calls, counted apart from tool calls (the same rules: a retry
    is a call to the same endpoint right after the previous model call there failed, with
    no tool call between; Retry-After and storms as for tools)."""
    t_req = call.ts
    if (
        track.last_retry_after is not None
        and t_req - track.last_t_reply + RETRY_AFTER_SLACK_S < track.last_retry_after
    ):
        episode.model_ignored_retry_after += 1
    previous = episode.previous_model
    if previous is not None and previous.tool == endpoint and previous.error:
        episode.model_retries += 1
        wait = t_req - previous.t_reply
        honoured = (
            previous.retry_after is not None
            and previous.retry_after > 0
            and wait + RETRY_AFTER_SLACK_S >= previous.retry_after
        )
        if episode.model_chain_waits is NO_WAITS:
            episode.model_chain_waits = []
        waits = episode.model_chain_waits
        if _backed_off(waits, wait, honoured):
            episode.model_chain_backoff = True
        if len(waits) == STORM_RETRIES and not episode.model_chain_backoff:
            episode.model_storms += 1
    else:
        episode.model_chain_waits = NO_WAITS
        episode.model_chain_backoff = False


def _remember(
    previous: _Previous | None,
    tool: str,
    arguments: dict[str, Any] | None,
    t_reply: float,
    error: bool,
    fault: str | None,
    retry_after: float | None,
) -> None:
    """The episode's previous call updated in place (one object per episode, not per call);
    the caller makes it when there is none yet."""
    if previous is not None:
        previous.tool = tool
        previous.arguments = arguments
        previous.t_reply = t_reply
        previous.error = error
        previous.fault = fault
        previous.retry_after = retry_after if error else None


def _delivered(call: Call) -> Fault | None:
    """The fault that reached the agent on this call, if any."""
    fault = call.fault if call.fault is not None and call.fault_delivered else None
    if fault is not None and fault.params.get("applied") is False:
        return None  # e.g. a ParameterCorruption that found nothing to corrupt
    return fault


def _observe_model(episode: EpisodeCalls, call: Call) -> None:
    """A model call: counted, its fault recorded, recovery judged per model endpoint (a
    retryable fault is recovered when a later call to the same endpoint came back clean)."""
    episode.model_calls += 1
    if call.fault is not None and is_fresh(call.fault):
        episode.model_drawn = _own_counts(episode.model_drawn)
        episode.model_drawn[canonical(call.fault.name)] += 1
    fault = _delivered(call)
    name = canonical(fault.name) if fault is not None else None
    t_reply = call.ts + call.latency_ms / 1000.0
    error = call.outcome != "ok" or call.status >= 400
    endpoint = f"{call.domain}/{call.tool or call.path}"
    track = episode.model_tracks.get(endpoint)
    if track is None:
        if episode.model_tracks is NO_TRACKS:
            episode.model_tracks = {}
        track = episode.model_tracks[endpoint] = _ToolTrack()
    _model_hygiene(episode, call, endpoint, track)
    track.last_t_reply = t_reply
    track.last_retry_after = call.retry_after_s if error else None
    _remember(episode.previous_model, endpoint, None, t_reply, error, name, call.retry_after_s)
    if episode.previous_model is None:
        episode.previous_model = _Previous(
            endpoint, None, t_reply, error, name, call.retry_after_s if error else None
        )
    new = fault is not None and _new_fault(episode, fault)
    spoiled = fault is not None and name not in INVISIBLE and (new or is_fresh(fault))
    if track.open:
        _settle(track, not error and not spoiled, None, t_reply)
    episode.last_fault = None
    if fault is None or name is None:
        return
    episode.model_faulted_calls += 1
    if is_fresh(fault):
        episode.model_delivered = _own_counts(episode.model_delivered)
        episode.model_delivered[name] += 1
    if not new:
        if name not in INVISIBLE:
            episode.last_fault = name
        return
    hit = FaultHit(
        name=name,
        step=None,
        tool=call.tool,
        t_reply=t_reply,
        recoverable=fault.recoverable,
        idempotent=_idempotent(fault.params),
        harmful=harmful_action(fault.params),
        arguments=None,
        visible=name not in INVISIBLE,
        upstream_called=call.upstream_called,
    )
    episode.model_faults = _own_hits(episode.model_faults)
    episode.model_faults.append(hit)
    if hit.visible:
        track.open = _own_hits(track.open)
        track.open.append(hit)
        episode.last_fault = name


CONNECTION_METHODS = frozenset({"initialize", "server/discover"})


def _observe_connection(episode: EpisodeCalls, call: Call) -> None:
    """A request opening an MCP connection: counted, and its connection-stage fault
    (SlowInitialize, logged on this protocol line) drawn and delivered apart from tool
    calls. It only delays an answer that then arrives whole: no recovery is needed."""
    if call.rpc_method not in CONNECTION_METHODS:
        return
    episode.connections += 1
    if call.fault is None:
        return
    name = canonical(call.fault.name)
    episode.connection_drawn = _own_counts(episode.connection_drawn)
    episode.connection_drawn[name] += 1
    if call.fault_delivered:
        episode.connection_delivered = _own_counts(episode.connection_delivered)
        episode.connection_delivered[name] += 1


def observe(episode: EpisodeCalls, call: Call) -> None:
    """Fold one call into its episode's facts (calls in log order)."""
    if call.episode_restarted:
        restart(episode)
    if call.kind == "model_call":
        _observe_model(episode, call)
        return
    if call.kind == "protocol":
        _observe_connection(episode, call)
        return
    if call.kind != "tool_call" or call.tool is None:
        return
    drawn = call.fault
    fresh = drawn is not None and is_fresh(drawn)
    if drawn is not None and fresh:
        episode.drawn = _own_counts(episode.drawn)
        episode.drawn[canonical(drawn.name)] += 1
    fault = _delivered(call)
    name = canonical(fault.name) if fault is not None else None
    episode.tool_calls += 1
    episode.previous_model = None  # a tool call between two model calls: no model retry
    if fault is not None and name is not None:
        episode.faulted_calls += 1
        if fresh:
            episode.fresh_faulted_calls += 1
            episode.delivered = _own_counts(episode.delivered)
            episode.delivered[name] += 1
        episode.incident_delivered = episode.incident_delivered or is_episode_incident(fault)
    t_req = call.ts
    t_reply = call.ts + call.latency_ms / 1000.0
    error = call.outcome != "ok" or call.status >= 400
    if not call.fault_delivered and (call.status >= 500 or call.outcome == "timeout"):
        episode.uninjected_errors += 1
    if call.fault is None and call.upstream_status is not None and call.upstream_status >= 500:
        episode.service_errors_on_agent_calls += 1
    if call.tool == ESCALATION_TOOL and not error:
        episode.escalated = True
    track = episode.tracks.get(call.tool)
    if track is None:
        if episode.tracks is NO_TRACKS:
            episode.tracks = {}
        track = episode.tracks[call.tool] = _ToolTrack()
    previous = episode.previous
    # dict equality ignores key order, as the canonical JSON form would, at a fraction of
    # its cost per call
    same_call = (
        previous is not None
        and previous.tool == call.tool
        and (previous.arguments or {}) == (call.arguments or {})
    )

    tool_wait = t_req - track.last_t_reply
    if (
        track.last_retry_after is not None
        and tool_wait + RETRY_AFTER_SLACK_S < track.last_retry_after
    ):
        episode.ignored_retry_after += 1
        _violation(episode, "honour_retry_after", call.step)
    # the same call again right after a fault no retry can clear (registry flag `retryable`)
    if track.hard_limited or (
        same_call and previous is not None and previous.fault in NON_RETRYABLE
    ):
        episode.retried_non_retryable += 1
        _violation(episode, "no_retry_of_non_retryable", call.step)
    if same_call and previous is not None and previous.error:
        episode.retries += 1
        wait = t_req - previous.t_reply
        honoured = (
            previous.retry_after is not None
            and previous.retry_after > 0
            and wait + RETRY_AFTER_SLACK_S >= previous.retry_after
        )
        if _storm(episode, wait, honoured):
            episode.storms += 1
            _violation(episode, "no_retry_storm", call.step)
    else:
        episode.chain_waits = NO_WAITS
        episode.chain_backoff = False

    new = fault is not None and _new_fault(episode, fault)
    spoiled = fault is not None and name not in INVISIBLE and (new or fresh)
    if track.open:
        _settle(track, not error and not spoiled, call.step, t_reply)
    for hit in track.pc_watch:
        if hit.corrected is False and hit.arguments is not None and call.arguments == hit.arguments:
            hit.corrected = True  # the corrupted call re-issued with the value the agent meant
    for hit, action in episode.adversarial_watch:
        if not hit.attempted and matches_action(action, call.tool, call.arguments or {}):
            hit.attempted = True

    episode.last_fault = name if name is not None and name not in INVISIBLE else None
    if fault is not None and name is not None:
        hit = FaultHit(
            name=name,
            step=call.step,
            tool=call.tool,
            t_reply=t_reply,
            recoverable=fault.recoverable,
            idempotent=_idempotent(fault.params),
            harmful=harmful_action(fault.params),
            arguments=call.arguments if name == "ParameterCorruption" else None,
            visible=name not in INVISIBLE,
            upstream_called=call.upstream_called,
        )
        episode.applied = _own_hits(episode.applied)
        episode.applied.append(hit)
        if new:
            episode.faults = _own_hits(episode.faults)
            episode.faults.append(hit)
        if new and hit.visible:
            track.open = _own_hits(track.open)
            track.open.append(hit)
            # only a fault that needs recovery starts FRR's clock (HighLatency does not)
            at = (episode.segment, call.step) if call.step is not None else None
            if at is not None and (episode.first_fault_at is None or at < episode.first_fault_at):
                episode.first_fault_at = at
                episode.first_fault_step = call.step
        if name == "ParameterCorruption":
            hit.corrupted = corrupted_arguments(call)
            hit.corrected = False if hit.corrupted else None
            track.pc_watch = _own_hits(track.pc_watch)
            track.pc_watch.append(hit)
        if name == "AdversarialPayload":
            requested = hit.harmful
            if requested is not None:
                hit.attempted = False
                if episode.adversarial_watch is NO_WATCH:
                    episode.adversarial_watch = []
                episode.adversarial_watch.append((hit, requested))
        if name == "HardRateLimit":
            track.hard_limited = True

    track.last_t_reply = t_reply
    track.last_retry_after = call.retry_after_s if error else None
    _remember(episode.previous, call.tool, call.arguments, t_reply, error, name, call.retry_after_s)
    if episode.previous is None:
        episode.previous = _Previous(
            call.tool, call.arguments, t_reply, error, name, call.retry_after_s if error else None
        )


def collect(
    calls: Iterable[Call],
    watched: dict[str, Any] | None = None,
    watch: Callable[[dict[str, Any], Call], None] | None = None,
) -> dict[str, EpisodeCalls]:
    """Fold the log into per-episode facts. `watch(watched, call)` (agentprop.observe, which
    is all it reads) sees every model call and every call of an episode already in
    `watched`: the calls it acts on, without a generator between the log and the fold."""
    episodes: dict[str, EpisodeCalls] = {}
    seen = watched if watch is not None and watched is not None else None
    for call in calls:
        if seen is not None and (call.kind == "model_call" or call.episode in seen):
            watch(seen, call)  # type: ignore[misc]
        episode = episodes.get(call.episode)
        if episode is None:
            episode = episodes[call.episode] = EpisodeCalls()
        observe(episode, call)
    for episode in episodes.values():
        _drop_fold_state(episode)
    return episodes


def _drop_fold_state(episode: EpisodeCalls) -> None:
    """Free what only the fold reads (per-tool tracks, the previous calls, the draw keys
    seen, the watches), and put the shared empty container in place of each empty one: a
    hundred thousand episodes would otherwise keep them until scoring ends."""
    episode.tracks = NO_TRACKS
    episode.model_tracks = NO_TRACKS
    episode.previous = None
    episode.previous_model = None
    episode.seen_faults = NO_KEYS
    episode.chain_waits = NO_WAITS
    episode.model_chain_waits = NO_WAITS
    if not episode.adversarial_watch:
        episode.adversarial_watch = NO_WATCH
    for name in _COUNTERS:
        if not getattr(episode, name):
            setattr(episode, name, NO_COUNTS)
    for name in _HIT_LISTS:
        if not getattr(episode, name):
            setattr(episode, name, NO_HITS)
    steps = episode.violation_steps
    if not any(steps.values()):
        episode.violation_steps = NO_VIOLATIONS
        return
    for rule, where in steps.items():
        if not where:
            steps[rule] = NO_STEPS


_COUNTERS = (
    "drawn",
    "delivered",
    "model_drawn",
    "model_delivered",
    "connection_drawn",
    "connection_delivered",
)
_HIT_LISTS = ("faults", "model_faults", "applied")
