"""Pure effects of the model-call faults: what hosted OpenAI-compatible models really do.

Replies are shaped like the big providers' (OpenAI's error object and `x-ratelimit-*`
headers), so an agent's model client takes the path it would take in production.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from chaosproxy.faults.catalog import (
    EmptyChoiceParams,
    ModelRateLimitParams,
    StreamCutParams,
)
from chaosproxy.faults.draws import between, derive, pick
from chaosproxy.faults.effects import Effect, serialize
from chaosproxy.faults.models import SyntheticResponse
from chaosproxy.faults.responses import request_id


def _error(message: str, kind: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def rate_limited(params: ModelRateLimitParams, salt: float) -> SyntheticResponse:
    """429 with Retry-After and the x-ratelimit-* headers of an exhausted request budget."""
    reset = f"{params.retry_after_s}s"
    used_tokens = int(params.limit_tokens * (0.6 + 0.4 * derive(salt, "tokens")))
    headers = {
        "Retry-After": str(params.retry_after_s),
        "retry-after-ms": str(params.retry_after_s * 1000),
        "x-ratelimit-limit-requests": str(params.limit_requests),
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": reset,
        "x-ratelimit-limit-tokens": str(params.limit_tokens),
        "x-ratelimit-remaining-tokens": str(params.limit_tokens - used_tokens),
        "x-ratelimit-reset-tokens": reset,
        "x-request-id": request_id(salt),
    }
    message = (
        f"Rate limit reached for requests: Limit {params.limit_requests}, Used "
        f"{params.limit_requests}, Requested 1. Please try again in {reset}."
    )
    return SyntheticResponse(
        status=429, headers=headers, body=_error(message, "requests", "rate_limit_exceeded")
    )


def overloaded(status: int, salt: float) -> SyntheticResponse:
    if status == 503:
        body = _error(
            "The engine is currently overloaded, please try again later.",
            "server_error",
            "overloaded",
        )
    else:
        body = _error(
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            None,
        )
    return SyntheticResponse(status=status, headers={"x-request-id": request_id(salt)}, body=body)


def timed_out(status: int, delay_s: float, salt: float) -> SyntheticResponse:
    message = f"Request timed out after {delay_s:g} s."
    return SyntheticResponse(
        status=status,
        headers={"x-request-id": request_id(salt)},
        body=_error(message, "timeout", "timeout"),
    )


def stream_cut(body: Any, salt: float, params: StreamCutParams) -> Effect:
    """A streamed reply (body None): how many events pass before the cut. A whole
    reply: its serialized text cut mid-body."""
    if body is None:
        high = max(params.min_events, params.max_events)
        events = between(derive(salt, "events"), params.min_events, high)
        return Effect(body=None, info={"cut_after_events": events})
    raw = serialize(body).encode("utf-8")
    cut = max(1, min(len(raw) - 1, int(len(raw) * params.keep_fraction)))
    text = raw[:cut].decode("utf-8", errors="ignore")
    size = len(text.encode("utf-8"))
    return Effect(
        body=body,
        info={"truncate_at": size, "full_bytes": len(raw)},
        truncated_text=text,
        truncate_at=size,
    )


def _choices(body: Any) -> list[dict[str, Any]] | None:
    if not isinstance(body, dict) or not isinstance(body.get("choices"), list):
        return None
    return [choice for choice in body["choices"] if isinstance(choice, dict)]


def empty_choice(body: Any, salt: float, params: EmptyChoiceParams) -> Effect | None:
    """The message comes back empty (no text, no tool calls), or there is no choice."""
    choices = _choices(body)
    if not choices:
        return None
    mode = pick(salt, params.modes)
    new_body = copy.deepcopy(body)
    if mode == "no_choices":
        new_body["choices"] = []
        return Effect(body=new_body, info={"mode": mode})
    for choice in new_body["choices"]:
        if isinstance(choice, dict):
            choice["message"] = {"role": "assistant", "content": ""}
            choice["finish_reason"] = "stop"
    return Effect(body=new_body, info={"mode": mode})


def malformed_tool_call(body: Any, salt: float) -> Effect | None:
    """One tool call's `arguments` string cut so that it is no longer valid JSON."""
    choices = _choices(body)
    calls = [
        (index, position)
        for index, choice in enumerate(choices or [])
        if isinstance(choice.get("message"), dict)
        for position, call in enumerate(choice["message"].get("tool_calls") or [])
        if isinstance(call, dict) and isinstance(call.get("function"), dict)
    ]
    if not calls:
        return None
    index, position = pick(salt, calls)
    new_body = copy.deepcopy(body)
    function = new_body["choices"][index]["message"]["tool_calls"][position]["function"]
    original = str(function.get("arguments") or "{}")
    cut = max(1, len(original) // 2)
    broken = original[:cut]
    try:
        json.loads(broken)
        broken = original[:cut] + '{"'
    except ValueError:
        pass
    function["arguments"] = broken
    info = {"choice": index, "tool_call": position, "original": original, "sent": broken}
    return Effect(body=new_body, info=info)
