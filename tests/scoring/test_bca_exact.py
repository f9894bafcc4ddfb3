"""stats.bca is scipy.stats.bootstrap's BCa interval to the last bit: results.json must not
change by a digit because the scorer stopped importing scipy.stats."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats as sps

from chaosproxy.scoring.stats import (
    BOOTSTRAP_RESAMPLES,
    CONFIDENCE,
    _mean,
    _two_sample_mean_diff,
    bca,
    resampled_means,
    rng_for,
)


def _scipy(
    samples: tuple[np.ndarray, ...], statistic: Callable[..., np.ndarray], batch: int
) -> tuple[float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = sps.bootstrap(
            samples,
            statistic,
            n_resamples=BOOTSTRAP_RESAMPLES,
            confidence_level=CONFIDENCE,
            method="BCa",
            rng=rng_for(7, "same"),
            batch=batch,
        )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _ours(
    samples: tuple[np.ndarray, ...], statistic: Callable[..., np.ndarray], batch: int
) -> tuple[float, float]:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return bca(samples, statistic, rng_for(7, "same"), batch)


def _sample(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "binary":
        return rng.integers(0, 2, n).astype(float)
    if kind == "frr":
        return rng.choice([0.0, 0.5, 1.0], n)
    if kind == "counts":
        return rng.poisson(1.5, n).astype(float)
    if kind == "equal":
        return np.full(n, 0.25)
    return rng.exponential(0.3, n)


def _same(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return all(x == y or (np.isnan(x) and np.isnan(y)) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("n", [2, 3, 17, 400, 999, 1001, 2000])
@pytest.mark.parametrize("kind", ["binary", "frr", "counts", "equal", "latency"])
def test_one_sample_bca_is_scipys_to_the_bit(n: int, kind: str) -> None:
    data = _sample(kind, n, np.random.default_rng(n))
    batch = max(1, 2_000_000 // n)
    ours, theirs = _ours((data,), _mean, batch), _scipy((data,), _mean, batch)
    assert _same(ours, theirs), (ours, theirs)


@pytest.mark.parametrize(("n1", "n2"), [(2, 3), (40, 61), (999, 1500), (2000, 1200)])
@pytest.mark.parametrize("kind", ["binary", "frr", "latency"])
def test_two_sample_bca_is_scipys_to_the_bit(n1: int, n2: int, kind: str) -> None:
    rng = np.random.default_rng(n1 + n2)
    a, b = _sample(kind, n1, rng), _sample(kind, n2, rng)
    batch = max(1, 2_000_000 // max(n1, n2))
    ours = _ours((a, b), _two_sample_mean_diff, batch)
    theirs = _scipy((a, b), _two_sample_mean_diff, batch)
    assert _same(ours, theirs), (ours, theirs)


@pytest.mark.parametrize("n", [2, 65, 3001, 70_000])
def test_int32_indices_are_the_int64_draws(n: int) -> None:
    """resampled_means draws its indices as int32: the same numbers, from the same stream
    position, as the int64 draws it made before (so its means did not change a bit)."""
    data = np.random.default_rng(n).exponential(0.3, n)
    wide, narrow = rng_for(7, "x"), rng_for(7, "x")
    for _ in range(3):
        a = wide.integers(0, n, size=(4, n))
        b = narrow.integers(0, n, size=(4, n), dtype=np.int32)
        assert np.array_equal(a, b)
        assert np.array_equal(data[a].mean(axis=1), data[b].mean(axis=1))
    assert wide.random() == narrow.random()
    means = resampled_means(data, rng_for(7, "m"), resamples=50)
    reference = rng_for(7, "m")
    if np.unique(data).size > 64:
        chunk = max(1, 4_000_000 // n)
        expected = np.concatenate(
            [
                data[reference.integers(0, n, size=(min(50, s + chunk) - s, n))].mean(axis=1)
                for s in range(0, 50, chunk)
            ]
        )
        assert np.array_equal(means, expected)
