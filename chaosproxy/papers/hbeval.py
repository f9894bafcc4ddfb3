"""HB-Eval (Adam, 2025) §6: Tables 4–6, FRR per FIT v2 fault type, certification tiers."""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence

from scipy import stats as scipy_stats

from chaosproxy.papers.common import evaluable, ordered
from chaosproxy.papers.table import Table, num, num_ci, pct_ci
from chaosproxy.scoring.api import Scored
from chaosproxy.scoring.episodes import EpisodeScore
from chaosproxy.scoring.estimate import Estimate
from chaosproxy.scoring.faultnames import canonical
from chaosproxy.scoring.stats import bounded_mean

NOMINAL = "lambda0.0"
STRESSED = "fit-v2"
ARCHITECTURES = ("react", "reflexion", "ap-edm")


def _stressed(scored: Scored) -> list[EpisodeScore]:
    return [s for s in evaluable(scored.episodes) if s.record.profile == STRESSED]


def _frr_values(scores: Sequence[EpisodeScore]) -> list[float]:
    return [s.frr for s in scores if s.frr is not None]


def _agents(scored: Scored) -> list[str]:
    return ordered({s.record.agent for s in scored.episodes}, ARCHITECTURES)


def _delivered(scored: Scored) -> dict[str, Estimate]:
    """Per agent: the share of FIT v2 episodes whose incident reached the agent."""
    return {
        g.agent: g.delivery.incident_delivered
        for g in scored.results.groups
        if g.profile == STRESSED and g.delivery is not None
    }


def _delivery_note(scored: Scored) -> str:
    shares = _delivered(scored)
    cells = [f"{agent} {pct_ci(shares[agent])}" for agent in _agents(scored) if agent in shares]
    return (
        "FIT v2 incident delivered (episodes in which an effect of the planned incident "
        "reached the agent, Wilson 95%): " + ("; ".join(cells) or "n/a") + "."
    )


def table4(scored: Scored, seed: int) -> Table:
    table = Table(
        "table4",
        "Table 4: system reliability metrics (FIT v2)",
        [
            "Agent",
            "SR λ=0",
            "SR FIT v2",
            "FRR",
            "PEI",
            "Δ_rel",
            "Latency (s)",
            "Memory",
            "Incident delivered",
        ],
        notes=[
            "SR λ=0 under lambda0.0, the rest under fit-v2; FRR and PEI as in docs/metrics.md "
            "(graded FRR, eq. 1; PEI eq. 3–4 over every evaluable episode); 95% intervals.",
            "Δ_rel = SR(λ0) − SR(FIT v2), Newcombe interval: results.json's agents[]."
            "delta_rel_by_profile (the paper's example subtracts FRR from SR instead).",
            "Latency is the episode's wall time (mean ± SD). Memory: agents run inside the "
            "runner's process, so their footprint is not separable; TI (judge-based) is not "
            "measured: typed verifiers replace the judge.",
            "Incident delivered: share of FIT v2 episodes in which at least one effect of the "
            "episode's incident reached the agent (Wilson 95%).",
        ],
    )
    groups = {(g.agent, g.profile): g for g in scored.results.groups}
    summaries = {a.agent: a for a in scored.results.agents}
    delivered = _delivered(scored)
    for agent in _agents(scored):
        stressed = groups.get((agent, STRESSED))
        nominal = groups.get((agent, NOMINAL))
        summary = summaries.get(agent)
        gap = summary.delta_rel_by_profile.get(STRESSED) if summary is not None else None
        durations = [
            s.record.duration_s
            for s in _stressed(scored)
            if s.record.agent == agent and s.record.duration_s is not None
        ]
        latency = (
            f"{statistics.fmean(durations):.2f} ± {statistics.pstdev(durations):.2f}"
            if durations
            else "n/a"
        )
        table.add(
            agent,
            pct_ci(nominal.sr) if nominal else "n/a",
            pct_ci(stressed.sr) if stressed else "n/a",
            pct_ci(stressed.frr) if stressed else "n/a",
            num_ci(stressed.pei) if stressed else "n/a",
            num_ci(gap) if gap is not None else "n/a",
            latency,
            "n/a",
            pct_ci(delivered[agent]) if agent in delivered else "n/a",
        )
    return table


def table5(scored: Scored) -> Table:
    """Welch's t on per-episode graded FRR, Bonferroni over the pairs, Cohen's d (pooled SD)."""
    table = Table(
        "table5",
        "Table 5: pairwise tests for FRR (FIT v2)",
        ["Comparison", "n", "Δ FRR [95% CI]", "t", "p", "p (Bonferroni)", "Cohen's d"],
        notes=[
            "As the paper: Welch's t-test (scipy) on per-episode FRR, Bonferroni over the "
            "comparisons, Cohen's d with the pooled SD. The interval is Welch's for the "
            "difference of means.",
            _delivery_note(scored),
        ],
    )
    stressed = _stressed(scored)
    agents = [
        a for a in _agents(scored) if _frr_values([s for s in stressed if s.record.agent == a])
    ]
    pairs = list(itertools.combinations(agents, 2))
    for a, b in pairs:
        x = _frr_values([s for s in stressed if s.record.agent == a])
        y = _frr_values([s for s in stressed if s.record.agent == b])
        label = f"{a} vs {b}"
        if (
            len(x) < 2
            or len(y) < 2
            or (statistics.pvariance(x) == 0 and statistics.pvariance(y) == 0)
        ):
            diff = statistics.fmean(x) - statistics.fmean(y)
            table.add(label, f"{len(x)}/{len(y)}", f"{diff:+.3f}", "n/a", "n/a", "n/a", "n/a")
            continue
        test = scipy_stats.ttest_ind(x, y, equal_var=False)
        interval = test.confidence_interval(0.95)
        pooled = math.sqrt(
            ((len(x) - 1) * statistics.variance(x) + (len(y) - 1) * statistics.variance(y))
            / (len(x) + len(y) - 2)
        )
        diff = statistics.fmean(x) - statistics.fmean(y)
        table.add(
            label,
            f"{len(x)}/{len(y)}",
            f"{diff:+.3f} [{interval.low:+.3f}, {interval.high:+.3f}]",
            num(float(test.statistic), 2),
            f"{float(test.pvalue):.3g}",
            f"{min(1.0, float(test.pvalue) * len(pairs)):.3g}",
            num(diff / pooled, 2) if pooled > 0 else "n/a",
        )
    return table


def cross_domain_variance(means_pp: Sequence[float]) -> float | None:
    """HB-Eval Table 6's "Cross-Domain Variance": the population variance of the per-domain
    FRR means (in pp, so the result is in pp²); None below two domains."""
    return statistics.pvariance(means_pp) if len(means_pp) >= 2 else None


def table6(scored: Scored, seed: int) -> Table:
    domains = sorted({s.record.domain for s in _stressed(scored)})
    table = Table(
        "table6",
        "Table 6: FRR by domain and agent (FIT v2)",
        ["Agent", *domains, "Cross-domain variance (pp²)"],
        notes=[
            "Mean graded FRR over fault episodes, bootstrap 95% intervals.",
            "Cross-domain variance: the population variance of the per-domain mean FRRs, in "
            "percentage points squared, as the paper's Table 6 (its ReAct 43.1, 40.8, 43.2 "
            "give 1.2, Reflexion's 1.4).",
            _delivery_note(scored),
        ],
    )
    stressed = _stressed(scored)
    for agent in _agents(scored):
        cells, means = [], []
        for domain in domains:
            values = _frr_values(
                [s for s in stressed if s.record.agent == agent and s.record.domain == domain]
            )
            estimate = bounded_mean(values, seed, f"hb6/{agent}/{domain}", "no fault episode")
            cells.append(pct_ci(estimate))
            if estimate.value is not None:
                means.append(100 * estimate.value)
        spread = cross_domain_variance(means)
        spread_text = f"{spread:.1f}" if spread is not None else "n/a"
        table.add(agent, *cells, spread_text)
    return table


def frr_by_fault(scored: Scored, seed: int) -> Table:
    stressed = [s for s in _stressed(scored) if s.faults]
    faults = sorted({canonical(s.faults[0].name) for s in stressed})
    table = Table(
        "frr-by-fault",
        "FRR by FIT v2 fault type (the episode's first fault)",
        ["Agent", *faults],
        notes=[
            "An episode counts under the type of the first fault that reached the agent.",
            _delivery_note(scored),
        ],
    )
    for agent in _agents(scored):
        cells = []
        for fault in faults:
            values = _frr_values(
                [
                    s
                    for s in stressed
                    if s.record.agent == agent and canonical(s.faults[0].name) == fault
                ]
            )
            cells.append(pct_ci(bounded_mean(values, seed, f"hbf/{agent}/{fault}", "none")))
        table.add(agent, *cells)
    return table


def tiers(scored: Scored) -> Table:
    settings = scored.results.settings
    rules = settings.get("tiers")
    thresholds = "; ".join(
        f"{t['tier']}: FRR ≥ {t['frr_min']:.2f}, PEI ≥ {t['pei_min']:.2f}"
        for t in (rules if isinstance(rules, list) else [])
        if isinstance(t, dict)
    )
    table = Table(
        "tiers",
        "Certification tiers (§7.6)",
        ["Agent", "FRR", "PEI", "Tier", "Judged on"],
        notes=[
            f"Thresholds: {thresholds}.",
            "Judged on fault-injected episodes only (every profile but λ = 0): FRR and PEI "
            "here are the ones the tier used (results.json agents[].tier).",
            str(settings.get("tier_caveat", "")),
        ],
    )
    for summary in sorted(
        scored.results.agents,
        key=lambda a: _agents(scored).index(a.agent) if a.agent in _agents(scored) else 99,
    ):
        tier = summary.tier
        table.add(
            summary.agent,
            pct_ci(tier.frr),
            num_ci(tier.pei),
            tier.tier or tier.text,
            ", ".join(tier.profiles) or "n/a",
        )
    return table


def tables(scored: Scored) -> list[Table]:
    seed = scored.results.runs[0].seed if scored.results.runs else 0
    return [
        table4(scored, seed),
        table5(scored),
        table6(scored, seed),
        frr_by_fault(scored, seed),
        tiers(scored),
    ]
