"""`chaosproxy score RUN_DIR [RUN_DIR2]`: compute every metric, write results.json and
episodes.csv into each run directory, print the summary."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from chaosproxy.records import RunDirError
from chaosproxy.scoring.results import Results


def score_and_print(
    run_dirs: Sequence[Path], json_out: Path | None = None, quiet: bool = False
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
        json_out.write_text(combined.results.model_dump_json(indent=2) + "\n", encoding="utf-8")
    if not quiet:
        console = Console(width=terminal_width(), highlight=False, soft_wrap=False)
        for part in summary_parts(combined.results):
            console.print(part)
        rates = rates_lines(combined.results)
        if rates:
            click.echo("\nFault rates and mix (fresh, affected, delivered shares vs weights)")
            for line in rates:
                click.echo(f"  {line}")
            click.echo(f"  ({RATES_NOTE})")
        for run_dir in run_dirs:
            click.echo(f"wrote {run_dir / 'results.json'} and {run_dir / 'episodes.csv'}")
    return combined.results


@click.command()
@click.argument(
    "run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path)
)
@click.option(
    "--json",
    "json_out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the combined results (with comparisons) to this file.",
)
@click.option("--quiet", is_flag=True, help="Write the files, print nothing.")
def score(run_dirs: tuple[Path, ...], json_out: Path | None, quiet: bool) -> None:
    """Score RUN_DIR; with a second run directory, compare the two.

    Each run directory gets its own results.json and episodes.csv; the printed table
    covers all given runs, with differences and their 95 % intervals. A directory with
    calls.jsonl only (`chaosproxy up`) gets what its log supports without task verdicts.
    """
    if len(run_dirs) > 2:
        raise click.UsageError("give one run directory, or two to compare")
    try:
        score_and_print(list(run_dirs), json_out, quiet)
    except RunDirError as exc:
        raise click.ClickException(str(exc)) from exc
