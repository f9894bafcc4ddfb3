"""schedules/shrunk.jsonl after a shrink or hunt killed mid-write: the next append starts
on a line of its own, so every whole record (old and new) is still read."""

from __future__ import annotations

import time
from pathlib import Path

from chaosproxy.replay.files import SHRUNK_FILE, ShrunkSchedule, append_shrunk, read_shrunk


def _row(task: str) -> ShrunkSchedule:
    return ShrunkSchedule(
        source="hunt",
        agent="retry",
        task_id=task,
        domain="travel",
        profile="lambda0.0",
        seed=7,
        schedule={"faults": []},
        started_from=1,
        runs=3,
        verdict="task failed",
        group="PartialResponse hits the 1st call",
        where="travel/hold_flight",
        created_at=time.time(),
    )


def test_append_after_a_torn_line_keeps_every_whole_record(tmp_path: Path) -> None:
    append_shrunk(tmp_path, [_row("travel-01")])
    with (tmp_path / SHRUNK_FILE).open("a", encoding="utf-8") as handle:
        handle.write('{"source": "hunt", "ag')  # killed mid-write
    append_shrunk(tmp_path, [_row("travel-02")])
    assert [row.task_id for row in read_shrunk(tmp_path)] == ["travel-01", "travel-02"]


def test_append_to_a_file_that_is_only_a_torn_line(tmp_path: Path) -> None:
    (tmp_path / SHRUNK_FILE).parent.mkdir(parents=True)
    (tmp_path / SHRUNK_FILE).write_text('{"source"', encoding="utf-8")
    append_shrunk(tmp_path, [_row("travel-03")])
    assert [row.task_id for row in read_shrunk(tmp_path)] == ["travel-03"]
