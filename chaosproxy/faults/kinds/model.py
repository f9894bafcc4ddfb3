"""The model-call faults: what hosted OpenAI-compatible models really do.

Replies are shaped like the big providers' (OpenAI's error object and `x-ratelimit-*`
headers), so an agent's model client takes the path it would take in production.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Literal

from pydantic import Field

from chaosproxy.faults.draws import between, derive, pick
from chaosproxy.faults.models import Params, ResponseEffect, SyntheticResponse
from chaosproxy.faults.responses import request_id
from chaosproxy.faults.unit import Applied, BeforeCall, Effect, FaultUnit, Reply, serialize


class ModelRateLimitParams(Params):
    retry_after_s: int = Field(1, ge=0, description="Retry-After, and the x-ratelimit resets")
    limit_requests: int = Field(500, gt=0, description="x-ratelimit-limit-requests")
    limit_tokens: int = Field(30000, gt=0, description="x-ratelimit-limit-tokens")


class ModelOverloadedParams(Params):
    statuses: list[int] = Field(default_factory=lambda: [503, 500], min_length=1)


class ModelTimeoutParams(Params):
    delay_s: float = Field(1.0, ge=0, description="how long the call hangs before the 504")
    status: int = Field(504, ge=400, le=599)


class StreamCutParams(Params):
    min_events: int = Field(1, ge=0, description="stream events let through before the cut")
    max_events: int = Field(3, ge=0)
    keep_fraction: float = Field(
        0.5, gt=0, lt=1, description="a whole (non-streamed) reply: share of its bytes sent"
    )


EmptyMode = Literal["empty_content", "no_choices"]


def _all_empty_modes() -> list[EmptyMode]:
    return ["empty_content", "no_choices"]


class EmptyChoiceParams(Params):
    modes: list[EmptyMode] = Field(default_factory=_all_empty_modes, min_length=1)


class MalformedToolCallParams(Params):
    pass


class ModelRateLimit(FaultUnit):
    name = "ModelRateLimit"
    params = ModelRateLimitParams
    stage = "before"
    recoverable = True
    summary = "a model call gets 429 with Retry-After and provider-like x-ratelimit-* headers"
    target = "model"

    def before(self, call: BeforeCall) -> Applied | None:
        return call.respond(rate_limited(call.settings(ModelRateLimitParams), call.call_salt))


class ModelOverloaded(FaultUnit):
    name = "ModelOverloaded"
    params = ModelOverloadedParams
    stage = "before"
    recoverable = True
    summary = "a model call gets 503 'overloaded' or 500 with a provider-like error body"
    target = "model"

    def before(self, call: BeforeCall) -> Applied | None:
        status = pick(call.call_salt, call.settings(ModelOverloadedParams).statuses)
        call.info.params["status"] = status
        return call.respond(overloaded(status, call.call_salt))


class ModelTimeout(FaultUnit):
    name = "ModelTimeout"
    params = ModelTimeoutParams
    stage = "before"
    recoverable = True
    summary = "a model call hangs delay_s, then 504; the model never ran"
    target = "model"

    def before(self, call: BeforeCall) -> Applied | None:
        params = call.settings(ModelTimeoutParams)
        response = timed_out(params.status, params.delay_s, call.call_salt)
        return call.respond(response, delay_s=params.delay_s)


class StreamCut(FaultUnit):
    name = "StreamCut"
    params = StreamCutParams
    stage = "after"
    recoverable = True
    summary = "a streamed model reply stops mid-stream (a whole reply is cut mid-body)"
    target = "model"
    after_rank = 110

    def after(self, reply: Reply) -> Effect | ResponseEffect | None:
        """Any 2xx reply, streamed (no body yet) or whole; nothing after it applies."""
        if not 200 <= reply.status < 300:
            return None
        params = StreamCutParams.model_validate(reply.planned.params)
        cut = stream_cut(reply.original, reply.planned.salt, params)
        return ResponseEffect(
            action="truncate",
            status=reply.status,
            body=reply.original,
            truncate_at=cut.truncate_at,
            truncated_text=cut.truncated_text,
            delivered=True,
            notes={"StreamCut": cut.info},
            cut_after_events=cut.info.get("cut_after_events"),
            keep_fraction=params.keep_fraction,
        )


class EmptyChoice(FaultUnit):
    name = "EmptyChoice"
    params = EmptyChoiceParams
    stage = "after"
    recoverable = True
    summary = "a model reply with an empty message, or no choices at all"
    target = "model"
    after_rank = 90
    needs = "chat_reply"
    nothing_to_act_on = "the reply has no choices"

    def transform(self, reply: Reply) -> Effect | None:
        params = EmptyChoiceParams.model_validate(reply.planned.params)
        return empty_choice(reply.body, reply.planned.salt, params)


class MalformedToolCall(FaultUnit):
    name = "MalformedToolCall"
    params = MalformedToolCallParams
    stage = "after"
    recoverable = True
    summary = "a model reply whose tool call carries arguments that are not valid JSON"
    target = "model"
    after_rank = 100
    needs = "chat_reply"
    nothing_to_act_on = "the reply carries no tool call"

    def transform(self, reply: Reply) -> Effect | None:
        return malformed_tool_call(reply.body, reply.planned.salt)


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
