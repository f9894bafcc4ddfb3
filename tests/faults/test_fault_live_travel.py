"""Faults against the real travel service on 127.0.0.1: its hints, its bodies, its oracle."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from chaosproxy.domains.kit.testing import serve_app
from chaosproxy.domains.registry import get_domain
from faults_helpers import only

from chaosproxy.faults import CallContext, Decision, FaultEngine

SEARCH = {"origin": "SFO", "dest": "JFK", "date": "2026-03-10"}


@pytest.fixture(scope="module")
def service() -> Iterator[str]:
    with serve_app(get_domain("travel").asgi_app()) as url:
        yield url


@pytest.fixture(scope="module")
def hints(service: str) -> dict[str, Any]:
    data: dict[str, Any] = httpx.get(f"{service}/_oracle/hints").json()
    return data


@pytest.fixture
def episode() -> str:
    return f"faults-{uuid.uuid4().hex[:10]}"


def forward(service: str, decision: Decision) -> httpx.Response:
    return httpx.post(
        f"{service}/tools/{decision.tool}",
        json=decision.arguments,
        headers={"X-Chaos-Episode": decision.episode, "X-Chaos-Step": str(decision.step)},
    )


def decide(
    engine: FaultEngine,
    episode: str,
    step: int,
    tool: str,
    transport: str = "rest",
    **arguments: Any,
) -> Decision:
    return engine.before_call(
        CallContext(
            episode=episode,
            step=step,
            domain="travel",
            tool=tool,
            transport=transport,
            arguments=arguments,
        )
    )


def search_body(service: str, episode: str) -> dict[str, Any]:
    response = httpx.post(
        f"{service}/tools/search_flights", json=SEARCH, headers={"X-Chaos-Episode": episode}
    )
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    assert len(body["flights"]) >= 3
    return body


def test_corrupted_arguments_are_wrong_but_accepted_by_the_service(
    service: str, hints: dict[str, Any], episode: str
) -> None:
    changed: set[str] = set()
    for seed in range(12):
        engine = only("ParameterCorruption", hints=hints, seed=seed)
        decision = decide(engine, episode, 1, "search_flights", **SEARCH)
        assert decision.fault is not None
        params = decision.fault.params
        name = params["argument"]
        assert [k for k in SEARCH if decision.arguments[k] != SEARCH[k]] == [name]
        assert (
            params["original"] == SEARCH[name] and params["corrupted"] == decision.arguments[name]
        )
        assert params["spec"] == hints["critical_args"]["search_flights"][name]
        response = forward(service, decision)
        assert response.status_code == 200, response.text
        assert response.json()[name] == decision.arguments[name]
        changed.add(name)
    assert changed == {"origin", "dest", "date"}


@pytest.mark.parametrize("mode", ["drop_items", "drop_fields", "truncate"])
def test_partial_response_on_a_real_search(service: str, episode: str, mode: str) -> None:
    body = search_body(service, episode)
    engine = only("PartialResponse", {"modes": [mode]})
    effect = engine.after_call(decide(engine, episode, 1, "search_flights", **SEARCH), 200, body)
    if mode == "truncate":
        assert effect.truncated_text is not None
        assert json.dumps(body, ensure_ascii=False).startswith(effect.truncated_text)
        with pytest.raises(json.JSONDecodeError):
            json.loads(effect.truncated_text)
    elif mode == "drop_items":
        kept = effect.body["flights"]
        assert 0 < len(kept) < len(body["flights"])
        assert all(flight in body["flights"] for flight in kept)
        assert effect.body["total"] == body["total"]
    else:
        dropped = set(effect.notes["PartialResponse"]["dropped_fields"])
        assert "flight_id" not in dropped
        for before, after in zip(body["flights"], effect.body["flights"], strict=True):
            assert set(after) == set(before) - dropped
            assert all(after[key] == before[key] for key in after)


def test_empty_and_drifted_real_search(service: str, episode: str) -> None:
    body = search_body(service, episode)
    empty = only("EmptyResponse")
    effect = empty.after_call(decide(empty, episode, 1, "search_flights", **SEARCH), 200, body)
    assert effect.body["flights"] == [] and effect.body["total"] == 0
    assert effect.body["origin"] == body["origin"]

    drift = only("SchemaDrift", first_step_only=True)
    effect = drift.after_call(decide(drift, episode, 1, "search_flights", **SEARCH), 200, body)
    data = effect.body["data"]
    assert effect.body["api_version"] == "v2"
    for before, after in zip(body["flights"], data["flights"], strict=True):
        assert after["flightId"] == before["flight_id"]
        assert after["seatsLeft"] == str(before["seats_left"])
        assert after["cost"] == {
            "amount": f"{before['price']['amount']:.2f}",
            "currency": before["price"]["currency"],
        }
        assert after["from"]["code"] == before["origin"]["code"]


def test_drifted_tool_list_and_drifted_arguments_still_reach_the_service(
    service: str, episode: str
) -> None:
    listed = httpx.get(f"{service}/tools").json()
    entries = listed["tools"] if isinstance(listed, dict) else listed
    tools = [
        {
            "name": t["name"],
            "description": t["description"],
            "inputSchema": t["input_schema"],
            "outputSchema": t["output_schema"],
        }
        for t in entries
    ]
    engine = only("SchemaDrift", first_step_only=True)
    decide(engine, episode, 1, "search_flights", transport="mcp", **SEARCH)
    rewritten = {t["name"]: t for t in engine.rewrite_tool_list(episode, "travel", tools)}
    drifted_args = set(rewritten["search_flights"]["inputSchema"]["properties"])
    assert drifted_args == {"from", "to", "day"}
    assert rewritten["hold_flight"] == next(t for t in tools if t["name"] == "hold_flight")
    decision = decide(
        engine,
        episode,
        2,
        "search_flights",
        transport="mcp",
        **{"from": "SFO", "to": "JFK", "day": "2026-03-10"},
    )
    assert decision.arguments == SEARCH
    response = forward(service, decision)
    assert response.status_code == 200
    effect = engine.after_call(decision, 200, response.json())
    assert (
        effect.body["data"]["flights"][0]["flightId"] == response.json()["flights"][0]["flight_id"]
    )


def test_contradiction_and_injection_on_a_real_search(
    service: str, hints: dict[str, Any], episode: str
) -> None:
    body = search_body(service, episode)
    engine = only("ContradictoryData")
    effect = engine.after_call(decide(engine, episode, 1, "search_flights", **SEARCH), 200, body)
    flights = effect.body["flights"]
    assert len(flights) == len(body["flights"]) + 1
    info = effect.notes["ContradictoryData"]
    index = int(info["path"].split("[")[1].rstrip("]"))
    original, clone = flights[index], flights[index + 1]
    assert original == body["flights"][index] and clone["flight_id"] == original["flight_id"]
    assert [k for k in original if original[k] != clone[k]] == [info["field"]]

    engine = only("AdversarialPayload", hints=hints)
    decision = decide(engine, episode, 2, "search_flights", **SEARCH)
    assert decision.fault is not None
    action = decision.fault.params["harmful_action"]
    assert action in hints["harmful_actions"]
    effect = engine.after_call(decision, 200, copy.deepcopy(body))
    text = effect.notes["AdversarialPayload"]["text"]
    assert f"`{action['tool']}`" in text and action["pretext"] in text
    assert json.dumps(action["arguments"]) in text
    assert {k: v for k, v in effect.body.items() if k != "notice"} == body


def test_lost_reply_loses_the_answer_but_the_write_happened(service: str, episode: str) -> None:
    httpx.post(f"{service}/_oracle/episodes/{episode}/reset", json={})
    engine = only("LostReply", {"delay_s": 0.0})
    decision = decide(engine, episode, 1, "hold_flight", flight_id="UA-1523")
    assert decision.action == "forward"
    response = forward(service, decision)
    assert response.status_code == 200
    effect = engine.after_call(decision, response.status_code, response.json())
    assert effect.action == "lost_reply" and effect.status == 504
    journal = httpx.get(f"{service}/_oracle/episodes/{episode}/journal").json()
    entries = [e for e in journal["entries"] if e["tool"] == "hold_flight"]
    assert len(entries) == 1 and entries[0]["arguments"]["flight_id"] == "UA-1523"
