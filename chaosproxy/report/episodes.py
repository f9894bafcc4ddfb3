"""Per-episode rows for the report: outcome, the fault timeline from calls.jsonl, and links to
the episode's journal and stdout, so every number can be traced to the episodes behind it;
for a failed episode that met faults, the schedule it received and the command shrinking it."""

from __future__ import annotations

import os
import shlex
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from chaosproxy.records import (
    EPISODE_DIR,
    EPISODES_FILE,
    JOURNAL_FILE,
    CallRecord,
    EpisodeRecord,
    read_jsonl,
)
from chaosproxy.replay.files import dump_schedule
from chaosproxy.replay.received import schedule_of
from chaosproxy.scoring.rundir import iter_calls

MAX_EPISODES = 5000
"""Beyond this many, the report lists failed and faulted episodes only (episodes.csv has all)."""


@dataclass(frozen=True)
class Step:
    """One tool call as the timeline shows it."""

    step: int
    tool: str
    status: int
    fault: str | None
    delivered: bool

    @property
    def kind(self) -> str:
        if self.fault is not None:
            return "fault" if self.delivered else "fault-held"
        return "ok" if self.status < 400 else "error"


@dataclass
class EpisodeRow:
    episode: str
    run: str
    agent: str
    task_id: str
    domain: str
    profile: str
    epsilon: float
    trial: int
    outcome: str
    success: bool | None
    duration_s: float
    steps: list[Step] = field(default_factory=list)
    links: dict[str, str] = field(default_factory=dict)
    schedule: str | None = None
    """A failed faulted episode: the schedule it received (`chaosproxy schedule --json`)."""
    shrink_command: str | None = None
    """...and the command that shrinks it."""

    @property
    def status(self) -> str:
        if self.outcome != "completed":
            return self.outcome.replace("_", " ")
        return {True: "success", False: "failure", None: "no verdict"}[self.success]

    @property
    def faults(self) -> int:
        return sum(1 for s in self.steps if s.fault is not None and s.delivered)


@dataclass
class TaskEpisodes:
    task_id: str
    domain: str
    rows: list[EpisodeRow]

    @property
    def anchor(self) -> str:
        return task_anchor(self.task_id)

    @property
    def failures(self) -> int:
        return sum(1 for r in self.rows if r.success is not True)


def task_anchor(task_id: str) -> str:
    return "task-" + quote(task_id, safe="")


def _link(target: Path, base: Path) -> str:
    return quote(Path(os.path.relpath(target, base)).as_posix())


def episode_rows(run_dir: Path, run_label: str, report_dir: Path) -> list[EpisodeRow]:
    """Every episode of one run with its timeline and links (relative to the report)."""
    records = list(read_jsonl(run_dir / EPISODES_FILE, EpisodeRecord))
    failed = {
        r.episode: r
        for r in records
        if r.success is False or r.outcome not in ("completed", "infra_error")
    }
    calls_of: dict[str, list[CallRecord]] = defaultdict(list)
    timelines: dict[str, list[Step]] = defaultdict(list)
    for call in iter_calls(run_dir):
        wanted = failed.get(call.episode)
        if wanted is not None and (
            wanted.attempt is None or call.attempt is None or call.attempt == wanted.attempt
        ):
            calls_of[call.episode].append(call)
        if call.kind != "tool_call" or call.step is None:
            continue
        timelines[call.episode].append(
            Step(
                call.step,
                call.tool or "?",
                call.status,
                call.fault.name if call.fault is not None else None,
                call.fault_delivered,
            )
        )
    rows = []
    for record in records:
        schedule = schedule_of(calls_of[record.episode]) if record.episode in failed else None
        folder = run_dir / EPISODE_DIR / record.episode
        links = {
            name: _link(folder / file, report_dir)
            for name, file in (
                ("journal", JOURNAL_FILE),
                ("stdout", "stdout.txt"),
                ("stderr", "stderr.txt"),
            )
            if (folder / file).is_file()
        }
        rows.append(
            EpisodeRow(
                episode=record.episode,
                run=run_label,
                agent=record.agent,
                task_id=record.task_id,
                domain=record.domain,
                profile=record.profile,
                epsilon=record.epsilon,
                trial=record.trial,
                outcome=record.outcome,
                success=record.success if record.outcome == "completed" else None,
                duration_s=record.duration_s,
                steps=sorted(timelines.get(record.episode, []), key=lambda s: s.step),
                links=links,
                schedule=dump_schedule(schedule) if schedule and schedule.faults else None,
                shrink_command=(
                    f"chaosproxy shrink {shlex.quote(str(run_dir))} {shlex.quote(record.episode)}"
                    if schedule and schedule.faults
                    else None
                ),
            )
        )
    return rows


def by_task(rows: list[EpisodeRow]) -> tuple[list[TaskEpisodes], int]:
    """Episodes grouped by task (sorted); beyond MAX_EPISODES only failed or faulted ones are
    kept. Returns the groups and how many episodes were left out."""
    kept = rows
    if len(rows) > MAX_EPISODES:
        kept = [r for r in rows if r.success is not True or r.faults]
        kept = kept[:MAX_EPISODES]
    groups: dict[str, TaskEpisodes] = {}
    for r in sorted(kept, key=lambda r: (r.task_id, r.agent, r.profile, r.epsilon, r.trial)):
        groups.setdefault(r.task_id, TaskEpisodes(r.task_id, r.domain, [])).rows.append(r)
    return list(groups.values()), len(rows) - len(kept)
