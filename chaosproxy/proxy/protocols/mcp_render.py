"""Faults rendered the way a real MCP server fails.

- before the service ran (timeouts, 429, 5xx): the HTTP status a gateway would send, with a
  JSON-RPC error body for the request's id (clients surface it as that call's error);
- after the service ran, in-band (the SSE stream may already be open): an `isError: true`
  tool result for errors, or a tool result whose `structuredContent` and text content are
  both the replaced, drifted or truncated value.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from chaosproxy.proxy.salvage import salvage

SERVER_ERROR = -32000


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def _error_message(status: int, body: Any) -> str:
    detail = ""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            detail = str(inner.get("message", "") or "")
        elif isinstance(inner, str):
            detail = inner
    elif isinstance(body, str):
        detail = body
    head = f"{status} {_reason(status)}"
    return f"{head}: {detail}" if detail else head


def tool_outcome(message: dict[str, Any]) -> tuple[int, Any]:
    """A tools/call response as (status, body) for the engine, as REST would show it."""
    if "error" in message:
        error = message.get("error") or {}
        code = error.get("code") if isinstance(error, dict) else None
        status = 400 if code in (-32600, -32601, -32602) else 500
        return status, {"error": error}
    result = message.get("result")
    if not isinstance(result, dict):
        return 200, result
    if result.get("isError"):
        return 400, {"error": {"type": "tool_error", "message": _content_text(result)}}
    structured = result.get("structuredContent")
    if isinstance(structured, dict):
        return 200, structured
    text = _content_text(result)
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, an over-long integer, too deep
        return 200, {"content": result.get("content", [])}
    return 200, parsed if isinstance(parsed, dict) else {"result": parsed}


def _content_text(result: dict[str, Any]) -> str:
    parts = [
        str(item.get("text", ""))
        for item in result.get("content") or []
        if isinstance(item, dict) and item.get("type") == "text"
    ]
    return "\n".join(parts)


RESULT_PARTS = ("content", "structuredContent", "isError")
MODERN_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


def envelope(result: Any) -> dict[str, Any]:
    """The parts of a tool result a fault keeps (e.g. 2026's `resultType`, `_meta`)."""
    if not isinstance(result, dict):
        return {}
    return {key: value for key, value in result.items() if key not in RESULT_PARTS}


def request_envelope(message: dict[str, Any], protocol_header: str | None) -> dict[str, Any]:
    """For a reply the proxy makes up: 2026-07-28 results carry `resultType`."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    modern = (isinstance(meta, dict) and MODERN_VERSION_KEY in meta) or (
        protocol_header is not None and protocol_header >= "2026"
    )
    return {"resultType": "complete"} if modern else {}


def ok_result(body: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """A successful tool result carrying `body` as both structured and text content."""
    result: dict[str, Any] = {
        **(base or {}),
        "content": [{"type": "text", "text": dumps(body)}],
        "isError": False,
    }
    if isinstance(body, dict):
        result["structuredContent"] = body
    return result


def error_result(status: int, body: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        **(base or {}),
        "content": [{"type": "text", "text": _error_message(status, body)}],
        "isError": True,
    }


def truncated_result(
    body: Any, cut_at: int, base: dict[str, Any] | None = None, text: str | None = None
) -> dict[str, Any]:
    """Text content cut at `cut_at` bytes; structuredContent is what survives of the cut."""
    if text is None:
        text = dumps(body).encode()[:cut_at].decode("utf-8", errors="ignore")
    result: dict[str, Any] = {
        **(base or {}),
        "content": [{"type": "text", "text": text}],
        "isError": False,
    }
    survived = salvage(text)
    if isinstance(survived, dict):
        result["structuredContent"] = survived
    return result


def response(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def rpc_error(request_id: Any, status: int, body: Any, retry_after: float | None) -> dict[str, Any]:
    """A JSON-RPC error for a call the gateway refused (sent with that HTTP status)."""
    data: dict[str, Any] = {"status": status, "body": body}
    if retry_after is not None:
        data["retry_after_s"] = retry_after
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": SERVER_ERROR, "message": _error_message(status, body), "data": data},
    }


LIST_CHANGED: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
ERROR_META = "io.chaosproxy/error"
"""Where the kit's servers put an error result's details (see domains/kit/mcp.py)."""
SESSION_NOT_FOUND = -32600
"""The MCP SDK's server answers an unknown `Mcp-Session-Id` with 404 and INVALID_REQUEST."""


def session_not_found(request_id: Any) -> dict[str, Any]:
    """The 404 body a server sends for a session it forgot (the request's id, so every
    client ties it to the call it made)."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": SESSION_NOT_FOUND, "message": "Session not found"},
    }


def unknown_tool_result(body: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """fastmcp's answer for a tool it does not list: an error result with just the text."""
    message = body.get("error", {}).get("message") if isinstance(body, dict) else None
    return {
        **(base or {}),
        "content": [{"type": "text", "text": str(message or "Unknown tool")}],
        "isError": True,
    }


def kit_error_result(body: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """An error result as the kit's servers send it: the error body as JSON text and in
    `_meta` (no structuredContent, which strict clients check against outputSchema)."""
    error = body.get("error") if isinstance(body, dict) else None
    meta = {**(base or {}).get("_meta", {}), ERROR_META: error} if isinstance(error, dict) else {}
    result: dict[str, Any] = {
        **(base or {}),
        "content": [{"type": "text", "text": dumps(body)}],
        "isError": True,
    }
    if meta:
        result["_meta"] = meta
    return result
