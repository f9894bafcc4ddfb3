"""The percentile bootstrap's int32 index draws are numpy's int64 draws: results.json must
not change by a digit because the indices are written at half the cost."""

from __future__ import annotations

import numpy as np
import pytest

from chaosproxy.scoring.stats import resampled_means, rng_for


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
