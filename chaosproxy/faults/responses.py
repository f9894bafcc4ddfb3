"""Plausible error replies, shaped like the domain kit's `{"error": {...}}` bodies."""

from __future__ import annotations

from typing import Any

from chaosproxy.faults.models import McpRender, SyntheticResponse

_MESSAGES: dict[int, tuple[str, str]] = {
    500: ("internal_error", "An internal error occurred while processing the request."),
    502: ("bad_gateway", "The upstream server returned an invalid response."),
    503: ("service_unavailable", "The service is temporarily unavailable; please retry."),
    504: ("gateway_timeout", "The upstream server did not respond in time."),
    429: ("rate_limited", "Rate limit exceeded: too many requests for this API key."),
    403: ("account_suspended", "This account has been suspended for exceeding its quota."),
}


def request_id(salt: float) -> str:
    """A request id that looks real and is reproducible from the draw."""
    return f"req_{int(salt * 16**12):012x}"


def error_body(
    status: int, salt: float, message: str | None = None, **extra: Any
) -> dict[str, Any]:
    kind, default = _MESSAGES.get(status, ("error", "The request failed."))
    error: dict[str, Any] = {"type": kind, "message": message or default, "status": status}
    error.update(extra)
    error["request_id"] = request_id(salt)
    return {"error": error}


def error_response(
    status: int,
    salt: float,
    *,
    message: str | None = None,
    headers: dict[str, str] | None = None,
    mcp_render: McpRender = "http",
    **extra: Any,
) -> SyntheticResponse:
    return SyntheticResponse(
        status=status,
        headers=dict(headers or {}),
        body=error_body(status, salt, message, **extra),
        mcp_render=mcp_render,
    )
