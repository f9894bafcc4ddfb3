"""Algorithm 1, stages 1–3: harvest trajectories from runs, evaluate them, keep the good ones.

Harvesting reads each episode's tool calls from calls.jsonl (the calls that reached the
service and succeeded, in step order, with the arguments the agent sent); evaluation is
the scorer's (success from the verifier, PEI with its quality factor); storage keeps
successful episodes with PEI ≥ 0.8, one per distinct task text (the highest PEI, then the
shortest). HB-Eval's second condition, a trust index TI ≥ 4.0, has no counterpart here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from chaosproxy.agents.apedm.embedder import Embedder
from chaosproxy.agents.apedm.memory import (
    MANIFEST,
    PEI_MIN,
    EpisodicMemory,
    MemoryDirError,
    MemoryEntry,
    ToolStep,
)
from chaosproxy.agents.llm import ModelUsage
from chaosproxy.scoring.api import score_runs
from chaosproxy.scoring.rundir import iter_calls


def harvest(run_dir: Path) -> list[MemoryEntry]:
    """The run's successful trajectories with PEI ≥ PEI_MIN."""
    scored = score_runs([run_dir])
    steps: dict[str, list[tuple[int, ToolStep]]] = {}
    for call in iter_calls(run_dir):
        if call.kind != "tool_call" or call.outcome != "ok" or call.tool is None:
            continue
        step = ToolStep(tool=call.tool, arguments=call.arguments or {})
        steps.setdefault(call.episode, []).append((call.step or 0, step))
    entries = []
    for score in scored.episodes:
        record = score.record
        if not score.success or score.pei is None or score.pei < PEI_MIN:
            continue
        trajectory = [step for _, step in sorted(steps.get(record.episode, []), key=lambda s: s[0])]
        if not trajectory:
            continue
        entries.append(
            MemoryEntry(
                domain=record.domain,
                task_id=record.task_id,
                task_text=record.task_text,
                pei=round(score.pei, 4),
                steps=trajectory,
                agent=record.agent,
                run=str(run_dir.resolve()),
                episode=record.episode,
            )
        )
    return entries


def best_per_text(entries: Sequence[MemoryEntry]) -> list[MemoryEntry]:
    best: dict[tuple[str, str], MemoryEntry] = {}
    for entry in entries:
        key = (entry.domain, entry.task_text)
        kept = best.get(key)
        if kept is None or (-entry.pei, len(entry.steps)) < (-kept.pei, len(kept.steps)):
            best[key] = entry
    return sorted(best.values(), key=lambda e: (e.domain, e.task_id, e.task_text))


async def build_memory(
    run_dirs: Sequence[Path], out: Path, embedder: Embedder
) -> tuple[EpisodicMemory, int]:
    """Add the runs' good trajectories to the memory in `out` (created if missing);
    returns the memory and how many entries were added."""
    existing = EpisodicMemory.load(out) if (out / MANIFEST).is_file() else None
    if existing is not None and existing.manifest.embedding != embedder.name:
        raise MemoryDirError(
            f"{out} holds {existing.manifest.embedding} vectors; cannot add {embedder.name} ones"
        )
    known = {(e.domain, e.task_text) for e in existing.entries} if existing else set()
    harvested = [entry for run in run_dirs for entry in harvest(run)]
    fresh = [e for e in best_per_text(harvested) if (e.domain, e.task_text) not in known]
    if existing is None and not fresh:
        raise MemoryDirError(
            f"no successful episode with PEI ≥ {PEI_MIN} in {', '.join(map(str, run_dirs))}: "
            "nothing to remember"
        )
    memory = existing
    if fresh:
        vectors = await embedder.embed([e.task_text for e in fresh], ModelUsage())
        if memory is None:
            memory = EpisodicMemory(embedder.name, int(vectors.shape[1]))
        for entry, vector in zip(fresh, vectors, strict=True):
            memory.add(entry, vector)
    assert memory is not None
    memory.manifest.sources = sorted({*memory.manifest.sources, *(str(r) for r in run_dirs)})
    memory.save(out)
    return memory, len(fresh)
