"""`chaosproxy tasks`: the tasks an agent can be graded on (ids, texts, domains, l_min)."""

from __future__ import annotations

import json

import click
from rich.padding import Padding
from rich.text import Text

from chaosproxy.report.fmt import terminal_width, to_text
from chaosproxy.runner.grid import GridError, select_tasks


@click.command()
@click.option(
    "--suite", default="all", show_default=True, help="reliabilitybench | hb-eval | agentprop | all"
)
@click.option("--domain", "domains", multiple=True, help="Only this domain (repeatable).")
@click.option("--tasks", "patterns", multiple=True, help="Only task ids matching this glob.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one object per task).")
def tasks(suite: str, domains: tuple[str, ...], patterns: tuple[str, ...], as_json: bool) -> None:
    """List task ids, their text, domain, difficulty and l_min (the fewest tool calls that
    solve it). A task id is what `run --tasks`, `up`'s episode `task` and the pytest plugin
    take."""
    try:
        selected = select_tasks(suite, domains, patterns)
    except GridError as error:
        raise click.UsageError(str(error)) from None
    if as_json:
        click.echo(json.dumps([task.metadata() for task in selected], indent=2))
        return
    # One block per task (id line, then its text indented): task texts are long, and a
    # table of them would leave the text a sliver at 80 columns.
    blocks = [
        Padding(Text(task.description), (0, 0, 0, 4))
        if index % 2
        else Text(f"{task.id}  ({task.domain}, {task.difficulty}, l_min {task.l_min})", "bold")
        for task in selected
        for index in range(2)
    ]
    click.echo(to_text(*blocks, Text(f"{len(selected)} tasks"), width=terminal_width()))
