"""What the JSON protocols share (REST tools, any REST API, model calls): parsing bodies
and rendering a response fault on a JSON reply. Pure: no I/O."""

from __future__ import annotations

import json
from typing import Any

from chaosproxy.faults import ResponseEffect
from chaosproxy.proxy import jsonbody
from chaosproxy.proxy.effects import (
    JSON_HEADERS,
    Cut,
    Rendered,
    Said,
    encode_body,
    error_body,
    retry_after_seconds,
)


def parse_object(body: bytes) -> dict[str, Any] | None:
    """A JSON object body ({} when empty); None when it is anything else.

    Raises `BadJson` for hostile JSON (see `jsonbody`): the handler answers it with a 400.
    """
    if not body:
        return {}
    value = jsonbody.loads(body)
    return value if isinstance(value, dict) else None


def parse_reply(raw: bytes, content_type: str) -> tuple[Any, str | None]:
    """The reply as JSON for the engine, or (None, why body faults cannot act on it)."""
    if not raw:
        return None, "empty response body: body faults pass it untouched"
    try:
        return jsonbody.parse(raw), None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError):
        kind = content_type.split(";")[0].strip() or "no content type"
        return None, f"response body is not JSON ({kind}): body faults pass it untouched"


def render_effect(said: Said, effect: ResponseEffect, parsed: Any) -> Rendered | Cut:
    """A response fault on a JSON reply, as a REST client gets it."""
    headers = {**JSON_HEADERS, **effect.headers}
    said.retry_after_s = retry_after_seconds(headers)
    status = effect.status or 200
    if effect.action == "reset":
        return Cut()
    if effect.action == "truncate":
        text = effect.truncated_text
        if text is None:
            full = encode_body(effect.body if effect.body is not None else parsed)
            text = full[: effect.truncate_at or 0].decode("utf-8", errors="ignore")
        body = text.encode()
    elif effect.action == "lost_reply":
        lost = effect.body if effect.body is not None else error_body("timeout", "timed out")
        status, body = effect.status or 504, encode_body(lost)
    else:
        body = encode_body(effect.body)
    return Rendered(status, body, headers)
