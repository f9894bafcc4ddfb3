"""The episodic memory: successful trajectories in a FAISS index, persisted in a directory.

HB-Eval Algorithm 1 stores a trajectory when its PEI is at least 0.8 and retrieves by
cosine similarity at least 0.87, filtered by domain. Vectors are L2-normalised, so the
inner product of an `IndexFlatIP` is the cosine. A memory directory holds:

    manifest.json   format, embedding name and dimension, entry count, sources
    entries.jsonl   one MemoryEntry per vector, in index order
    index.faiss     the FAISS index (faiss.write_index)

A memory is read-only during a run (concurrent episodes share it, and the run's results
stay reproducible); it grows between runs with `chaosproxy memory build`.

FAISS (66 MB) is the optional extra `chaosproxy[apedm]`: it is imported here, and only when
a memory is made or read, so nothing else pays for it.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, Field

if TYPE_CHECKING:
    import faiss

PEI_MIN = 0.8
RETRIEVE_AT = 0.87
MANIFEST = "manifest.json"
ENTRIES = "entries.jsonl"
INDEX = "index.faiss"
FORMAT = 1


class MemoryDirError(ValueError):
    """A memory directory that cannot be used; the message says why and what to do."""


def _faiss() -> ModuleType:
    """FAISS, or an error saying how to install it (it is the optional extra `apedm`)."""
    try:
        import faiss
    except ImportError as missing:
        raise MemoryDirError(
            "ap-edm's episodic memory needs FAISS: pip install 'chaosproxy[apedm]'"
        ) from missing
    return faiss


class ToolStep(BaseModel):
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class MemoryEntry(BaseModel):
    """One successful trajectory and where it came from."""

    domain: str
    task_id: str
    task_text: str
    pei: float
    steps: list[ToolStep]
    agent: str = ""
    run: str = ""
    episode: str = ""


class Manifest(BaseModel):
    format: int = FORMAT
    embedding: str
    dim: int
    entries: int = 0
    pei_min: float = PEI_MIN
    created_at: float = Field(default_factory=time.time)
    sources: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class Hit:
    entry: MemoryEntry
    score: float


class EpisodicMemory:
    def __init__(self, embedding: str, dim: int) -> None:
        self.manifest = Manifest(embedding=embedding, dim=dim)
        self.index: faiss.Index = _faiss().IndexFlatIP(dim)
        self.entries: list[MemoryEntry] = []

    def add(self, entry: MemoryEntry, vector: NDArray[np.float32]) -> None:
        if entry.pei < self.manifest.pei_min:
            raise MemoryDirError(f"{entry.episode}: PEI {entry.pei:.2f} < {self.manifest.pei_min}")
        self.index.add(_unit(vector, self.manifest.dim)[None, :])
        self.entries.append(entry)
        self.manifest.entries = len(self.entries)

    def domains(self) -> set[str]:
        return {entry.domain for entry in self.entries}

    def search(self, vector: NDArray[np.float32], domain: str, k: int = 8) -> list[Hit]:
        """The nearest entries of `domain`, best first (Alg. 1, lines 15–17)."""
        if not self.entries:
            return []
        wanted = min(len(self.entries), max(k, 1) * 4)
        scores, ids = self.index.search(_unit(vector, self.manifest.dim)[None, :], wanted)
        hits = [
            Hit(self.entries[i], float(s))
            for s, i in zip(scores[0], ids[0], strict=True)
            if i >= 0 and self.entries[i].domain == domain
        ]
        return sorted(hits, key=lambda h: (-round(h.score, 6), -h.entry.pei))[:k]

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        _faiss().write_index(self.index, str(directory / INDEX))
        with (directory / ENTRIES).open("w", encoding="utf-8") as handle:
            for entry in self.entries:
                handle.write(entry.model_dump_json() + "\n")
        (directory / MANIFEST).write_text(self.manifest.model_dump_json(indent=2))

    @classmethod
    def load(cls, directory: Path) -> EpisodicMemory:
        if not (directory / MANIFEST).is_file():
            raise MemoryDirError(
                f"{directory} is not a memory (no {MANIFEST}); "
                "build one with `chaosproxy memory build RUN_DIR... --out DIR`"
            )
        try:
            manifest = Manifest.model_validate_json((directory / MANIFEST).read_text())
            lines = (directory / ENTRIES).read_text(encoding="utf-8").splitlines()
            entries = [MemoryEntry.model_validate_json(line) for line in lines if line.strip()]
            index = _faiss().read_index(str(directory / INDEX))
        except (OSError, ValueError, RuntimeError) as bad:
            raise MemoryDirError(f"{directory}: cannot read the memory: {bad}") from bad
        if manifest.format != FORMAT or index.ntotal != len(entries) or index.d != manifest.dim:
            raise MemoryDirError(
                f"{directory}: index ({index.ntotal} vectors of {index.d}) does not match "
                f"its entries ({len(entries)}) and manifest (dim {manifest.dim})"
            )
        memory = cls(manifest.embedding, manifest.dim)
        memory.manifest, memory.index, memory.entries = manifest, index, entries
        return memory


def fingerprint(directory: Path) -> dict[str, str]:
    """sha256 of each memory file, for the run's configuration."""
    return {
        name: hashlib.sha256((directory / name).read_bytes()).hexdigest()
        for name in (MANIFEST, ENTRIES, INDEX)
        if (directory / name).is_file()
    }


def _unit(vector: NDArray[np.float32] | list[float], dim: int) -> NDArray[np.float32]:
    array = np.asarray(vector, dtype=np.float32).reshape(-1)
    if array.shape[0] != dim:
        raise MemoryDirError(f"a vector of {array.shape[0]} dimensions for a memory of {dim}")
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else array
