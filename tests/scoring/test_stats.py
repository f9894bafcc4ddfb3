"""Intervals against published or hand-worked values."""

from __future__ import annotations

import numpy as np
import pytest

from chaosproxy.scoring.estimate import Estimate
from chaosproxy.scoring.faultnames import canonical
from chaosproxy.scoring.stats import (
    bootstrap_diff,
    bootstrap_gap,
    bootstrap_mean,
    newcombe_diff,
    resampled_means,
    rng_for,
    wilson,
)
from chaosproxy.scoring.tier import verdict


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
    values = [0.0, 0.5, 1.0, 1.0, 0.5, 1.0, 0.0, 1.0]
    a = bootstrap_mean(values, seed=7, name="frr")
    b = bootstrap_mean(values, seed=7, name="frr")
    assert a == b
    assert a.value == pytest.approx(0.625)
    assert a.low is not None and a.high is not None and a.low < 0.625 < a.high
    draws_7 = resampled_means(np.asarray(values), rng_for(7, "frr"))
    draws_8 = resampled_means(np.asarray(values), rng_for(8, "frr"))
    assert not np.array_equal(draws_7, draws_8)
    assert abs(draws_7.mean() - 0.625) < 0.02


def test_bootstrap_of_continuous_values_uses_the_index_path() -> None:
    values = [i / 100 for i in range(100)]
    e = bootstrap_mean(values, seed=1, name="latency")
    assert e.value == pytest.approx(0.495)
    assert e.low is not None and e.high is not None
    assert 0.43 < e.low < 0.495 < e.high < 0.56


def test_bootstrap_one_value_has_no_interval_and_none_is_na() -> None:
    one = bootstrap_mean([0.5], 1, "x")
    assert one.value == 0.5 and one.low is None
    assert bootstrap_mean([], 1, "x", "no fault delivered").value is None


def test_bootstrap_diff_and_gap() -> None:
    d = bootstrap_diff([1.0] * 8, [0.0, 1.0] * 4, 3, "d")
    assert d.value == pytest.approx(0.5)
    assert d.low is not None and d.high is not None and d.low <= 0.5 <= d.high
    gap = bootstrap_gap([1.0] * 4, [[1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]], 3, "gap")
    assert gap.value == pytest.approx(1 - (0.5 + 0.25) / 2)
    assert bootstrap_gap([], [[1.0]], 3, "gap").value is None


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
    v = verdict(Estimate(value=frr, n=10), Estimate(value=pei, n=10))
    assert v.tier == tier
    if tier is None:
        assert v.text.startswith("below Tier-1")


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
