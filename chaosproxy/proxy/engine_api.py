"""The fault engine as the proxy sees it: one place that reads its decisions.

The engine (chaosproxy.faults) returns pydantic models; this module turns them into small
frozen views so the rest of the proxy does not depend on their exact classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chaosproxy.records import FaultRecord


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _fault(obj: Any) -> FaultRecord | None:
    raw = _get(obj, "fault")
    if raw is None:
        return None
    if isinstance(raw, FaultRecord):
        return raw
    if hasattr(raw, "model_dump"):
        raw = raw.model_dump()
    return FaultRecord.model_validate(raw)


def _headers(raw: Any) -> dict[str, str]:
    if not raw:
        return {}
    return {str(k): str(v) for k, v in dict(raw).items()}


@dataclass(frozen=True)
class Synthetic:
    """A response the proxy makes up instead of asking the service."""

    status: int
    headers: dict[str, str]
    body: Any
    mcp_render: str = "http"


@dataclass(frozen=True)
class Before:
    """The engine's decision before the upstream call."""

    raw: Any
    action: str
    fault: FaultRecord | None
    arguments: dict[str, Any] | None
    delay_s: float
    response: Synthetic | None
    episode_key: str
    seed: int | None


@dataclass(frozen=True)
class After:
    """The engine's decision on the upstream response."""

    action: str
    status: int | None
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    truncate_at: int | None = None
    truncated_text: str | None = None
    delay_s: float = 0.0
    delivered: bool = True
    mcp_render: str = "http"


def read_before(decision: Any) -> Before:
    response = _get(decision, "response")
    synthetic = None
    if response is not None:
        synthetic = Synthetic(
            status=int(_get(response, "status", 500)),
            headers=_headers(_get(response, "headers")),
            body=_get(response, "body"),
            mcp_render=str(_get(response, "mcp_render", "http")),
        )
    arguments = _get(decision, "arguments")
    return Before(
        raw=decision,
        action=str(_get(decision, "action", "forward")),
        fault=_fault(decision),
        arguments=dict(arguments) if isinstance(arguments, dict) else None,
        delay_s=float(_get(decision, "delay_s", 0.0) or 0.0),
        response=synthetic,
        episode_key=str(_get(decision, "episode_key", "")),
        seed=_get(decision, "seed"),
    )


def read_after(effect: Any) -> After:
    status = _get(effect, "status")
    truncate_at = _get(effect, "truncate_at")
    return After(
        action=str(_get(effect, "action", "pass")),
        status=int(status) if status is not None else None,
        headers=_headers(_get(effect, "headers")),
        body=_get(effect, "body"),
        truncate_at=int(truncate_at) if truncate_at is not None else None,
        truncated_text=_get(effect, "truncated_text"),
        delay_s=float(_get(effect, "delay_s", 0.0) or 0.0),
        delivered=bool(_get(effect, "delivered", True)),
        mcp_render=str(_get(effect, "mcp_render", "http")),
    )


def retry_after_seconds(headers: dict[str, str]) -> float | None:
    for key, value in headers.items():
        if key.lower() == "retry-after":
            try:
                return float(value)
            except ValueError:
                return None
    return None
