"""The react agent against a scripted OpenAI-compatible server: tools in, tool calls out."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from chat_server import chat_server

from chaosproxy.records import CALLS_FILE, EPISODES_FILE, EpisodeRecord, read_jsonl

ESCALATION_TASK = "travel-14-escalate-no-flight"
BOOKING_TASK = "travel-01-book-named-flight"


def scripted_model(body: dict[str, Any]) -> dict[str, Any]:
    """First a call with broken arguments, then a search, then escalation, then a final answer."""
    seen = [m for m in body["messages"] if m["role"] == "tool"]

    def call(name: str, arguments: str) -> dict[str, Any]:
        function = {"name": name, "arguments": arguments}
        tool_call = {"id": f"call-{len(seen)}", "type": "function", "function": function}
        return {"role": "assistant", "content": None, "tool_calls": [tool_call]}

    if len(seen) == 0:
        return call("search_flights", "{not json")
    if len(seen) == 1:
        return call(
            "search_flights", json.dumps({"origin": "SFO", "dest": "JFK", "date": "2026-03-10"})
        )
    if len(seen) == 2:
        return call("escalate_to_human", json.dumps({"reason": "scripted model gives up"}))
    return {"role": "assistant", "content": "Handed over to a human."}


@pytest.mark.parametrize("transport", ["rest", "mcp"])
def test_react_drives_tools_through_the_proxy(
    tmp_path: Path, run_grid: Callable[..., Any], transport: str
) -> None:
    out = tmp_path / transport
    with chat_server(scripted_model) as (url, requests):
        run_grid(
            out,
            agents=["react"],
            model="scripted-model",
            base_url=url,
            domains=["travel"],
            task_patterns=[ESCALATION_TASK, BOOKING_TASK],
            transport=transport,
        )
    records = {r.task_id: r for r in read_jsonl(out / EPISODES_FILE, EpisodeRecord)}
    assert {r.outcome for r in records.values()} == {"completed"}
    assert records[ESCALATION_TASK].success is True
    assert records[BOOKING_TASK].success is False
    assert all(r.escalated for r in records.values())

    first = requests[0]
    assert first["model"] == "scripted-model" and first["temperature"] == 0
    offered = {tool["function"]["name"]: tool["function"] for tool in first["tools"]}
    assert {"search_flights", "hold_flight", "escalate_to_human"} <= set(offered)
    assert "origin" in offered["search_flights"]["parameters"]["properties"]
    asked = {request["messages"][1]["content"] for request in requests}
    assert asked == {record.task_text for record in records.values()}
    tool_messages = [m for r in requests for m in r["messages"] if m["role"] == "tool"]
    assert any("not valid JSON" in m["content"] for m in tool_messages)
    assert any('"flights"' in m["content"] for m in tool_messages)

    calls = [json.loads(line) for line in (out / CALLS_FILE).read_text().splitlines()]
    episode = records[BOOKING_TASK].episode
    steps = [(c["tool"], c["transport"]) for c in calls if c["episode"] == episode and c["step"]]
    assert steps == [("search_flights", transport), ("escalate_to_human", transport)]
