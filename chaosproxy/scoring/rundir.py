"""Reading a run directory: the records, the journals, and where they came from.

calls.jsonl can hold millions of lines, so it is streamed, never loaded whole. Every
other file is small. A bad line stops scoring with its file and line number; a torn
last line (the writer was killed mid-line: a crash leaves exactly this) is skipped, with
a warning on the `chaosproxy.scoring` logger and a `TruncatedLine` in results.json.
Nothing here imports domain code: journals are read with records.JournalRecord's fields
(scoring.episoderows).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import msgspec
from pydantic import BaseModel, ValidationError

from chaosproxy.records import (
    CALLS_FILE,
    CONFIG_FILE,
    EPISODE_DIR,
    EPISODES_FILE,
    JOURNAL_FILE,
    TASKS_FILE,
    CallRecord,
    EpisodeRecord,
    JournalRecord,
    RunConfig,
    RunDirError,
    TaskMeta,
)
from chaosproxy.scoring import callrows, episoderows
from chaosproxy.scoring.callrows import CallRow
from chaosproxy.scoring.episoderows import Episode, EpisodeRow, JournalRow

LOG = logging.getLogger("chaosproxy.scoring")
RecordT = TypeVar("RecordT", bound=BaseModel)
RowT = TypeVar("RowT")


class FileProvenance(BaseModel):
    name: str
    sha256: str
    bytes: int


class TruncatedLine(BaseModel):
    """A last line with no newline that is not a whole record: skipped, and said so."""

    file: str
    line: int
    bytes: int


def _truncated(path: Path, number: int, size: int, sink: list[TruncatedLine]) -> None:
    sink.append(TruncatedLine(file=path.name, line=number, bytes=size))
    LOG.warning(
        "%s: line %d is truncated (%d bytes, no newline; a writer was killed mid-line?): skipped",
        path,
        number,
        size,
    )


def read_records(
    path: Path, model: type[RecordT], truncated: list[TruncatedLine]
) -> Iterator[RecordT]:
    """Stream a JSONL file of records; a bad line raises RunDirError naming file and line,
    a torn last line is skipped and appended to `truncated`."""
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            record = _validated(path, number, line, model, truncated)
            if record is None:
                return  # a torn last line
            yield record


@dataclass
class RunData:
    """Everything small in a run directory; calls are streamed with `iter_calls`."""

    path: Path
    config: RunConfig
    tasks: dict[str, TaskMeta]
    episodes: list[EpisodeRow]
    duplicates: int = 0
    provenance: list[FileProvenance] = field(default_factory=list)
    truncated: list[TruncatedLine] = field(default_factory=list)
    calls_only: bool = False
    """No episodes.jsonl, only the proxy's calls.jsonl (a `chaosproxy up` session): no task
    verdicts, so only what the log supports is scored (scoring.logonly)."""
    attempts: dict[str, str] = field(default_factory=dict)
    """The recorded attempt of each episode that has one: only its calls and journal count."""

    def journal_path(self, episode: str) -> Path:
        return self.path / EPISODE_DIR / episode / JOURNAL_FILE


def load_run(path: Path) -> RunData:
    """Read config, tasks and episodes; later records of an episode replace earlier ones
    (a resumed run may finish an episode twice). Episodes come back sorted by id, so the
    numbers (bootstrap intervals included) do not depend on the order episodes finished."""
    if not path.is_dir():
        raise RunDirError(f"{path}: not a run directory")
    if is_calls_only(path):
        return _load_calls_only(path)
    if not (path / EPISODES_FILE).is_file():
        raise RunDirError(
            f"{path / EPISODES_FILE}: missing, and so is {CALLS_FILE}; is this a run "
            "directory? (`chaosproxy run` writes both, `chaosproxy up` writes calls.jsonl)"
        )
    if not (path / CONFIG_FILE).is_file():
        raise RunDirError(f"{path / CONFIG_FILE}: missing; is this a run directory?")
    config = _read_config(path / CONFIG_FILE)
    truncated: list[TruncatedLine] = []
    tasks: dict[str, TaskMeta] = {}
    if (path / TASKS_FILE).is_file():
        tasks = {task.id: task for task in read_records(path / TASKS_FILE, TaskMeta, truncated)}
    by_episode: dict[str, EpisodeRow] = {}
    lines = 0
    for record in read_episode_rows(path / EPISODES_FILE, truncated):
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
        truncated=truncated,
        attempts=_attempts_of(by_episode.values()),
    )


def is_calls_only(path: Path) -> bool:
    """A directory with the proxy's calls.jsonl and no episodes.jsonl (`chaosproxy up`)."""
    return (path / CALLS_FILE).is_file() and not (path / EPISODES_FILE).is_file()


def _load_calls_only(path: Path) -> RunData:
    """config.json when `up` wrote one; else a stand-in with the log's seed."""
    if (path / CONFIG_FILE).is_file():
        config = _read_config(path / CONFIG_FILE)
    else:
        first = next(iter_calls(path), None)
        seed = first.run_seed if first is not None else 0
        config = RunConfig(kind="up", seed=seed, created_at=0.0, versions={})
    provenance = [sha256_of(path / n) for n in (CONFIG_FILE, CALLS_FILE) if (path / n).is_file()]
    return RunData(
        path=path, config=config, tasks={}, episodes=[], provenance=provenance, calls_only=True
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


def iter_calls(path: Path, truncated: list[TruncatedLine] | None = None) -> Iterator[CallRecord]:
    """Stream calls.jsonl; absent means no proxied call was logged.

    A call stamped with an attempt other than its episode's recorded one is left out: it
    belongs to an attempt that was interrupted (or a duplicate that was dropped), and its
    steps, faults and recoveries must not mix into the recorded attempt's. Unstamped calls
    (older run directories, a `--services` proxy) are all kept, as before attempts."""
    file = path / CALLS_FILE
    if not file.is_file():
        return
    attempts = recorded_attempts(path)
    for call in read_records(file, CallRecord, truncated if truncated is not None else []):
        if call.attempt is not None and attempts.get(call.episode, call.attempt) != call.attempt:
            continue
        yield call


def iter_call_rows(
    path: Path,
    truncated: list[TruncatedLine] | None = None,
    attempts: dict[str, str] | None = None,
) -> Iterator[CallRow]:
    """`iter_calls` for the scorer: the same records, kept and skipped by the same rules, as
    scoring.callrows structs (msgspec, no pydantic model per record). `attempts`: each
    episode's recorded attempt when the caller has read episodes.jsonl already."""
    file = path / CALLS_FILE
    if not file.is_file():
        return
    if attempts is None:
        attempts = recorded_attempts(path)
    sink = truncated if truncated is not None else []
    blocks = _decoded_blocks(file, callrows.DECODER.decode, CallRecord, callrows.from_record, sink)
    for rows in blocks:
        if attempts:
            rows = [
                call
                for call in rows
                if call.attempt is None or attempts.get(call.episode, call.attempt) == call.attempt
            ]
        yield from rows


def read_episode_rows(path: Path, truncated: list[TruncatedLine]) -> Iterator[EpisodeRow]:
    """`read_records(path, EpisodeRecord, truncated)` as scoring.episoderows structs: msgspec
    decodes each line, and a line it refuses goes to pydantic (same errors, same values)."""
    decode = episoderows.EPISODE_DECODER.decode
    rows = _decoded(path, decode, EpisodeRecord, episoderows.episode_from_record, truncated)
    for row in rows:
        yield episoderows.shared_strings(row)


def _decoded(
    path: Path,
    decode: Callable[[bytes], RowT],
    model: type[RecordT],
    from_record: Callable[[RecordT], RowT],
    truncated: list[TruncatedLine],
) -> Iterator[RowT]:
    """A JSON-lines file as msgspec structs, one at a time (see `_decoded_blocks`)."""
    for rows in _decoded_blocks(path, decode, model, from_record, truncated):
        yield from rows


# Bytes read at a time: about a hundred lines, decoded with no Python code run per line
# (larger blocks were slower: a block's records no longer fit in the CPU caches).
BLOCK_BYTES = 1 << 16


def _decoded_blocks(
    path: Path,
    decode: Callable[[bytes], RowT],
    model: type[RecordT],
    from_record: Callable[[RecordT], RowT],
    truncated: list[TruncatedLine],
) -> Iterator[list[RowT]]:
    """A JSON-lines file as lists of msgspec structs, a block of whole lines at a time.

    Each line is decoded on its own, exactly as a line-by-line reader would (`map` runs the
    decoder over the block's lines in C; msgspec's `decode_lines` is not used because it
    reads a stream of JSON values, so it would accept two records on one line or one split
    over two). A block with a line msgspec refuses, or a blank line, is read again line by
    line (`_lines`): blank lines are skipped, and the refused line goes to pydantic, which
    names the error with file and line (or coerces the line) as it always has. A last line
    with no newline is read on its own; a torn one ends the file (appended to `truncated`)."""
    number = 0  # lines before the block
    rest = b""
    with path.open("rb") as handle:
        while block := handle.read(BLOCK_BYTES):
            if rest:
                block = rest + block
            end = block.rfind(b"\n") + 1
            rest = block[end:]
            if end == 0:
                continue
            lines = block[:end].split(b"\n")
            lines.pop()  # what follows the last newline: the next block's
            try:
                rows = list(map(decode, lines))
            except msgspec.DecodeError:
                rows = []
                for line_number, line in enumerate(lines, start=number + 1):
                    _lines(
                        path, line_number, line + b"\n", decode, model, from_record, truncated, rows
                    )
            number += len(lines)
            yield rows
    if rest:
        rows = []
        _lines(path, number + 1, rest, decode, model, from_record, truncated, rows)
        yield rows


def _lines(
    path: Path,
    number: int,
    line: bytes,
    decode: Callable[[bytes], RowT],
    model: type[RecordT],
    from_record: Callable[[RecordT], RowT],
    truncated: list[TruncatedLine],
    into: list[RowT],
) -> None:
    """One line, read as the line-by-line reader always read it: msgspec, else blank
    (skipped), else pydantic (an error naming file and line, a coerced record, or a torn
    last line appended to `truncated`)."""
    try:
        into.append(decode(line))
    except msgspec.DecodeError:
        if not line.strip():
            return
        record = _validated(path, number, line, model, truncated)
        if record is not None:
            into.append(from_record(record))


def _validated(
    path: Path, number: int, line: bytes, model: type[RecordT], truncated: list[TruncatedLine]
) -> RecordT | None:
    """One line through `model`: a bad line raises RunDirError naming file and line; a torn
    last line gives None and is appended to `truncated`."""
    try:
        return model.model_validate_json(line)
    except ValidationError as exc:
        first = exc.errors()[0]
        if first["type"] == "json_invalid":
            if not line.endswith(b"\n"):
                _truncated(path, number, len(line), truncated)
                return None
            problem = _json_problem(line, first["msg"])
            raise RunDirError(f"{path}:{number}: not valid JSON ({problem})") from exc
        where = ".".join(str(part) for part in first["loc"])
        raise RunDirError(f"{path}:{number}: field '{where}': {first['msg']}") from exc


def _json_problem(line: bytes, fallback: str) -> str:
    """The parser's message for the line without its newline: with it, a line cut inside a
    string is reported at "line 2 column 0" (the newline), which is no line of the file."""
    try:
        json.loads(line.rstrip(b"\r\n"))
    except json.JSONDecodeError as bad:
        return f"{bad.msg}: column {bad.colno}"
    except UnicodeDecodeError as bad:
        return f"not UTF-8 at byte {bad.start}"
    return fallback


def recorded_attempts(path: Path) -> dict[str, str]:
    """Each episode's recorded attempt (its last record wins, as in `load_run`)."""
    if not (path / EPISODES_FILE).is_file():
        return {}
    last: dict[str, EpisodeRow] = {}
    for record in read_episode_rows(path / EPISODES_FILE, []):
        last[record.episode] = record
    return _attempts_of(last.values())


def _attempts_of(records: Iterable[Episode]) -> dict[str, str]:
    return {r.episode: r.attempt for r in records if r.attempt is not None}


def load_journal(run: RunData, episode: str) -> JournalRow | None:
    """The episode's journal, or None when the runner could not fetch one. msgspec reads it
    (scoring.episoderows); a document it refuses goes to pydantic, as before."""
    file = run.journal_path(episode)
    if not file.is_file():
        return None
    data = file.read_bytes()
    try:
        journal = episoderows.JOURNAL_DECODER.decode(data)
    except msgspec.DecodeError:
        try:
            model = JournalRecord.model_validate_json(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "(document)"
            raise RunDirError(f"{file}: field '{where}': {first['msg']}") from exc
        journal = episoderows.journal_from_model(model)
    wanted = run.attempts.get(episode)
    if wanted is not None and journal.attempt is not None and journal.attempt != wanted:
        return None  # another attempt's journal: the recorded one never fetched its own
    return journal


def dumps_canonical(value: object) -> str:
    """A stable text form for comparing argument dicts."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
