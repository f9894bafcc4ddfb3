"""Reading a run directory: the records, the journals, and where they came from.

calls.jsonl can hold millions of lines, so it is streamed, never loaded whole. Every
other file is small. A bad line stops scoring with its file and line number; a torn
last line (the writer was killed mid-line) is skipped, as records.read_jsonl does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ValidationError

from chaosproxy.domains.kit.journal import Journal
from chaosproxy.records import (
    CALLS_FILE,
    CONFIG_FILE,
    EPISODE_DIR,
    EPISODES_FILE,
    JOURNAL_FILE,
    TASKS_FILE,
    CallRecord,
    EpisodeRecord,
    RunConfig,
    RunDirError,
    TaskMeta,
    read_jsonl,
)


class FileProvenance(BaseModel):
    name: str
    sha256: str
    bytes: int


@dataclass
class RunData:
    """Everything small in a run directory; calls are streamed with `iter_calls`."""

    path: Path
    config: RunConfig
    tasks: dict[str, TaskMeta]
    episodes: list[EpisodeRecord]
    duplicates: int = 0
    provenance: list[FileProvenance] = field(default_factory=list)

    def journal_path(self, episode: str) -> Path:
        return self.path / EPISODE_DIR / episode / JOURNAL_FILE


def load_run(path: Path) -> RunData:
    """Read config, tasks and episodes; later records of an episode replace earlier ones
    (a resumed run may finish an episode twice). Episodes come back sorted by id, so the
    numbers (bootstrap intervals included) do not depend on the order episodes finished."""
    if not path.is_dir():
        raise RunDirError(f"{path}: not a run directory")
    for required in (CONFIG_FILE, EPISODES_FILE):
        if not (path / required).is_file():
            raise RunDirError(f"{path / required}: missing; is this a run directory?")
    config = _read_config(path / CONFIG_FILE)
    tasks: dict[str, TaskMeta] = {}
    if (path / TASKS_FILE).is_file():
        tasks = {task.id: task for task in read_jsonl(path / TASKS_FILE, TaskMeta)}
    by_episode: dict[str, EpisodeRecord] = {}
    lines = 0
    for record in read_jsonl(path / EPISODES_FILE, EpisodeRecord):
        by_episode[record.episode] = record
        lines += 1
    files = [CONFIG_FILE, TASKS_FILE, EPISODES_FILE, CALLS_FILE]
    provenance = [sha256_of(path / name) for name in files if (path / name).is_file()]
    return RunData(
        path=path,
        config=config,
        tasks=tasks,
        episodes=[by_episode[episode] for episode in sorted(by_episode)],
        duplicates=lines - len(by_episode),
        provenance=provenance,
    )


def _read_config(path: Path) -> RunConfig:
    try:
        return RunConfig.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(document)"
        raise RunDirError(f"{path}: field '{where}': {first['msg']}") from exc


def sha256_of(path: Path) -> FileProvenance:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
            size += len(chunk)
    return FileProvenance(name=path.name, sha256=digest.hexdigest(), bytes=size)


def iter_calls(path: Path) -> Iterator[CallRecord]:
    """Stream calls.jsonl; absent means no proxied call was logged."""
    file = path / CALLS_FILE
    if not file.is_file():
        return
    with file.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield CallRecord.model_validate_json(line)
            except ValidationError as exc:
                first = exc.errors()[0]
                if first["type"] == "json_invalid":
                    if not line.endswith(b"\n"):
                        return
                    raise RunDirError(f"{file}:{number}: not valid JSON ({first['msg']})") from exc
                where = ".".join(str(part) for part in first["loc"])
                raise RunDirError(f"{file}:{number}: field '{where}': {first['msg']}") from exc


def load_journal(run: RunData, episode: str) -> Journal | None:
    """The episode's journal, or None when the runner could not fetch one."""
    file = run.journal_path(episode)
    if not file.is_file():
        return None
    try:
        return Journal.model_validate_json(file.read_bytes())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(document)"
        raise RunDirError(f"{file}: field '{where}': {first['msg']}") from exc


def dumps_canonical(value: object) -> str:
    """A stable text form for comparing argument dicts."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
