"""95 % intervals, from scipy and two textbook formulas, and never zero-width.

- Proportions: Wilson score interval (Wilson 1927; the same formula, clipping included, as
  statsmodels' `proportion_confint(method="wilson")`, which tests/scoring checks it against
  when statsmodels is installed). Its normal quantile is scipy's, written out (tests/scoring
  check it), so that scipy is imported only when a bootstrap runs.
- Two proportions: Newcombe's hybrid score interval, method 10 (Newcombe 1998), built from
  the two Wilson intervals as statsmodels' `confint_proportions_2indep(method="newcomb")`
  does. statsmodels (and pandas under it, 150 MB) is not a dependency for these two lines.
- Bounded means (values in [0, 1]: graded FRR, PEI, pass^k, shares): BCa bootstrap (scipy
  `bootstrap`) when the sample varies; an all-equal sample gets the Wilson interval of
  (Σx, n), which is what a 0/1 sample with that mean would get and is conservative for
  any [0, 1] variable (its variance is at most m(1 − m)). So 0.00 over n = 2 reads
  [0.00, 0.66], not [0.00, 0.00].
- Unbounded means (extra calls, latencies): BCa bootstrap; with no spread (or one value)
  the interval is n/a (`method: "none"`), never [x, x].
- Differences of means: two-sample BCa bootstrap; bounded samples with no spread on either
  side fall back to Newcombe on (Σx, n) per side.

BCa needs a jackknife (O(n²) work), so samples larger than BCA_MAX_N use the percentile
bootstrap (drawn as multinomial counts over the distinct values when there are few, so a
million-call run scores in seconds), whose bias at that size is negligible. Seeds derive
from a base seed and the metric's name, so re-scoring gives the same intervals to the
last digit.
"""

from __future__ import annotations

import math
import warnings
import zlib
from collections.abc import Callable, Sequence

import numpy as np

from chaosproxy.scoring.estimate import Estimate

CONFIDENCE = 0.95
ALPHA = 1 - CONFIDENCE
BOOTSTRAP_RESAMPLES = 2000
BCA_MAX_N = 2000
NO_SPREAD = "no spread in the sample: no interval"
Z = 1.959963984540054
"""float(scipy.stats.norm.isf(ALPHA / 2)), to the last digit (scipy costs 100 MB and 1 s to
import, and many scorings never bootstrap)."""


def wilson_bounds(successes: float, n: int) -> tuple[float, float]:
    """The Wilson score interval of successes/n, clipped to [0, 1]."""
    share = successes / n
    z2 = Z * Z
    denom = 1 + z2 / n
    center = (share + z2 / (2 * n)) / denom
    half = Z * math.sqrt(max(share * (1.0 - share), 0.0) / n + z2 / (4.0 * n * n)) / denom
    return max(0.0, center - half), min(1.0, center + half)


def wilson(successes: float, n: int, note: str = "nothing to measure") -> Estimate:
    """Wilson score interval; n/a when n == 0. `successes` may be a sum of [0, 1] values."""
    if n <= 0:
        return Estimate.na(note)
    low, high = wilson_bounds(successes, n)
    return Estimate(
        value=successes / n,
        n=n,
        low=0.0 if successes <= 0 else max(0.0, float(low)),
        high=1.0 if successes >= n else min(1.0, float(high)),
        method="wilson",
    )


def rng_for(seed: int, name: str) -> np.random.Generator:
    """A generator private to one metric: same seed and name, same draws."""
    return np.random.default_rng([seed & 0xFFFFFFFF, zlib.crc32(name.encode())])


def _spread(data: np.ndarray) -> bool:
    return data.size >= 2 and float(data.min()) != float(data.max())


def _two_sample_mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.asarray(np.mean(x, axis=axis) - np.mean(y, axis=axis))


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.asarray(np.mean(x, axis=axis))


def _bootstrap(
    samples: tuple[np.ndarray, ...],
    statistic: Callable[..., np.ndarray],
    seed: int,
    name: str,
) -> tuple[float, float] | None:
    """scipy's BCa interval, or None when it is degenerate; above BCA_MAX_N a percentile
    interval from `resampled_means`."""
    largest = max(sample.size for sample in samples)
    if largest > BCA_MAX_N:
        return _percentile(samples, seed, name)
    from scipy import stats as sps  # lazily: see Z

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate resamples: judged below
        result = sps.bootstrap(
            samples,
            statistic,
            n_resamples=BOOTSTRAP_RESAMPLES,
            confidence_level=CONFIDENCE,
            method="BCa",
            rng=rng_for(seed, name),
            batch=max(1, 2_000_000 // max(largest, 1)),
        )
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    if math.isnan(low) or math.isnan(high) or low == high:
        return None
    return low, high


def _percentile(
    samples: tuple[np.ndarray, ...], seed: int, name: str
) -> tuple[float, float] | None:
    """Percentile interval of the mean (one sample) or of the difference of means (two)."""
    rng = rng_for(seed, name)
    means = [resampled_means(sample, rng) for sample in samples]
    stat = means[0] if len(means) == 1 else means[0] - means[1]
    low, high = np.percentile(stat, [100 * ALPHA / 2, 100 * (1 - ALPHA / 2)])
    if float(low) == float(high):
        return None
    return float(low), float(high)


def resampled_means(
    data: np.ndarray, rng: np.random.Generator, resamples: int = BOOTSTRAP_RESAMPLES
) -> np.ndarray:
    """Means of `resamples` bootstrap resamples of a large sample, cheaply: with few
    distinct values (counts, graded FRR) a resample is a multinomial draw over them, which
    costs O(resamples × distinct) whatever n is; otherwise indices are drawn in chunks."""
    values, counts = np.unique(data, return_counts=True)
    n = data.size
    if values.size <= 64:
        draws = rng.multinomial(n, counts / n, size=resamples)
        return np.asarray(draws @ values / n, dtype=float)
    out = np.empty(resamples)
    chunk = max(1, 4_000_000 // n)
    # numpy draws a bounded int64 whose range fits 32 bits with its 32-bit generator, so
    # int32 indices are the same numbers from the same stream, written at half the cost
    # (tests/scoring/test_resample_draws.py holds it)
    index_type = np.int32 if n <= np.iinfo(np.int32).max else np.int64
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        index = rng.integers(0, n, size=(stop - start, n), dtype=index_type)
        out[start:stop] = data[index].mean(axis=1)
    return out


def bootstrap_mean(
    values: Sequence[float], seed: int, name: str, note: str = "nothing to measure"
) -> Estimate:
    """Mean of an unbounded quantity with a BCa interval; no spread: interval n/a."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return Estimate.na(note)
    mean = float(data.mean())
    interval = _bootstrap((data,), _mean, seed, name) if _spread(data) else None
    if interval is None:
        return Estimate(value=mean, n=int(data.size), method="none", note=NO_SPREAD)
    return Estimate(
        value=mean, n=int(data.size), low=interval[0], high=interval[1], method="bootstrap"
    )


def bounded_mean(
    values: Sequence[float], seed: int, name: str, note: str = "nothing to measure"
) -> Estimate:
    """Mean of values in [0, 1]: BCa when the sample varies, else Wilson on (Σx, n)."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return Estimate.na(note)
    interval = _bootstrap((data,), _mean, seed, name) if _spread(data) else None
    if interval is None:
        return wilson(float(data.sum()), int(data.size), note)
    mean = float(data.mean())
    low, high = max(0.0, min(interval[0], mean)), min(1.0, max(interval[1], mean))
    return Estimate(value=mean, n=int(data.size), low=low, high=high, method="bootstrap")


def newcombe_counts(c1: float, n1: int, c2: float, n2: int) -> Estimate:
    """c1/n1 − c2/n2 with Newcombe's hybrid score interval (method 10)."""
    if n1 <= 0 or n2 <= 0:
        return Estimate.na("one side is n/a", n=max(n1, 0) + max(n2, 0))
    p1, p2 = c1 / n1, c2 / n2
    low1, high1 = wilson_bounds(c1, n1)
    low2, high2 = wilson_bounds(c2, n2)
    low = p1 - p2 - math.sqrt((p1 - low1) ** 2 + (high2 - p2) ** 2)
    high = p1 - p2 + math.sqrt((p2 - low2) ** 2 + (high1 - p1) ** 2)
    return Estimate(value=p1 - p2, n=n1 + n2, low=low, high=high, method="newcombe")


def newcombe_diff(a: Estimate, b: Estimate) -> Estimate:
    """a − b for two proportions given as Estimates (value × n successes)."""
    if a.value is None or b.value is None:
        return Estimate.na("one side is n/a", n=a.n + b.n)
    return newcombe_counts(a.value * a.n, a.n, b.value * b.n, b.n)


def bootstrap_diff(
    a: Sequence[float], b: Sequence[float], seed: int, name: str, bounded: bool = True
) -> Estimate:
    """mean(a) − mean(b), two-sample BCa bootstrap (each side resampled on its own).

    When neither side varies the bootstrap is degenerate: bounded values fall back to
    Newcombe on (Σx, n) per side, unbounded ones get no interval."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = int(xa.size + xb.size)
    if xa.size == 0 or xb.size == 0:
        return Estimate.na("one side is n/a", n=n)
    d = float(xa.mean() - xb.mean())
    interval = None
    if xa.size >= 2 and xb.size >= 2 and (_spread(xa) or _spread(xb)):
        interval = _bootstrap((xa, xb), _two_sample_mean_diff, seed, name)
    if interval is not None:
        return Estimate(value=d, n=n, low=interval[0], high=interval[1], method="bootstrap-diff")
    if bounded:
        return newcombe_counts(float(xa.sum()), int(xa.size), float(xb.sum()), int(xb.size))
    return Estimate(value=d, n=n, method="none", note=NO_SPREAD)


def mover_gap(nominal: Estimate, stressed: Sequence[Estimate]) -> Estimate:
    """p0 − mean(p_i) over independent proportions, with the MOVER interval (Zou & Donner
    2008) built from each side's Wilson interval; for one stressed group it is exactly
    Newcombe's method 10. Used for Δ_rel."""
    groups = [g for g in stressed if g.value is not None]
    n = nominal.n + sum(g.n for g in groups)
    if nominal.value is None or not groups:
        return Estimate.na("needs a nominal (λ = 0) and a stressed λ profile", n=n)
    assert nominal.low is not None and nominal.high is not None
    m = len(groups)
    mean = sum(float(g.value or 0.0) for g in groups) / m
    value = nominal.value - mean
    below = sum((float(g.high or 0.0) - float(g.value or 0.0)) ** 2 for g in groups) / m**2
    above = sum((float(g.value or 0.0) - float(g.low or 0.0)) ** 2 for g in groups) / m**2
    low = value - math.sqrt((nominal.value - nominal.low) ** 2 + below)
    high = value + math.sqrt((nominal.high - nominal.value) ** 2 + above)
    return Estimate(value=value, n=n, low=low, high=high, method="mover")
