"""The engine's edges: what the proxy tells it about a call and what it answers.

`FaultInfo` is the log's `FaultRecord` (from the shared vocabulary, `chaosproxy.types`,
the one module of the project this package imports) with `fresh` always set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from chaosproxy.types import DrawKey, FaultRecord, Stage, Target, Transport

__all__ = ["DrawKey", "FaultRecord", "Stage", "Target", "Transport"]

McpRender = Literal["http", "jsonrpc_error", "tool_error"]
McpEffect = Literal["session_expired", "unknown_tool", "invalid_arguments"]


class Params(BaseModel):
    """Base of every fault's parameters: unknown keys are errors, not silent defaults."""

    model_config = ConfigDict(extra="forbid")


class FaultInfo(FaultRecord):
    """The fault that shaped a call, as the proxy's log keeps it (`fresh` always set by
    the engine: False when the call only continues an incident started earlier)."""

    fresh: bool = True


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


@dataclass(frozen=True, slots=True, kw_only=True)
class SyntheticResponse:
    """A reply the engine makes up instead of calling the service.

    `mcp_render` says how an MCP front-end shows it: the HTTP status itself, a
    JSON-RPC error, or a tool result with `isError: true` whose text is the body.
    `mcp_effect`: an MCP-native failure the MCP front-end renders as a server would: the
    session forgotten (404), an unknown tool, arguments the tool no longer takes (read by
    the front-end; not part of dumps, which stay as they were).
    """

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    mcp_render: McpRender = "http"
    mcp_effect: Annotated[McpEffect | None, Field(exclude=True)] = None

    def model_dump(self, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        return _dump(self, mode)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedEffect:
    """A response-stage effect chosen in `before_call`, applied in `after_call`."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    salt: float = 0.0
    incident: str | None = None

    def model_dump(self, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        return _dump(self, mode)


@dataclass(slots=True, kw_only=True)
class Decision:
    """What to do with one call. Carries everything `after_call` needs.

    `argument_renames`: drifted argument name -> upstream name; `in_scope` False: the
    profile's scope leaves this call out; `wants_reply`: whether `after_call` needs the
    reply's body (a planned response effect, or a profile that remembers replies,
    StaleData). False: forward it untouched, unread. Not frozen: `before_call` sets
    `wants_reply` once the decision is made.
    """

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
    argument_renames: dict[str, str] = field(default_factory=dict)
    planned: list[PlannedEffect] = field(default_factory=list)
    in_scope: bool = True
    wants_reply: bool = False
    arguments_key: Annotated[str | None, Field(exclude=True)] = field(default=None, compare=False)
    """`args_key` of `arguments` when `before_call` worked it out (StaleData's key), so
    `after_call` does not again; None: not worked out. Not part of dumps or equality."""
    kept_already: Annotated[bool, Field(exclude=True)] = field(default=False, compare=False)
    """True: `after_call` would keep nothing of this reply (a REST call with no planned
    effect whose reply is already kept), so the proxy may pass it unread. `wants_reply`
    still says what the profile reads. Not part of dumps or equality."""

    def model_dump(self, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        return _dump(self, mode)


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseEffect:
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

    What a front-end needs to render the effect, typed (read by the proxy; not part of
    dumps, which stay as they were): `cut_after_events`, a streamed reply's events let
    through before the connection is cut; `keep_fraction`, the share of a whole reply's
    bytes sent when no JSON could be cut in it; `reason`, why the planned fault did not
    act (not delivered), for the log's note.
    """

    action: Literal["pass", "replace", "truncate", "lost_reply", "reset", "end_stream"]
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    truncate_at: int | None = None
    truncated_text: str | None = None
    delay_s: float = 0.0
    delivered: bool = True
    mcp_render: McpRender = "http"
    notes: dict[str, Any] = field(default_factory=dict)
    cut_after_events: Annotated[int | None, Field(exclude=True)] = None
    keep_fraction: Annotated[float | None, Field(exclude=True)] = None
    reason: Annotated[str | None, Field(exclude=True)] = None

    def model_dump(self, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        return _dump(self, mode)


_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}


def _dump(value: Any, mode: Literal["python", "json"]) -> dict[str, Any]:
    """The dict pydantic makes of `value` (as when these were pydantic models): for tests
    and tools that record decisions, never on the proxy's path."""
    kind = type(value)
    adapter = _ADAPTERS.get(kind)
    if adapter is None:
        adapter = _ADAPTERS[kind] = TypeAdapter(kind)
    out: dict[str, Any] = adapter.dump_python(value, mode=mode)
    return out
