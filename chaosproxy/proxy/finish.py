"""`finish`: the one place a request is answered and logged.

Every request the agent port accepts (tool call, model call, protocol traffic, a refused
body) ends here exactly once with an outcome (`effects.Finished`). `finish` settles whether
a fault was delivered, builds the `CallRecord` fields, writes the log line (flushed before
any reply byte: by the listener's pre-reply hook for whole replies, here for resets and
stream events), tells the observers, and returns the reply or resets the connection: a
request gets either a reply or a reset, never both.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from chaosproxy.proxy.effects import (
    CLIENT_GONE,
    JSON_HEADERS,
    RESET_STATUS,
    Cut,
    EndStream,
    Failed,
    Finished,
    Gone,
    InStream,
    Outcome,
    Rendered,
    encode_body,
    error_body,
    outcome_for,
)
from chaosproxy.proxy.exchange import Draft, Exchange, client_gone, reset_connection
from chaosproxy.proxy.listener import Answer, Response, StreamResponse
from chaosproxy.proxy.logbound import logged_arguments

log = logging.getLogger("chaosproxy.proxy")


def finish(x: Exchange, outcome: Finished, stream: StreamResponse | None = None) -> Answer:
    """Answer `x` with `outcome` and log it (once). `stream`: the open stream the outcome
    happened in (the relay writes its bytes after this returns)."""
    draft = x.draft
    if isinstance(outcome, (Rendered, Failed)):  # a tuple: checked faster than a union
        if isinstance(outcome, Failed):
            draft.error = draft.error or outcome.error or f"{outcome.kind}: {outcome.message}"
            draft.fault_effective = False
            body = encode_body(error_body(outcome.kind, outcome.message))
            reply = Response(outcome.status, body, JSON_HEADERS)
            said: Outcome = outcome.outcome
        else:
            reply = Response(outcome.status, outcome.body, outcome.headers)
            said = outcome.outcome or outcome_for(
                outcome.status, tool_call=draft.kind == "tool_call"
            )
        if draft.trace is not None:
            draft.trace.reply(reply.body)
        here = _deliver(x)
        _write(
            x,
            status=reply.status if here else CLIENT_GONE,
            outcome=said,
            bytes_out=len(reply.body) if here else 0,
        )
        return reply
    answer: Answer = stream if stream is not None else Response(204)
    if isinstance(outcome, Gone):
        draft.fault_delivered = False
        draft.error = draft.error or "client disconnected before the reply"
        _write(x, status=CLIENT_GONE, outcome="reset", bytes_out=outcome.bytes_out)
        return answer
    here = _deliver(x)
    if isinstance(outcome, Cut):
        _write(x, status=RESET_STATUS, outcome="reset", bytes_out=outcome.bytes_out)
        x.core.log.flush()
        reset_connection(x.request)
        return answer
    if isinstance(outcome, EndStream):
        _write(x, status=outcome.status, outcome="reset", bytes_out=outcome.bytes_out)
    else:
        assert isinstance(outcome, InStream)
        if outcome.error is not None:
            draft.error = draft.error or outcome.error
        status = outcome.status if here else CLIENT_GONE
        _write(x, status=status, outcome=outcome.outcome, bytes_out=outcome.bytes_out)
    x.core.log.flush()
    return answer


def _deliver(x: Exchange) -> bool:
    """Settle `fault_delivered` just before answering; False when the client is gone."""
    draft = x.draft
    gone = client_gone(x.request)
    draft.fault_delivered = draft.fault is not None and draft.fault_effective and not gone
    if gone:
        draft.error = draft.error or "client disconnected before the reply"
    return not gone


def _write(x: Exchange, *, status: int, outcome: Outcome, bytes_out: int) -> None:
    """The log line, the metrics, the episode's notes and the observers (once per request)."""
    draft, core = x.draft, x.core
    if draft.logged:
        return
    draft.logged = True
    said = x.said
    if said is not None:
        if said.note is not None:
            draft.note = said.note
        if said.usage is not None:
            draft.usage = said.usage
        if said.retry_after_s is not None:
            draft.retry_after_s = said.retry_after_s
    fields = record(
        draft, run_seed=core.run_seed, status=status, outcome=outcome, bytes_out=bytes_out
    )
    core.log.write(fields)
    if draft.trace is not None:  # the call's span ends here, and only here
        draft.trace.finish(fields)
    core.metrics.observe(
        domain=draft.route.domain,
        transport=draft.transport,
        kind=draft.kind,
        status=status,
        fault=draft.fault.name if draft.fault is not None else None,
        delivered=draft.fault_delivered,
        latency_s=fields["latency_ms"] / 1000.0,
    )
    book = core.book
    if draft.fault is not None and draft.step is not None:
        book.note_fault(draft.route.episode, draft.step, draft.fault.name, draft.fault_delivered)
    elif draft.fault is not None and draft.kind == "model_call":
        book.note_model_fault(
            draft.route.episode, draft.tool or "", draft.fault.name, draft.fault_delivered
        )
    if draft.upstream_status is not None and draft.upstream_status >= 500:
        book.note_service_error(draft.route.episode)
    for observer in core.observers:
        try:
            observer(fields, x.request.headers)
        except Exception:  # an observer's bug must not lose the reply
            log.exception("chaosproxy: a call observer failed")


def record(
    draft: Draft, *, run_seed: int, status: int, outcome: Outcome, bytes_out: int
) -> dict[str, Any]:
    """The CallRecord fields, in the model's order (records.CallRecord): every field a
    request's log line has is set here, from the draft (arguments over 64 KiB once, as
    sha256/size stubs: logbound)."""
    arguments, forwarded = logged_arguments(
        draft.arguments, draft.forwarded_arguments, draft.bytes_in
    )
    fields: dict[str, Any] = {
        "ts": draft.ts,
        "run_seed": run_seed,
        "episode": draft.route.episode,
        "episode_key": draft.episode_key or draft.route.episode,
        "step": draft.step,
        "domain": draft.route.domain,
        "tool": draft.tool,
        "transport": draft.transport,
        "kind": draft.kind,
        "method": draft.method,
        "path": draft.path,
        "rpc_method": draft.rpc_method,
        "arguments": arguments,
        "forwarded_arguments": forwarded,
        "fault": draft.fault.model_dump(mode="json") if draft.fault is not None else None,
        "fault_delivered": draft.fault_delivered,
        "upstream_called": draft.upstream_called,
        "upstream_status": draft.upstream_status,
        "status": status,
        "outcome": outcome,
        "latency_ms": round((time.perf_counter() - draft.started) * 1000.0, 3),
        "bytes_in": draft.bytes_in,
        "bytes_out": bytes_out,
        "retry_after_s": draft.retry_after_s,
        "error": draft.error,
        "note": draft.note,
        "route": draft.api_route,
        "model": draft.model,
        "usage": draft.usage,
    }
    if draft.restarted:
        fields["episode_restarted"] = True
    if draft.attempt is not None:
        fields["attempt"] = draft.attempt
    if draft.paced_ms is not None:
        fields["paced_ms"] = draft.paced_ms
    if draft.provider_retries:
        fields["provider_retries"] = draft.provider_retries
        fields["provider_wait_ms"] = draft.provider_wait_ms
    return fields
