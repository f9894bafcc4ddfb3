"""HB-Eval §7.6 certification tiers, judged on the two of their criteria a run measures, and
HB-Eval's reliability gap Δ_rel per stress profile.

Tiers certify behaviour under faults, so they are judged on fault-injected episodes only:
the episodes of every profile except the λ = 0 baseline (a clean episode's PEI says nothing
about recovery). With one such profile the tier's FRR and PEI are that profile's group
figures (the same Estimates results.json and `reproduce hb-eval` print); with several, they
are pooled over those profiles' episodes.

A verdict needs at least MIN_TIER_N graded FRR episodes and MIN_TIER_N evaluable PEI
episodes: below that the point estimates swing too far to place an agent (at n = 30 a
Wilson interval around 0.85 is still ±0.13 wide), and the verdict is "insufficient data".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from chaosproxy.scoring.estimate import Estimate
from chaosproxy.scoring.results import GroupMetrics, TierVerdict
from chaosproxy.scoring.stats import mover_gap

if TYPE_CHECKING:
    from chaosproxy.scoring.episodes import EpisodeScore

# (name, FRR ≥, PEI ≥), strictest first.
TIERS: tuple[tuple[str, float, float], ...] = (
    ("Tier-3 Frontier", 0.92, 0.85),
    ("Tier-2 Transparent", 0.85, 0.75),
    ("Tier-1 Operational", 0.70, 0.65),
)
MIN_TIER_N = 30
CAVEAT = (
    "FRR and PEI only (point estimates over the fault-injected episodes: every profile but "
    f"λ = 0; PEI with failures scored 0; each with n ≥ {MIN_TIER_N}); Tier-2/3 also need "
    "TI ≥ 0.90, Tier-3 IRS ≥ 0.80 and Safe Halt protocols, which chaosproxy does not measure"
)


def thresholds_text() -> str:
    return "; ".join(f"{name}: FRR ≥ {frr:.2f}, PEI ≥ {pei:.2f}" for name, frr, pei in TIERS)


def _figures(frr: Estimate, pei: Estimate, profiles: Sequence[str]) -> str:
    def one(label: str, e: Estimate) -> str:
        if e.value is None:
            return f"{label} n/a (n = {e.n})"
        interval = "" if e.low is None or e.high is None else f" [{e.low:.2f}, {e.high:.2f}]"
        return f"{label} {e.value:.2f}{interval} (n = {e.n})"

    pooled = ", ".join(profiles) if profiles else "no profile"
    return f"{one('FRR', frr)}, {one('PEI', pei)}; pooled over {pooled}"


def verdict(frr: Estimate, pei: Estimate, profiles: Sequence[str] = ()) -> TierVerdict:
    figures = _figures(frr, pei, profiles)

    def made(tier: str | None, status: str, head: str) -> TierVerdict:
        return TierVerdict(
            tier=tier,
            text=f"{head}: {figures}",
            frr=frr,
            pei=pei,
            status=status,
            profiles=list(profiles),
            min_n=MIN_TIER_N,
        )

    if frr.value is None or pei.value is None:
        missing = "FRR" if frr.value is None else "PEI"
        reason = (frr if frr.value is None else pei).note or "not measured"
        return made(None, "n/a", f"n/a ({missing}: {reason})")
    if frr.n < MIN_TIER_N or pei.n < MIN_TIER_N:
        return made(None, "insufficient data", f"insufficient data (needs n ≥ {MIN_TIER_N})")
    for name, need_frr, need_pei in TIERS:
        if frr.value >= need_frr and pei.value >= need_pei:
            return made(name, "tier", f"{name} (FRR ≥ {need_frr:.2f}, PEI ≥ {need_pei:.2f})")
    _, need_frr, need_pei = TIERS[-1]
    return made(None, "below", f"below Tier-1 (needs FRR ≥ {need_frr:.2f}, PEI ≥ {need_pei:.2f})")


def fault_injected(groups: Sequence[GroupMetrics]) -> list[GroupMetrics]:
    """The groups whose profile injects faults: every one but the λ = 0 baseline."""
    return [g for g in groups if g.lam != 0.0]


def judge(
    groups: Sequence[GroupMetrics],
    scores: Sequence[EpisodeScore],
    seed: int,
    name: str,
) -> TierVerdict:
    """One agent's tier, on its fault-injected episodes only (module docstring)."""
    from chaosproxy.scoring import aggregate

    stressed = fault_injected(groups)
    profiles = [g.profile for g in stressed]
    if len(stressed) == 1:
        return verdict(stressed[0].frr, stressed[0].pei, profiles)
    chosen = set(profiles)
    pooled = [s for s in scores if s.record.profile in chosen]
    label = f"{name}/fault-injected"
    return verdict(aggregate.frr(pooled, seed, label), aggregate.pei(pooled, seed, label), profiles)


def gaps_by_profile(groups: Sequence[GroupMetrics]) -> dict[str, Estimate]:
    """HB-Eval's Δ_rel = SR(nominal) − SR(stressed) against each stress profile on its own
    (eq. in §2.2 with F one fault distribution), Newcombe's interval (`mover_gap` with one
    group): what `reproduce hb-eval`'s Table 4 prints for FIT v2."""
    nominal = next((g for g in groups if g.lam == 0.0), None)
    if nominal is None:
        return {}
    return {g.profile: mover_gap(nominal.sr, [g.sr]) for g in fault_injected(groups)}
