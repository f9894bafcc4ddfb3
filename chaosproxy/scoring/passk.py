"""pass^k, pass@k and the reliability surface R(k, ε, λ) (τ-bench; ReliabilityBench §3.3).

A *unit* is one task at one ε under one profile; its trials are the evaluable episodes.
For n trials with c successes: pass^k = C(c, k) / C(n, k) (unbiased for "k i.i.d. trials
all succeed"), pass@k = 1 − C(n − c, k) / C(n, k), and the all-k variant asks whether
the first k trials (by trial number) all succeeded. Each is defined for k ≤ n only.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from math import comb
from typing import Any

import numpy as np
from pydantic import BaseModel

from chaosproxy.scoring.estimate import Estimate
from chaosproxy.scoring.stats import BOOTSTRAP_RESAMPLES, NO_SPREAD, bounded_mean, rng_for, wilson

Trials = Sequence[tuple[int, bool]]  # (trial number, success)


def pass_hat(n: int, c: int, k: int) -> float | None:
    return comb(c, k) / comb(n, k) if 1 <= k <= n else None


def pass_at(n: int, c: int, k: int) -> float | None:
    return 1.0 - comb(n - c, k) / comb(n, k) if 1 <= k <= n else None


def first_k_all(trials: Trials, k: int) -> bool | None:
    ordered = sorted(trials)
    return all(ok for _, ok in ordered[:k]) if 1 <= k <= len(ordered) else None


class PassK(BaseModel):
    k: int
    pass_hat: Estimate
    pass_at: Estimate
    all_k: Estimate


def pass_table(units: Mapping[Any, Trials], k_max: int, seed: int, name: str) -> list[PassK]:
    """pass^k, pass@k and all-k for k = 1..k_max, averaged over units with n ≥ k."""
    rows: list[PassK] = []
    for k in range(1, k_max + 1):
        hats, ats, alls = [], [], []
        for trials in units.values():
            n, c = len(trials), sum(ok for _, ok in trials)
            if k <= n:
                hats.append(pass_hat(n, c, k) or 0.0)
                ats.append(pass_at(n, c, k) or 0.0)
                alls.append(bool(first_k_all(trials, k)))
        note = f"k = {k} > n for every task"
        rows.append(
            PassK(
                k=k,
                pass_hat=bounded_mean(hats, seed, f"{name}/pass^{k}", note),
                pass_at=bounded_mean(ats, seed, f"{name}/pass@{k}", note),
                all_k=wilson(sum(alls), len(alls), note),
            )
        )
    return rows


class SurfaceCell(BaseModel):
    k: int
    epsilon: float
    lam: float
    profile: str
    value: Estimate


class Surface(BaseModel):
    cells: list[SurfaceCell]
    volume: Estimate
    gradient_k: Estimate
    gradient_epsilon: Estimate
    gradient_lambda: Estimate


def surface(
    units: Mapping[tuple[str, float, str], Trials],
    lambdas: Mapping[str, float],
    k_max: int,
    seed: int,
    name: str,
) -> Surface:
    """R(k, ε, λ) = mean over tasks of pass^k; volume = mean over measured cells; each
    gradient = mean finite-difference slope between neighbouring grid points (per trial
    for k, per unit of ε and λ). Intervals: bootstrap over tasks, one resample for all cells."""
    tasks = sorted({task for task, _, _ in units})
    grid = sorted(
        {
            (k, eps, lambdas[profile], profile)
            for _, eps, profile in units
            if profile in lambdas
            for k in range(1, k_max + 1)
        }
    )
    matrix = np.full((len(tasks), len(grid)), np.nan)
    row = {task: i for i, task in enumerate(tasks)}
    for col, (k, eps, _, profile) in enumerate(grid):
        for task in tasks:
            trials = units.get((task, eps, profile))
            if trials:
                value = pass_hat(len(trials), sum(ok for _, ok in trials), k)
                if value is not None:
                    matrix[row[task], col] = value
    measured = ~np.isnan(matrix)
    filled = np.nan_to_num(matrix)
    counts = measured.sum(axis=0)
    point = _safe_div(filled.sum(axis=0), counts)
    if tasks:
        weights = rng_for(seed, f"{name}/surface").multinomial(
            len(tasks), np.full(len(tasks), 1 / len(tasks)), size=BOOTSTRAP_RESAMPLES // 4
        )
        boot = _safe_div(weights @ filled, weights @ measured)
    else:
        boot = np.empty((0, len(grid)))
    cells = [
        SurfaceCell(
            k=k,
            epsilon=eps,
            lam=lam,
            profile=profile,
            value=_estimate(
                point[col], boot[:, col], int(counts[col]), f"k = {k} > n", bounded=True
            ),
        )
        for col, (k, eps, lam, profile) in enumerate(grid)
    ]
    coords = [(float(k), eps, lam) for k, eps, lam, _ in grid]
    return Surface(
        cells=cells,
        volume=_estimate(
            _nanmean(point),
            _nanmean_rows(boot),
            int(measured.any(axis=1).sum()),
            "no measured cell",
            bounded=True,
        ),
        gradient_k=_gradient(coords, point, boot, 0, len(tasks)),
        gradient_epsilon=_gradient(coords, point, boot, 1, len(tasks)),
        gradient_lambda=_gradient(coords, point, boot, 2, len(tasks)),
    )


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.full(np.shape(num), np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _nanmean(values: np.ndarray) -> float:
    ok = ~np.isnan(values)
    return float(values[ok].mean()) if ok.any() else float("nan")


def _nanmean_rows(matrix: np.ndarray) -> np.ndarray:
    ok = ~np.isnan(matrix)
    return _safe_div(np.nan_to_num(matrix).sum(axis=1), ok.sum(axis=1))


def _estimate(value: float, boot: np.ndarray, n: int, note: str, bounded: bool = False) -> Estimate:
    """Percentile interval of the shared task bootstrap. A degenerate one (every task
    alike, or one task) is never reported as [x, x]: a bounded cell gets the Wilson
    interval of (value × n, n), a slope gets no interval."""
    if np.isnan(value):
        return Estimate.na(note, n=n)
    boot = boot[~np.isnan(boot)]
    if boot.size >= 2 and n >= 2:
        low, high = np.percentile(boot, [2.5, 97.5])
        if float(low) != float(high):
            return Estimate(
                value=float(value), n=n, low=float(low), high=float(high), method="bootstrap"
            )
    if bounded and n >= 1:
        return wilson(float(value) * n, n, note)
    return Estimate(value=float(value), n=n, method="none", note=NO_SPREAD)


def _gradient(
    coords: list[tuple[float, float, float]],
    point: np.ndarray,
    boot: np.ndarray,
    axis: int,
    n_tasks: int,
) -> Estimate:
    """Mean slope between neighbours along one axis, the other two held fixed."""
    lines: dict[tuple[float, ...], list[tuple[float, int]]] = {}
    for col, coord in enumerate(coords):
        rest = tuple(v for i, v in enumerate(coord) if i != axis)
        lines.setdefault(rest, []).append((coord[axis], col))
    pairs: list[tuple[int, int, float]] = []
    for line in lines.values():
        line.sort()
        pairs += [(a, b, xb - xa) for (xa, a), (xb, b) in itertools.pairwise(line)]
    axis_name = ("k", "ε", "λ")[axis]
    if not pairs:
        return Estimate.na(f"one {axis_name} value only", n=n_tasks)
    a_idx = np.array([p[0] for p in pairs])
    b_idx = np.array([p[1] for p in pairs])
    dx = np.array([p[2] for p in pairs])
    slopes = (point[b_idx] - point[a_idx]) / dx
    boot_slopes = (boot[:, b_idx] - boot[:, a_idx]) / dx if boot.size else boot
    return _estimate(
        _nanmean(slopes),
        _nanmean_rows(boot_slopes) if boot.size else boot,
        n_tasks,
        f"no two neighbouring {axis_name} values measured",
    )
