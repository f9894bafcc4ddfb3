"""calls.jsonl as the scorer reads it at scale: one msgspec struct per line, not a pydantic model.

A million-record log is parsed in one pass; pydantic's `CallRecord.model_validate_json`
costs about 4.8 µs a record and a model per call, msgspec's typed decoder about 1.3 µs into
a slotted struct, and checks the same types. The structs mirror records.CallRecord /
FaultRecord / DrawKey field for field (same names, types, defaults; tests/scoring hold them
to it), so the scorer's fold (scoring.calls) reads either. Unknown keys are ignored, as
the scorer ignores a record's extras.

msgspec is strict where pydantic is lax (an integral float for an int, "true" for a bool),
so a line msgspec refuses is handed to pydantic: pydantic either raises the error the
scorer has always reported (RunDirError names file, line and field) or accepts it, and its
coerced values become the struct. Either way a line scores exactly as it did through
CallRecord.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from chaosproxy.records import CallRecord
from chaosproxy.types import Stage, Transport

Kind = Literal["tool_call", "protocol", "model_call"]
Outcome = Literal["ok", "tool_error", "http_error", "rpc_error", "reset", "timeout"]


class DrawRow(msgspec.Struct, frozen=True, gc=False):
    """records.DrawKey."""

    seed: int
    episode_key: str
    tool: str
    position: int
    purpose: str


class FaultRow(msgspec.Struct, gc=False):
    """records.FaultRecord."""

    name: str
    stage: Stage
    recoverable: bool
    params: dict[str, Any] = msgspec.field(default_factory=dict)
    draw: DrawRow | None = None
    incident: str | None = None
    fresh: bool | None = None
    also: list[str] = msgspec.field(default_factory=list)


class CallRow(msgspec.Struct, gc=False):
    """records.CallRecord."""

    ts: float
    run_seed: int
    episode: str
    episode_key: str
    step: int | None
    domain: str
    tool: str | None
    transport: Transport
    kind: Kind
    method: str
    path: str
    status: int
    latency_ms: float
    rpc_method: str | None = None
    arguments: dict[str, Any] | None = None
    forwarded_arguments: dict[str, Any] | None = None
    fault: FaultRow | None = None
    fault_delivered: bool = False
    upstream_called: bool = False
    upstream_status: int | None = None
    outcome: Outcome = "ok"
    bytes_in: int = 0
    bytes_out: int = 0
    retry_after_s: float | None = None
    error: str | None = None
    note: str | None = None
    route: str | None = None
    model: str | None = None
    usage: dict[str, Any] | None = None
    episode_restarted: bool | None = None
    attempt: str | None = None
    paced_ms: float | None = None
    provider_retries: int | None = None
    provider_wait_ms: float | None = None


DECODER = msgspec.json.Decoder(CallRow)


def from_record(record: CallRecord) -> CallRow:
    """The struct of a record pydantic validated (its coerced values, extras dropped)."""
    return msgspec.convert(record.model_dump(), CallRow, strict=False)
