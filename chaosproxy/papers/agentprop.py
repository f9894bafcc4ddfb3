"""AgentProp-Bench (2025) §6: Tables 4–6 and the rank correlation across agents."""

from __future__ import annotations

import math

from scipy import stats as scipy_stats

from chaosproxy.papers.common import evaluable, ordered, success_rate
from chaosproxy.papers.table import Table, num, pct, pct_ci
from chaosproxy.scoring.api import Scored
from chaosproxy.scoring.estimate import Estimate
from chaosproxy.scoring.results import GroupMetrics

BASELINE = "lambda0.0"
INJECTED = "agentprop-p2"


def _complement(estimate: Estimate) -> Estimate:
    """1 − p with its interval flipped."""
    if estimate.value is None:
        return estimate
    return estimate.model_copy(
        update={
            "value": 1 - estimate.value,
            "low": None if estimate.high is None else 1 - estimate.high,
            "high": None if estimate.low is None else 1 - estimate.low,
        }
    )


def _groups(scored: Scored) -> list[GroupMetrics]:
    groups = [g for g in scored.results.groups if g.profile == INJECTED]
    names = ordered({g.agent for g in groups})
    return sorted(groups, key=lambda g: names.index(g.agent))


def table4(scored: Scored) -> Table:
    table = Table(
        "table4",
        "Table 4: stage-reach rates and hop-conditional propagation (agentprop-p2)",
        ["Agent", "n", "S1%", "S2%", "S3%", "r12", "n_S2", "r23 [CI]", "P(S3|S1) [CI]"],
        notes=[
            "S1: a ParameterCorruption was applied; S2: the corrupted call was never re-issued "
            "with the original value; S3: the final state is wrong (docs/metrics.md).",
            "Judged by typed verifiers on the final state, not by an LLM ensemble; Wilson "
            "intervals instead of the paper's bootstrap.",
        ],
    )
    for group in _groups(scored):
        n = group.counts.evaluable
        stage = group.stage
        s3 = None if group.sr.value is None else 1 - group.sr.value
        table.add(
            group.agent,
            str(n),
            pct(stage.s1 / n if n else None),
            pct(stage.s2 / n if n else None),
            pct(s3),
            num(stage.s2 / stage.s1 if stage.s1 else None, 2),
            str(stage.s2),
            pct_ci(_complement(stage.recovery_rate)),
            pct_ci(stage.p_s3_given_s1),
        )
    return table


def table5(scored: Scored) -> Table:
    table = Table(
        "table5",
        "Table 5: correctness at baseline and under P2, given the injection applied",
        ["Agent", "n_base", "Baseline [CI]", "n_P2|inj", "P2|inj [CI]"],
        notes=[
            "P2 correctness is over episodes where a corruption was applied (S1), as the "
            "paper conditions on eps > 1; Wilson intervals."
        ],
    )
    scores = evaluable(scored.episodes)
    for agent in ordered({s.record.agent for s in scores}):
        base = [s for s in scores if s.record.agent == agent and s.record.profile == BASELINE]
        injected = [
            s for s in scores if s.record.agent == agent and s.record.profile == INJECTED and s.s1
        ]
        base_rate, injected_rate = success_rate(base), success_rate(injected)
        table.add(
            agent, str(base_rate.n), pct_ci(base_rate), str(injected_rate.n), pct_ci(injected_rate)
        )
    return table


def table6(scored: Scored) -> Table:
    groups = _groups(scored)
    pairs = [
        (g.stage.rejection_rate.value, g.stage.recovery_rate.value)
        for g in groups
        if g.stage.rejection_rate.value is not None and g.stage.recovery_rate.value is not None
    ]
    note = "Spearman's ρ between rejection and recovery needs at least 3 agents with both."
    if len(pairs) >= 3:
        rho, p = scipy_stats.spearmanr([a for a, _ in pairs], [b for _, b in pairs])
        if not math.isnan(float(rho)):
            note = (
                f"Spearman's ρ (rejection vs recovery, n = {len(pairs)} agents) = "
                f"{float(rho):.3f}, p = {float(p):.3g} (scipy)."
            )
        else:
            note = "Spearman's ρ is undefined: one of the rates does not vary across agents."
    table = Table(
        "table6",
        "Table 6: rejection versus recovery per agent",
        ["Agent", "Rejection% [CI]", "Recovery% [CI]", "n_S2"],
        notes=[
            "Rejection = 1 − P(S2 | S1) (the agent re-issued the corrupted call with the "
            "original value); recovery = 1 − P(S3 | S2).",
            note,
        ],
    )
    for group in groups:
        table.add(
            group.agent,
            pct_ci(group.stage.rejection_rate),
            pct_ci(group.stage.recovery_rate),
            str(group.stage.s2),
        )
    return table


def tables(scored: Scored) -> list[Table]:
    return [table4(scored), table5(scored), table6(scored)]
