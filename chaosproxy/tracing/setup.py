"""Wiring a tracer into a started environment (kept here so the Environment gains one line)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import warnings
from typing import Any

from chaosproxy.api.errors import SetupError
from chaosproxy.tracing import NOOP, Tracer, TraceSettings, TracingError, make_tracer, settings_from


def trace_settings(endpoint: str | None, content: str | None) -> TraceSettings | None:
    """The checked settings (a SetupError names what is wrong), None when tracing is off.

    Asked for by name (`otlp_endpoint`, `--otlp-endpoint`) without the `otel` extra is an
    error; turned on only by `OTEL_EXPORTER_OTLP_*` variables (which a shell may set for
    other programs) it is a warning, and tracing stays off."""
    try:
        settings = settings_from(endpoint, content)
    except TracingError as bad:
        raise SetupError(str(bad)) from None
    if settings is not None and not sdk_available():
        message = "OpenTelemetry tracing needs the optional extra: pip install 'chaosproxy[otel]'"
        if endpoint:
            raise SetupError(message)
        warnings.warn(
            f"OTEL_EXPORTER_OTLP_ENDPOINT is set but {message}; tracing stays off",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    return settings


def sdk_available() -> bool:
    """The extra is installed (checked without importing it)."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")
    )


def start_tracing(
    settings: TraceSettings | None, inner: Any, stack: contextlib.AsyncExitStack
) -> Tracer:
    """Give the started proxy (`inner.proxy`) its tracer; `stack` shuts it down (flushing)
    after the proxy stopped, so the last calls' spans still go out."""
    if settings is None or inner.proxy is None:
        return NOOP
    tracer = make_tracer(settings)
    engine = inner.proxy.core.engine

    def profile_of(episode: str) -> str:
        return str(engine.episode_summary(episode).get("profile") or engine.profile.name)

    tracer.attach(profile_of)
    inner.proxy.core.tracer = tracer
    stack.push_async_callback(asyncio.to_thread, tracer.shutdown)
    return tracer
