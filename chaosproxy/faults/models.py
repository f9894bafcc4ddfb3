"""The engine's edges: what the proxy tells it about a call and what it answers.

`FaultInfo` and `DrawKey` are field-compatible with `chaosproxy.records.FaultRecord`
and `DrawKey` (this package imports nothing else of the project), so a front-end logs
a decision with `FaultRecord.model_validate(decision.fault.model_dump())`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Stage = Literal["before", "after", "connection", "episode"]
McpRender = Literal["http", "jsonrpc_error", "tool_error"]
McpEffect = Literal["session_expired", "unknown_tool", "invalid_arguments"]
Transport = Literal["rest", "mcp"]
Target = Literal["tool", "model"]


class Params(BaseModel):
    """Base of every fault's parameters: unknown keys are errors, not silent defaults."""

    model_config = ConfigDict(extra="forbid")


class DrawKey(BaseModel):
    """Everything needed to reproduce one draw: `uniform(key)` gives it back.

    `tool` is `domain/tool` for call draws and `*` for episode-level draws.
    """

    model_config = ConfigDict(frozen=True)

    seed: int
    episode_key: str
    tool: str
    position: int
    purpose: str


class FaultInfo(BaseModel):
    """The fault that shaped a call, as the proxy's log keeps it.

    `fresh` is False when the call only continues an incident started earlier
    (a hard rate limit, a drift, a blocking window); `incident` names that incident.
    `also` lists other incidents that touched the same call.
    """

    name: str
    stage: Stage
    recoverable: bool
    params: dict[str, Any] = Field(default_factory=dict)
    draw: DrawKey | None = None
    incident: str | None = None
    fresh: bool = True
    also: list[str] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class CallContext:
    """One tool call as the front-end sees it, before it is forwarded.

    A plain dataclass, not a pydantic model: the proxy builds one per call from values it
    has already checked. `step` is the 1-based tool-call count in the episode; `target`
    "model" means only model-call faults apply; `mcp_session`: an MCP call inside a session
    (it carries Mcp-Session-Id); `stream`: a model call that asked for a streamed reply
    (faults acting on whole replies are re-picked).
    """

    episode: str
    step: int
    domain: str
    tool: str
    transport: Transport = "rest"
    arguments: dict[str, Any] = field(default_factory=dict)
    target: Target = "tool"
    mcp_session: bool = False
    stream: bool = False

    def __post_init__(self) -> None:
        if self.step < 1:
            raise ValueError(f"CallContext.step counts from 1, got {self.step}")


class SyntheticResponse(BaseModel):
    """A reply the engine makes up instead of calling the service.

    `mcp_render` says how an MCP front-end shows it: the HTTP status itself, a
    JSON-RPC error, or a tool result with `isError: true` whose text is the body.
    """

    status: int
    headers: dict[str, str] = Field(default_factory=dict)
    body: Any = None
    mcp_render: McpRender = "http"
    mcp_effect: McpEffect | None = Field(
        None,
        exclude=True,
        description="an MCP-native failure the MCP front-end renders as a server would: the "
        "session forgotten (404), an unknown tool, arguments the tool no longer takes "
        "(read by the front-end; not part of dumps, which stay as they were)",
    )


class PlannedEffect(BaseModel):
    """A response-stage effect chosen in `before_call`, applied in `after_call`."""

    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    salt: float = 0.0
    incident: str | None = None


class Decision(BaseModel):
    """What to do with one call. Carries everything `after_call` needs."""

    action: Literal["forward", "respond", "reset"]
    arguments: dict[str, Any]
    delay_s: float = 0.0
    fault: FaultInfo | None = None
    response: SyntheticResponse | None = None
    episode: str
    episode_key: str
    seed: int
    profile: str
    step: int
    domain: str
    tool: str
    transport: Transport
    position: int
    argument_renames: dict[str, str] = Field(
        default_factory=dict, description="drifted argument name -> upstream name"
    )
    planned: list[PlannedEffect] = Field(default_factory=list)
    in_scope: bool = Field(True, description="False: the profile's scope leaves this call out")
    wants_reply: bool = Field(
        False,
        description="whether `after_call` needs the reply's body: a planned response effect, "
        "or a profile that remembers replies (StaleData). False: forward it untouched, unread",
    )


class ResponseEffect(BaseModel):
    """What to do with the upstream reply.

    - pass: send `status`/`body` as they came;
    - replace: send `status`, `headers`, `body` instead;
    - truncate: send the first `truncate_at` bytes of the serialized `body`
      (`truncated_text` is exactly that text, for `json.dumps(body, ensure_ascii=False)`);
    - lost_reply: the service ran, but hold `delay_s` then answer `status` (504);
    - reset: hold `delay_s`, then close the connection without a reply;
    - end_stream: the service ran; the reply's stream ends (cleanly) before the reply.
    `delivered` is False when the planned fault found nothing to act on (e.g.
    StaleData with no earlier reply to the same call).
    """

    action: Literal["pass", "replace", "truncate", "lost_reply", "reset", "end_stream"]
    status: int
    headers: dict[str, str] = Field(default_factory=dict)
    body: Any = None
    truncate_at: int | None = None
    truncated_text: str | None = None
    delay_s: float = 0.0
    delivered: bool = True
    mcp_render: McpRender = "http"
    notes: dict[str, Any] = Field(default_factory=dict)
