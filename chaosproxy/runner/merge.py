"""Merging shard run directories into one: a check, then a sort.

Shards (`chaosproxy run --shard I/N`, or any run directories of the same grid) merge only
when everything that decides an episode's outcome is the same: the grid, the seed, the
profiles as resolved, the code (package versions and a hash of the source), the tasks and
the task texts. What merges is then independent of where and in what order episodes ran:
records are sorted by episode id, each episode's calls are kept in their log order and
grouped by episode in the same order, and of an episode recorded twice one record is kept
by a rule that looks only at the records (a completed one first, then the smaller attempt
id), never at the order the shards were named in.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaosproxy.errors import ChaosError
from chaosproxy.records import (
    CALLS_FILE,
    CONFIG_FILE,
    EPISODE_DIR,
    EPISODES_FILE,
    GRID_FILE,
    TASKS_FILE,
    TEXTS_FILE,
    EpisodeRecord,
    GridEntry,
    RunConfig,
    RunDirError,
    read_jsonl,
)


class MergeError(ChaosError, ValueError):
    """Shards that cannot be merged; the message names what differs and where."""


@dataclass
class MergeSummary:
    out: Path
    episodes: int
    grid: int
    duplicates: list[str] = field(default_factory=list)
    """Episodes recorded by more than one shard (one record kept)."""
    missing: list[str] = field(default_factory=list)
    """Episodes of the grid no shard recorded: `run --resume` on the merged directory runs them."""
    calls: int = 0


@dataclass
class _Shard:
    path: Path
    config: RunConfig
    records: dict[str, EpisodeRecord]


def _identity(shard: _Shard) -> dict[str, Any]:
    """What must be equal for shards to merge, by the name the error uses."""
    config = shard.config
    settings = dict(config.settings)
    # how and where a shard ran, not what it ran
    for volatile in (
        "shard",
        "concurrency",
        "merged_from",
        "services",
        "base_url",
        "model_endpoints",
        "paraphrase_base_url",
        "ray",
    ):
        settings.pop(volatile, None)
    if isinstance(settings.get("memory"), dict):
        settings["memory"] = {k: v for k, v in settings["memory"].items() if k != "dir"}
    identity: dict[str, Any] = {
        "seed": config.seed,
        "suite": config.suite,
        "domains": config.domains,
        "ε values": config.epsilons,
        "trials": config.trials,
        "transport": config.transport,
        "tasks (tasks.jsonl)": _file_hash(shard.path / TASKS_FILE),
        "task texts (texts.jsonl)": _file_hash(shard.path / TEXTS_FILE),
        "grid episodes (grid.jsonl)": _file_hash(shard.path / GRID_FILE),
    }
    for name in sorted(set(config.profiles)):
        identity[f"profile {name}"] = config.profiles[name]
    identity["profile names"] = sorted(config.profiles)
    for package, version in config.versions.items():
        label = "source hash" if package == "source_sha256" else f"version of {package}"
        identity[f"code: {label}"] = version
    identity["code: packages recorded"] = sorted(config.versions)
    for key, value in settings.items():
        identity[f"setting {key}"] = value
    identity["settings recorded"] = sorted(settings)
    return identity


def _file_hash(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def _load(path: Path) -> _Shard:
    if not (path / CONFIG_FILE).is_file():
        raise MergeError(f"{path}: no {CONFIG_FILE}; not a run directory")
    try:
        config = RunConfig.model_validate_json((path / CONFIG_FILE).read_bytes())
    except ValueError as bad:
        raise MergeError(f"{path / CONFIG_FILE}: {bad}") from bad
    if config.kind != "run":
        raise MergeError(f"{path}: a `chaosproxy {config.kind}` directory, not a run")
    records: dict[str, EpisodeRecord] = {}
    if (path / EPISODES_FILE).is_file():
        try:
            for record in read_jsonl(path / EPISODES_FILE, EpisodeRecord):
                records[record.episode] = record  # a later record replaces (as load_run)
        except RunDirError as bad:
            raise MergeError(str(bad)) from bad
    return _Shard(path, config, records)


def _check(shards: list[_Shard]) -> None:
    """Refuse shards that differ in anything that decides outcomes, naming it."""
    first = shards[0]
    reference = _identity(first)
    for other in shards[1:]:
        theirs = _identity(other)
        names = list(dict.fromkeys([*reference, *theirs]))
        differ = [name for name in names if reference.get(name) != theirs.get(name)]
        if differ:
            details = []
            for name in differ:
                mine, yours = _describe(reference.get(name)), _describe(theirs.get(name))
                details.append(f"{name} ({first.path}: {mine}; {other.path}: {yours})")
            raise MergeError(
                "cannot merge shards of different runs: they differ in " + "; ".join(details)
            )


def _describe(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def _preference(record: EpisodeRecord) -> tuple[bool, str]:
    """Of duplicates the smallest wins: a completed record first, then the attempt id."""
    return (record.outcome != "completed", record.attempt or "")


def merge(paths: list[Path], out: Path) -> MergeSummary:
    """Merge shard directories into `out` (which must not hold a run yet)."""
    if not paths:
        raise MergeError("name at least one shard directory")
    if (out / CONFIG_FILE).exists():
        raise MergeError(f"{out} already holds a run; choose another --out")
    resolved = {path.resolve() for path in paths}
    if len(resolved) != len(paths):
        raise MergeError("a shard directory is named twice")
    if out.resolve() in resolved:
        raise MergeError(f"--out {out} is one of the shards")
    shards = [_load(path) for path in paths]
    _check(shards)
    # the shards in an order of their own content, not of the command line
    shards.sort(key=lambda s: (_shard_index(s.config), s.config.created_at, str(s.path)))

    chosen: dict[str, tuple[EpisodeRecord, int]] = {}
    duplicates: set[str] = set()
    for rank, shard in enumerate(shards):
        for episode, record in shard.records.items():
            if episode in chosen:
                duplicates.add(episode)
                if _preference(record) >= _preference(chosen[episode][0]):
                    continue
            chosen[episode] = (record, rank)

    out.mkdir(parents=True, exist_ok=True)
    base = shards[0]
    for name in (TASKS_FILE, TEXTS_FILE, GRID_FILE):
        if (base.path / name).is_file():
            shutil.copyfile(base.path / name, out / name)
    episodes = sorted(chosen)
    with (out / EPISODES_FILE).open("w", encoding="utf-8") as handle:
        for episode in episodes:
            handle.write(chosen[episode][0].model_dump_json() + "\n")
    for episode in episodes:
        source = shards[chosen[episode][1]].path / EPISODE_DIR / episode
        if source.is_dir():
            shutil.copytree(source, out / EPISODE_DIR / episode, dirs_exist_ok=True)
    calls = _merge_calls(shards, chosen, out / CALLS_FILE)

    config = base.config.model_copy(deep=True)
    config.settings["shard"] = None
    config.settings["merged_from"] = [
        {"path": str(s.path), "shard": s.config.settings.get("shard")} for s in shards
    ]
    (out / CONFIG_FILE).write_text(config.model_dump_json(indent=2))

    grid = _grid(base.path)
    missing = sorted(set(grid) - set(chosen)) if grid else []
    return MergeSummary(
        out=out,
        episodes=len(chosen),
        grid=len(grid) if grid else len(chosen),
        duplicates=sorted(duplicates),
        missing=missing,
        calls=calls,
    )


def _shard_index(config: RunConfig) -> int:
    shard = config.settings.get("shard")
    return int(shard["index"]) if isinstance(shard, dict) else 0


def _grid(path: Path) -> list[str]:
    if not (path / GRID_FILE).is_file():
        return []
    return [entry.episode for entry in read_jsonl(path / GRID_FILE, GridEntry)]


def _merge_calls(
    shards: list[_Shard], chosen: dict[str, tuple[EpisodeRecord, int]], target: Path
) -> int:
    """The kept episodes' calls, grouped by episode (sorted), each in its log order.

    A call is kept when its episode's kept record came from its shard and it belongs to that
    record's attempt (or carries none: older or `--services` logs). The log is indexed by
    byte offset and copied line by line, so memory grows with calls' offsets, not their size.
    """
    offsets: dict[str, list[tuple[int, int]]] = {}
    for rank, shard in enumerate(shards):
        path = shard.path / CALLS_FILE
        if not path.is_file():
            continue
        with path.open("rb") as handle:
            position = 0
            for line in handle:
                start, position = position, position + len(line)
                if not line.endswith(b"\n"):
                    break  # a torn last line (a writer killed mid-line)
                call = json.loads(line)
                episode = call.get("episode")
                kept = chosen.get(episode) if isinstance(episode, str) else None
                if kept is None or kept[1] != rank:
                    continue
                attempt = call.get("attempt")
                if attempt is not None and kept[0].attempt not in (None, attempt):
                    continue
                offsets.setdefault(episode, []).append((rank, start))
    count = 0
    handles = {
        rank: (shard.path / CALLS_FILE).open("rb")
        for rank, shard in enumerate(shards)
        if (shard.path / CALLS_FILE).is_file()
    }
    try:
        with target.open("wb") as out:
            for episode in sorted(offsets):
                for rank, start in offsets[episode]:
                    handle = handles[rank]
                    handle.seek(start)
                    out.write(handle.readline())
                    count += 1
    finally:
        for handle in handles.values():
            handle.close()
    return count
