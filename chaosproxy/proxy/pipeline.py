"""One tool call, whatever its protocol: identify → engine → before → forward → after → log → reply.

Protocol adapters (`chaosproxy.proxy.protocols`) only parse a request into a `ToolCall`
and render the engine's decisions back in their protocol; this module drives every call
through the same steps, in the same order:

1. identify: the adapter's `ToolCall` (tool name, arguments); the step is counted here;
2. engine: `FaultEngine.before_call` → `Decision`;
3. before-effect: hold `delay_s`; reset the connection, or answer the synthetic reply;
4. forward: the adapter renders the (possibly corrupted) arguments into the upstream
   request; the upstream is called through the bounded pool;
5. after-effect: the adapter reads the reply and hands it to `Exchange.after`, which asks
   `FaultEngine.after_call` and holds its delay; the adapter renders the effect;
6. log and reply: `Core.send` / `Core.reset` write the log line just before the reply.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from multidict import CIMultiDict
from yarl import URL

from chaosproxy.faults import CallContext, Decision, ResponseEffect, SyntheticResponse
from chaosproxy.proxy.core import Core
from chaosproxy.proxy.exchange import Draft, Outcome
from chaosproxy.proxy.listener import Answer, Request
from chaosproxy.proxy.routing import EPISODE_HEADER, STEP_HEADER
from chaosproxy.proxy.upstream import UpstreamFailure, UpstreamReply

Target = Literal["tool", "model"]


@dataclass(slots=True)
class ToolCall:
    """One call as an adapter parsed it. `arguments` None: the body is no JSON object."""

    tool: str
    arguments: dict[str, Any] | None
    target: Target = "tool"
    session: bool = False
    """An MCP call inside a session (it carries `Mcp-Session-Id`)."""
    stream: bool = False
    """A model call that asked for a streamed reply."""


@dataclass(slots=True)
class Outgoing:
    """The upstream request an adapter renders from the forwarded arguments."""

    method: str
    url: URL
    headers: CIMultiDict[str]
    body: bytes
    streaming: bool = False


@dataclass(slots=True)
class Rendered:
    """A reply the proxy sends instead of the service's."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    outcome: Outcome | None = None


class Adapter(Protocol):
    """What a protocol provides the pipeline (one instance per request)."""

    def outgoing(
        self, call: ToolCall, forwarded: dict[str, Any] | None, extra: dict[str, str]
    ) -> Outgoing:
        """The upstream request carrying `forwarded` (the arguments after the engine), with
        the `extra` headers (episode, step) set."""
        ...

    def synthetic(self, call: ToolCall, response: SyntheticResponse) -> Rendered:
        """The engine's made-up reply, in this protocol."""
        ...

    async def reply(self, x: Exchange, upstream: UpstreamReply) -> Answer:
        """Read the upstream reply, pass it through `x.after`, render and send the result."""
        ...


@dataclass(slots=True)
class Exchange:
    """One forwarded call in flight: what an adapter needs to finish it."""

    core: Core
    request: Request
    draft: Draft
    decision: Decision

    @property
    def wants_reply(self) -> bool:
        """False: no response fault can act, so the reply goes out unread (λ0's fast path)."""
        return self.decision.wants_reply

    async def after(self, status: int, body: Any) -> ResponseEffect:
        """The engine's effect on the reply; its delay is held here."""
        try:
            effect = self.core.engine.after_call(self.decision, status=status, body=body)
        except RecursionError:  # a reply nested deeper than the body faults can walk
            self.draft.note = "response body nested too deeply for body faults: passed untouched"
            effect = ResponseEffect(action="pass", status=status, body=body, delivered=False)
        if not effect.delivered:
            self.draft.fault_effective = False
        if effect.action != "pass" and effect.delay_s > 0:
            await asyncio.sleep(effect.delay_s)
        return effect

    def send(self, rendered: Rendered) -> Answer:
        return self.core.send(
            self.request,
            self.draft,
            status=rendered.status,
            body=rendered.body,
            headers=rendered.headers,
            outcome=rendered.outcome,
        )


def ask_engine(core: Core, draft: Draft, call: ToolCall) -> Decision:
    """Identify the call in the log and ask the engine (tool calls count a step on arrival)."""
    route = draft.route
    draft.tool = call.tool
    draft.arguments = call.arguments
    if call.target == "model":
        draft.kind = "model_call"
        step = max(1, core.book.steps.get(route.episode, 0))
    else:
        draft.kind = "tool_call"
        step = draft.step = core.book.next_step(route.episode)
    context = CallContext(
        episode=route.episode,
        step=step,
        domain=route.domain,
        tool=call.tool,
        transport=draft.transport,
        arguments=call.arguments or {},
        target=call.target,
        mcp_session=call.session,
        stream=call.stream,
    )
    decision = core.engine.before_call(context)
    draft.fault = decision.fault
    draft.episode_key = decision.episode_key
    return decision


async def run(
    core: Core, request: Request, draft: Draft, call: ToolCall, adapter: Adapter
) -> Answer:
    """Drive one tool call through the pipeline (see the module docstring)."""
    decision = ask_engine(core, draft, call)
    if decision.delay_s > 0:
        await asyncio.sleep(decision.delay_s)
    if decision.action == "reset":
        return core.reset(request, draft)
    if decision.action == "respond" and decision.response is not None:
        rendered = adapter.synthetic(call, decision.response)
        draft.retry_after_s = retry_after_seconds(rendered.headers)
        return core.send(
            request,
            draft,
            status=rendered.status,
            body=rendered.body,
            headers=rendered.headers,
            outcome=rendered.outcome,
        )
    forwarded = decision.arguments if call.arguments is not None else None
    draft.forwarded_arguments = forwarded
    extra = {EPISODE_HEADER: draft.route.episode}
    if draft.step is not None:
        extra[STEP_HEADER] = str(draft.step)
    if draft.trace is not None:
        draft.trace.upstream(call, extra)
    out = adapter.outgoing(call, forwarded, extra)
    exchange = Exchange(core, request, draft, decision)
    try:
        async with core.upstream.request(
            out.method, out.url, out.headers, out.body, streaming=out.streaming
        ) as upstream:
            draft.upstream_called = True
            draft.upstream_status = upstream.status
            return await adapter.reply(exchange, upstream)
    except UpstreamFailure as failure:
        return core.upstream_failed(request, draft, failure)


def retry_after_seconds(headers: dict[str, str]) -> float | None:
    for key, value in headers.items():
        if key.lower() == "retry-after":
            try:
                return float(value)
            except ValueError:
                return None
    return None
