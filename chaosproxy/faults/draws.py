"""Deterministic draws: a hash of (seed, episode key, tool, position, purpose).

No shared random stream: the same call meets the same fault whatever the order,
concurrency or process, and a retry (a later position) draws anew.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import lru_cache
from typing import TypeVar

from chaosproxy.faults.models import DrawKey

T = TypeVar("T")

EPISODE_TOOL = "*"
"""The `tool` of episode-level draws (incident plans), decided once per episode."""

_SCALE = float(2**64)


def uniform(key: DrawKey) -> float:
    """A uniform float in [0, 1) that depends on nothing but the key."""
    return uniform_of(key.seed, key.episode_key, key.tool, key.position, key.purpose)


def uniform_of(seed: int, episode_key: str, tool: str, position: int, purpose: str) -> float:
    """`uniform` without building a DrawKey: the hot path of calls that draw no fault."""
    hasher = _prefix(seed, episode_key).copy()
    hasher.update(f"{tool}\x1f{position}\x1f{purpose}".encode())
    return int.from_bytes(hasher.digest(), "big") / _SCALE


@lru_cache(maxsize=1024)
def _prefix(seed: int, episode_key: str) -> hashlib.blake2b:
    """The hash fed with `seed\x1fepisode_key\x1f`, once per episode: each draw copies it
    and feeds the rest, the same bytes (UTF-8 encodes piecewise) and digest as one hash of
    the whole text, at about two thirds of the cost. Never updated itself."""
    return hashlib.blake2b(f"{seed}\x1f{episode_key}\x1f".encode(), digest_size=8)


def pick(u: float, items: Sequence[T]) -> T:
    """One item of a non-empty sequence, uniformly by `u`."""
    return items[min(int(u * len(items)), len(items) - 1)]


def weighted(u: float, weights: Sequence[tuple[T, float]]) -> T:
    """One item by cumulative weight; weights need not sum to 1."""
    total = sum(weight for _, weight in weights)
    target = u * total
    running = 0.0
    for item, weight in weights:
        running += weight
        if target < running:
            return item
    return next(item for item, weight in reversed(weights) if weight > 0)


def between(u: float, low: int, high: int) -> int:
    """An integer in [low, high], uniformly by `u`."""
    return low + min(int(u * (high - low + 1)), high - low)


def derive(u: float, label: str) -> float:
    """A further uniform float tied to `u` and a label: sub-choices of one effect."""
    digest = hashlib.blake2b(f"{u!r}\x1f{label}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / _SCALE
