"""CI gates on scored results: thresholds (`--fail-under sr=0.9`) and regressions between
two runs (a metric that got worse with its 95 % interval excluding 0).

Thresholds compare point estimates; pass^k is τ-bench's pass_hat (as the pytest plugin's
`--chaos-min-pass-k`). A metric the run cannot measure counts as failing: a gate that
silently passes on n/a would wave through a run that measured nothing. `METRIC@PROFILE`
narrows a threshold to one profile (FRR is n/a at λ0, so `frr@lambda0.2=0.7`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from chaosproxy.errors import ChaosError
from chaosproxy.scoring.estimate import Estimate
from chaosproxy.scoring.results import Comparison, GroupMetrics, Results

METRICS = ("sr", "frr", "pei", "pass^k")
_THRESHOLD = re.compile(
    r"^(?P<metric>sr|frr|pei|pass\^(?P<k>[1-9][0-9]*))(@(?P<profile>[^=]+))?=(?P<value>.+)$"
)


class GateError(ChaosError, ValueError):
    """A threshold that cannot be read; the message names it and the accepted form."""


@dataclass(frozen=True)
class Threshold:
    metric: str
    minimum: float
    profile: str | None = None
    k: int | None = None

    @property
    def label(self) -> str:
        return self.metric + (f"@{self.profile}" if self.profile else "")


@dataclass(frozen=True)
class GateFailure:
    """One group below one threshold (value None: not measurable)."""

    agent: str
    profile: str
    metric: str
    value: float | None
    minimum: float


@dataclass(frozen=True)
class Regression:
    """A metric of one agent × profile that is worse in the second run than in the first."""

    agent: str
    profile: str
    metric: str
    before: float | None
    after: float | None
    comparison: Comparison


def parse_threshold(text: str) -> Threshold:
    """`sr=0.9`, `pass^2=0.8`, `frr@lambda0.2=0.7` → Threshold; GateError naming the text."""
    match = _THRESHOLD.match(text.strip().lower())
    if match is None:
        raise GateError(
            f"--fail-under {text!r}: expected METRIC[@PROFILE]=VALUE with METRIC one of "
            "sr, frr, pei, pass^K (e.g. sr=0.9, pass^2=0.8, frr@lambda0.2=0.7)"
        )
    try:
        minimum = float(match["value"])
    except ValueError:
        raise GateError(f"--fail-under {text!r}: {match['value']!r} is not a number") from None
    if not math.isfinite(minimum) or not 0.0 <= minimum <= 1.0:
        raise GateError(f"--fail-under {text!r}: the value must be between 0 and 1")
    k = int(match["k"]) if match["k"] else None
    metric = "pass^k" if k is not None else match["metric"]
    return Threshold(metric=metric, minimum=minimum, profile=match["profile"], k=k)


def metric_value(group: GroupMetrics, threshold: Threshold) -> float | None:
    if threshold.metric == "sr":
        return group.sr.value
    if threshold.metric == "frr":
        return group.frr.value
    if threshold.metric == "pei":
        return group.pei.value
    row = next((p for p in group.pass_k if p.k == threshold.k), None)
    return None if row is None else row.pass_hat.value


def check(results: Results, thresholds: Sequence[Threshold]) -> list[GateFailure]:
    """Every (group, threshold) below its minimum or not measurable, over the last run's
    groups (with two runs, the second is the one under test)."""
    if not results.groups:
        return [GateFailure("(none)", "(none)", t.label, None, t.minimum) for t in thresholds]
    last_run = results.runs[-1].label
    failures: list[GateFailure] = []
    for threshold in thresholds:
        groups = [
            g
            for g in results.groups
            if g.run == last_run and threshold.profile in (None, g.profile.lower())
        ]
        if not groups:
            failures.append(
                GateFailure(
                    "(none)", str(threshold.profile), threshold.label, None, threshold.minimum
                )
            )
        for group in groups:
            value = metric_value(group, threshold)
            if value is None or value < threshold.minimum:
                name = f"pass^{threshold.k}" if threshold.k else threshold.metric
                failures.append(
                    GateFailure(group.agent, group.profile, name, value, threshold.minimum)
                )
    return failures


def excludes_zero(e: Estimate) -> bool:
    return e.low is not None and e.high is not None and (e.low > 0 or e.high < 0)


def _base(agent: str) -> str:
    """`robust@run-a` → `robust`: two runs label their agents with the run."""
    return agent.rsplit("@", 1)[0]


def regressions(results: Results) -> list[Regression]:
    """Comparisons of the same agent and profile across two runs where the second run is
    worse (every compared metric is higher-is-better) and the interval excludes 0."""
    if len(results.runs) != 2:
        return []
    before_run, after_run = (run.label for run in results.runs)
    values = {(g.agent, g.profile): g for g in results.groups}
    found: list[Regression] = []
    for c in results.comparisons:
        if c.profile_a != c.profile_b or _base(c.a) != _base(c.b) or c.a == c.b:
            continue
        if not (c.a.endswith(f"@{before_run}") and c.b.endswith(f"@{after_run}")):
            continue
        if c.diff.value is None or c.diff.value <= 0 or not excludes_zero(c.diff):
            continue
        before, after = values.get((c.a, c.profile_a)), values.get((c.b, c.profile_b))
        found.append(
            Regression(
                agent=_base(c.a),
                profile=c.profile_a,
                metric=c.metric,
                before=_metric_of(before, c.metric),
                after=_metric_of(after, c.metric),
                comparison=c,
            )
        )
    return found


def _metric_of(group: GroupMetrics | None, metric: str) -> float | None:
    if group is None:
        return None
    if metric.startswith("pass^"):
        return metric_value(group, Threshold("pass^k", 0.0, k=int(metric[5:])))
    return metric_value(group, Threshold(metric.lower(), 0.0))
