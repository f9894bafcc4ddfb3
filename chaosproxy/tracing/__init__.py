"""OpenTelemetry spans for the calls the proxy handles, behind a small interface.

Tracing is off by default. Off, `NOOP` stands in: the proxy holds a tracer whose
`incoming()` returns None, so a call carries no trace and costs one method call; the
OpenTelemetry SDK is not even imported. On (`TraceSettings`, from a flag, a keyword or
the standard `OTEL_*` variables), `make_tracer` imports `chaosproxy.tracing.otel`, the only
module that touches the SDK (the optional extra `chaosproxy[otel]`).

The proxy's hooks, one line each:
- the handler: `draft.trace = core.tracer.incoming(headers, body, messages, episode)` when a
  request arrives (the agent's W3C context, read from the headers or MCP `params._meta`);
- the pipeline: `draft.trace.upstream(call, extra)` before forwarding (the proxy's own
  span becomes the upstream's parent);
- the model adapter: `draft.trace.model_reply(body)` (response model, finish reasons);
- the finishing point: `draft.trace.reply(body)` with the body the agent gets (the relay:
  the event carrying a streamed call's reply), then `draft.trace.finish(fields)` with the
  CallRecord fields, once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol, get_args

from chaosproxy.errors import ChaosError

ContentMode = Literal["none", "faults", "all"]
CONTENT_MODES: tuple[str, ...] = get_args(ContentMode)
TRACES_PATH = "/v1/traces"


class TracingError(ChaosError, RuntimeError):
    """Tracing was asked for but cannot run; the message says what to do."""


@dataclass(frozen=True)
class TraceSettings:
    """Where spans go and what they carry.

    `endpoint`: an OTLP/HTTP URL, the collector's base (`/v1/traces` is added) or the full
    traces URL; None: the SDK's own `OTEL_EXPORTER_OTLP[_TRACES]_ENDPOINT`. `content`:
    whether tool arguments reach the backend: `none` never, `faults` (default) only on
    calls a fault acted on, `all` always.
    """

    endpoint: str | None = None
    content: ContentMode = "faults"

    def __post_init__(self) -> None:
        if self.content not in CONTENT_MODES:
            raise TracingError(
                f"otlp content {self.content!r}: expected one of {', '.join(CONTENT_MODES)}"
            )
        if self.endpoint is not None and not self.endpoint.startswith(("http://", "https://")):
            raise TracingError(
                f"otlp endpoint {self.endpoint!r}: expected an http(s) URL of an OTLP/HTTP "
                "receiver, e.g. http://127.0.0.1:4318"
            )

    @property
    def traces_url(self) -> str | None:
        if self.endpoint is None:
            return None
        base = self.endpoint.rstrip("/")
        return base if base.endswith(TRACES_PATH) else base + TRACES_PATH


def settings_from(
    endpoint: str | None = None,
    content: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> TraceSettings | None:
    """The settings, or None when tracing is off.

    On when `endpoint` is given, or when the environment names an OTLP endpoint
    (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) and neither
    `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none` says otherwise.
    """
    env = os.environ if environ is None else environ
    mode = content or env.get("CHAOSPROXY_OTLP_CONTENT") or "faults"
    if endpoint:
        return TraceSettings(endpoint=endpoint, content=mode)  # type: ignore[arg-type]
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return None
    if env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return TraceSettings(endpoint=None, content=mode)  # type: ignore[arg-type]
    return None


class CallTrace(Protocol):
    """One request's trace, carried on the proxy's record draft."""

    def upstream(self, call: Any, extra: dict[str, str]) -> None:
        """Before forwarding: note the parsed call, put the proxy span's context in `extra`."""
        ...

    def model_reply(self, body: Any) -> None:
        """A model's reply (or one streamed event) as parsed JSON: response model, finish."""
        ...

    def reply(self, body: bytes) -> None:
        """The reply body the agent gets (kept by reference; read only if it is exported)."""
        ...

    def finish(self, fields: dict[str, Any]) -> None:
        """The call's CallRecord fields, once: the span is built, ended and handed on."""
        ...


class EpisodeSpan(Protocol):
    """The runner's span of one episode; `verdict` sets what the episode came to."""

    traceparent: str | None

    def verdict(self, attributes: Mapping[str, Any], failed: bool) -> None: ...


class _NoEpisode:
    traceparent: str | None = None

    def verdict(self, attributes: Mapping[str, Any], failed: bool) -> None:
        return None


class Tracer:
    """Tracing off: every hook does nothing. `chaosproxy.tracing.otel.OtelTracer` is on."""

    on: bool = False

    def incoming(
        self, headers: Mapping[str, str], body: bytes, messages: Any, episode: str
    ) -> CallTrace | None:
        return None

    def attach(self, profile_of: Callable[[str], str]) -> None:
        """Where the per-episode profile name comes from (the fault engine)."""
        return None

    def adopt(self, episode: str, traceparent: str) -> None:
        """Parent `episode`'s calls under a span of another process (`run --services`: the
        runner's episode span, sent with the episode's configuration)."""
        return None

    def forget(self, episode: str) -> None:
        """The episode ended: drop what `adopt` kept for it."""
        return None

    @contextmanager
    def episode(
        self, episode: str, name: str, attributes: Mapping[str, Any]
    ) -> Iterator[EpisodeSpan]:
        """The runner's span of one episode; the proxy's spans of `episode` nest under it."""
        yield _NoEpisode()

    def shutdown(self) -> None:
        """Export what is buffered and stop (blocks up to the exporter's timeout)."""
        return None

    def describe(self) -> str | None:
        """Where spans go, for a startup banner (None: tracing is off)."""
        return None


NOOP = Tracer()

EPISODE_TRACEPARENT: ContextVar[str | None] = ContextVar("EPISODE_TRACEPARENT", default=None)
"""The runner's episode span, as a W3C traceparent, while that episode runs."""


def trace_environment() -> dict[str, str]:
    """`TRACEPARENT` for an agent process started inside a traced episode (the OpenTelemetry
    convention for context in environment variables), so its own spans nest in the episode."""
    parent = EPISODE_TRACEPARENT.get()
    return {"TRACEPARENT": parent} if parent else {}


def make_tracer(settings: TraceSettings | None) -> Tracer:
    """`NOOP` when `settings` is None; else the SDK-backed tracer (imported only now)."""
    if settings is None:
        return NOOP
    try:
        from chaosproxy.tracing.otel import OtelTracer
    except ImportError as missing:
        raise TracingError(
            f"OpenTelemetry tracing needs the optional extra: pip install 'chaosproxy[otel]' "
            f"({missing})"
        ) from missing
    return OtelTracer(settings)
