"""`chaosproxy report RUN_DIR [-o FILE]`: score the run and write the HTML report."""

from __future__ import annotations

from pathlib import Path

import click

from chaosproxy.records import RunDirError


@click.command()
@click.argument(
    "run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path)
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the report (default: RUN_DIR/report.html).",
)
def report(run_dirs: tuple[Path, ...], output: Path | None) -> None:
    """Write one self-contained HTML report (opens offline) for RUN_DIR, or for two run
    directories side by side."""
    from chaosproxy.report import write_report

    if len(run_dirs) > 2:
        raise click.UsageError("give one run directory, or two to compare")
    from chaosproxy.scoring.rundir import is_calls_only

    for run_dir in run_dirs:
        if is_calls_only(run_dir):
            raise click.ClickException(
                f"{run_dir} has calls.jsonl but no episodes.jsonl (a `chaosproxy up` session): "
                "the report needs episodes with verdicts (from `chaosproxy run`); "
                f"`chaosproxy score {run_dir}` prints what the log alone supports"
            )
    try:
        target = write_report(list(run_dirs), output)
    except RunDirError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"wrote {target}")
