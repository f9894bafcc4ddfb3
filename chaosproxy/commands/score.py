"""`chaosproxy score RUN_DIR [RUN_DIR2]`: compute every metric, write results.json and
episodes.csv into each run directory, print the summary."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import click

from chaosproxy.records import RunDirError
from chaosproxy.scoring.gate import (
    GateError,
    Threshold,
    check,
    parse_threshold,
    regressions,
)
from chaosproxy.scoring.results import Results


def score_and_print(
    run_dirs: Sequence[Path],
    json_out: IO[str] | None = None,
    quiet: bool = False,
    brief: bool = False,
) -> Results:
    """Score each run into its own directory, print the (combined) summary; RunDirError
    propagates with the file and line at fault."""
    from rich.console import Console

    from chaosproxy.report.fmt import terminal_width
    from chaosproxy.report.table import summary_parts
    from chaosproxy.scoring import score_runs, write_outputs
    from chaosproxy.scoring.delivery import RATES_NOTE, rates_lines

    singles = [score_runs([run_dir]) for run_dir in run_dirs]
    for scored, run_dir in zip(singles, run_dirs, strict=True):
        write_outputs(scored, run_dir)
    combined = singles[0] if len(run_dirs) == 1 else score_runs(list(run_dirs))
    if json_out is not None:
        json_out.write(combined.results.model_dump_json(indent=2) + "\n")
    if not quiet:
        console = Console(width=terminal_width(), highlight=False, soft_wrap=False)
        for part in summary_parts(combined.results, brief=brief):
            console.print(part)
        if brief:
            return combined.results
        rates = rates_lines(combined.results)
        if rates:
            # wrapped to the terminal (the tables above keep within it too)
            width = max(40, terminal_width())
            click.echo("\nFault rates and mix (fresh, affected, delivered shares vs weights)")
            for line in [*rates, f"({RATES_NOTE})"]:
                click.echo(textwrap.fill(line, width, initial_indent="  ", subsequent_indent="  "))
        for run_dir in run_dirs:
            click.echo(f"wrote {run_dir / 'results.json'} and {run_dir / 'episodes.csv'}")
    return combined.results


def parse_gates(texts: Sequence[str]) -> list[Threshold]:
    """--fail-under values, or a usage error naming the bad one."""
    try:
        return [parse_threshold(text) for text in texts]
    except GateError as error:
        raise click.BadParameter(str(error), param_hint="--fail-under") from None


def enforce_gates(
    results: Results, thresholds: Sequence[Threshold], fail_on_regression: bool
) -> None:
    """Exit 1, saying why, when a threshold is missed or (with two runs) a metric regressed."""
    failures = check(results, thresholds) if thresholds else []
    regressed = regressions(results) if (fail_on_regression or thresholds) else []
    for failure in failures:
        shown = "n/a (not measurable)" if failure.value is None else f"{failure.value:.3f}"
        click.echo(
            f"FAIL {failure.metric} of {failure.agent} @ {failure.profile}: {shown} "
            f"< {failure.minimum:g}",
            err=True,
        )
    for item in regressed:
        click.echo(f"REGRESSED {item.metric} of {item.agent} @ {item.profile}", err=True)
    if failures or regressed:
        raise SystemExit(1)


@click.command()
@click.argument(
    "run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path)
)
@click.option(
    "--json",
    "json_out",
    type=click.File("w", encoding="utf-8", lazy=True),
    help="Also write the combined results (with comparisons) to this file ('-': stdout, "
    "instead of the tables).",
)
@click.option("--quiet", is_flag=True, help="Write the files, print nothing.")
@click.option("--brief", is_flag=True, help="Print the headline table only.")
@click.option(
    "--fail-under",
    "fail_under",
    multiple=True,
    metavar="METRIC[@PROFILE]=VALUE",
    help="Exit 1 when a group's point estimate is below VALUE (sr, frr, pei, pass^K; "
    "n/a counts as failing); with two runs, also when a metric regressed. Repeatable.",
)
@click.option(
    "--fail-on-regression",
    is_flag=True,
    help="With two runs: exit 1 when a metric of an agent × profile got worse (95 % "
    "interval of the difference excludes 0).",
)
def score(
    run_dirs: tuple[Path, ...],
    json_out: IO[str] | None,
    quiet: bool,
    brief: bool,
    fail_under: tuple[str, ...],
    fail_on_regression: bool,
) -> None:
    """Score RUN_DIR; with a second run directory, compare the two.

    Each run directory gets its own results.json and episodes.csv; the printed table
    covers all given runs, with differences and their 95 % intervals (what got worse in
    the second run first). A directory with calls.jsonl only (`chaosproxy up`) gets what
    its log supports without task verdicts.
    """
    if len(run_dirs) > 2:
        raise click.UsageError("give one run directory, or two to compare")
    thresholds = parse_gates(fail_under)
    to_stdout = json_out is not None and getattr(json_out, "name", "") == "-"
    try:
        results = score_and_print(list(run_dirs), json_out, quiet or to_stdout, brief)
    except RunDirError as exc:
        raise click.ClickException(str(exc)) from exc
    enforce_gates(results, thresholds, fail_on_regression)
