"""A fault unit: one fault's parameters, flags and effects, in one class.

The engine decides *whether* a call meets a fault and which one (draws, incidents, plans);
the unit says *what* that fault does: to the call before it is forwarded (`before`) and to
the upstream reply (`after`). Units are registered once, in `chaosproxy.faults.kinds.UNITS`;
the catalogue, the profile schema and the scorer's lists derive from that tuple.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from chaosproxy.faults.models import (
    CallContext,
    FaultInfo,
    Params,
    PlannedEffect,
    ResponseEffect,
    Stage,
    SyntheticResponse,
    Target,
)

if TYPE_CHECKING:
    from chaosproxy.faults.episode import Incident

P = TypeVar("P", bound=Params)
Action = Literal["forward", "respond", "reset"]
Needs = Literal["call", "mcp", "mcp_session", "mcp_initialize", "chat_reply"]
"""Where a fault can land: any call, an MCP tools/call, one inside an MCP session (it
carries `Mcp-Session-Id`), an MCP `initialize`, or a whole (not streamed) chat-completions
reply (`CHAT_REPLY_TOOL`, the only model reply shape EmptyChoice and MalformedToolCall
know). Drawn elsewhere, it is re-picked."""

CHAT_REPLY_TOOL = "chat.completions"
"""The model operation whose whole replies `chat_reply` faults act on."""


@dataclass
class Effect:
    """What a response effect did to a body: the new body and what to log about it."""

    body: Any
    info: dict[str, Any] = field(default_factory=dict)
    truncated_text: str | None = None
    truncate_at: int | None = None


def serialize(body: Any) -> str:
    """The serialization `truncate_at` counts bytes of."""
    return json.dumps(body, ensure_ascii=False)


def shorter(value: float, floor: float = 0.05) -> list[float]:
    """Simpler values of a delay: none at all, then half of it (down to `floor`)."""
    if value <= 0:
        return []
    return [0.0] + ([value / 2] if value / 2 >= floor else [])


def fewer(value: int, least: int = 0) -> list[int]:
    """Simpler values of a count: the least, then half of it, then one less."""
    out: list[int] = []
    for candidate in (least, max(least, value // 2), value - 1):
        if least <= candidate < value and candidate not in out:
            out.append(candidate)
    return out


@dataclass
class Applied:
    """One fault's effect on the call being decided."""

    info: FaultInfo
    action: Action = "forward"
    response: SyntheticResponse | None = None
    delay_s: float = 0.0
    arguments: dict[str, Any] | None = None
    planned: list[PlannedEffect] = field(default_factory=list)

    @property
    def terminal(self) -> bool:
        return self.action != "forward"


@dataclass
class BeforeCall:
    """A call the engine has decided a fault for, as the fault's unit sees it.

    `salt` is the fault's draw (the incident's, for a call inside an incident) and
    `call_salt` this very call's; `offset` counts steps since the incident began (0 for a
    fresh draw); `from_incident` is True when the call lies inside an incident already
    running or planned, False when the fault was drawn on this call, and `touched` counts
    the incident's calls before this one. A unit records what it chose in `info.params`
    (it is logged).
    """

    params: Params
    salt: float
    call_salt: float
    info: FaultInfo
    ctx: CallContext
    arguments: dict[str, Any]
    hints: dict[str, Any]
    incident_id: str | None = None
    offset: int = 0
    from_incident: bool = False
    touched: int = 0
    position: int = 0
    """1-based: this call's place among the episode's calls of the same tool (or model
    endpoint), for fresh draws; 0 inside an incident."""

    def settings(self, kind: type[P]) -> P:
        """The parameters, as the unit's own model."""
        if not isinstance(self.params, kind):
            raise TypeError(f"{self.info.name} got {type(self.params).__name__}")
        return self.params

    def respond(self, response: SyntheticResponse, delay_s: float = 0.0) -> Applied:
        """Answer in the service's place; the service never runs."""
        return Applied(info=self.info, action="respond", response=response, delay_s=delay_s)

    def plan(self, name: str, params: dict[str, Any] | None = None) -> Applied:
        """Forward the call and act on the reply: `name`'s `after` runs in `after_call`."""
        planned = PlannedEffect(
            name=name, params=params or {}, salt=self.salt, incident=self.incident_id
        )
        return Applied(info=self.info, planned=[planned])


@dataclass
class Reply:
    """The upstream's reply to a call that carries a planned effect.

    `body` is the body as earlier effects left it, `original` as the upstream sent it,
    `earlier` the reply a stale cache gives (StaleData): the first one kept for the same
    call, else the tool's first in the episode, or None; `earlier_basis` says which.
    """

    planned: PlannedEffect
    status: int
    body: Any
    original: Any
    earlier: Any = None
    earlier_basis: str | None = None

    @property
    def ok(self) -> bool:
        """A 2xx reply with a JSON body: the only kind body effects act on."""
        return 200 <= self.status < 300 and self.original is not None


class FaultUnit:
    """One fault. Subclasses set the class attributes and override the effects they have.

    Flags: `stage` (before / after / connection / episode), `recoverable`; `visible` (the
    agent can tell something went wrong: HighLatency only delays); `retryable` (retrying the
    same call can help); `persistent_data` (later answers still carry it, yet the call went
    through); `incident` (once drawn it outlives the call); `target` (tool or model calls);
    `per_arguments` (its incident covers only calls with the same arguments); `replays` (it
    serves an earlier reply: replies are kept, and it is drawn only where one is);
    `after_rank` (response effects apply in rising rank: data, then shape, then transport);
    `needs` (where it can land, `Needs`); `hides_tool` (its incident takes the tool out of
    MCP tools/list); `needs_arguments` (it lands only where `acts_on` finds an argument);
    `logs_effect` (what its `after` did is logged with the fault, as `params.effect`).
    """

    name: ClassVar[str]
    params: ClassVar[type[Params]]
    stage: ClassVar[Stage]
    recoverable: ClassVar[bool]
    summary: ClassVar[str]
    visible: ClassVar[bool] = True
    retryable: ClassVar[bool] = True
    persistent_data: ClassVar[bool] = False
    incident: ClassVar[bool] = False
    target: ClassVar[Target] = "tool"
    per_arguments: ClassVar[bool] = False
    replays: ClassVar[bool] = False
    after_rank: ClassVar[int] = 0
    needs: ClassVar[Needs] = "call"
    hides_tool: ClassVar[bool] = False
    needs_arguments: ClassVar[bool] = False
    nothing_to_act_on: ClassVar[str | None] = None
    """Why a 2xx reply gave the unit nothing to act on (the log's note on a model call)."""
    logs_effect: ClassVar[bool] = False

    def acts_on(
        self,
        params: Params,
        salt: float,
        tool: str,
        arguments: dict[str, Any],
        hints: dict[str, Any],
    ) -> bool:
        """For `needs_arguments` units: whether `before` would change anything on a call with
        these arguments (drawn where it would not, the fault is re-picked)."""
        return True

    def before(self, call: BeforeCall) -> Applied | None:
        """The effect on the call; None: this call of the incident goes through untouched.

        By default the call is forwarded and the fault acts on the reply (`after`).
        """
        return call.plan(self.name, call.params.model_dump())

    def after(self, reply: Reply) -> Effect | ResponseEffect | None:
        """The effect on the reply: a new body (`Effect`, later effects build on it), the
        whole answer (`ResponseEffect`, nothing else applies), or None (not delivered).

        By default only 2xx JSON replies are touched, by `transform`.
        """
        return self.transform(reply) if reply.ok else None

    def transform(self, reply: Reply) -> Effect | None:
        """A 2xx JSON body rewritten; None when the body offers nothing to act on."""
        return None

    def simpler(self, params: Params) -> list[Params]:
        """Simpler variants of these parameters (a shorter delay, fewer steps, one mode
        instead of several), the boldest first: shrinking tries them in order and keeps
        the first under which the agent still fails, then asks again. None by default."""
        return []

    def hold_s(self, params: dict[str, Any]) -> float:
        """How long an MCP `initialize` this fault landed on is held (`needs` is
        "mcp_initialize"); 0: not at all."""
        return 0.0

    def not_applied(self, status: int, body: Any) -> str | None:
        """Why the fault, planned on a model call, did not act on its reply (known only once
        the reply came); None: nothing worth a note. Front-ends log it as it is."""
        if self.target != "model":
            return None
        if not 200 <= status < 300:
            return f"{self.name} not applied: the model answered {status}"
        if body is None and self.needs == "chat_reply":
            return f"streamed reply: {self.name} acts on whole replies only"
        if self.nothing_to_act_on is None:
            return None
        return f"{self.name} not applied: {self.nothing_to_act_on}"

    # ---- incidents (only for `incident = True`) ----------------------------------

    def span(self, params: Params, salt: float) -> int | None:
        """How many steps an incident started by a fresh draw lasts; None: the episode."""
        return None

    def episode_wide(self, params: Params) -> bool:
        """Whether its incident covers every tool of the episode, not only the drawn one."""
        return False

    def rewrite_tool(
        self, incident: Incident, tool: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, str]] | None:
        """An MCP tools/list entry as the incident shows it, and its argument renames
        (shown name -> upstream name); None: this fault leaves tool lists alone."""
        return None

    def announced(self, incident: Incident) -> bool:
        """Whether a server would announce this incident's change of tools/list with
        `notifications/tools/list_changed` (only faults that change tool lists)."""
        return False
