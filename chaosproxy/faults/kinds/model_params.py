"""ModelParameterCorruption: AgentProp-Bench's P2 at the paper's own injection point.

AgentProp-Bench (§4.4) injects at the *parameter-generation* stage: the tool call the model
planned carries a wrong but schema-valid critical argument before the agent executes it.
ParameterCorruption rewrites the call after the agent sent it (the agent never sees the
wrong value, so it cannot reject it); this unit rewrites the tool call inside the model's
reply instead, with the same rules (`corruption.corrupt`, the domains' critical arguments),
so the agent may still notice and not execute it (the paper's rejection, §5.3).

Only the episode's `model_call`-th call of a chat-completions endpoint is touched (by
default the first: the reply that plans the agent's first tool call), so each episode gets
one injection, as in the paper. What it rewrote (tool, argument, original and injected
value) is logged with the fault (`params.effect`): the scorer's S1 compares it with the
call the agent then executed.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from pydantic import Field

from chaosproxy.faults.kinds.corruption import corrupt
from chaosproxy.faults.models import Params
from chaosproxy.faults.unit import Applied, BeforeCall, Effect, FaultUnit, Reply

CRITICAL_KEY = "critical_args"
"""Where `before` hands the critical arguments (every domain's, per tool) to `transform`."""


class ModelParameterCorruptionParams(Params):
    arguments: list[str] | None = Field(
        None, description="only these arguments; default: the tool's critical ones"
    )
    model_call: int = Field(
        1,
        ge=0,
        description="act on the episode's Nth call of the model endpoint (1: the reply that "
        "plans the first tool call, AgentProp §4.4); 0: on every call it is drawn on",
    )


class ModelParameterCorruption(FaultUnit):
    name = "ModelParameterCorruption"
    params = ModelParameterCorruptionParams
    stage = "after"
    recoverable = False
    summary = (
        "the model's tool call carries a wrong but valid critical argument (AgentProp's "
        "parameter-generation injection)"
    )
    target = "model"
    after_rank = 88
    needs = "chat_reply"
    logs_effect = True

    def before(self, call: BeforeCall) -> Applied | None:
        params = call.settings(ModelParameterCorruptionParams)
        if params.model_call and call.position != params.model_call:
            return None
        critical = call.hints.get(CRITICAL_KEY) or {}
        return call.plan(self.name, {**params.model_dump(), CRITICAL_KEY: critical})

    def transform(self, reply: Reply) -> Effect | None:
        planned = dict(reply.planned.params)
        critical = planned.pop(CRITICAL_KEY, None) or {}
        params = ModelParameterCorruptionParams.model_validate(planned)
        return corrupt_tool_call(reply.body, reply.planned.salt, critical, params.arguments)


def corrupt_tool_call(
    body: Any,
    salt: float,
    critical: dict[str, dict[str, dict[str, Any]]],
    only: list[str] | None = None,
) -> Effect | None:
    """The first tool call in the reply with an argument that can be made plausibly wrong,
    rewritten (its `arguments` stay a JSON object string); None when there is none."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list):
        return None
    for index, choice in enumerate(choices):
        message = choice.get("message") if isinstance(choice, dict) else None
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        for position, tool_call in enumerate(calls if isinstance(calls, list) else []):
            function = tool_call.get("function") if isinstance(tool_call, dict) else None
            if not isinstance(function, dict):
                continue
            tool = str(function.get("name") or "")
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except (TypeError, ValueError, RecursionError):
                continue
            if not isinstance(arguments, dict):
                continue
            change = corrupt(arguments, salt, critical.get(tool, {}), only)
            if change is None:
                continue
            new_body = copy.deepcopy(body)
            target = new_body["choices"][index]["message"]["tool_calls"][position]["function"]
            target["arguments"] = json.dumps(
                {**arguments, change.argument: change.corrupted}, ensure_ascii=False
            )
            info = {
                "choice": index,
                "tool_call": position,
                "tool": tool,
                "argument": change.argument,
                "original": change.original,
                "corrupted": change.corrupted,
                "spec": change.spec,
            }
            return Effect(body=new_body, info=info)
    return None
