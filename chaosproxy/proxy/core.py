"""Shared state and the ways every flow answers: send, reset, fail upstream, log."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from multidict import CIMultiDict

from chaosproxy.faults import FaultEngine
from chaosproxy.proxy.calllog import CallLog
from chaosproxy.proxy.episodes import EpisodeBook
from chaosproxy.proxy.exchange import (
    CLIENT_GONE,
    Draft,
    Outcome,
    client_gone,
    outcome_for,
    reset_connection,
)
from chaosproxy.proxy.listener import Request, Response, error_body
from chaosproxy.proxy.metrics import Metrics
from chaosproxy.proxy.settings import ProxyLimits
from chaosproxy.proxy.upstream import Upstream, UpstreamFailure
from chaosproxy.tracing import NOOP, Tracer

RESET_STATUS = 0
"""Status logged when the proxy closed the connection instead of answering."""


def encode_body(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


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
    tracer: Tracer = NOOP
    """OpenTelemetry spans of the calls (chaosproxy.tracing); `NOOP` when tracing is off."""

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

    def write(self, draft: Draft, *, status: int, outcome: Outcome, bytes_out: int) -> None:
        """Log the request (once). Called just before its reply goes out."""
        if draft.logged:
            return
        draft.logged = True
        fields = draft.record(
            run_seed=self.run_seed, status=status, outcome=outcome, bytes_out=bytes_out
        )
        self.log.write(fields)
        if draft.trace is not None:
            draft.trace.finish(fields)
        self.metrics.observe(
            domain=draft.route.domain,
            transport=draft.transport,
            kind=draft.kind,
            status=status,
            fault=draft.fault.name if draft.fault is not None else None,
            delivered=draft.fault_delivered,
            latency_s=fields["latency_ms"] / 1000.0,
        )
        if draft.fault is not None and draft.step is not None:
            self.book.note_fault(
                draft.route.episode, draft.step, draft.fault.name, draft.fault_delivered
            )
        elif draft.fault is not None and draft.kind == "model_call":
            self.book.note_model_fault(
                draft.route.episode, draft.tool or "", draft.fault.name, draft.fault_delivered
            )
        if draft.upstream_status is not None and draft.upstream_status >= 500:
            self.book.note_service_error(draft.route.episode)

    def deliver(self, request: Request, draft: Draft) -> bool:
        """Settle `fault_delivered` just before answering; False when the client is gone."""
        gone = client_gone(request)
        draft.fault_delivered = draft.fault is not None and draft.fault_effective and not gone
        if gone:
            draft.error = draft.error or "client disconnected before the reply"
        return not gone

    def send(
        self,
        request: Request,
        draft: Draft,
        *,
        status: int,
        body: bytes,
        headers: CIMultiDict[str] | dict[str, str] | None = None,
        outcome: Outcome | None = None,
    ) -> Response:
        here = self.deliver(request, draft)
        response = Response(status, body, headers)
        self.write(
            draft,
            status=status if here else CLIENT_GONE,
            outcome=outcome or outcome_for(status, tool_call=draft.kind == "tool_call"),
            bytes_out=len(body) if here else 0,
        )
        return response

    def reset(self, request: Request, draft: Draft) -> Response:
        self.deliver(request, draft)
        self.write(draft, status=RESET_STATUS, outcome="reset", bytes_out=0)
        self.log.flush()
        reset_connection(request)
        return Response(204)

    def upstream_failed(self, request: Request, draft: Draft, failure: UpstreamFailure) -> Response:
        """The service itself failed (not an injected fault): say so, clearly."""
        draft.error = f"{failure.kind}: {failure}"
        draft.fault_effective = False
        body = error_body(f"upstream_{failure.kind}", str(failure))
        return self.send(
            request,
            draft,
            status=failure.status,
            body=encode_body(body),
            headers={"Content-Type": "application/json"},
            outcome="timeout" if failure.status == 504 else "http_error",
        )

    def gone(self, draft: Draft) -> None:
        """The client hung up while the request was in flight."""
        draft.fault_delivered = False
        draft.error = draft.error or "client disconnected before the reply"
        self.write(draft, status=CLIENT_GONE, outcome="reset", bytes_out=0)
