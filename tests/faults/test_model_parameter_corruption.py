"""ModelParameterCorruption on the pure engine: the tool call inside the model's first chat
reply gets a wrong but valid critical argument (any domain's hint for that tool), what it
did is logged with the fault, and later model calls of the episode are left alone."""

from __future__ import annotations

import json
from typing import Any

from chaosproxy.profiles.loader import load_profile

from chaosproxy.faults import CallContext, FaultEngine

CITIES = ["Dubai", "Tokyo", "London"]


def _reply(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {"id": "c0", "type": "function", "function": {"name": name}}
    call["function"]["arguments"] = json.dumps(arguments)
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}


def _engine() -> FaultEngine:
    engine = FaultEngine(load_profile("agentprop-p2-model"), seed=5)
    # the hint belongs to the weather domain; model calls are of the "llm" route
    city = {"kind": "choice", "values": CITIES}
    engine.set_hints("weather", {"critical_args": {"get_current_weather": {"city": city}}})
    return engine


def _model_call(episode: str) -> CallContext:
    return CallContext(
        episode=episode, step=1, domain="llm", tool="chat.completions", target="model"
    )


def test_the_first_reply_is_rewritten_and_logged() -> None:
    engine = _engine()
    decision = engine.before_call(_model_call("e"))
    assert decision.fault is not None and decision.fault.name == "ModelParameterCorruption"
    body = _reply("get_current_weather", {"city": "Dubai", "units": "metric"})
    effect = engine.after_call(decision, 200, body)
    assert effect.action == "replace" and effect.delivered
    sent = json.loads(
        effect.body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    )
    # the critical argument (not the hint-less `units`) now names another city of the list
    assert sent["units"] == "metric" and sent["city"] in CITIES and sent["city"] != "Dubai"
    logged = decision.fault.params["effect"]
    assert (logged["tool"], logged["argument"], logged["original"]) == (
        "get_current_weather",
        "city",
        "Dubai",
    )
    assert logged["corrupted"] == sent["city"]
    assert body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == (
        json.dumps({"city": "Dubai", "units": "metric"})
    ), "the upstream's body is not changed in place"
    # one injection per episode: the second model call draws nothing
    assert engine.before_call(_model_call("e")).fault is None


def test_a_reply_without_a_tool_call_is_not_delivered() -> None:
    engine = _engine()
    decision = engine.before_call(_model_call("words"))
    text = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}}]}
    effect = engine.after_call(decision, 200, text)
    assert not effect.delivered and effect.action == "pass"
    assert decision.fault is not None and "effect" not in decision.fault.params
