"""One tool call, whatever its protocol: identify → engine → before → forward → after → finish.

Protocol adapters (`chaosproxy.proxy.protocols`) are sans-I/O: they parse a request into a
`ToolCall`, render the upstream request, parse the reply and render the engine's effect as
an outcome (`Rendered | Cut | EndStream`, per event for streams). This module does the
I/O, in the same order for every call, and ends in `finish` (finish.py), the only code
that answers and logs:

1. identify: the adapter's `ToolCall` (tool name, arguments); the step is counted here;
2. engine: `FaultEngine.before_call` → `Decision`;
3. before-effect: hold `delay_s`; cut the connection, or answer the synthetic reply;
4. forward: the adapter renders the (possibly corrupted) arguments into the upstream
   request; the upstream is called through the bounded pool;
5. after-effect: the reply is read whole (or relayed event by event, relay.py); the
   adapter says what the engine judges, `Exchange.after` asks `FaultEngine.after_call`
   and holds its delay, the adapter renders the effect;
6. finish: delivery settled, the log line written, the reply returned or the connection
   reset. A crash of the engine or an adapter is finished too (a logged 500).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from multidict import CIMultiDict

from chaosproxy.faults import (
    CallContext,
    Decision,
    FaultInfo,
    ResponseEffect,
    SyntheticResponse,
)
from chaosproxy.proxy import relay
from chaosproxy.proxy.core import Core
from chaosproxy.proxy.effects import (
    AskEngine,
    Cut,
    Failed,
    Outgoing,
    Rendered,
    Reply,
    Said,
    ToolCall,
    retry_after_seconds,
)
from chaosproxy.proxy.exchange import Draft, Exchange
from chaosproxy.proxy.finish import finish
from chaosproxy.proxy.listener import Answer, Request
from chaosproxy.proxy.provider import ModelLeg
from chaosproxy.proxy.routing import EPISODE_HEADER, STEP_HEADER
from chaosproxy.proxy.upstream import (
    UpstreamFailure,
    UpstreamReply,
    forward_headers,
    read_all,
    response_headers,
)

log = logging.getLogger("chaosproxy.proxy")

__all__ = ["Adapter", "ToolCall", "run"]


class Adapter(Protocol):
    """What a protocol provides the pipeline (one instance per request; no I/O)."""

    said: Said
    """What the adapter learnt for the log (a note, token usage, a Retry-After)."""

    def outgoing(self, call: ToolCall, forwarded: dict[str, Any] | None) -> Outgoing:
        """The upstream request carrying `forwarded` (the arguments after the engine)."""
        ...

    def synthetic(
        self, call: ToolCall, response: SyntheticResponse, fault: FaultInfo | None
    ) -> Rendered:
        """The engine's made-up reply (for `fault`), in this protocol."""
        ...

    def passed(self, reply: Reply) -> Rendered:
        """The service's reply as it goes out when no fault acts on it."""
        ...

    def ask(self, reply: Reply) -> AskEngine | None:
        """What the engine judges in the reply (None: nothing, it passes)."""
        ...

    def render(self, effect: ResponseEffect, reply: Reply, decision: Decision) -> Rendered | Cut:
        """The engine's effect on the reply, in this protocol."""
        ...

    def streamer(
        self, status: int, headers: CIMultiDict[str], decision: Decision
    ) -> relay.StreamRules | None:
        """The rules for a streamed (SSE) reply; None: read it whole."""
        ...


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
    x = Exchange(core, request, draft, said=adapter.said)
    leg: ModelLeg | None = None
    if draft.trace is not None:
        adapter.said.seen = draft.trace.model_reply
    try:
        x.decision = decision = ask_engine(core, draft, call)
        if decision.delay_s > 0:
            await asyncio.sleep(decision.delay_s)
        if decision.action == "reset":
            return finish(x, Cut())
        if decision.action == "respond" and decision.response is not None:
            rendered = adapter.synthetic(call, decision.response, decision.fault)
            draft.retry_after_s = retry_after_seconds(rendered.headers)
            return finish(x, rendered)
        forwarded = decision.arguments if call.arguments is not None else None
        draft.forwarded_arguments = forwarded
        out = adapter.outgoing(call, forwarded)
        extra = {EPISODE_HEADER: draft.route.episode}
        if draft.step is not None:
            extra[STEP_HEADER] = str(draft.step)
        if draft.trace is not None:
            draft.trace.upstream(call, extra)
        extra.update(out.headers)
        headers = forward_headers(request.headers, extra)
        send: Callable[..., AbstractAsyncContextManager[UpstreamReply]] = core.upstream.request
        if call.target == "model":  # paced, re-sent on provider 429/5xx (provider.py)
            leg = ModelLeg(core, draft, adapter.said, out.body)
            send = leg.request
        async with send(
            out.method, out.url, headers, out.body, streaming=out.streaming
        ) as upstream:
            draft.upstream_called = True
            draft.upstream_status = upstream.status
            reply_headers = response_headers(upstream.headers)
            if reply_headers.get("Content-Type", "").startswith("text/event-stream"):
                rules = adapter.streamer(upstream.status, reply_headers, decision)
                if rules is not None:
                    return await relay.stream(x, upstream, reply_headers, rules)
            raw = await read_all(upstream, core.upstream.limits.max_response_bytes)
        reply = Reply(upstream.status, reply_headers, raw)
        if not x.wants_reply:  # λ0's fast path, without a coroutine for `answer`
            return finish(x, adapter.passed(reply))
        return await answer(x, adapter, reply, decision)
    except UpstreamFailure as failure:
        return finish(x, upstream_failed(failure))
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a crash of the engine or an adapter: still one logged answer
        if draft.logged:
            raise
        log.exception("chaosproxy: the pipeline crashed on %s %s", request.method, request.path)
        return finish(x, crashed(exc))
    finally:
        if leg is not None:
            leg.settle()


async def answer(x: Exchange, adapter: Adapter, reply: Reply, decision: Decision) -> Answer:
    """Steps 5 and 6 for a whole reply."""
    if not x.wants_reply:
        return finish(x, adapter.passed(reply))
    ask = adapter.ask(reply)
    if ask is None:
        return finish(x, adapter.passed(reply))
    effect = await x.after(ask.status, ask.body)
    return finish(x, adapter.render(effect, reply, decision))


def upstream_failed(failure: UpstreamFailure) -> Failed:
    """The service itself failed (not an injected fault): say so, clearly."""
    return Failed(
        failure.status,
        f"upstream_{failure.kind}",
        str(failure),
        outcome="timeout" if failure.status == 504 else "http_error",
        error=f"{failure.kind}: {failure}",
    )


def crashed(exc: BaseException) -> Failed:
    return Failed(
        500,
        "proxy_error",
        "internal error in chaosproxy (not an injected fault)",
        error=f"proxy error: {exc!r}",
    )
