"""`chaosproxy schedule` and `chaosproxy shrink`: why did an episode fail?"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from chaosproxy import eventloop
from chaosproxy.agents.llm import ModelEndpoint
from chaosproxy.agents.registry import AgentSetup, agent_names, is_model_agent, make_agent
from chaosproxy.defaults import DEFAULT_SEED
from chaosproxy.errors import ChaosError
from chaosproxy.faults.schedule import Schedule, schedule_schema
from chaosproxy.records import EpisodeRecord
from chaosproxy.replay.emit import pytest_source
from chaosproxy.replay.files import (
    SHRUNK_FILE,
    ShrunkSchedule,
    append_shrunk,
    dump_schedule,
    schedule_document,
)
from chaosproxy.replay.hunt import (
    DEFAULT_FAULTS,
    DEFAULT_MAX_PAIRS,
    DEFAULT_WINDOW,
    Found,
    HuntResult,
    pattern,
)
from chaosproxy.replay.hunt import hunt as sweep
from chaosproxy.replay.received import ReplayError, episode_record, received
from chaosproxy.replay.rerun import Rerunner, task_episode
from chaosproxy.replay.shrink import ShrinkResult, shrink_received

if TYPE_CHECKING:
    from chaosproxy.agents.base import Agent


@click.command()
@click.argument("run_dir", required=False, type=click.Path(path_type=Path, file_okay=False))
@click.argument("episode", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print a document --schedule accepts.")
@click.option("--schema", is_flag=True, help="Print the JSON schema of a schedule file.")
def schedule(run_dir: Path | None, episode: str | None, as_json: bool, schema: bool) -> None:
    """Print the schedule of faults EPISODE of RUN_DIR actually received.

    \b
    Run it again with: chaosproxy run --schedule FILE ... (docs/schedules.md)
    """

    if schema:
        click.echo(json.dumps(schedule_schema(), indent=2))
        return
    if run_dir is None or episode is None:
        raise click.UsageError("give RUN_DIR and EPISODE (or --schema)")
    try:
        got = received(run_dir, episode)
    except ReplayError as bad:
        raise click.ClickException(str(bad)) from bad
    if as_json:
        click.echo(dump_schedule(got.schedule))
        return
    record = got.episode
    verdict = "success" if record.success else f"{record.outcome}, success={record.success}"
    click.echo(f"{episode}: {record.task_id} under {record.profile} ({verdict})")
    click.echo(f"{len(got.schedule.faults)} fault(s) received over {len(got.calls)} call(s):")
    for entry in got.schedule.faults:
        click.echo(f"  {entry.label()}")
    if record.success is not False:
        click.echo("nothing to shrink: the episode did not fail")
    elif not got.schedule.faults:
        click.echo("nothing to shrink: the episode failed without any fault")
    else:
        click.echo(f"shrink it: chaosproxy shrink {_quote(str(run_dir))} {_quote(episode)}")


def _quote(text: str) -> str:
    return shlex.quote(text)


def _target(
    run_dir: Path | None,
    episode: str | None,
    task: str | None,
    agent: str | None,
    profile: str,
    seed: int,
    transport: str,
) -> tuple[EpisodeRecord, bool]:
    """The episode to work on: EPISODE of RUN_DIR (True: it was recorded), or the task's
    episode for the agent, profile and seed (False: to be run afresh)."""
    if task is not None or agent is not None:
        if run_dir is not None or episode is not None:
            raise click.UsageError("give RUN_DIR EPISODE, or --task and --agent, not both")
        if task is None or agent is None:
            raise click.UsageError("--task and --agent go together")
        try:
            return task_episode(agent, task, profile, seed, transport), False
        except ChaosError as bad:
            raise click.ClickException(str(bad)) from bad
    if run_dir is None or episode is None:
        raise click.UsageError("give RUN_DIR and EPISODE (or --task T --agent A)")
    if not run_dir.is_dir():
        raise click.UsageError(f"RUN_DIR {run_dir} is not a directory")
    try:
        return episode_record(run_dir, episode), True
    except ReplayError as bad:
        raise click.ClickException(str(bad)) from bad


def _target_options(default_profile: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """RUN_DIR EPISODE, or --task/--agent/--profile/--seed/--transport; --base-url and --model
    for a model-driven agent; and --out."""

    def wrap(command: Callable[..., None]) -> Callable[..., None]:
        for option in reversed(
            [
                click.argument(
                    "run_dir", required=False, type=click.Path(path_type=Path, file_okay=False)
                ),
                click.argument("episode", required=False),
                click.option("--task", help="Instead of RUN_DIR EPISODE: this built-in task..."),
                click.option("--agent", help="...run by this built-in agent..."),
                click.option(
                    "--profile",
                    default=default_profile,
                    show_default=True,
                    help="...under this profile (with --task)...",
                ),
                click.option(
                    "--seed",
                    default=DEFAULT_SEED,
                    show_default=True,
                    type=int,
                    help="...and seed (with --task).",
                ),
                click.option(
                    "--transport",
                    type=click.Choice(["rest", "mcp"]),
                    default="rest",
                    show_default=True,
                    help="With --task: the agent's transport.",
                ),
                click.option(
                    "--base-url",
                    help="The model endpoint of a model-driven agent (e.g. mock-model).",
                ),
                click.option("--model", help="With --task and a model-driven agent: its model."),
                click.option(
                    "--out",
                    type=click.Path(path_type=Path, file_okay=False),
                    help=f"Record the minimal schedules in OUT/{SHRUNK_FILE} "
                    "(default: RUN_DIR's; the report lists them).",
                ),
            ]
        ):
            command = option(command)
        return command

    return wrap


def _record_into(run_dir: Path | None, out: Path | None, rows: list[ShrunkSchedule]) -> None:
    where = out or run_dir
    if where is None or not rows:
        if rows:
            click.echo(f"not recorded (give --out DIR to keep them in DIR/{SHRUNK_FILE})", err=True)
        return
    click.echo(f"recorded in {append_shrunk(where, rows)}", err=True)


def _row(
    source: str,
    record: EpisodeRecord,
    recorded: bool,
    schedule: Schedule,
    started_from: int,
    runs: int,
    budget_spent: bool,
    verdict: str,
) -> ShrunkSchedule:
    group, where = pattern(schedule)
    return ShrunkSchedule(
        source="hunt" if source == "hunt" else "shrink",
        agent=record.agent,
        task_id=record.task_id,
        domain=record.domain,
        profile=record.profile,
        seed=record.seed,
        episode=record.episode if recorded else None,
        schedule=schedule_document(schedule),
        started_from=started_from,
        runs=runs,
        budget_spent=budget_spent,
        verdict=verdict,
        group=group,
        where=where,
        created_at=time.time(),
    )


@click.command()
@_target_options("lambda0.3")
@click.option(
    "--trials",
    default=1,
    show_default=True,
    type=click.IntRange(1, 100),
    help="Runs per candidate schedule (for agents that are not deterministic).",
)
@click.option(
    "--share",
    default=0.5,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True),
    help="With --trials: a candidate fails if the agent fails in this share of runs.",
)
@click.option(
    "--budget", default=60, show_default=True, type=click.IntRange(1), help="Episode runs at most."
)
@click.option(
    "--timeout",
    "timeout_s",
    default=30.0,
    show_default=True,
    type=float,
    help="Seconds per episode run.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the minimal schedule as JSON.")
@click.option(
    "--emit-pytest",
    "emit",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write a pytest regression test that replays the minimal schedule.",
)
def shrink(
    run_dir: Path | None,
    episode: str | None,
    task: str | None,
    agent: str | None,
    profile: str,
    seed: int,
    transport: str,
    out: Path | None,
    trials: int,
    share: float,
    budget: int,
    timeout_s: float,
    base_url: str | None,
    model: str | None,
    as_json: bool,
    emit: Path | None,
) -> None:
    """Find the smallest fault schedule that still makes EPISODE fail (delta debugging).

    Re-runs the episode in-process (same agent, task, seed) for each candidate. With
    --task T --agent A [--profile P --seed S] instead of RUN_DIR EPISODE, the task's
    episode is run once under the profile, and the schedule it received is shrunk.
    """

    record, recorded = _target(run_dir, episode, task, agent, profile, seed, transport)
    if model is not None:
        record = record.model_copy(update={"model": model})
    try:
        runner = _agent(record.agent, record.model, base_url)
    except ValueError as bad:
        raise click.ClickException(str(bad)) from bad
    start = received(run_dir, record.episode).schedule if recorded and run_dir else None
    started = time.monotonic()
    try:
        begun, result = eventloop.run(
            shrink_received(
                record,
                start,
                agent=runner,
                trials=trials,
                share=share,
                budget=budget,
                report=lambda line: click.echo(line, err=True),
                timeout_s=timeout_s,
            )
        )
    except ChaosError as bad:
        raise click.ClickException(str(bad)) from bad
    elapsed = time.monotonic() - started
    if not result.reproduced and not result.budget_spent:
        if not recorded:
            raise click.ClickException(
                f"{record.episode} did not fail under {profile} (seed {seed}, "
                f"{len(begun.faults)} fault(s)): nothing to shrink; try another --seed "
                "or a profile with more faults"
            )
        raise click.ClickException(
            f"{record.episode} does not fail when its received schedule is replayed "
            f"({len(begun.faults)} faults, {result.runs} run(s)): nothing to shrink"
        )
    verdict = result.failure.verdict() if result.failure is not None else "failed"
    _record_into(
        run_dir if recorded else None,
        out,
        [
            _row(
                "shrink",
                record,
                recorded,
                result.minimal,
                len(begun.faults),
                result.runs + (0 if recorded else 1),
                result.budget_spent,
                verdict,
            )
        ],
    )
    if emit is not None:
        emit.write_text(
            pytest_source(record, result.minimal, str(run_dir or "a fresh run"), result.runs)
        )
        click.echo(f"wrote {emit}", err=True)
    if as_json:
        click.echo(dump_schedule(result.minimal))
        return
    _print_shrunk(result, len(begun.faults), result.runs + (0 if recorded else 1), elapsed)


def _print_shrunk(result: ShrinkResult, started_from: int, runs: int, elapsed: float) -> None:
    click.echo(
        f"minimal failing schedule: {len(result.minimal.faults)} of "
        f"{started_from} fault(s), {runs} run(s), {elapsed:.1f} s"
        + (" (budget spent: may not be minimal)" if result.budget_spent else "")
    )
    for entry in result.minimal.faults:
        click.echo(f"  {entry.label()}")
    if result.failure is not None:
        click.echo(f"failure kept: {result.failure.verdict()}")
    first = result.divergence()
    if first is not None:
        fault = first.fault.name if first.fault else "no fault"
        click.echo(
            f"first divergent call: step {first.step} {first.domain}/{first.tool} "
            f"-> {first.status} ({fault})"
        )
    sys.stdout.flush()


def _agent(name: str, model: str | None, base_url: str | None) -> Agent:
    """The episode's agent: a scripted one by name, a model-driven one with its model at
    `base_url`."""

    base = name.split(".", 1)[0]
    if base not in agent_names():
        raise ValueError(
            f"agent {name!r} is not a built-in agent (shrink and hunt re-run built-in agents: "
            f"{', '.join(agent_names())})"
        )
    if is_model_agent(base):
        if model is None:
            raise ValueError(f"episode of {name!r} records no model (give --model)")
        return make_agent(base, AgentSetup(endpoint=ModelEndpoint(model, base_url), label=name))
    return make_agent(base)


@click.command()
@_target_options("lambda0.0")
@click.option(
    "--fault",
    "faults",
    multiple=True,
    help="A fault to sweep (repeatable; default: one of each per-call family).",
)
@click.option(
    "--params",
    "params_json",
    help='Parameters per fault, as JSON: \'{"PartialResponse": {"modes": ["truncate"]}}\'.',
)
@click.option(
    "--budget", default=200, show_default=True, type=click.IntRange(1), help="Episode runs at most."
)
@click.option(
    "--pairs/--no-pairs", default=True, show_default=True, help="After singles, sweep pairs."
)
@click.option(
    "--window",
    default=DEFAULT_WINDOW,
    show_default=True,
    type=click.IntRange(1),
    help="Pairs: the second fault at most this many tool calls after the first.",
)
@click.option(
    "--max-pairs",
    default=DEFAULT_MAX_PAIRS,
    show_default=True,
    type=click.IntRange(0),
    help="Pairs: at most this many runs.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
def hunt(
    run_dir: Path | None,
    episode: str | None,
    task: str | None,
    agent: str | None,
    profile: str,
    seed: int,
    transport: str,
    out: Path | None,
    faults: tuple[str, ...],
    params_json: str | None,
    budget: int,
    pairs: bool,
    window: int,
    max_pairs: int,
    base_url: str | None,
    model: str | None,
    as_json: bool,
) -> None:
    """Sweep faults over the calls of an episode's task: each fault alone at each call,
    then pairs; shrink the failing schedules and list them grouped.

    The episode's agent, task and seed (RUN_DIR EPISODE), or --task T --agent A.
    """

    record, recorded = _target(run_dir, episode, task, agent, profile, seed, transport)
    if model is not None:
        record = record.model_copy(update={"model": model})
    try:
        runner = _agent(record.agent, record.model, base_url)
        params = json.loads(params_json) if params_json else {}
        if not isinstance(params, dict):
            raise ValueError("--params: a JSON object of fault name -> parameters")
    except ValueError as bad:
        raise click.ClickException(str(bad)) from bad

    async def go() -> HuntResult:
        async with Rerunner(record, agent=runner) as rerunner:
            return await sweep(
                rerunner,
                list(faults) or list(DEFAULT_FAULTS),
                budget,
                lambda line: click.echo(line, err=True),
                pairs=pairs,
                window=window,
                max_pairs=max_pairs,
                params=params,
            )

    try:
        result = eventloop.run(go())
    except ValueError as bad:
        raise click.ClickException(str(bad)) from bad

    rows = [
        _row(
            "hunt",
            record,
            recorded,
            item.minimal,
            len(item.schedule.faults),
            item.shrink_runs,
            item.budget_spent,
            item.verdict,
        )
        for item in _distinct(result)
    ]
    _record_into(run_dir if recorded else None, out, rows)
    if as_json:
        click.echo(json.dumps(hunt_document(record, result), indent=2))
        return
    click.echo(
        f"{result.singles} single-fault and {result.pairs} pair run(s) "
        f"(of {result.pair_candidates} pairs within {window} call(s)), {result.runs} run(s) "
        f"in all; {len(result.minimal())} minimal failing schedule(s)"
        + (" (budget spent)" if result.budget_spent else "")
    )
    for group in result.groups():
        click.echo(f"  {group.label()}")
        for schedule in group.schedules:
            click.echo("    " + "; ".join(entry.label() for entry in schedule.faults))
    if result.missed:
        click.echo(f"  {len(result.missed)} could not land (e.g. {result.missed[0].label()})")


def _distinct(result: HuntResult) -> list[Found]:
    seen: set[str] = set()
    out: list[Found] = []
    for item in result.found:
        key = dump_schedule(item.minimal)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def hunt_document(record: EpisodeRecord, result: HuntResult) -> dict[str, object]:
    """`hunt --json`: what was swept, and the minimal failing schedules by group."""
    return {
        "agent": record.agent,
        "task": record.task_id,
        "profile": record.profile,
        "seed": record.seed,
        "fault_free": result.baseline.verdict(),
        "tool_calls": [{"tool": tool, "call": n} for tool, n in result.positions],
        "singles": result.singles,
        "pairs": result.pairs,
        "pair_candidates": result.pair_candidates,
        "runs": result.runs,
        "budget_spent": result.budget_spent,
        "groups": [
            {
                "pattern": group.key,
                "where": group.where,
                "schedules": [schedule_document(s) for s in group.schedules],
            }
            for group in result.groups()
        ],
        "found": [
            {
                "schedule": schedule_document(item.schedule),
                "minimal": schedule_document(item.minimal),
                "verdict": item.verdict,
                "shrink_runs": item.shrink_runs,
            }
            for item in result.found
        ],
        "missed": [
            {"tool": entry.tool, "call": entry.call, "fault": entry.fault}
            for entry in result.missed
        ],
    }
