"""Schedule files: JSON or YAML in, JSON out; and the minimal failing schedules that
shrink and hunt record in a run directory (`schedules/shrunk.jsonl`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import yaml

from chaosproxy.faults.schedule import Schedule, ScheduleError, parse_schedule
from chaosproxy.records import Record, append_jsonl, read_jsonl


def load_schedule(path: Path) -> Schedule:
    """A schedule file (JSON or YAML), or ScheduleError naming the file and field."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as bad:
        raise ScheduleError(f"{path}: cannot read ({bad.strerror})") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as bad:
        raise ScheduleError(f"{path}: not valid JSON/YAML ({bad})") from None
    return parse_schedule(data, str(path))


def dump_schedule(schedule: Schedule) -> str:
    """The JSON document `--schedule` accepts (defaults left out, so it reads short)."""
    return json.dumps(schedule_document(schedule), indent=2, ensure_ascii=False)


SHRUNK_FILE = "schedules/shrunk.jsonl"
"""In a run directory: the minimal failing schedules `shrink` and `hunt` found, one line
each (appended; the report lists them, grouped)."""


class ShrunkSchedule(Record):
    """One minimal failing schedule, where it came from, and how to see it again."""

    source: Literal["shrink", "hunt"]
    agent: str
    task_id: str
    domain: str
    profile: str
    seed: int
    episode: str | None = None
    """The episode shrunk, or hunted from (None: a task's episode run afresh)."""
    schedule: dict[str, Any]
    """The document `--schedule` accepts."""
    started_from: int
    """Faults of the schedule shrinking started from."""
    runs: int
    budget_spent: bool = False
    verdict: str
    """The failure kept (the verifier's verdict, an agent crash...)."""
    group: str
    """Its pattern ("SoftRateLimit hits the 2nd call"): lines of one group list together."""
    where: str
    """The tools of that pattern."""
    created_at: float


def append_shrunk(run_dir: Path, rows: Iterable[ShrunkSchedule]) -> Path:
    path = run_dir / SHRUNK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    for row in rows:
        append_jsonl(path, row)
    return path


def read_shrunk(run_dir: Path) -> list[ShrunkSchedule]:
    """The minimal failing schedules recorded in `run_dir` (none: an empty list)."""
    path = run_dir / SHRUNK_FILE
    return list(read_jsonl(path, ShrunkSchedule)) if path.is_file() else []


def schedule_document(schedule: Schedule) -> dict[str, Any]:
    """The schedule as the JSON document `--schedule` accepts."""
    document: dict[str, Any] = schedule.model_dump(mode="json", exclude_defaults=True)
    return document or {"faults": []}
