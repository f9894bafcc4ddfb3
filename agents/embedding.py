"""The offline lexical embedding: text to a unit vector with no model and no network.

Features are lower-cased word tokens and character 4-grams of the word sequence (the
same features `chaosproxy mock-model` identifies tasks by), each hashed (blake2b) into
one of DIM buckets with a hashed sign, weighted 1 + log(count), then L2-normalised. The
cosine of two texts is therefore a bag-of-words-and-fragments overlap: 1.0 for the same
text, high for an ε-perturbed rewording, low for another task. It is what `ap-edm` uses
when no `/v1/embeddings` model is configured, and what the mock model serves there.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter

import numpy as np
from numpy.typing import NDArray

WORD = re.compile(r"[a-z0-9]+(?:[-_][a-z0-9]+)*")


def features(text: str) -> Counter[str]:
    """Word tokens and character 4-grams of the word sequence, with counts."""
    lowered = text.lower()
    counts: Counter[str] = Counter(f"w:{w}" for w in WORD.findall(lowered))
    squashed = " ".join(WORD.findall(lowered))
    counts.update(f"c:{squashed[i : i + 4]}" for i in range(max(0, len(squashed) - 3)))
    return counts


DIM = 512
LEXICAL = f"lexical-v1-{DIM}"
"""The name memories record, so a memory is never queried with another embedding."""


def _bucket(term: str) -> tuple[int, float]:
    digest = hashlib.blake2b(term.encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "big")
    return value % DIM, 1.0 if (value >> 63) & 1 else -1.0


def lexical_embedding(text: str) -> NDArray[np.float32]:
    vector = np.zeros(DIM, dtype=np.float32)
    for term, count in features(text).items():
        bucket, sign = _bucket(term)
        vector[bucket] += sign * (1.0 + math.log(count))
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector
