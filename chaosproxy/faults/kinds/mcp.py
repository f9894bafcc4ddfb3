"""MCP-native faults: a session, a tool or a stream failing as real MCP servers fail.

Each answers what an MCP server would (the MCP front-end renders `mcp_effect`s as such:
`proxy/protocols/mcp.py`) and lands only where it can (`needs`): a session can only be
forgotten where the client holds one, an `initialize` can only be slow where one is sent.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from pydantic import Field

from chaosproxy.faults.draws import between, derive
from chaosproxy.faults.kinds.schema_drift import API_VERSION, drift_input_schema, renames_of
from chaosproxy.faults.models import Params, ResponseEffect, SyntheticResponse
from chaosproxy.faults.responses import request_id
from chaosproxy.faults.unit import Applied, BeforeCall, Effect, FaultUnit, Reply, fewer, shorter

if TYPE_CHECKING:
    from chaosproxy.faults.episode import Incident


class SessionExpiredParams(Params):
    pass


class SlowInitializeParams(Params):
    delay_s: float = Field(2.0, ge=0, description="how long `initialize` is held")


class StreamClosedParams(Params):
    pass


class ToolRemovedParams(Params):
    min_steps: int = Field(1, ge=1, description="tool-call steps the tool stays gone, at least")
    max_steps: int = Field(2, ge=1)
    announce: bool = Field(True, description="announce tools/list_changed on removal and return")


class ToolChangedParams(Params):
    announce: bool = Field(True, description="announce tools/list_changed when it changes")


class SessionExpired(FaultUnit):
    name = "SessionExpired"
    params = SessionExpiredParams
    stage = "connection"
    recoverable = True
    summary = "MCP: 404 for the Mcp-Session-Id from now on; a new session (initialize) works"
    needs = "mcp_session"
    # retryable: the same call, sent again in a new session, works (and that is what the
    # log shows of a careful client: the scorer cannot see the session change)

    def before(self, call: BeforeCall) -> Applied | None:
        """404, as the MCP SDK's server answers an `Mcp-Session-Id` it does not know."""
        body = {
            "error": {
                "type": "session_not_found",
                "message": "Session not found",
                "status": 404,
                "request_id": request_id(call.salt),
            }
        }
        return call.respond(SyntheticResponse(status=404, body=body, mcp_effect="session_expired"))


class SlowInitialize(FaultUnit):
    name = "SlowInitialize"
    params = SlowInitializeParams
    stage = "connection"
    recoverable = True
    summary = "MCP: initialize (or 2026's server/discover) is held delay_s, then answered"
    visible = False
    needs = "mcp_initialize"

    def simpler(self, params: Params) -> list[Params]:
        """A shorter hold."""
        if not isinstance(params, SlowInitializeParams):
            return []
        return [params.model_copy(update={"delay_s": value}) for value in shorter(params.delay_s)]

    def before(self, call: BeforeCall) -> Applied | None:
        """Only drawn for an `initialize` (`FaultEngine.before_initialize`): the hold."""
        return Applied(info=call.info, delay_s=call.settings(SlowInitializeParams).delay_s)

    def hold_s(self, params: dict[str, Any]) -> float:
        return SlowInitializeParams.model_validate(params).delay_s


class StreamClosed(FaultUnit):
    name = "StreamClosed"
    params = StreamClosedParams
    stage = "after"
    recoverable = True
    summary = "MCP: the service ran, the reply's SSE stream ends before the reply"
    needs = "mcp"
    after_rank = 85

    def after(self, reply: Reply) -> Effect | ResponseEffect | None:
        return ResponseEffect(action="end_stream", status=reply.status, delivered=True)


class ToolRemoved(FaultUnit):
    name = "ToolRemoved"
    params = ToolRemovedParams
    stage = "episode"
    recoverable = True
    summary = "MCP: the tool leaves tools/list (list_changed) and is unknown for a few steps"
    incident = True
    needs = "mcp"
    hides_tool = True

    def simpler(self, params: Params) -> list[Params]:
        """Gone for fewer steps."""
        if not isinstance(params, ToolRemovedParams):
            return []
        return [
            params.model_copy(update={"max_steps": n, "min_steps": min(params.min_steps, n)})
            for n in fewer(params.max_steps, least=1)
        ]

    def before(self, call: BeforeCall) -> Applied | None:
        """fastmcp's answer for a tool it does not list: an error result, not an RPC error."""
        message = f"Unknown tool: {call.ctx.tool!r}"
        body = {"error": {"type": "unknown_tool", "message": message}}
        return call.respond(
            SyntheticResponse(
                status=404, body=body, mcp_render="tool_error", mcp_effect="unknown_tool"
            )
        )

    def span(self, params: Params, salt: float) -> int | None:
        assert isinstance(params, ToolRemovedParams)
        high = max(params.min_steps, params.max_steps)
        return between(derive(salt, "duration"), params.min_steps, high)

    def announced(self, incident: Incident) -> bool:
        return bool(incident.params.get("announce", True))


class ToolChanged(FaultUnit):
    name = "ToolChanged"
    params = ToolChangedParams
    stage = "episode"
    recoverable = True
    summary = "MCP: the tool's arguments get new names in tools/list (list_changed); old refused"
    retryable = False
    incident = True
    needs = "mcp"

    def before(self, call: BeforeCall) -> Applied | None:
        """Old argument names get the kit's validation error; new names are mapped back
        (the engine does that with the renames tools/list showed)."""
        refusal = old_argument_names(call.ctx.tool, call.ctx.arguments)
        call.info.params["old_names"] = refusal is not None
        return Applied(info=call.info) if refusal is None else call.respond(refusal)

    def rewrite_tool(
        self, incident: Incident, tool: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, str]] | None:
        if not isinstance(tool.get("inputSchema"), dict):
            return None
        out = copy.deepcopy(tool)
        out["inputSchema"], renames = drift_input_schema(out["inputSchema"])
        if isinstance(out.get("description"), str):
            out["description"] = f"{out['description']} (arguments renamed in API {API_VERSION})"
        return out, renames

    def announced(self, incident: Incident) -> bool:
        return bool(incident.params.get("announce", True))


def old_argument_names(tool: str, arguments: dict[str, Any]) -> SyntheticResponse | None:
    """The kit's validation error for v1 argument names sent to the changed (v2) tool."""
    renames = renames_of(list(arguments))
    if not renames:
        return None
    problems = [{"field": new, "problem": "required field is missing"} for new in renames.values()]
    problems += [{"field": old, "problem": "unknown field"} for old in renames]
    detail = "; ".join(f"{p['field']}: {p['problem']}" for p in problems)
    body = {
        "error": {
            "type": "validation_error",
            "message": f"invalid arguments for '{tool}': {detail}",
            "field": problems[0]["field"],
            "fields": problems,
            "status": 422,
        }
    }
    return SyntheticResponse(
        status=422, body=body, mcp_render="tool_error", mcp_effect="invalid_arguments"
    )
