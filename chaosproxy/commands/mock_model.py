"""`chaosproxy mock-model`: serve the deterministic mock model (chaosproxy/mockmodel/)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys

import click
from aiohttp import web

from chaosproxy import eventloop
from chaosproxy.mockmodel.play import HABITS, Habit
from chaosproxy.mockmodel.server import MOCK_MODELS, mock_app


@click.command("mock-model")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=8787, show_default=True, type=click.IntRange(0, 65535), help="0: any free."
)
@click.option(
    "--habit",
    "habits",
    multiple=True,
    type=click.Choice(HABITS),
    help="Failure habit of every model not naming its own (repeatable).",
)
def mock_model(host: str, port: int, habits: tuple[str, ...]) -> None:
    """Serve an OpenAI-compatible model that plays each task's reference solution.

    \b
    It answers /v1/chat/completions with tool calls, /v1/embeddings with the offline
    lexical embedding, and /v1/models. It recognises the task from the tools offered and
    the first user message (ε-perturbed text included), then follows the task's reference
    solution, one tool call per turn, with its failure habits. Name habits per model:
    --model mock+ignores-errors+trusts-injections. Results are labelled mock_model.

    \b
    Example:
      chaosproxy mock-model --port 8787 &
      chaosproxy run --agent react --model mock --base-url http://127.0.0.1:8787/v1
    """
    chosen = frozenset(h for h in HABITS if h in habits)
    with contextlib.suppress(KeyboardInterrupt):
        eventloop.run(_serve(host, port, chosen))


async def _serve(host: str, port: int, habits: frozenset[Habit]) -> None:
    runner = web.AppRunner(mock_app(habits), access_log=None)
    await runner.setup()
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    await web.SockSite(runner, sock).start()
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    click.echo(f"mock model serving on http://{shown}:{bound}/v1")
    click.echo(f"models: {', '.join(MOCK_MODELS)}")
    sys.stdout.flush()
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
