"""One proxied request from arrival to log line: the record draft and the ways to answer."""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from chaosproxy.faults import FaultInfo
from chaosproxy.proxy.listener import Request
from chaosproxy.proxy.logbound import logged_arguments
from chaosproxy.proxy.routing import Route
from chaosproxy.tracing import CallTrace

Outcome = Literal["ok", "tool_error", "http_error", "rpc_error", "reset", "timeout"]
CLIENT_GONE = 499
"""Status logged when the client hung up before the reply (nginx's convention)."""


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


Kind = Literal["tool_call", "protocol", "model_call"]


@dataclass(slots=True)
class Draft:
    """What the log will say about a request, filled in as the request goes.

    A plain dataclass on the hot path: `record()` gives the `CallRecord` fields as a dict
    (the log writes it as JSON without building the pydantic model; records.py is still
    the contract, and the tests read every line back through `CallRecord`).
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
    trace: CallTrace | None = None
    """The call's span in the making (chaosproxy.tracing); None when tracing is off."""
    ts: float = field(default_factory=time.time)
    started: float = field(default_factory=time.perf_counter)

    def record(
        self, *, run_seed: int, status: int, outcome: Outcome, bytes_out: int
    ) -> dict[str, Any]:
        """The CallRecord fields, in the model's order (records.CallRecord)."""
        arguments, forwarded = logged_arguments(
            self.arguments, self.forwarded_arguments, self.bytes_in
        )
        fields: dict[str, Any] = {
            "ts": self.ts,
            "run_seed": run_seed,
            "episode": self.route.episode,
            "episode_key": self.episode_key or self.route.episode,
            "step": self.step,
            "domain": self.route.domain,
            "tool": self.tool,
            "transport": self.transport,
            "kind": self.kind,
            "method": self.method,
            "path": self.path,
            "rpc_method": self.rpc_method,
            "arguments": arguments,
            "forwarded_arguments": forwarded,
            "fault": self.fault.model_dump(mode="json") if self.fault is not None else None,
            "fault_delivered": self.fault_delivered,
            "upstream_called": self.upstream_called,
            "upstream_status": self.upstream_status,
            "status": status,
            "outcome": outcome,
            "latency_ms": round((time.perf_counter() - self.started) * 1000.0, 3),
            "bytes_in": self.bytes_in,
            "bytes_out": bytes_out,
            "retry_after_s": self.retry_after_s,
            "error": self.error,
            "note": self.note,
            "route": self.api_route,
            "model": self.model,
            "usage": self.usage,
        }
        if self.restarted:
            fields["episode_restarted"] = True
        if self.attempt is not None:
            fields["attempt"] = self.attempt
        return fields


def outcome_for(status: int, *, tool_call: bool) -> Outcome:
    if status == 504:
        return "timeout"
    if status >= 500 or status in (429, 403, 401):
        return "http_error"
    if status >= 400:
        return "tool_error" if tool_call else "http_error"
    return "ok"
