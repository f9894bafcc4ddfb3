"""Faults of the transport: a call that hangs, a reply that is lost, late or cut off."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from chaosproxy.faults.models import McpRender, Params, ResponseEffect
from chaosproxy.faults.responses import error_body, error_response
from chaosproxy.faults.unit import Applied, BeforeCall, Effect, FaultUnit, Reply, shorter


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


class TransientTimeout(FaultUnit):
    name = "TransientTimeout"
    params = TransientTimeoutParams
    stage = "before"
    recoverable = True
    summary = "hold the call delay_s, then 504; the service never ran"

    def simpler(self, params: Params) -> list[Params]:
        """A shorter hang."""
        if not isinstance(params, TransientTimeoutParams):
            return []
        return [params.model_copy(update={"delay_s": value}) for value in shorter(params.delay_s)]

    def before(self, call: BeforeCall) -> Applied | None:
        params = call.settings(TransientTimeoutParams)
        response = error_response(
            params.status,
            call.call_salt,
            mcp_render=params.mcp_render,
            message=f"The upstream server did not respond within {params.delay_s:g} s.",
        )
        return call.respond(response, delay_s=params.delay_s)


class LostReply(FaultUnit):
    name = "LostReply"
    params = LostReplyParams
    stage = "after"
    recoverable = True
    summary = "the service ran, the reply is lost (504 after delay_s, or the connection closes)"
    after_rank = 80

    def simpler(self, params: Params) -> list[Params]:
        """A shorter hang."""
        if not isinstance(params, LostReplyParams):
            return []
        return [params.model_copy(update={"delay_s": value}) for value in shorter(params.delay_s)]

    def after(self, reply: Reply) -> Effect | ResponseEffect | None:
        """Whatever the service answered: the agent never gets it."""
        params = LostReplyParams.model_validate(reply.planned.params)
        lost = params.flavour == "timeout"
        return ResponseEffect(
            action="lost_reply" if lost else "reset",
            status=params.status,
            delay_s=params.delay_s,
            body=error_body(params.status, reply.planned.salt) if lost else None,
            delivered=True,
            notes={"flavour": params.flavour},
        )


class HighLatency(FaultUnit):
    name = "HighLatency"
    params = HighLatencyParams
    stage = "before"
    recoverable = True
    summary = "add min_s..max_s seconds, then answer normally"
    visible = False

    def simpler(self, params: Params) -> list[Params]:
        """A shorter delay: the range's top (and its bottom with it) cut out or halved."""
        if not isinstance(params, HighLatencyParams):
            return []
        return [
            params.model_copy(update={"max_s": value, "min_s": min(params.min_s, value)})
            for value in shorter(params.max_s)
        ]

    def before(self, call: BeforeCall) -> Applied | None:
        params = call.settings(HighLatencyParams)
        delay = round(params.min_s + (params.max_s - params.min_s) * call.call_salt, 3)
        call.info.params["delay_s"] = delay
        return Applied(info=call.info, delay_s=delay)


class ConnectionReset(FaultUnit):
    name = "ConnectionReset"
    params = ConnectionResetParams
    stage = "connection"
    recoverable = True
    summary = "close the connection without a reply"
    after_rank = 70

    def before(self, call: BeforeCall) -> Applied | None:
        if call.settings(ConnectionResetParams).when == "request":
            return Applied(info=call.info, action="reset")
        return call.plan(self.name)

    def after(self, reply: Reply) -> Effect | ResponseEffect | None:
        return ResponseEffect(action="reset", status=reply.status, delivered=True)
