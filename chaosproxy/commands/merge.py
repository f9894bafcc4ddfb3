"""`chaosproxy merge`: join shard run directories into one run directory."""

from __future__ import annotations

from pathlib import Path

import click

from chaosproxy.runner.merge import MergeError
from chaosproxy.runner.merge import merge as merge_shards

SHOWN = 10
"""Missing or duplicated episodes listed by name; the rest are counted."""


@click.command()
@click.argument(
    "shards", nargs=-1, required=True, type=click.Path(path_type=Path, file_okay=False, exists=True)
)
@click.option(
    "--out", required=True, type=click.Path(path_type=Path), help="The merged run directory."
)
def merge(shards: tuple[Path, ...], out: Path) -> None:
    """Merge run directories of one grid (`chaosproxy run --shard I/N`) into OUT.

    Refuses shards of different grids, seeds, profiles, code or tasks. An episode recorded
    by two shards is kept once; episodes no shard recorded are listed, and
    `chaosproxy run <the same flags> --resume --out OUT` runs them.

    \b
    Example:
      chaosproxy run --agent robust --shard 1/2 --out runs/s1
      chaosproxy run --agent robust --shard 2/2 --out runs/s2
      chaosproxy merge runs/s1 runs/s2 --out runs/all
    """
    try:
        summary = merge_shards(list(shards), out)
    except MergeError as problem:
        raise click.ClickException(str(problem)) from problem
    click.echo(
        f"{summary.episodes}/{summary.grid} episodes and {summary.calls} calls merged into {out}"
    )
    if summary.duplicates:
        click.echo(
            f"{len(summary.duplicates)} episode(s) recorded by more than one shard, kept once "
            f"(a completed record first): {_listing(summary.duplicates)}"
        )
    if summary.missing:
        click.echo(
            f"{len(summary.missing)} episode(s) missing: {_listing(summary.missing)}\n"
            f"run them with the shards' flags, without --shard, plus --resume --out {out}"
        )


def _listing(episodes: list[str]) -> str:
    shown = ", ".join(episodes[:SHOWN])
    return shown + (f" and {len(episodes) - SHOWN} more" if len(episodes) > SHOWN else "")
