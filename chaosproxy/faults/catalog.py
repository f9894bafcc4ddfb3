"""The fault taxonomy: every fault's stage, recoverability and parameters.

Defaults keep delays short so CI-scale runs stay fast (holds of ~1 s, latency
spikes of 0.3–1.5 s, Retry-After of 1 s); a profile can raise any of them.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from chaosproxy.faults.models import McpRender, Stage


class Params(BaseModel):
    """Base of every fault's parameters: unknown keys are errors, not silent defaults."""

    model_config = ConfigDict(extra="forbid")


class TransientTimeoutParams(Params):
    delay_s: float = Field(1.0, ge=0, description="how long the call hangs before the 504")
    status: int = Field(504, ge=400, le=599)
    mcp_render: McpRender = "http"


class LostReplyParams(Params):
    delay_s: float = Field(1.0, ge=0, description="how long the reply is withheld")
    flavour: Literal["timeout", "closed"] = Field(
        "timeout", description="timeout: 504 after the delay; closed: the connection drops"
    )
    status: int = Field(504, ge=400, le=599)


class HighLatencyParams(Params):
    min_s: float = Field(0.3, ge=0)
    max_s: float = Field(1.5, ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> HighLatencyParams:
        if self.max_s < self.min_s:
            raise ValueError("max_s must be >= min_s")
        return self


class ConnectionResetParams(Params):
    when: Literal["request", "response"] = Field(
        "request", description="request: before the service runs; response: after it ran"
    )


class ServerErrorParams(Params):
    statuses: list[int] = Field(default_factory=lambda: [500, 502, 503], min_length=1)
    mcp_render: McpRender = "http"


class SoftRateLimitParams(Params):
    retry_after_s: int = Field(1, ge=0, description="the Retry-After header, whole seconds")
    status: int = Field(429, ge=400, le=599)
    mcp_render: McpRender = "http"


class UnauthorizedParams(Params):
    challenge: str = Field(
        'Bearer error="invalid_token", error_description="The access token expired"',
        description="the WWW-Authenticate header (RFC 6750)",
    )
    mcp_render: McpRender = "http"


class HardRateLimitParams(Params):
    status: Literal[403, 429] = 403
    scope: Literal["episode", "tool"] = Field(
        "episode", description="episode: every tool from this step on; tool: only this tool"
    )
    mcp_render: McpRender = "http"


PartialMode = Literal["truncate", "drop_items", "drop_fields"]
DriftOp = Literal["rename", "retype", "renest"]


def _all_partial_modes() -> list[PartialMode]:
    return ["truncate", "drop_items", "drop_fields"]


def _all_drift_ops() -> list[DriftOp]:
    return ["rename", "retype", "renest"]


class PartialResponseParams(Params):
    modes: list[PartialMode] = Field(default_factory=_all_partial_modes, min_length=1)
    keep_fraction: float = Field(
        0.5, gt=0, lt=1, description="share of list items kept / of the body before the cut"
    )


class EmptyResponseParams(Params):
    pass


class SchemaDriftParams(Params):
    ops: list[DriftOp] = Field(default_factory=_all_drift_ops, min_length=1)
    input: bool = Field(True, description="also rename the MCP input schema's arguments")


class StaleDataParams(Params):
    pass


class ContradictoryDataParams(Params):
    pass


class ParameterCorruptionParams(Params):
    arguments: list[str] | None = Field(
        None, description="only these arguments; default: the domain's critical ones"
    )


class AdversarialPayloadParams(Params):
    mode: Literal["auto", "instruction", "falsify"] = Field(
        "auto", description="auto: an instruction if the domain declares harmful actions"
    )


class BlockingWindowParams(Params):
    p_block: float = Field(0.5, ge=0, le=1)
    min_steps: int = Field(2, ge=1)
    max_steps: int = Field(3, ge=1)
    status: int = Field(503, ge=400, le=599)
    mcp_render: McpRender = "tool_error"


class CascadingFailureParams(Params):
    min_steps: int = Field(3, ge=1)
    max_steps: int = Field(4, ge=1)
    statuses: list[int] = Field(default_factory=lambda: [503, 502, 504], min_length=1)
    mcp_render: McpRender = "http"


class CombinedFailureParams(Params):
    p_fail: float = Field(0.5, ge=0, le=1, description="share of window calls that fail")
    statuses: list[int] = Field(default_factory=lambda: [500], min_length=1)
    mcp_render: McpRender = "http"


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


Target = Literal["tool", "model"]


@dataclass(frozen=True)
class FaultSpec:
    """One fault, registered once: everything else (profile schema, scorer lists) derives.

    - `visible`: the agent can tell something went wrong (HighLatency only delays);
    - `retryable`: retrying the same call can help;
    - `persistent_data`: later answers still carry it, yet the call itself went through;
    - `incident`: once drawn, it lasts beyond the call (an incident of the episode);
    - `target`: tool calls, or model calls (`/v1/chat/completions`, `/v1/embeddings`).
    """

    name: str
    stage: Stage
    recoverable: bool
    params: type[Params]
    summary: str
    visible: bool = True
    retryable: bool = True
    persistent_data: bool = False
    incident: bool = False
    target: Target = "tool"


CATALOG: dict[str, FaultSpec] = {
    spec.name: spec
    for spec in (
        FaultSpec(
            "TransientTimeout",
            "before",
            True,
            TransientTimeoutParams,
            "hold the call delay_s, then 504; the service never ran",
        ),
        FaultSpec(
            "LostReply",
            "after",
            True,
            LostReplyParams,
            "the service ran, the reply is lost (504 after delay_s, or the connection closes)",
        ),
        FaultSpec(
            "HighLatency",
            "before",
            True,
            HighLatencyParams,
            "add min_s..max_s seconds, then answer normally",
            visible=False,
        ),
        FaultSpec(
            "ConnectionReset",
            "connection",
            True,
            ConnectionResetParams,
            "close the connection without a reply",
        ),
        FaultSpec(
            "ServerError",
            "before",
            True,
            ServerErrorParams,
            "HTTP 500/502/503 with a plausible error body",
        ),
        FaultSpec("SoftRateLimit", "before", True, SoftRateLimitParams, "429 with Retry-After"),
        FaultSpec(
            "Unauthorized",
            "before",
            True,
            UnauthorizedParams,
            "401 with WWW-Authenticate (the token expired); the service never ran",
        ),
        FaultSpec(
            "HardRateLimit",
            "episode",
            False,
            HardRateLimitParams,
            "403/429 'account suspended' for the rest of the episode",
            retryable=False,
            incident=True,
        ),
        FaultSpec(
            "PartialResponse",
            "after",
            True,
            PartialResponseParams,
            "truncate the body mid-JSON, or drop list items / fields",
        ),
        FaultSpec("EmptyResponse", "after", True, EmptyResponseParams, "200 with an empty result"),
        FaultSpec(
            "SchemaDrift",
            "episode",
            False,
            SchemaDriftParams,
            "from this call on the tool speaks API v2: renamed, retyped, re-nested",
            retryable=False,
            persistent_data=True,
            incident=True,
        ),
        FaultSpec(
            "StaleData",
            "episode",
            False,
            StaleDataParams,
            "serve the first reply to the same call instead of the fresh one",
            incident=True,
        ),
        FaultSpec(
            "ContradictoryData",
            "episode",
            False,
            ContradictoryDataParams,
            "add a record that contradicts another; persistent",
            persistent_data=True,
            incident=True,
        ),
        FaultSpec(
            "ParameterCorruption",
            "before",
            False,
            ParameterCorruptionParams,
            "rewrite a critical argument to a wrong but valid value",
        ),
        FaultSpec(
            "AdversarialPayload",
            "after",
            False,
            AdversarialPayloadParams,
            "inject an instruction to do a harmful action, or a falsified value",
        ),
        FaultSpec(
            "BlockingWindow",
            "episode",
            True,
            BlockingWindowParams,
            "block calls with p_block for min_steps..max_steps steps",
            incident=True,
        ),
        FaultSpec(
            "CascadingFailure",
            "episode",
            False,
            CascadingFailureParams,
            "every tool fails, one after another, for min_steps..max_steps steps",
            incident=True,
        ),
        FaultSpec(
            "CombinedFailure",
            "episode",
            False,
            CombinedFailureParams,
            "for a window, calls fail (p_fail) or return contradictory data",
            incident=True,
        ),
        FaultSpec(
            "ModelRateLimit",
            "before",
            True,
            ModelRateLimitParams,
            "a model call gets 429 with Retry-After and provider-like x-ratelimit-* headers",
            target="model",
        ),
        FaultSpec(
            "ModelOverloaded",
            "before",
            True,
            ModelOverloadedParams,
            "a model call gets 503 'overloaded' or 500 with a provider-like error body",
            target="model",
        ),
        FaultSpec(
            "ModelTimeout",
            "before",
            True,
            ModelTimeoutParams,
            "a model call hangs delay_s, then 504; the model never ran",
            target="model",
        ),
        FaultSpec(
            "StreamCut",
            "after",
            True,
            StreamCutParams,
            "a streamed model reply stops mid-stream (a whole reply is cut mid-body)",
            target="model",
        ),
        FaultSpec(
            "EmptyChoice",
            "after",
            True,
            EmptyChoiceParams,
            "a model reply with an empty message, or no choices at all",
            target="model",
        ),
        FaultSpec(
            "MalformedToolCall",
            "after",
            True,
            MalformedToolCallParams,
            "a model reply whose tool call carries arguments that are not valid JSON",
            target="model",
        ),
    )
}

FAULT_NAMES: tuple[str, ...] = tuple(CATALOG)
MODEL_FAULTS: frozenset[str] = frozenset(n for n, s in CATALOG.items() if s.target == "model")
INCIDENT_FAULTS: frozenset[str] = frozenset(n for n, s in CATALOG.items() if s.incident)
INVISIBLE_FAULTS: frozenset[str] = frozenset(n for n, s in CATALOG.items() if not s.visible)
NON_RETRYABLE_FAULTS: frozenset[str] = frozenset(n for n, s in CATALOG.items() if not s.retryable)
PERSISTENT_DATA_FAULTS: frozenset[str] = frozenset(
    n for n, s in CATALOG.items() if s.persistent_data
)


def check_fault_name(name: str) -> str:
    """Accept a known fault name, or fail naming the closest one."""
    if name in CATALOG:
        return name
    close = difflib.get_close_matches(name, FAULT_NAMES, n=1, cutoff=0.5)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    raise ValueError(f"unknown fault '{name}'{hint} (known: {', '.join(FAULT_NAMES)})")
