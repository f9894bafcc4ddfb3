"""The `--otlp-endpoint` / `--otlp-content` flags, shared by `up` and `run`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from chaosproxy.tracing import CONTENT_MODES

F = TypeVar("F", bound=Callable[..., Any])


def otlp_options(command: F) -> F:
    """Adds `otlp_endpoint` and `otlp_content` parameters to a click command."""
    command = click.option(
        "--otlp-content",
        type=click.Choice(CONTENT_MODES),
        default=None,
        envvar="CHAOSPROXY_OTLP_CONTENT",
        help="Whether tool arguments go to the tracing backend: none, on faulted calls only "
        "(faults, the default) or on all calls.",
    )(command)
    command = click.option(
        "--otlp-endpoint",
        default=None,
        metavar="URL",
        help="Export an OpenTelemetry span per call (and per episode under `run`) to this "
        "OTLP/HTTP receiver, e.g. http://127.0.0.1:4318 (default: the standard "
        "OTEL_EXPORTER_OTLP_ENDPOINT; off when neither is set). Needs chaosproxy[otel].",
    )(command)
    return command
