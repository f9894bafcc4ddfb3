"""95 % intervals: Wilson for proportions, seeded percentile bootstrap for means, and the
differences between two groups (Newcombe's hybrid score interval, bootstrap of the
difference). Seeds derive from a base seed and the metric's name, so re-scoring a run
gives the same intervals to the last digit.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence

import numpy as np

from chaosproxy.scoring.estimate import Estimate

Z95 = 1.959963984540054
BOOTSTRAP_RESAMPLES = 2000


def wilson(successes: float, n: int, note: str = "nothing to measure") -> Estimate:
    """Wilson score interval; n/a when n == 0."""
    if n <= 0:
        return Estimate.na(note)
    p = successes / n
    denom = 1 + Z95**2 / n
    centre = (p + Z95**2 / (2 * n)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / denom
    low = 0.0 if successes <= 0 else max(0.0, centre - half)
    high = 1.0 if successes >= n else min(1.0, centre + half)
    return Estimate(value=p, n=n, low=low, high=high, method="wilson")


def rng_for(seed: int, name: str) -> np.random.Generator:
    """A generator private to one metric: same seed and name, same draws."""
    return np.random.default_rng([seed & 0xFFFFFFFF, zlib.crc32(name.encode())])


def bootstrap_mean(
    values: Sequence[float], seed: int, name: str, note: str = "nothing to measure"
) -> Estimate:
    """Mean with a percentile-bootstrap interval; one value has no interval."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return Estimate.na(note)
    mean = float(data.mean())
    if data.size == 1 or float(data.min()) == float(data.max()):
        low, high = (None, None) if data.size == 1 else (mean, mean)
        return Estimate(value=mean, n=int(data.size), low=low, high=high, method="bootstrap")
    means = resampled_means(data, rng_for(seed, name))
    low, high = np.percentile(means, [2.5, 97.5])
    return Estimate(
        value=mean, n=int(data.size), low=float(low), high=float(high), method="bootstrap"
    )


def newcombe_diff(a: Estimate, b: Estimate) -> Estimate:
    """a − b for two Wilson proportions (Newcombe 1998, method 10)."""
    if a.value is None or b.value is None or a.low is None or b.low is None:
        return Estimate.na("one side is n/a", n=a.n + b.n)
    assert a.high is not None and b.high is not None
    d = a.value - b.value
    low = d - math.sqrt((a.value - a.low) ** 2 + (b.high - b.value) ** 2)
    high = d + math.sqrt((a.high - a.value) ** 2 + (b.value - b.low) ** 2)
    return Estimate(value=d, n=a.n + b.n, low=low, high=high, method="newcombe")


def bootstrap_diff(a: Sequence[float], b: Sequence[float], seed: int, name: str) -> Estimate:
    """mean(a) − mean(b), each side resampled on its own."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if xa.size == 0 or xb.size == 0:
        return Estimate.na("one side is n/a", n=int(xa.size + xb.size))
    d = float(xa.mean() - xb.mean())
    if xa.size < 2 or xb.size < 2:
        return Estimate(value=d, n=int(xa.size + xb.size), method="bootstrap-diff")
    rng = rng_for(seed, name)
    ma, mb = resampled_means(xa, rng), resampled_means(xb, rng)
    low, high = np.percentile(ma - mb, [2.5, 97.5])
    return Estimate(
        value=d, n=int(xa.size + xb.size), low=float(low), high=float(high), method="bootstrap-diff"
    )


def resampled_means(
    data: np.ndarray, rng: np.random.Generator, resamples: int = BOOTSTRAP_RESAMPLES
) -> np.ndarray:
    """Means of `resamples` bootstrap resamples of `data`.

    Few distinct values (success flags, graded FRR): resampling n values is a multinomial
    draw over the distinct values, which costs O(resamples × distinct) whatever n is.
    Otherwise indices are drawn in chunks to bound memory.
    """
    values, counts = np.unique(data, return_counts=True)
    n = data.size
    if values.size <= 64:
        draws = rng.multinomial(n, counts / n, size=resamples)
        return np.asarray(draws @ values / n, dtype=float)
    out = np.empty(resamples)
    chunk = max(1, 4_000_000 // n)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        out[start:stop] = data[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    return out


def bootstrap_gap(
    nominal: Sequence[float], stressed: Sequence[Sequence[float]], seed: int, name: str
) -> Estimate:
    """mean(nominal) − mean over groups of mean(stressed group): Δ_rel with its interval."""
    base = np.asarray(nominal, dtype=float)
    groups = [np.asarray(g, dtype=float) for g in stressed if len(g) > 0]
    n = int(base.size + sum(g.size for g in groups))
    if base.size == 0 or not groups:
        return Estimate.na("needs a nominal (λ = 0) and a stressed profile", n=n)
    value = float(base.mean() - np.mean([g.mean() for g in groups]))
    rng = rng_for(seed, name)
    gap = resampled_means(base, rng) - np.mean([resampled_means(g, rng) for g in groups], axis=0)
    low, high = np.percentile(gap, [2.5, 97.5])
    return Estimate(value=value, n=n, low=float(low), high=float(high), method="bootstrap-diff")
