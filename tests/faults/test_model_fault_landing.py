"""Model faults are drawn only where they can act: EmptyChoice and MalformedToolCall know
whole chat-completions replies only, so on a streamed call or another model API they are
re-picked (the realised rate stays the profile's), and a model fault is no agent step."""

from __future__ import annotations

from collections import Counter

import pytest

from chaosproxy.faults import CallContext, FaultEngine, Profile

MIX = Profile.model_validate(
    {
        "name": "model-mix",
        "failure_rate": 0.4,
        "weights": {"EmptyChoice": 2.0, "MalformedToolCall": 2.0, "ModelOverloaded": 1.0},
    }
)
CALLS = 600


def _drawn(tool: str, stream: bool) -> Counter[str]:
    engine = FaultEngine(MIX, seed=3)
    drawn: Counter[str] = Counter()
    for position in range(CALLS):
        ctx = CallContext(
            episode=f"ep{position // 20}",
            step=1,
            domain="llm",
            tool=tool,
            target="model",
            stream=stream,
        )
        decision = engine.before_call(ctx)
        drawn[decision.fault.name if decision.fault is not None else "none"] += 1
    return drawn


def test_whole_chat_replies_draw_every_model_fault() -> None:
    drawn = _drawn("chat.completions", stream=False)
    assert {"EmptyChoice", "MalformedToolCall", "ModelOverloaded"} <= set(drawn)
    # 0.4 of 600 = 240 faulted calls, binomial sd ~12
    assert abs((CALLS - drawn["none"]) - 240) < 48


@pytest.mark.parametrize(("tool", "stream"), [("chat.completions", True), ("responses", False)])
def test_whole_reply_faults_are_repicked_where_they_cannot_act(tool: str, stream: bool) -> None:
    drawn = _drawn(tool, stream)
    assert set(drawn) == {"none", "ModelOverloaded"}
    assert abs(drawn["ModelOverloaded"] - 240) < 48, "the faulted share is the profile's 0.4"
    if tool == "chat.completions":  # the same gate draws as whole replies: the same calls fail
        assert drawn["ModelOverloaded"] == CALLS - _drawn(tool, stream=False)["none"]


def test_only_unlandable_faults_leave_the_call_untouched() -> None:
    only = Profile.model_validate(
        {"name": "only-empty", "failure_rate": 1.0, "weights": {"EmptyChoice": 1.0}}
    )
    engine = FaultEngine(only, seed=1)
    ctx = CallContext(
        episode="e", step=1, domain="llm", tool="chat.completions", target="model", stream=True
    )
    assert engine.before_call(ctx).fault is None


def test_model_faults_are_no_step_in_the_engine_summary() -> None:
    profile = Profile.model_validate(
        {"name": "rl", "failure_rate": 1.0, "weights": {"ModelRateLimit": 1.0, "ServerError": 1.0}}
    )
    engine = FaultEngine(profile, seed=1)
    model = CallContext(episode="e", step=1, domain="llm", tool="embeddings", target="model")
    tool = CallContext(episode="e", step=1, domain="travel", tool="search_flights")
    engine.before_call(model)
    engine.before_call(tool)
    faults = engine.episode_summary("e")["faults"]
    assert [(f["step"], f["tool"], f["fault"]) for f in faults] == [
        (None, "embeddings", "ModelRateLimit"),
        (1, "search_flights", "ServerError"),
    ]
