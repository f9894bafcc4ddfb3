"""`chaosproxy memory`: build and inspect ap-edm's episodic memory."""

from __future__ import annotations

from pathlib import Path

import click

from chaosproxy import eventloop
from chaosproxy.agents.apedm.embedder import Embedder
from chaosproxy.agents.apedm.memory import PEI_MIN, EpisodicMemory, MemoryDirError
from chaosproxy.agents.llm import ModelEndpoint
from chaosproxy.records import RunDirError


@click.group()
def memory() -> None:
    """ap-edm's episodic memory: successful trajectories (PEI ≥ 0.8) in a FAISS index."""


@memory.command()
@click.argument(
    "run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path, file_okay=False)
)
@click.option(
    "--out", required=True, type=click.Path(path_type=Path, file_okay=False), help="Memory dir."
)
@click.option("--embedding-model", help="A /v1/embeddings model; default: offline lexical.")
@click.option("--base-url", help="Endpoint of --embedding-model (…/v1).")
def build(
    run_dirs: tuple[Path, ...], out: Path, embedding_model: str | None, base_url: str | None
) -> None:
    """Score RUN_DIRs and add their successful trajectories with PEI ≥ 0.8 to --out.

    \b
    Example:
      chaosproxy memory build runs/first runs/second --out memory/
      chaosproxy run --agent ap-edm --model mock --base-url URL --memory memory/
    """
    from chaosproxy.memory.build import build_memory

    endpoint = ModelEndpoint(embedding_model, base_url) if embedding_model else None
    try:
        built, added = eventloop.run(build_memory(list(run_dirs), out, Embedder(endpoint)))
    except (MemoryDirError, RunDirError, OSError) as bad:
        raise click.ClickException(str(bad)) from bad
    click.echo(
        f"{out}: {added} trajectories added (PEI ≥ {PEI_MIN}), {built.manifest.entries} in all, "
        f"embedding {built.manifest.embedding}"
    )


@memory.command()
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False))
def show(directory: Path) -> None:
    """List the trajectories a memory holds."""
    try:
        loaded = EpisodicMemory.load(directory)
    except MemoryDirError as bad:
        raise click.ClickException(str(bad)) from bad
    click.echo(f"{loaded.manifest.entries} entries, embedding {loaded.manifest.embedding}")
    for entry in loaded.entries:
        tools = " → ".join(step.tool for step in entry.steps)
        click.echo(f"{entry.domain:<16} {entry.task_id:<40} PEI {entry.pei:.2f}  {tools}")
