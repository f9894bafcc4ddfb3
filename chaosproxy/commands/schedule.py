"""`chaosproxy schedule` and `chaosproxy shrink`: why did an episode fail?"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from chaosproxy import eventloop
from chaosproxy.agents.llm import ModelEndpoint
from chaosproxy.agents.registry import AgentSetup, agent_names, is_model_agent, make_agent
from chaosproxy.faults.schedule import schedule_schema
from chaosproxy.replay.emit import pytest_source
from chaosproxy.replay.files import dump_schedule
from chaosproxy.replay.hunt import DEFAULT_FAULTS, HuntResult
from chaosproxy.replay.hunt import hunt as sweep
from chaosproxy.replay.received import ReplayError, episode_record, received
from chaosproxy.replay.rerun import Rerunner
from chaosproxy.replay.shrink import shrink_episode

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


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.argument("episode")
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
@click.option("--base-url", help="The model endpoint of a model-driven agent (e.g. mock-model).")
@click.option("--json", "as_json", is_flag=True, help="Print the minimal schedule as JSON.")
@click.option(
    "--emit-pytest",
    "emit",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write a pytest regression test that replays the minimal schedule.",
)
def shrink(
    run_dir: Path,
    episode: str,
    trials: int,
    share: float,
    budget: int,
    timeout_s: float,
    base_url: str | None,
    as_json: bool,
    emit: Path | None,
) -> None:
    """Find the smallest fault schedule that still makes EPISODE fail (delta debugging).

    Re-runs the episode in-process (same agent, task, seed) for each candidate.
    """

    try:
        record = episode_record(run_dir, episode)
        agent = _agent(record.agent, record.model, base_url)
    except (ReplayError, ValueError) as bad:
        raise click.ClickException(str(bad)) from bad
    started = time.monotonic()
    result = eventloop.run(
        shrink_episode(
            run_dir,
            episode,
            agent=agent,
            trials=trials,
            share=share,
            budget=budget,
            report=lambda line: click.echo(line, err=True),
            timeout_s=timeout_s,
        )
    )
    elapsed = time.monotonic() - started
    if not result.reproduced and not result.budget_spent:
        raise click.ClickException(
            f"{episode} does not fail when its received schedule is replayed "
            f"({len(result.start.faults)} faults, {result.runs} run(s)): nothing to shrink"
        )
    if emit is not None:
        emit.write_text(pytest_source(record, result.minimal, str(run_dir), result.runs))
        click.echo(f"wrote {emit}", err=True)
    if as_json:
        click.echo(dump_schedule(result.minimal))
        return
    click.echo(
        f"minimal failing schedule: {len(result.minimal.faults)} of "
        f"{len(result.start.faults)} fault(s), {result.runs} run(s), {elapsed:.1f} s"
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
        raise ValueError(f"agent {name!r} is not a built-in agent; shrink re-runs built-in agents")
    if is_model_agent(base):
        if model is None:
            raise ValueError(f"episode of {name!r} records no model")
        return make_agent(base, AgentSetup(endpoint=ModelEndpoint(model, base_url), label=name))
    return make_agent(base)


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.argument("episode")
@click.option(
    "--fault",
    "faults",
    multiple=True,
    help="A fault to sweep (repeatable; default: one of each per-call family).",
)
@click.option(
    "--budget", default=200, show_default=True, type=click.IntRange(1), help="Episode runs at most."
)
@click.option("--base-url", help="The model endpoint of a model-driven agent.")
def hunt(
    run_dir: Path, episode: str, faults: tuple[str, ...], budget: int, base_url: str | None
) -> None:
    """Sweep single faults over every tool call of EPISODE's task; list those that fail.

    The episode's agent, task and seed; each fault alone at each call position.
    """

    try:
        record = episode_record(run_dir, episode)
        agent = _agent(record.agent, record.model, base_url)
    except (ReplayError, ValueError) as bad:
        raise click.ClickException(str(bad)) from bad

    async def go() -> object:
        async with Rerunner(record, agent=agent) as rerunner:
            return await sweep(
                rerunner,
                list(faults) or list(DEFAULT_FAULTS),
                budget,
                lambda line: click.echo(line, err=True),
            )

    try:
        result = eventloop.run(go())
    except ValueError as bad:
        raise click.ClickException(str(bad)) from bad

    assert isinstance(result, HuntResult)
    click.echo(f"{result.tried} single-fault run(s); {len(result.failing)} fail")
    for name, where in result.grouped().items():
        click.echo(f"  fails when {name} hits {', '.join(where)}")
    if result.missed:
        click.echo(f"  {len(result.missed)} could not land (e.g. {result.missed[0].label()})")
