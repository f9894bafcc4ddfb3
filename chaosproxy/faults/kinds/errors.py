"""Error replies in the service's place: server errors, rate limits, an expired token."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from chaosproxy.faults.draws import pick
from chaosproxy.faults.models import McpRender, Params
from chaosproxy.faults.responses import error_response
from chaosproxy.faults.unit import Applied, BeforeCall, FaultUnit, fewer


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


def server_error(call: BeforeCall, statuses: list[int], mcp_render: McpRender) -> Applied:
    """One of `statuses`, picked by the call's draw, with a plausible error body."""
    status = pick(call.call_salt, statuses)
    call.info.params["status"] = status
    return call.respond(error_response(status, call.call_salt, mcp_render=mcp_render))


class ServerError(FaultUnit):
    name = "ServerError"
    params = ServerErrorParams
    stage = "before"
    recoverable = True
    summary = "HTTP 500/502/503 with a plausible error body"

    def simpler(self, params: Params) -> list[Params]:
        """One status instead of several."""
        if not isinstance(params, ServerErrorParams) or len(params.statuses) < 2:
            return []
        return [params.model_copy(update={"statuses": [status]}) for status in params.statuses]

    def before(self, call: BeforeCall) -> Applied | None:
        params = call.settings(ServerErrorParams)
        return server_error(call, params.statuses, params.mcp_render)


class SoftRateLimit(FaultUnit):
    name = "SoftRateLimit"
    params = SoftRateLimitParams
    stage = "before"
    recoverable = True
    summary = "429 with Retry-After"

    def simpler(self, params: Params) -> list[Params]:
        """A shorter Retry-After."""
        if not isinstance(params, SoftRateLimitParams):
            return []
        return [params.model_copy(update={"retry_after_s": n}) for n in fewer(params.retry_after_s)]

    def before(self, call: BeforeCall) -> Applied | None:
        params = call.settings(SoftRateLimitParams)
        response = error_response(
            params.status,
            call.call_salt,
            headers={"Retry-After": str(params.retry_after_s)},
            mcp_render=params.mcp_render,
            message=f"Rate limit exceeded. Retry after {params.retry_after_s} s.",
            retry_after=params.retry_after_s,
        )
        return call.respond(response)


class Unauthorized(FaultUnit):
    name = "Unauthorized"
    params = UnauthorizedParams
    stage = "before"
    recoverable = True
    summary = "401 with WWW-Authenticate (the token expired); the service never ran"

    def before(self, call: BeforeCall) -> Applied | None:
        params = call.settings(UnauthorizedParams)
        response = error_response(
            401,
            call.call_salt,
            headers={"WWW-Authenticate": params.challenge},
            mcp_render=params.mcp_render,
            message="The access token expired; authenticate again.",
        )
        return call.respond(response)


class HardRateLimit(FaultUnit):
    name = "HardRateLimit"
    params = HardRateLimitParams
    stage = "episode"
    recoverable = False
    summary = "403/429 'account suspended' for the rest of the episode"
    retryable = False
    incident = True

    def before(self, call: BeforeCall) -> Applied | None:
        params = call.settings(HardRateLimitParams)
        message = (
            "This account has been suspended for exceeding its quota."
            if params.status == 403
            else "Quota exhausted for this billing period."
        )
        response = error_response(
            params.status, call.call_salt, message=message, mcp_render=params.mcp_render
        )
        return call.respond(response)

    def episode_wide(self, params: Params) -> bool:
        return isinstance(params, HardRateLimitParams) and params.scope == "episode"
