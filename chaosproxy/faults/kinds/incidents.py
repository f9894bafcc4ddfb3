"""Incidents that span several steps: a blocking window, a cascading outage, f_combined."""

from __future__ import annotations

from pydantic import Field

from chaosproxy.faults.draws import between, derive
from chaosproxy.faults.kinds.errors import server_error
from chaosproxy.faults.models import McpRender, Params
from chaosproxy.faults.responses import error_response
from chaosproxy.faults.unit import Applied, BeforeCall, FaultUnit, fewer

_CASCADE_DEPENDENCIES = ["primary database", "auth service", "search index", "message queue"]


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


def _steps(params: Params, salt: float) -> int | None:
    if isinstance(params, BlockingWindowParams | CascadingFailureParams):
        high = max(params.min_steps, params.max_steps)
        return between(derive(salt, "duration"), params.min_steps, high)
    return None


class BlockingWindow(FaultUnit):
    name = "BlockingWindow"
    params = BlockingWindowParams
    stage = "episode"
    recoverable = True
    summary = "block calls with p_block for min_steps..max_steps steps"
    incident = True

    def simpler(self, params: Params) -> list[Params]:
        """An incident of fewer steps."""
        if not isinstance(params, BlockingWindowParams):
            return []
        return [
            params.model_copy(update={"max_steps": n, "min_steps": min(params.min_steps, n)})
            for n in fewer(params.max_steps, least=1)
        ]

    def before(self, call: BeforeCall) -> Applied | None:
        """The window's first call (the drawing call, or a planned incident's first) is
        blocked, so the incident always reaches the agent; later calls with `p_block`."""
        params = call.settings(BlockingWindowParams)
        if call.touched > 0 and call.call_salt >= params.p_block:
            return None
        response = error_response(
            params.status,
            call.call_salt,
            mcp_render=params.mcp_render,
            message=f"The action '{call.ctx.tool}' is temporarily blocked; try again shortly.",
        )
        return call.respond(response)

    def span(self, params: Params, salt: float) -> int | None:
        return _steps(params, salt)


class CascadingFailure(FaultUnit):
    name = "CascadingFailure"
    params = CascadingFailureParams
    stage = "episode"
    recoverable = False
    summary = "every tool fails, one after another, for min_steps..max_steps steps"
    incident = True

    def simpler(self, params: Params) -> list[Params]:
        """An incident of fewer steps."""
        if not isinstance(params, CascadingFailureParams):
            return []
        return [
            params.model_copy(update={"max_steps": n, "min_steps": min(params.min_steps, n)})
            for n in fewer(params.max_steps, least=1)
        ]

    def before(self, call: BeforeCall) -> Applied | None:
        params = call.settings(CascadingFailureParams)
        status = params.statuses[call.offset % len(params.statuses)]
        dependency = _CASCADE_DEPENDENCIES[call.offset % len(_CASCADE_DEPENDENCIES)]
        call.info.params.update(status=status, cascade_step=call.offset + 1)
        response = error_response(
            status,
            call.call_salt,
            mcp_render=params.mcp_render,
            message=f"Upstream dependency failure: {dependency} unavailable.",
        )
        return call.respond(response)

    def span(self, params: Params, salt: float) -> int | None:
        return _steps(params, salt)

    def episode_wide(self, params: Params) -> bool:
        return True


class CombinedFailure(FaultUnit):
    name = "CombinedFailure"
    params = CombinedFailureParams
    stage = "episode"
    recoverable = False
    summary = "for a window, calls fail (p_fail) or return contradictory data"
    incident = True

    def before(self, call: BeforeCall) -> Applied | None:
        """The window's first call fails; later ones with `p_fail`, else they pass with
        contradictory data."""
        params = call.settings(CombinedFailureParams)
        if call.touched > 0 and call.call_salt >= params.p_fail:
            call.info.params["mode"] = "contradictory"
            return call.plan("ContradictoryData")
        return server_error(call, params.statuses, params.mcp_render)

    def span(self, params: Params, salt: float) -> int | None:
        return between(derive(salt, "duration"), 1, 2)

    def episode_wide(self, params: Params) -> bool:
        return True
