"""Plain-text lines saying whether each profile's faults reached the agent.

`chaosproxy score` prints them with every run (the report owns the presentation; these
lines are what it should show at the least): the realised fault rate beside the
profile's nominal rate, faults drawn but never delivered, and for incident profiles
(FIT v2) the share of episodes whose incident reached the agent.
"""

from __future__ import annotations

import math

from chaosproxy.scoring.estimate import Estimate
from chaosproxy.scoring.results import FaultDelivery, FaultKindDelivery, GroupMetrics, Results


def _share(e: Estimate, count: int, unit: str) -> str:
    if e.value is None:
        return "n/a"
    interval = "" if e.low is None or e.high is None else f" [{e.low:.3f}, {e.high:.3f}]"
    return f"{e.value:.3f}{interval} ({count} of {e.n} {unit})"


def group_line(g: GroupMetrics) -> str | None:
    """One line for a group, or None when the profile delivers nothing and plans nothing
    (on tool calls or on model calls)."""
    d = g.delivery
    m = d.model if d is not None else None
    model_active = m is not None and bool(m.drawn or m.nominal_rate)
    if d is None or (
        d.drawn == 0
        and not d.nominal_rate
        and d.incident_delivered.value is None
        and not model_active
        and d.connection is None
    ):
        return None
    nominal = "n/a" if d.nominal_rate is None else f"{d.nominal_rate:.3f}"
    if d.incident_delivered.value is not None:
        nominal += " per call + one incident per episode"
    parts = [f"fault rate {_share(d.realised_rate, d.delivered, 'calls')}, profile {nominal}"]
    kinds = [f"{k.fault} {k.delivered}/{k.drawn}" for k in d.by_fault if k.drawn or k.delivered]
    if kinds:
        parts.append("delivered/drawn: " + ", ".join(kinds))
    undelivered = [k.fault for k in d.by_fault if k.drawn and not k.delivered]
    if undelivered:
        parts.append("never delivered: " + ", ".join(undelivered))
    if d.incident_delivered.value is not None:
        delivered = round(d.incident_delivered.value * d.incident_delivered.n)
        shown = _share(d.incident_delivered, delivered, "episodes")
        parts.append(f"incident delivered {shown}")
    if m is not None and model_active:
        model_nominal = "n/a" if m.nominal_rate is None else f"{m.nominal_rate:.3f}"
        parts.append(
            f"model-call fault rate {_share(m.realised_rate, m.delivered, 'model calls')}, "
            f"profile {model_nominal}"
        )
        kinds = [f"{k.fault} {k.delivered}/{k.drawn}" for k in m.by_fault if k.drawn or k.delivered]
        if kinds:
            parts.append("model delivered/drawn: " + ", ".join(kinds))
    parts += connection_parts(d) + scope_parts(d)
    return f"{g.agent} · {g.profile}: " + "; ".join(parts)


def scope_parts(d: FaultDelivery) -> list[str]:
    """For a profile scoped to some steps (agentprop-p2: the first call): in how many
    episodes that reached the scope a fault landed within it."""
    if d.scope_steps is None or d.scope_delivered is None:
        return []
    low, high = d.scope_steps
    where = f"step {low}" if low == high else f"steps {low}-{high}"
    landed = round((d.scope_delivered.value or 0) * d.scope_delivered.n)
    return [
        f"landed within {where} in {_share(d.scope_delivered, landed, 'episodes')} "
        f"({d.scope_calls} calls in scope)"
    ]


def connection_parts(d: FaultDelivery) -> list[str]:
    """Connection-stage faults (SlowInitialize) over the requests opening a connection."""
    k = d.connection
    if k is None:
        return []
    nominal = "n/a" if k.nominal_rate is None else f"{k.nominal_rate:.3f}"
    kinds = ", ".join(f"{f.fault} {f.delivered}/{f.drawn}" for f in k.by_fault)
    return [
        f"connection-stage fault rate {_share(k.realised_rate, k.delivered, 'connections')}, "
        f"profile {nominal}" + (f" (delivered/drawn: {kinds})" if kinds else "")
    ]


def delivery_lines(results: Results) -> list[str]:
    """Realised fault rates and delivered shares, one line per (agent, profile) group."""
    return [line for g in results.groups if (line := group_line(g)) is not None]


def _weight(kind: FaultKindDelivery, d: FaultDelivery | None) -> float | None:
    """The fault's share of the profile's tool-fault mix (its weight over the sum)."""
    if d is None or kind.nominal_rate is None or not d.nominal_rate:
        return None
    return kind.nominal_rate / d.nominal_rate


def mix_parts(kinds: list[FaultKindDelivery], d: FaultDelivery) -> list[str]:
    """Each fault's share of the delivered fresh faults beside its weight, and how far off
    in σ = sqrt(w (1 - w) / n) (n: delivered fresh faults): the mix the profile promises
    (ReliabilityBench App. B) against the one the agent met."""
    total = sum(k.delivered for k in kinds)
    out = []
    for k in kinds:
        weight = _weight(k, d)
        if not k.delivered and not weight:
            continue
        share = f"{k.delivered / total:.3f}" if total else "n/a"
        if weight is None:
            out.append(f"{k.fault} {share} (weight n/a)")
            continue
        text = f"{k.fault} {share} vs {weight:.3f}"
        if total and 0 < weight < 1:
            z = (k.delivered / total - weight) / math.sqrt(weight * (1 - weight) / total)
            text += f" ({z:+.1f}σ)"
        out.append(text)
    return out


def rates_line(label: str, d: FaultDelivery | None) -> str | None:
    """The realised fresh rate, the share of calls affected and the delivered mix against
    the profile's weights, for one group or log (None when it has no tool call)."""
    if d is None or d.tool_calls == 0:
        return None
    nominal = "n/a" if d.nominal_rate is None else f"{d.nominal_rate:.3f}"
    affected = round((d.affected_rate.value or 0) * d.tool_calls)
    parts = [
        f"fresh fault rate {_share(d.realised_rate, d.delivered, 'tool calls')}, profile {nominal}",
        f"affected {_share(d.affected_rate, affected, 'tool calls')}",
    ]
    mix = mix_parts(d.by_fault, d)
    if mix:
        parts.append("delivered mix vs profile weights: " + ", ".join(mix))
    parts += connection_parts(d) + scope_parts(d)
    return f"{label}: " + "; ".join(parts)


RATES_NOTE = (
    "fresh: faults drawn on that call; affected: calls any fault reached, also a running "
    "incident (drift, stale data, cascade) again. The profile's rate applies to calls that "
    "can draw: a call a running incident answers draws nothing (docs/faults.md, What λ means)"
)


def rates_lines(results: Results) -> list[str]:
    """`rates_line` for every group whose profile draws or plans faults, and every log."""
    lines = [
        line
        for g in results.groups
        if group_line(g) is not None
        and (line := rates_line(f"{g.agent} · {g.profile}", g.delivery)) is not None
    ]
    lines += [
        line
        for log in results.log_only
        if (line := rates_line(f"{log.label} · {log.profile or 'n/a'}", log.delivery)) is not None
    ]
    return lines
