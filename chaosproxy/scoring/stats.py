"""95 % intervals, from scipy and two textbook formulas, and never zero-width.

- Proportions: Wilson score interval (Wilson 1927; the same formula, clipping included, as
  statsmodels' `proportion_confint(method="wilson")`, which tests/scoring checks it against
  when statsmodels is installed). Its normal quantile is scipy's, written out (tests/scoring
  check it), so that scipy is imported only when a bootstrap runs.
- Two proportions: Newcombe's hybrid score interval, method 10 (Newcombe 1998), built from
  the two Wilson intervals as statsmodels' `confint_proportions_2indep(method="newcomb")`
  does. statsmodels (and pandas under it, 150 MB) is not a dependency for these two lines.
- Bounded means (values in [0, 1]: graded FRR, PEI, pass^k, shares): BCa bootstrap (scipy
  `bootstrap`'s, bit for bit: `bca`) when the sample varies; an all-equal sample gets the
  Wilson interval of (Σx, n), which is what a 0/1 sample with that mean would get and is
  conservative for any [0, 1] variable (its variance is at most m(1 − m)). So 0.00 over
  n = 2 reads [0.00, 0.66], not [0.00, 0.00].
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
from collections.abc import Callable, Iterator, Sequence

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
    """The BCa interval (`bca`), or None when it is degenerate; above BCA_MAX_N a
    percentile interval from `resampled_means`."""
    largest = max(sample.size for sample in samples)
    if largest > BCA_MAX_N:
        return _percentile(samples, seed, name)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # degenerate resamples: judged below
        low, high = bca(
            samples,
            statistic,
            rng_for(seed, name),
            batch=max(1, 2_000_000 // max(largest, 1)),
        )
    if math.isnan(low) or math.isnan(high) or low == high:
        return None
    return low, high


def bca(
    samples: tuple[np.ndarray, ...],
    statistic: Callable[..., np.ndarray],
    rng: np.random.Generator,
    batch: int,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> tuple[float, float]:
    """`scipy.stats.bootstrap(samples, statistic, n_resamples=resamples, batch=batch,
    confidence_level=CONFIDENCE, method="BCa", rng=rng).confidence_interval` for 1-D float
    samples and a vectorised statistic, to the last bit (tests/scoring/test_stats.py
    compares the two): the same draws from `rng` in the same order, the same numpy
    operations in the same order (resampling, jackknife, acceleration, scipy.stats.quantile's
    "linear" method), without scipy.stats — 0.5 s and 50 MB to import, and per call input
    checks that cost more than the arithmetic on a run of a hundred groups. Only scipy's
    normal distribution functions are used (scipy.special, imported here)."""
    from scipy.special import ndtr, ndtri  # lazily: see Z

    # the bootstrap distribution: each batch draws every sample's indices in turn
    theta_hat_b = []
    for k in range(0, resamples, batch):
        actual = min(batch, resamples - k)
        resampled = []
        for sample in samples:
            n = sample.shape[-1]
            index = rng.integers(0, n, size=(actual, n), dtype="int64")
            resampled.append(sample[..., index])
        theta_hat_b.append(statistic(*resampled, axis=-1))
    distribution = np.concatenate(theta_hat_b, axis=-1)

    alpha = (1 - CONFIDENCE) / 2
    # bias: where the estimate falls in the bootstrap distribution
    theta_hat = np.expand_dims(statistic(*samples, axis=-1), axis=-1)
    below = np.count_nonzero(distribution < theta_hat, axis=-1)
    at_or_below = np.count_nonzero(distribution <= theta_hat, axis=-1)
    percentile = np.asarray(below + at_or_below).astype(theta_hat.dtype) / (2 * resamples)
    z0_hat = ndtri(np.asarray(percentile, dtype=theta_hat.dtype))

    # acceleration: the jackknife of each sample, the others whole
    theta_hat_ji = []
    for j, sample in enumerate(samples):
        others = [np.expand_dims(each, axis=-2) for each in samples]
        theta_hat_i = []
        for jackknifed in _jackknife(sample, batch):
            others[j] = jackknifed
            rows = jackknifed.shape[0]
            broadcast = [np.broadcast_to(each, (rows, each.shape[-1])) for each in others]
            theta_hat_i.append(statistic(*broadcast, axis=-1))
        theta_hat_ji.append(np.concatenate(theta_hat_i, axis=-1))
    n_j = [float(values.shape[-1]) for values in theta_hat_ji]
    dots = [np.mean(values, axis=-1, keepdims=True) for values in theta_hat_ji]
    u_ji = [
        (n - 1) * (dot - values) for dot, values, n in zip(dots, theta_hat_ji, n_j, strict=True)
    ]
    nums = [np.sum(u**3, axis=-1) / n**3 for u, n in zip(u_ji, n_j, strict=True)]
    dens = [np.sum(u**2, axis=-1) / n**2 for u, n in zip(u_ji, n_j, strict=True)]
    a_hat = 1 / 6 * sum(nums) / sum(dens) ** (3 / 2)

    z_alpha = float(ndtri(alpha))
    z_1alpha = -z_alpha
    num1 = z0_hat + z_alpha
    alpha_1 = ndtr(z0_hat + num1 / (1 - a_hat * num1))
    num2 = z0_hat + z_1alpha
    alpha_2 = ndtr(z0_hat + num2 / (1 - a_hat * num2))
    low, high = _quantile_linear(distribution, np.stack((alpha_1, alpha_2), axis=-1))
    return float(low), float(high)


def _jackknife(sample: np.ndarray, batch: int) -> Iterator[np.ndarray]:
    """Leave-one-out resamples of a 1-D sample, `batch` rows at a time (scipy's order)."""
    n = sample.shape[-1]
    for k in range(0, n, batch):
        actual = min(batch, n - k)
        keep = np.ones((actual, n), dtype=bool)
        np.fill_diagonal(keep[:, k : k + actual], False)
        index = np.broadcast_to(np.arange(n), (actual, n))[keep].reshape((actual, n - 1))
        yield sample[..., index]


def _quantile_linear(values: np.ndarray, p: np.ndarray) -> np.ndarray:
    """scipy.stats.quantile(values, p, method="linear") for a 1-D sample and 1-D p, with its
    NaN rules: a NaN in the sample gives NaN everywhere, a p outside [0, 1] (or NaN) NaN."""
    y = np.sort(values, axis=-1, kind="quicksort")
    if np.isnan(y).any():
        y = np.full_like(y, np.nan)
    n = np.asarray([y.shape[-1]], dtype=y.dtype)
    p_mask = (p > 1) | (p < 0) | np.isnan(p)
    if p_mask.any():
        p = p.copy()
        p[p_mask] = 0.5
    m = 1 - p
    jg = p * n + m
    jp1 = jg // 1
    j = jp1 - 1
    g = jg % 1
    g = g.copy()
    g[j < 0] = 0
    j = np.clip(j, 0.0, n - 1)
    jp1 = np.clip(jp1, 0.0, n - 1)
    result = (1 - g) * np.take_along_axis(y, j.astype(np.int64), axis=-1) + g * np.take_along_axis(
        y, jp1.astype(np.int64), axis=-1
    )
    result = result.copy()
    result[p_mask] = np.nan
    return np.asarray(result)


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
    # (tests/scoring/test_bca_exact.py holds it)
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
