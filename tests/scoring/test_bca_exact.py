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
