"""What every request shares: the engine, the upstream pool, the log, the episodes.

State only: answering and logging a request is `finish`'s alone (finish.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from chaosproxy.faults import FaultEngine
from chaosproxy.pacing import ModelPacer
from chaosproxy.proxy.calllog import CallLog
from chaosproxy.proxy.episodes import EpisodeBook
from chaosproxy.proxy.metrics import Metrics
from chaosproxy.proxy.settings import ProxyLimits
from chaosproxy.proxy.upstream import Upstream
from chaosproxy.tracing import NOOP, Tracer

CallObserver = Callable[[dict[str, Any], Mapping[str, str]], None]
"""Called by `finish` once per request, after its log line is written: the `CallRecord`
fields and the request's headers (e.g. W3C trace context). It must not raise or block."""


@dataclass
class Core:
    """What every request flow shares. `oracles`: built-in services' direct URLs by name."""

    engine: FaultEngine
    upstream: Upstream
    log: CallLog
    metrics: Metrics
    book: EpisodeBook
    run_seed: int
    limits: ProxyLimits
    oracles: dict[str, str] = field(default_factory=dict)
    oracle_headers: dict[str, str] = field(default_factory=dict)
    """Sent to the oracles (the built-in services require their bearer token)."""
    observers: list[CallObserver] = field(default_factory=list)
    """Told about every finished request (tracing spans are built here, from `finish`)."""
    tracer: Tracer = NOOP
    """OpenTelemetry spans of the calls (chaosproxy.tracing); `NOOP` when tracing is off."""
    pacer: ModelPacer | None = None
    """Paces model calls upstream (chaosproxy.pacing; `--rpm/--tpm`); None: not paced."""

    def begin(self, episode: str) -> bool:
        """A request of `episode` arrives; True when it had been evicted and starts afresh."""
        restarted, evicted = self.book.begin(episode)
        for gone in evicted:
            self.engine.forget_episode(gone)
        return restarted

    def end(self, episode: str) -> None:
        """The request is answered: the episode may be idle now, and others evicted."""
        for gone in self.book.end(episode):
            self.engine.forget_episode(gone)

    async def forget_episode(self, episode: str) -> dict[str, int]:
        """Forget an episode here, in the engine and in every built-in service (its oracle).

        Returns each service's HTTP status (0: unreachable), so the caller sees what failed.
        """
        self.engine.forget_episode(episode)
        self.book.forget(episode)
        statuses: dict[str, int] = {}
        for name, url in sorted(self.oracles.items()):
            target = f"{url}/_oracle/episodes/{quote(episode, safe='')}"
            statuses[name] = await self.upstream.delete(target, self.oracle_headers)
        return statuses
