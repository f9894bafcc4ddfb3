"""The `--rpm` / `--tpm` / `--provider-retries` flags, shared by `up` and `run`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def pacing_options(command: F) -> F:
    """Adds `rpm`, `tpm` and `provider_retries` parameters to a click command."""
    command = click.option(
        "--provider-retries",
        type=click.IntRange(min=0),
        default=None,
        metavar="N",
        help="Re-send a model call the real provider answered 429 or 5xx (not an injected "
        "fault) up to N times, after its Retry-After or an exponential backoff "
        "(default 3; 0: never).",
    )(command)
    command = click.option(
        "--tpm",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help="Pace model calls through the proxy to at most N tokens per minute (estimated "
        "before the call, corrected by the reply's usage).",
    )(command)
    command = click.option(
        "--rpm",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help="Pace model calls through the proxy to at most N requests per minute, evenly "
        "spaced (docs/scale.md).",
    )(command)
    return command
