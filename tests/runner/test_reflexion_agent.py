"""The reflexion agent: judges a trial failed from what it saw, reflects, retries with it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from chat_server import chat_server

from chaosproxy.records import CALLS_FILE, EPISODE_DIR, EPISODES_FILE, EpisodeRecord, read_jsonl

TASK = "travel-01-book-named-flight"
REFLECTION = "Reflection: XX-0000 does not exist; the request names UA-1523, hold that one."
USAGE = {"prompt_tokens": 40, "completion_tokens": 4, "total_tokens": 44}


def _call(name: str, arguments: dict[str, Any], n: int) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    tool_call = {"id": f"call-{n}", "type": "function", "function": function}
    return {"role": "assistant", "content": None, "tool_calls": [tool_call], "_usage": USAGE}


def scripted_model(body: dict[str, Any]) -> dict[str, Any]:
    """Trial 1 holds a flight that does not exist and gives up; asked to reflect, it names
    the right flight; trial 2, with the reflection in its system prompt, books it."""
    if body.get("tool_choice") == "none":
        return {"role": "assistant", "content": REFLECTION, "_usage": USAGE}
    tool_messages = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if REFLECTION not in body["messages"][0]["content"]:
        if not tool_messages:
            return _call("hold_flight", {"flight_id": "XX-0000"}, 0)
        return {"role": "assistant", "content": "Sorry, I could not hold it.", "_usage": USAGE}
    if not tool_messages:
        return _call("hold_flight", {"flight_id": "UA-1523"}, 1)
    if len(tool_messages) == 1:
        hold = json.loads(tool_messages[0])["hold"]["hold_id"]
        arguments = {
            "flight_id": "UA-1523",
            "passenger": "Ana Ruiz",
            "payment_info": "corp_amex_1004",
            "hold_id": hold,
        }
        return _call("confirm_booking", arguments, 2)
    return {"role": "assistant", "content": "Booked.", "_usage": USAGE}


@pytest.mark.parametrize("transport", ["rest", "mcp"])
def test_reflexion_reflects_and_retries_against_a_scripted_model(
    tmp_path: Path, run_grid: Callable[..., Any], transport: str
) -> None:
    out = tmp_path / transport
    with chat_server(scripted_model) as (url, requests):
        run_grid(
            out,
            agents=["reflexion"],
            model="scripted",
            base_url=url,
            domains=["travel"],
            task_patterns=[TASK],
            transport=transport,
        )
    (record,) = read_jsonl(out / EPISODES_FILE, EpisodeRecord)
    assert record.outcome == "completed" and record.success is True
    # trial 1: 2 turns; reflection: 1; trial 2: 3 turns.
    assert record.model_calls == 6 == len(requests)
    assert record.usage is not None and record.usage.total_tokens == 6 * 44
    (asked,) = [r for r in requests if r.get("tool_choice") == "none"]
    assert any("XX-0000" in str(m.get("content")) for m in asked["messages"] if m["role"] == "tool")
    assert "could not hold it" in asked["messages"][-2]["content"]
    later = requests[requests.index(asked) + 1]
    assert REFLECTION in later["messages"][0]["content"]
    assert later["messages"][1]["content"] == record.task_text

    calls = [json.loads(line) for line in (out / CALLS_FILE).read_text().splitlines()]
    steps = [c["tool"] for c in calls if c["episode"] == record.episode and c["step"]]
    assert steps == ["hold_flight", "hold_flight", "confirm_booking"]
    notes = json.loads((out / EPISODE_DIR / record.episode / "stdout.txt").read_text())["notes"]
    assert notes[0].startswith("trial 1 judged failed: hold_flight failed")


OUTAGE = "name: outage\nfailure_rate: 1.0\nweights:\n  ServerError: 1.0\n"


@pytest.mark.parametrize("transport", ["rest", "mcp"])
def test_reflexion_against_the_mock_model_under_an_outage(
    tmp_path: Path,
    run_grid: Callable[..., Any],
    mock_model_url: str,
    transport: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("outage.yaml").write_text(OUTAGE)
    out = tmp_path / transport
    run_grid(
        out,
        agents=["reflexion"],
        model="mock+ignores-errors",
        base_url=mock_model_url,
        domains=["travel"],
        task_patterns=[TASK],
        profiles=["outage.yaml"],
        transport=transport,
    )
    (record,) = read_jsonl(out / EPISODES_FILE, EpisodeRecord)
    assert record.outcome == "completed" and record.success is False
    assert record.mock_model is True
    # three trials of one failed call and a final word each, two reflections between them.
    assert record.model_calls == 3 * 2 + 2
    notes = json.loads((out / EPISODE_DIR / record.episode / "stdout.txt").read_text())["notes"]
    reflections = [n for n in notes if n.startswith("reflection")]
    assert len(reflections) == 2 and all("hold_flight failed" in n for n in reflections)
