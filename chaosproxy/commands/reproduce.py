"""`chaosproxy reproduce PAPER`: run a paper's design and print its tables."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path

import click

from chaosproxy import eventloop
from chaosproxy.commands.run import _parse_prices
from chaosproxy.defaults import DEFAULT_SEED
from chaosproxy.papers.common import delivery
from chaosproxy.papers.designs import DESIGNS, task_subset
from chaosproxy.papers.table import print_tables, write_tables
from chaosproxy.records import RunDirError
from chaosproxy.runner.grid import GridError
from chaosproxy.runner.run import RunError
from chaosproxy.scoring import score_runs, write_outputs


@contextlib.asynccontextmanager
async def _mock_model() -> AsyncIterator[str]:
    """The deterministic mock model on a free 127.0.0.1 port, for the offline default."""
    from aiohttp import web

    from chaosproxy.mockmodel.server import mock_app

    runner = web.AppRunner(mock_app(), access_log=None)
    await runner.setup()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    await web.SockSite(runner, sock).start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        await runner.cleanup()


async def _run(spec_kwargs: dict[str, object], need_mock: bool) -> object:
    from chaosproxy.runner.run import RunSpec, execute

    if need_mock:
        async with _mock_model() as url:
            return await execute(RunSpec(**spec_kwargs, base_url=url))  # type: ignore[arg-type]
    return await execute(RunSpec(**spec_kwargs))  # type: ignore[arg-type]


@click.command()
@click.argument("paper", type=click.Choice(["reliabilitybench", "hb-eval", "agentprop"]))
@click.option(
    "--agent", "agents", multiple=True, help="Agents (repeatable). [default: the paper's]"
)
@click.option(
    "--model",
    "models",
    multiple=True,
    help="Models for the model-driven agents (repeatable). [default: mock, served offline]",
)
@click.option("--base-url", help="OpenAI-compatible endpoint for --model (…/v1).")
@click.option("--price", "prices", multiple=True, help="MODEL=IN/OUT, US$ per million tokens.")
@click.option(
    "--trials", type=click.IntRange(1, 100), help="Trials per cell. [default: the paper's]"
)
@click.option(
    "--tasks-per-domain",
    type=click.IntRange(0),
    help="First N tasks of each domain (0: all). [default: 5 for reliabilitybench, else all]",
)
@click.option("--seed", default=DEFAULT_SEED, show_default=True, type=int)
@click.option("--concurrency", default=16, show_default=True, type=click.IntRange(1, 256))
@click.option("--transport", type=click.Choice(["rest", "mcp"]), default="rest", show_default=True)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory. [default: runs/PAPER-<time>]",
)
@click.option(
    "--from",
    "from_run",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="Print the tables of an existing run directory instead of running.",
)
def reproduce(
    paper: str,
    agents: tuple[str, ...],
    models: tuple[str, ...],
    base_url: str | None,
    prices: tuple[str, ...],
    trials: int | None,
    tasks_per_domain: int | None,
    seed: int,
    concurrency: int,
    transport: str,
    out: Path | None,
    from_run: Path | None,
) -> None:
    """Run PAPER's experimental design in one run directory and print its tables.

    \b
    Offline by default: the paper's agent architectures over the mock model
    (`chaosproxy mock-model`, started here), or scripted agents. The tables are also
    written as Markdown (RUN_DIR/paper/PAPER.md) and CSV (RUN_DIR/paper/PAPER-*.csv).

    \b
    Examples:
      chaosproxy reproduce reliabilitybench
      chaosproxy reproduce hb-eval --model gpt-4o-mini --base-url https://…/v1
      chaosproxy reproduce agentprop --from runs/agentprop-20261124-010000
    """

    design = DESIGNS[paper]
    run_dir = from_run
    if run_dir is None:
        chosen_models = list(dict.fromkeys(models)) or ["mock"]
        from chaosproxy.agents.registry import agent_names, is_model_agent
        from chaosproxy.mockmodel.server import MOCK_MODELS

        chosen_agents = list(dict.fromkeys(agents)) or [
            a for a in design.agents if a in agent_names()
        ]
        skipped = [a for a in design.agents if a not in agent_names()] if not agents else []
        if skipped:
            click.echo(f"not available in this install, left out: {', '.join(skipped)}", err=True)
        uses_model = any(is_model_agent(a) for a in chosen_agents)
        need_mock = uses_model and base_url is None
        if need_mock and any(m not in MOCK_MODELS for m in chosen_models):
            raise click.UsageError(
                f"--model {', '.join(chosen_models)} needs --base-url (offline, the mock models "
                f"are {', '.join(MOCK_MODELS)})"
            )
        per_domain = design.tasks_per_domain if tasks_per_domain is None else tasks_per_domain
        tasks = task_subset(design.suite, per_domain)
        blocks = design.build(
            chosen_agents, chosen_models if uses_model else [], tasks, trials or design.trials
        )
        run_dir = out or Path("runs") / f"{paper}-{time.strftime('%Y%m%d-%H%M%S')}"
        spec = {
            "agents": chosen_agents,
            "suite": design.suite,
            "profiles": [],
            "epsilons": [],
            "trials": 1,
            "out": run_dir,
            "seed": seed,
            "concurrency": concurrency,
            "transport": "mcp" if transport == "mcp" else "rest",
            "prices": _parse_prices(prices),
            "blocks": blocks,
        }
        if not need_mock:
            spec["base_url"] = base_url
        if design.model_via_proxy and uses_model:
            spec["model_via_proxy"] = True
        started = time.monotonic()
        try:
            summary = eventloop.run(_run(spec, need_mock))
        except (RunError, GridError) as problem:
            raise click.ClickException(str(problem)) from problem
        click.echo(
            f"{paper}: {getattr(summary, 'recorded', 0)}/{getattr(summary, 'total', 0)} episodes "
            f"in {run_dir} ({time.monotonic() - started:.0f} s)"
        )
    try:
        scored = score_runs([run_dir])
    except RunDirError as bad:
        raise click.ClickException(str(bad)) from bad
    if from_run is None:
        write_outputs(scored, run_dir)
    tables = [*design.tables(scored), delivery(scored)]
    if any(s.record.mock_model for s in scored.episodes):
        label = (
            "Model-driven agents here talked to chaosproxy's mock model (a deterministic "
            "player of reference solutions), not an LLM: these numbers test the pipeline, "
            "not a model."
        )
        click.echo(label)
        for table in tables:
            table.notes.append(label)
    click.echo(f"\n{design.paper}: tables from {run_dir}\n")
    print_tables(tables)
    written = write_tables(tables, run_dir / "paper", paper)
    click.echo(f"wrote {written[0]} and {len(written) - 1} CSV files")
