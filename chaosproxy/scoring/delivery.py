"""Plain-text lines saying whether each profile's faults reached the agent.

`chaosproxy score` prints them with every run (the report owns the presentation; these
lines are what it should show at the least): the realised fault rate beside the
profile's nominal rate, faults drawn but never delivered, and for incident profiles
(FIT v2) the share of episodes whose incident reached the agent.
"""

from __future__ import annotations

from chaosproxy.scoring.estimate import Estimate
from chaosproxy.scoring.results import GroupMetrics, Results


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
    return f"{g.agent} · {g.profile}: " + "; ".join(parts)


def delivery_lines(results: Results) -> list[str]:
    """Realised fault rates and delivered shares, one line per (agent, profile) group."""
    return [line for g in results.groups if (line := group_line(g)) is not None]
