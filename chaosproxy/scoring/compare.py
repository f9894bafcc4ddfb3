"""Differences between two groups (two agents, two runs, or a profile and λ0), with intervals."""

from __future__ import annotations

from collections.abc import Sequence

from chaosproxy.scoring import aggregate
from chaosproxy.scoring.episodes import EpisodeScore
from chaosproxy.scoring.passk import pass_hat
from chaosproxy.scoring.results import Comparison, GroupMetrics
from chaosproxy.scoring.stats import bootstrap_diff, newcombe_diff


def _pass_values(scores: Sequence[EpisodeScore], k: int) -> list[float]:
    out = []
    for trials in aggregate.units(scores).values():
        value = pass_hat(len(trials), sum(ok for _, ok in trials), k)
        if value is not None:
            out.append(value)
    return out


def compare(
    a: GroupMetrics,
    a_scores: Sequence[EpisodeScore],
    b: GroupMetrics,
    b_scores: Sequence[EpisodeScore],
    seed: int,
    metrics: Sequence[str] = ("SR", "FRR", "PEI", "pass^k"),
) -> list[Comparison]:
    name = f"{a.agent}/{a.profile}-vs-{b.agent}/{b.profile}"
    out: list[Comparison] = []

    def add(metric: str, diff: object) -> None:
        out.append(
            Comparison.model_validate(
                {
                    "metric": metric,
                    "a": a.agent,
                    "b": b.agent,
                    "profile_a": a.profile,
                    "profile_b": b.profile,
                    "diff": diff,
                }
            )
        )

    if "SR" in metrics:
        add("SR", newcombe_diff(a.sr, b.sr))
    if "FRR" in metrics:
        add(
            "FRR",
            bootstrap_diff(
                aggregate.frr_values(a_scores), aggregate.frr_values(b_scores), seed, f"{name}/frr"
            ),
        )
    if "PEI" in metrics:
        add(
            "PEI",
            bootstrap_diff(
                aggregate.pei_values(a_scores), aggregate.pei_values(b_scores), seed, f"{name}/pei"
            ),
        )
    if "pass^k" in metrics:
        k_common = min(len(a.pass_k), len(b.pass_k))
        for k in range(1, k_common + 1):
            add(
                f"pass^{k}",
                bootstrap_diff(
                    _pass_values(a_scores, k), _pass_values(b_scores, k), seed, f"{name}/pass^{k}"
                ),
            )
    return out
