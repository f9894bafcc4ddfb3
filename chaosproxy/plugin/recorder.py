"""The plugin's run directory: the same files `chaosproxy run` writes, so `chaosproxy score`
and `chaosproxy report` read it unchanged.

Several pytest-xdist workers write into one directory at once. Each episode record and
each proxied call is one line appended with a single write(2) on a file opened with
O_APPEND (records.append_jsonl, proxy/calllog.py), which the kernel never interleaves;
episode directories are private to their episode. config.json and tasks.jsonl are
replaced whole (write a temporary file, then rename), by one process at a time: the
first environment to start writes a provisional config, and the controller (the xdist
controller, or the only process) writes the final one at the end of the session.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import time
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from chaosproxy.api.errors import OracleError
from chaosproxy.api.verdict import find_task, judge, non_idempotent_tools
from chaosproxy.plugin.settings import ChaosSettings, Variant, slug
from chaosproxy.records import (
    CONFIG_FILE,
    EPISODE_DIR,
    EPISODES_FILE,
    JOURNAL_FILE,
    TASKS_FILE,
    EpisodeOutcome,
    EpisodeRecord,
    RunConfig,
    TaskMeta,
    append_jsonl,
)
from chaosproxy.types import Transport

if TYPE_CHECKING:
    from chaosproxy.api import Episode


class WorkerReport(BaseModel):
    """What an xdist worker tells the controller at its end (through xdist's workeroutput)."""

    tasks: dict[str, dict[str, Any]]
    trials: dict[str, int]
    profiles: dict[str, dict[str, Any]]
    domains: list[str]
    episodes: int = 0


def episode_key(unit: str, variant: Variant) -> str:
    """What fault draws hash: the test, the profile and the trial, nothing else."""
    return f"{unit}~{variant.profile_name}~t{variant.trial}"


def episode_id(unit: str, variant: Variant) -> str:
    """Readable and unique in the run: test name, profile, trial, and a hash of the key."""
    digest = hashlib.sha256(episode_key(unit, variant).encode()).hexdigest()[:8]
    name = slug(unit.rpartition("::")[2] or unit, 60)
    return f"{name}~{slug(variant.profile_name, 40)}~t{variant.trial}~{digest}"


def write_whole(path: Path, text: str) -> None:
    """Replace a file atomically: readers see the old or the new text, never half."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("chaosproxy", "pytest", "pytest-xdist", "fastmcp", "aiohttp"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[package] = metadata.version(package)
    return out


def run_config(
    settings: ChaosSettings,
    domains: list[str],
    profiles: dict[str, dict[str, object]],
    trials: int,
    workers: int,
    episodes: int = 0,
    command: list[str] | None = None,
) -> RunConfig:
    """config.json of a pytest session. Each test has its own profiles and trials, so the
    grid is no product: `episodes_planned` counts the chaos episodes the tests started."""
    return RunConfig(
        kind="run",
        seed=settings.seed,
        created_at=time.time(),
        versions=versions(),
        profiles=dict(sorted(profiles.items())),
        agent=settings.agent,
        suite="pytest",
        domains=domains,
        epsilons=[0.0],
        trials=trials,
        command=command or [],
        settings={
            "source": "pytest",
            "episodes_planned": episodes,
            "profile_names": settings.profiles,
            "default_trials": settings.trials,
            "upstreams": settings.upstreams,
            "min_pass_k": settings.min_pass_k,
            "xdist_workers": workers,
        },
    )


def write_config(run_dir: Path, config: RunConfig) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    write_whole(run_dir / CONFIG_FILE, config.model_dump_json(indent=2) + "\n")


def write_tasks(run_dir: Path, tasks: Iterable[TaskMeta]) -> None:
    lines = "".join(task.model_dump_json() + "\n" for task in sorted(tasks, key=lambda t: t.id))
    write_whole(run_dir / TASKS_FILE, lines)


def task_meta(unit: str, description: str, variant: Variant) -> TaskMeta:
    """A test as the scorer sees a task. With a built-in task its metadata is kept (l_min,
    tags...); a plain test has l_min 0, which the scorer reads as "unknown" (no PEI)."""
    if variant.task is not None:
        data = find_task(variant.task).metadata()
        data.update(id=unit, builtin_task=variant.task)
        return TaskMeta.model_validate(data)
    return TaskMeta(
        id=unit, domain="-", description=description, l_min=0, difficulty="unknown", tags=[]
    )


def record_episode(
    run_dir: Path,
    episode: Episode,
    *,
    unit: str,
    nodeid: str,
    variant: Variant,
    settings: ChaosSettings,
    builtin_domains: list[str],
    outcome: EpisodeOutcome,
    success: bool | None,
    started_at: float,
    task_text: str,
    error: str | None,
) -> EpisodeRecord:
    """Save the journal (when one domain holds the episode's state) and append the record.

    `t_success`: with a built-in task, the first step after which its verifier held; for a
    plain test that passed, the last tool-call step (the test's own check held at the end,
    and nothing says it held earlier), so FRR is conservative rather than missing."""
    calls = episode.calls()
    touched = sorted({call.domain for call in calls})
    reached = sorted({c.domain for c in calls if c.upstream_called and c.kind == "tool_call"})
    journal_domain = episode.domain or (
        reached[0] if len(reached) == 1 and reached[0] in builtin_domains else None
    )
    t_success: int | None = None
    escalated = False
    verdict_fields: dict[str, object] = {}
    journal = None
    if journal_domain is not None and outcome != "infra_error":
        try:
            journal = episode.journal(journal_domain)
        except OracleError:
            if variant.task is not None:
                raise  # its domain was reset at the start: the oracle must know it
    if journal_domain is not None and journal is not None:
        folder = run_dir / EPISODE_DIR / episode.id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / JOURNAL_FILE).write_text(journal.model_dump_json(indent=1), encoding="utf-8")
        verdict_fields["non_idempotent_tools"] = non_idempotent_tools(journal_domain)
        if variant.task is not None:
            verdict = judge(find_task(variant.task), journal)
            escalated = verdict.escalated
            t_success = verdict.t_success if success else None
            verdict_fields["goal_held_initially"] = verdict.held_initially
            verdict_fields["goal_checks"] = verdict.checks
    steps = [call.step for call in calls if call.step is not None]
    if success and variant.task is None and steps:
        t_success = max(steps)
    transport: Transport = "mcp" if any(call.transport == "mcp" for call in calls) else "rest"
    record = EpisodeRecord(
        episode=episode.id,
        episode_key=episode.key,
        task_id=unit,
        domain=episode.domain or ("+".join(touched) if touched else "-"),
        epsilon=0.0,
        profile=variant.profile_name,
        trial=variant.trial,
        agent=settings.agent,
        transport=transport,
        seed=settings.seed,
        outcome=outcome,
        success=success,
        t_success=t_success,
        escalated=escalated,
        started_at=started_at,
        duration_s=round(time.time() - started_at, 4),
        task_text=task_text,
        error=error,
        nodeid=nodeid,
        builtin_task=variant.task,
        **verdict_fields,
    )
    append_jsonl(run_dir / EPISODES_FILE, record)
    return record
