"""Intervals against published or hand-worked values."""

from __future__ import annotations

import pytest

from chaosproxy.scoring.estimate import Estimate
from chaosproxy.scoring.faultnames import canonical
from chaosproxy.scoring.stats import (
    bootstrap_diff,
    bootstrap_mean,
    bounded_mean,
    mover_gap,
    newcombe_counts,
    newcombe_diff,
    wilson,
)
from chaosproxy.scoring.tier import MIN_TIER_N, verdict


@pytest.mark.parametrize(
    ("k", "n", "value", "low", "high"),
    [
        (3, 4, 0.75, 0.3006, 0.9544),  # hand-worked Wilson, z = 1.96
        (0, 10, 0.0, 0.0, 0.2775),  # Newcombe 1998 Table I row 6: 0/10 -> [0, 0.2775]
        (81, 263, 0.3080, 0.2553, 0.3662),  # Newcombe 1998 Table I row 1
        (10, 10, 1.0, 0.7225, 1.0),
    ],
)
def test_wilson_matches_published_values(
    k: int, n: int, value: float, low: float, high: float
) -> None:
    e = wilson(k, n)
    assert e.value == pytest.approx(value, abs=1e-4)
    assert e.low == pytest.approx(low, abs=1e-4)
    assert e.high == pytest.approx(high, abs=1e-4)
    assert e.n == n and e.method == "wilson"


def test_wilson_of_nothing_is_na_not_zero() -> None:
    e = wilson(0, 0, "no fault delivered")
    assert e.value is None and e.note == "no fault delivered"


def test_newcombe_difference_matches_the_paper() -> None:
    # Newcombe 1998 (Stat Med 17:873) Table II example (a): 56/70 − 48/80, method 10.
    d = newcombe_diff(wilson(56, 70), wilson(48, 80))
    assert d.value == pytest.approx(0.2)
    assert d.low == pytest.approx(0.0524, abs=1e-4)
    assert d.high == pytest.approx(0.3339, abs=1e-4)


def test_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    values = [0.05, 0.5, 0.95, 0.8, 0.45, 0.99, 0.02, 0.24]
    a = bounded_mean(values, seed=7, name="pei")
    assert a == bounded_mean(values, seed=7, name="pei")
    assert a != bounded_mean(values, seed=8, name="pei")
    assert a.value == pytest.approx(0.5) and a.method == "bootstrap"
    assert a.low is not None and a.high is not None and 0.0 <= a.low < 0.5 < a.high <= 1.0


def test_bca_of_a_wide_sample_is_the_normal_interval() -> None:
    # 0.00, 0.01, ..., 0.99: mean 0.495, sd = sqrt((100² − 1) / 12) / 100 = 0.2887,
    # se = 0.2887 / sqrt(99) = 0.0290; mean ± 1.96 se = [0.438, 0.552]
    e = bootstrap_mean([i / 100 for i in range(100)], seed=1, name="latency")
    assert e.value == pytest.approx(0.495)
    assert e.low == pytest.approx(0.438, abs=0.01) and e.high == pytest.approx(0.552, abs=0.01)


def test_constant_bounded_sample_gets_a_wilson_interval_not_zero_width() -> None:
    # issue 14: "FRR 0.00 [0.00, 0.00] at n = 2". Wilson of 0/2: upper = z² / (n + z²)
    # = 3.8415 / 5.8415 = 0.6576
    e = bounded_mean([0.0, 0.0], 1, "frr")
    assert (e.value, e.low, e.method) == (0.0, 0.0, "wilson")
    assert e.high == pytest.approx(0.6576, abs=1e-4)
    # all 1.0 over 5: lower = n / (n + z²) = 5 / 8.8415 = 0.5655
    one = bounded_mean([1.0] * 5, 1, "sr")
    assert one.low == pytest.approx(0.5655, abs=1e-4) and one.high == 1.0
    # a single value is a sample too: Wilson(0.5, 1): centre (0.5 + 1.9207) / 4.8415 = 0.5,
    # half-width 1.96 sqrt(0.25 + 3.8415 / 4) / 4.8415 = 0.4454 -> [0.0546, 0.9454]
    half = bounded_mean([0.5], 1, "pei")
    assert half.low == pytest.approx(0.0546, abs=1e-4)
    assert half.high == pytest.approx(0.9454, abs=1e-4)


def test_unbounded_mean_without_spread_has_no_interval() -> None:
    # extra calls all 0 over 3 episodes: n/a interval, method "none", never [0, 0]
    e = bootstrap_mean([0.0, 0.0, 0.0], 1, "extra")
    assert e.value == 0.0 and e.n == 3
    assert (e.low, e.high, e.method) == (None, None, "none") and e.note
    one = bootstrap_mean([0.5], 1, "x")
    assert one.value == 0.5 and one.low is None and one.method == "none"
    assert bootstrap_mean([], 1, "x", "no fault delivered").value is None


def test_difference_of_constant_samples_is_newcombe_not_zero_width() -> None:
    # issue 14: pass^1 difference +0.00 [+0.00, +0.00] at n = 124 per side. Newcombe on
    # 124/124 − 124/124: Wilson lower of 124/124 = 124 / (124 + 3.8415) = 0.96995, so the
    # interval is ±(1 − 0.96995) = ±0.0300
    d = bootstrap_diff([1.0] * 124, [1.0] * 124, 3, "pass^1")
    assert d.value == 0.0 and d.method == "newcombe"
    assert d.low == pytest.approx(-0.0300, abs=1e-4) and d.high == pytest.approx(0.0300, abs=1e-4)
    varied = bootstrap_diff([1.0] * 8, [0.0, 1.0] * 4, 3, "d")
    assert varied.value == pytest.approx(0.5) and varied.method == "bootstrap-diff"
    assert varied.low is not None and varied.high is not None
    assert varied.low < 0.5 < varied.high
    flat = bootstrap_diff([2.0] * 3, [1.0] * 3, 3, "extra", bounded=False)
    assert flat.value == 1.0 and flat.low is None and flat.method == "none"


def test_newcombe_counts_match_the_wilson_based_formula() -> None:
    d = newcombe_counts(56, 70, 48, 80)
    assert d.low == pytest.approx(0.0524, abs=1e-4)
    assert d.high == pytest.approx(0.3339, abs=1e-4)


def test_delta_rel_gap_is_newcombe_for_one_stressed_profile() -> None:
    # MOVER with one stressed group is Newcombe's method 10 (the paper's example)
    gap = mover_gap(wilson(56, 70), [wilson(48, 80)])
    assert gap.value == pytest.approx(0.2) and gap.method == "mover"
    assert gap.low == pytest.approx(0.0524, abs=1e-4)
    assert gap.high == pytest.approx(0.3339, abs=1e-4)


def test_delta_rel_gap_over_two_stressed_profiles_by_hand() -> None:
    # nominal 4/4, stressed 2/4 and 1/4: Δ = 1 − (0.5 + 0.25) / 2 = 0.625.
    # Wilson (z = 1.96): 4/4 -> [0.5101, 1]; 2/4 -> [0.1500, 0.8500]; 1/4 -> [0.0456, 0.6994].
    # low  = 0.625 − sqrt((1 − 0.5101)² + ((0.85 − 0.5)² + (0.6994 − 0.25)²) / 4) = 0.0583
    # high = 0.625 + sqrt(0 + ((0.5 − 0.15)² + (0.25 − 0.0456)²) / 4) = 0.8277
    gap = mover_gap(wilson(4, 4), [wilson(2, 4), wilson(1, 4)])
    assert gap.value == pytest.approx(0.625)
    assert gap.low == pytest.approx(0.0583, abs=1e-3)
    assert gap.high == pytest.approx(0.8277, abs=1e-3)
    assert mover_gap(Estimate.na("none"), [wilson(1, 2)]).value is None


@pytest.mark.parametrize(
    ("frr", "pei", "tier"),
    [
        (0.95, 0.90, "Tier-3 Frontier"),
        (0.92, 0.85, "Tier-3 Frontier"),
        (0.95, 0.80, "Tier-2 Transparent"),
        (0.86, 0.99, "Tier-2 Transparent"),
        (0.75, 0.70, "Tier-1 Operational"),
        (0.80, 0.50, None),
        (0.69, 0.99, None),
    ],
)
def test_tier_thresholds(frr: float, pei: float, tier: str | None) -> None:
    v = verdict(Estimate(value=frr, n=40), Estimate(value=pei, n=40), ["lambda0.2"])
    assert v.tier == tier
    assert f"FRR {frr:.2f}" in v.text and "pooled over lambda0.2" in v.text
    if tier is None:
        assert v.text.startswith("below Tier-1") and v.status == "below"


def test_tier_needs_a_minimum_n() -> None:
    # issue 14: "Tier-2" was printed from n(FRR) = 1
    v = verdict(Estimate(value=1.0, n=1), Estimate(value=0.9, n=120), ["lambda0.0", "lambda0.2"])
    assert v.tier is None and v.status == "insufficient data"
    assert f"n ≥ {MIN_TIER_N}" in v.text and "(n = 1)" in v.text
    assert "lambda0.0, lambda0.2" in v.text and v.profiles == ["lambda0.0", "lambda0.2"]
    edge = verdict(Estimate(value=0.9, n=MIN_TIER_N), Estimate(value=0.8, n=MIN_TIER_N))
    assert edge.tier == "Tier-2 Transparent"


def test_tier_is_na_without_faults() -> None:
    v = verdict(Estimate.na("no fault delivered"), Estimate(value=0.9, n=3))
    assert v.tier is None and "n/a" in v.text and "no fault delivered" in v.text


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("lost_reply", "LostReply"),
        ("LostReply", "LostReply"),
        ("soft-rate-limit", "SoftRateLimit"),
        ("schema_drift", "SchemaDrift"),
        ("MyNewFault", "MyNewFault"),
    ],
)
def test_fault_names_fold_to_design_spelling(raw: str, name: str) -> None:
    assert canonical(raw) == name


def test_large_samples_use_the_percentile_bootstrap_and_match_the_normal_interval() -> None:
    # n = 3,000 > BCA_MAX_N. Counts 0, 1, 2 repeated (the multinomial path): mean 1,
    # sd = sqrt(2/3) = 0.8165, se = 0.8165 / sqrt(3000) = 0.0149 -> [0.9708, 1.0292]
    counts = bootstrap_mean([0.0, 1.0, 2.0] * 1000, 5, "extra")
    assert counts.low == pytest.approx(0.9708, abs=0.004)
    assert counts.high == pytest.approx(1.0292, abs=0.004)
    # 0.00 … 0.99 repeated (100 distinct values > 64: the index path): mean 0.495,
    # sd 0.2887, se 0.00527 -> [0.4847, 0.5053]
    spread = bounded_mean([(i % 100) / 100 for i in range(3000)], 5, "pei")
    assert spread.low == pytest.approx(0.4847, abs=0.003)
    assert spread.high == pytest.approx(0.5053, abs=0.003)
    assert spread == bounded_mean([(i % 100) / 100 for i in range(3000)], 5, "pei")


def test_wilson_and_newcombe_equal_statsmodels_on_many_counts() -> None:
    """The two formulas replace statsmodels' (not a dependency any more): same numbers."""
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    for n1, c1, n2, c2 in [(1, 0, 1, 1), (7, 3, 9, 9), (70, 56, 80, 48), (2, 0.5, 3, 2.25)]:
        low, high = proportion.proportion_confint(c1, n1, alpha=0.05, method="wilson")
        mine = wilson(c1, n1)
        assert mine.low == pytest.approx(0.0 if c1 == 0 else low, abs=1e-12)
        assert mine.high == pytest.approx(1.0 if c1 == n1 else high, abs=1e-12)
        low, high = proportion.confint_proportions_2indep(
            c1, n1, c2, n2, method="newcomb", compare="diff", alpha=0.05
        )
        diff = newcombe_counts(c1, n1, c2, n2)
        assert (diff.low, diff.high) == (pytest.approx(low, abs=1e-12), pytest.approx(high))


def test_normal_quantile_is_scipys_to_the_last_digit() -> None:
    """stats.Z is written out so that importing the scorer does not import scipy; it must
    stay scipy's quantile exactly, or every Wilson interval moves."""
    from scipy import stats as sps

    from chaosproxy.scoring.stats import ALPHA, Z

    assert float(sps.norm.isf(ALPHA / 2)) == Z
