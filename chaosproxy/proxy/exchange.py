"""One proxied request from arrival to log line: the record draft and the exchange in flight."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from chaosproxy.faults import Decision, FaultInfo, ResponseEffect
from chaosproxy.proxy.core import Core
from chaosproxy.proxy.effects import Kind, Said
from chaosproxy.proxy.listener import Request
from chaosproxy.proxy.routing import Route
from chaosproxy.tracing import CallTrace


def client_gone(request: Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def reset_connection(request: Request) -> None:
    """Close the client's connection with a TCP RST, as a crashing server would."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


@dataclass(slots=True)
class Draft:
    """What the log will say about a request, filled in as the request goes.

    A plain dataclass on the hot path: `finish.record` turns it into the `CallRecord`
    fields (a dict the log writes as JSON without building the pydantic model; records.py
    is still the contract, and the tests read every line back through `CallRecord`).
    """

    route: Route
    method: str
    path: str
    transport: Literal["rest", "mcp"]
    kind: Kind = "protocol"
    tool: str | None = None
    step: int | None = None
    rpc_method: str | None = None
    arguments: dict[str, Any] | None = None
    forwarded_arguments: dict[str, Any] | None = None
    fault: FaultInfo | None = None
    fault_delivered: bool = False
    fault_effective: bool = True
    logged: bool = False
    episode_key: str = ""
    upstream_called: bool = False
    upstream_status: int | None = None
    bytes_in: int = 0
    retry_after_s: float | None = None
    error: str | None = None
    note: str | None = None
    api_route: str | None = None
    model: str | None = None
    usage: dict[str, Any] | None = None
    restarted: bool = False
    attempt: str | None = None
    paced_ms: float | None = None
    """Time the model call waited for the pacer (`--rpm/--tpm`); None: no pacer asked."""
    provider_retries: int = 0
    """Re-sends of a model call the provider answered 429/5xx (proxy/provider.py)."""
    provider_wait_ms: float = 0.0
    """Time waited between those re-sends."""
    trace: CallTrace | None = None
    """The call's span in the making (chaosproxy.tracing); None when tracing is off."""
    ts: float = field(default_factory=time.time)
    started: float = field(default_factory=time.perf_counter)


@dataclass(slots=True)
class Exchange:
    """One request in flight: what `finish` needs to answer it and log it.

    `decision` is the engine's for a tool or model call (None for protocol traffic)."""

    core: Core
    request: Request
    draft: Draft
    decision: Decision | None = None
    said: Said | None = None
    """The adapter's notes for the log (copied into the draft by `finish`)."""

    @property
    def wants_reply(self) -> bool:
        """False: no response fault can act, so the reply goes out unread (λ0's fast path)."""
        decision = self.decision
        return decision is not None and decision.wants_reply and not decision.kept_already

    async def after(self, status: int, body: Any) -> ResponseEffect:
        """The engine's effect on the reply; its delay is held here."""
        decision = self.decision
        if decision is None:
            return ResponseEffect(action="pass", status=status, body=body)
        try:
            effect = self.core.engine.after_call(decision, status=status, body=body)
        except RecursionError:  # a reply nested deeper than the body faults can walk
            self.draft.note = "response body nested too deeply for body faults: passed untouched"
            effect = ResponseEffect(action="pass", status=status, body=body, delivered=False)
        if not effect.delivered:
            self.draft.fault_effective = False
        if effect.action != "pass" and effect.delay_s > 0:
            await asyncio.sleep(effect.delay_s)
        return effect
