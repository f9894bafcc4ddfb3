"""AgentProp-Bench (2025) §6: Tables 4–6 and the rank correlation across agents.

Model-driven agents run the paper's injection point (`agentprop-p2-model`: the model's
planned tool call rewritten before the agent executes it; S1–S3 and rejection = 1 − P(S1)
exactly as §5.2–5.3, `results.json` groups' `stage_model`). Scripted agents have no model:
they run the proxy-side variant (`agentprop-p2`: the call rewritten after the agent sent
it, so S1 holds by construction), labelled as such in every table.
"""

from __future__ import annotations

import math

from scipy import stats as scipy_stats

from chaosproxy.papers.common import evaluable, ordered, success_rate
from chaosproxy.papers.table import Table, num, pct, pct_ci
from chaosproxy.scoring.api import Scored
from chaosproxy.scoring.episodes import EpisodeScore
from chaosproxy.scoring.estimate import Estimate
from chaosproxy.scoring.results import GroupMetrics

BASELINE = "lambda0.0"
INJECTED = "agentprop-p2"
INJECTED_MODEL = "agentprop-p2-model"
PAPER = "model reply (paper's)"
PROXY_SIDE = "proxy-side"


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
    """P2 groups: the paper's variant (its stages measured) first, then the proxy-side."""
    groups = [g for g in scored.results.groups if g.profile in (INJECTED, INJECTED_MODEL)]
    names = ordered({g.agent for g in groups})
    return sorted(groups, key=lambda g: (g.stage_model is None, names.index(g.agent)))


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def table4(scored: Scored) -> Table:
    table = Table(
        "table4",
        "Table 4: stage-reach rates and hop-conditional propagation",
        [
            "Agent",
            "n",
            "S1%",
            "S2%",
            "S3%",
            "r12",
            "n_S2",
            "r23 [CI]",
            "P(S3|S1) [CI]",
            "Injection",
        ],
        notes=[
            f"{PAPER} ({INJECTED_MODEL}, §5.2): S1 = the call the agent executed carried the "
            "injected value; S2 = that call was answered by the service (a validation error "
            "or a result for the wrong value); S3 = the final state is wrong. n: episodes in "
            "which the injection was drawn; r12 = P(S2|S1), r23 = P(S3|S2).",
            f"{PROXY_SIDE} ({INJECTED}): ParameterCorruption rewrites the call after the agent "
            "sent it, so S1 (applied) holds whenever a critical argument was there; S2: the "
            "corrupted call was never re-issued with the original value (docs/metrics.md).",
            "Judged by typed verifiers on the final state, not by an LLM ensemble; Wilson "
            "intervals instead of the paper's bootstrap.",
        ],
    )
    for group in _groups(scored):
        paper = group.stage_model
        if paper is not None:
            table.add(
                group.agent,
                str(paper.n),
                pct(paper.p_s1.value),
                pct(paper.p_s2.value),
                pct(paper.p_s3.value),
                num(paper.r12.value, 2),
                str(paper.s2),
                pct_ci(paper.r23),
                pct_ci(paper.p_s3_given_s1),
                PAPER,
            )
            continue
        n = group.counts.evaluable
        stage = group.stage
        s3 = None if group.sr.value is None else 1 - group.sr.value
        table.add(
            group.agent,
            str(n),
            pct(_ratio(stage.s1, n)),
            pct(_ratio(stage.s2, n)),
            pct(s3),
            num(_ratio(stage.s2, stage.s1), 2),
            str(stage.s2),
            pct_ci(_complement(stage.recovery_rate)),
            pct_ci(stage.p_s3_given_s1),
            PROXY_SIDE,
        )
    return table


def _injected(score: EpisodeScore) -> bool:
    """S1 of either variant: the executed call carried the injected value (paper's), or a
    ParameterCorruption was applied (proxy-side)."""
    if score.record.profile == INJECTED_MODEL:
        return score.model_injection is not None and score.model_injection.carried
    return score.record.profile == INJECTED and score.s1


def table5(scored: Scored) -> Table:
    table = Table(
        "table5",
        "Table 5: correctness at baseline and under P2, given the injection applied",
        ["Agent", "n_base", "Baseline [CI]", "n_P2|inj", "P2|inj [CI]", "Injection"],
        notes=[
            "P2 correctness is over episodes where the injection applied (S1), as the paper "
            f"conditions on eps > 1 ({PAPER}: the executed call carried the injected value; "
            f"{PROXY_SIDE}: a corruption was applied); Wilson intervals."
        ],
    )
    scores = evaluable(scored.episodes)
    variants = {
        g.agent: PAPER if g.stage_model is not None else PROXY_SIDE for g in _groups(scored)
    }
    for agent in ordered({s.record.agent for s in scores}):
        base = [s for s in scores if s.record.agent == agent and s.record.profile == BASELINE]
        injected = [s for s in scores if s.record.agent == agent and _injected(s)]
        base_rate, injected_rate = success_rate(base), success_rate(injected)
        table.add(
            agent,
            str(base_rate.n),
            pct_ci(base_rate),
            str(injected_rate.n),
            pct_ci(injected_rate),
            variants.get(agent, "n/a"),
        )
    return table


def _spearman(pairs: list[tuple[float, float]], label: str) -> str:
    if len(pairs) < 3:
        return f"Spearman's ρ ({label}) needs at least 3 agents with both rates."
    rho, p = scipy_stats.spearmanr([a for a, _ in pairs], [b for _, b in pairs])
    if math.isnan(float(rho)):
        return f"Spearman's ρ ({label}) is undefined: one of the rates does not vary."
    return (
        f"Spearman's ρ ({label}, rejection vs recovery, n = {len(pairs)} agents) = "
        f"{float(rho):.3f}, p = {float(p):.3g} (scipy)."
    )


def table6(scored: Scored) -> Table:
    groups = _groups(scored)
    rows: list[tuple[str, Estimate, Estimate, int, str]] = []
    for g in groups:
        if g.stage_model is not None:
            paper = g.stage_model
            rows.append((g.agent, paper.rejection_rate, paper.recovery_rate, paper.s2, PAPER))
        else:
            stage = g.stage
            rows.append((g.agent, stage.rejection_rate, stage.recovery_rate, stage.s2, PROXY_SIDE))
    notes = [
        f"{PAPER}: rejection = 1 − P(S1), the injected value never executed; recovery = "
        "1 − r23 = 1 − P(S3 | S2) (§5.3).",
        f"{PROXY_SIDE}: the agent never saw the value before it ran, so P(S1) = 1; its "
        "'rejection' is 1 − P(S2 | S1), the agent re-issuing the call with the original "
        "value (a correction, not the paper's rejection).",
    ]
    for variant in (PAPER, PROXY_SIDE):
        pairs = [
            (r.value, c.value)
            for _, r, c, _, v in rows
            if v == variant and r.value is not None and c.value is not None
        ]
        if any(v == variant for *_, v in rows):
            notes.append(_spearman(pairs, variant))
    table = Table(
        "table6",
        "Table 6: rejection versus recovery per agent",
        ["Agent", "Rejection% [CI]", "Recovery% [CI]", "n_S2", "Injection"],
        notes=notes,
    )
    for agent, rejection, recovery, n_s2, variant in rows:
        table.add(agent, pct_ci(rejection), pct_ci(recovery), str(n_s2), variant)
    return table


def tables(scored: Scored) -> list[Table]:
    return [table4(scored), table5(scored), table6(scored)]
