"""Schedule files: JSON or YAML in, JSON out."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from chaosproxy.faults.schedule import Schedule, ScheduleError, parse_schedule


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
    return json.dumps(
        schedule.model_dump(mode="json", exclude_defaults=True) or {"faults": []},
        indent=2,
        ensure_ascii=False,
    )
