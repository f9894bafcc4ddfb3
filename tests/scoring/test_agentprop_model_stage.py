"""AgentProp-Bench §5.2–5.3 at the paper's injection point: ModelParameterCorruption rewrites
the tool call in the model's reply (`chaosproxy mock-model` behind the proxy, on loopback),
and S1 says whether the call the agent then executed carried the injected value."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from chaosproxy.agents.loop import as_openai_tool, opening
from chaosproxy.domains.registry import get_domain

from chaosproxy import Environment
from chaosproxy.commands.reproduce import _mock_model
from chaosproxy.records import CALLS_FILE, CallRecord, read_jsonl
from chaosproxy.scoring.agentprop import ModelInjection, model_stage, observe
from chaosproxy.scoring.episodes import EpisodeScore

TASK = "weather-01-current-dubai"


async def _episode(
    client: httpx.AsyncClient, proxy: str, episode: str, *, reject: bool
) -> dict[str, Any]:
    """One agent turn by hand: ask the model, then run its tool call as received, or (an
    agent that rejects the injected value) with the values the task means (the reference
    solution's first call, Dubai in metric units); ask the model again."""
    task = get_domain("weather").tasks[TASK]
    listing = (await client.get(f"{proxy}/e/{episode}/weather/tools")).json()
    tools = [as_openai_tool(tool) for tool in listing["tools"]]
    messages = opening(task.description)
    url = f"{proxy}/e/{episode}/llm/v1/chat/completions"
    reply = await client.post(url, json={"model": "mock", "messages": messages, "tools": tools})
    assert reply.status_code == 200, reply.text
    message = reply.json()["choices"][0]["message"]
    call = message["tool_calls"][0]["function"]
    arguments = json.loads(call["arguments"])
    if reject:
        arguments = {"city": "Dubai", "units": "metric"}
    result = await client.post(f"{proxy}/e/{episode}/weather/tools/{call['name']}", json=arguments)
    messages += [message, {"role": "tool", "tool_call_id": "call_0", "content": result.text}]
    again = await client.post(url, json={"model": "mock", "messages": messages, "tools": tools})
    assert again.status_code == 200
    return cast(dict[str, Any], call)


@pytest.mark.asyncio
async def test_the_executed_call_carries_the_injected_value_or_not(tmp_path: Path) -> None:
    async with _mock_model() as model_url:
        root = model_url.removesuffix("/v1")
        async with (
            Environment(
                domains=["weather"],
                upstreams={"llm": root},
                profile="agentprop-p2-model",
                run_dir=tmp_path,
            ) as env,
            httpx.AsyncClient(timeout=30) as client,
        ):
            sent = await _episode(client, env.url, "carries", reject=False)
            await _episode(client, env.url, "rejects", reject=True)
    # the mock plays the reference solution: get_current_weather(city="Dubai",
    # units="metric"); the proxy rewrites one of the two to another valid value
    assert sent["name"] == "get_current_weather"
    records = list(read_jsonl(tmp_path / CALLS_FILE, CallRecord))
    model_calls = [r for r in records if r.kind == "model_call"]
    assert len(model_calls) == 4
    first, second = (r for r in model_calls if r.episode == "carries")
    assert first.fault is not None and first.fault_delivered
    effect = first.fault.params["effect"]
    meant = {"city": "Dubai", "units": "metric"}
    assert effect["tool"] == "get_current_weather" and effect["argument"] in meant
    assert effect["original"] == meant[effect["argument"]] != effect["corrupted"]
    assert json.loads(sent["arguments"]) == {**meant, effect["argument"]: effect["corrupted"]}
    assert second.fault is None, "one injection per episode: the first model reply only"

    injections: dict[str, ModelInjection] = {}
    for record in records:
        observe(injections, record)
    carries, rejects = injections["carries"], injections["rejects"]
    assert carries.landed and carries.carried and carries.executed  # S1, S2
    assert rejects.landed and not rejects.carried and not rejects.executed  # rejected


@dataclass
class _Scored:
    """What model_stage reads of an EpisodeScore."""

    evaluable: bool
    success: bool | None
    model_injection: ModelInjection | None


def _injection(carried: bool, executed: bool) -> ModelInjection:
    return ModelInjection(drawn=True, landed=True, carried=carried, executed=executed)


def test_stage_rates_follow_the_paper_by_hand() -> None:
    """Four drawn episodes: A carried, answered, wrong; B rejected, right; C carried,
    answered, right; D carried, not answered, wrong. E evaluable but never drawn (another
    profile's episode), F drawn but not evaluable (infrastructure): both left out.

    n = 4; S1 = {A, C, D} = 3; S2 = {A, C} = 2; S3 = {A, D} = 2.
    p_S1 = 3/4, p_S2 = 2/4, p_S3 = 2/4; r12 = 2/3; r23 = |S3 ∧ S2| / |S2| = 1/2 (A);
    P(S3 | S1) = 2/3 (A, D); rejection = 1 − 3/4 = 1/4; recovery = 1 − 1/2 = 1/2.
    """
    episodes = [
        _Scored(True, False, _injection(True, True)),
        _Scored(True, True, _injection(False, False)),
        _Scored(True, True, _injection(True, True)),
        _Scored(True, False, _injection(True, False)),
        _Scored(True, False, None),
        _Scored(False, None, _injection(True, True)),
    ]
    stage = model_stage(cast(list[EpisodeScore], episodes))
    assert stage is not None
    assert (stage.n, stage.landed, stage.s1, stage.s2, stage.s3) == (4, 4, 3, 2, 2)
    assert (stage.s3_given_s1, stage.s3_given_s2) == (2, 1)
    assert (stage.p_s1.value, stage.p_s2.value, stage.p_s3.value) == (0.75, 0.5, 0.5)
    assert stage.r12.value == pytest.approx(2 / 3) and stage.r12.n == 3
    assert stage.r23.value == 0.5 and stage.r23.n == 2
    assert stage.p_s3_given_s1.value == pytest.approx(2 / 3)
    assert stage.rejection_rate.value == 0.25 and stage.rejection_rate.n == 4
    assert stage.recovery_rate.value == 0.5
    assert model_stage(cast(list[EpisodeScore], episodes[4:5])) is None
