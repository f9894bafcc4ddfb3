"""Token, latency and cost accounting of model calls, and models as a grid axis."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from chat_server import chat_server
from click.testing import CliRunner

from chaosproxy.cli import main
from chaosproxy.records import CONFIG_FILE, EPISODES_FILE, EpisodeRecord, RunConfig, read_jsonl
from chaosproxy.runner.models import usage_table

TASK = "travel-14-escalate-no-flight"


def model_with_usage(sent: list[dict[str, Any] | None]) -> Callable[[dict[str, Any]], Any]:
    """Search, escalate, answer; usage grows with each turn, and the last turn sends none."""

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        turn = len([m for m in body["messages"] if m["role"] == "tool"])
        usage: dict[str, int] | None = {
            "prompt_tokens": 100 + 10 * turn,
            "completion_tokens": 5 + turn,
            "total_tokens": 105 + 11 * turn,
        }
        if turn == 0:
            arguments = {"origin": "SFO", "dest": "JFK", "date": "2026-03-10"}
            message: dict[str, Any] = _call("search_flights", arguments, turn)
        elif turn == 1:
            message = _call("escalate_to_human", {"reason": "no such flight"}, turn)
        else:
            message = {"role": "assistant", "content": "Escalated."}
            usage = None
        sent.append(usage)
        return {**message, "_usage": usage} if usage else message

    return reply


def _call(name: str, arguments: dict[str, Any], turn: int) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"c{turn}", "type": "function", "function": function}],
    }


def test_usage_and_cost_per_model_on_its_own_endpoint(
    tmp_path: Path, run_grid: Callable[..., Any]
) -> None:
    sent_a: list[dict[str, Any] | None] = []
    sent_b: list[dict[str, Any] | None] = []
    out = tmp_path / "run"
    with (
        chat_server(model_with_usage(sent_a)) as (url_a, requests_a),
        chat_server(model_with_usage(sent_b)) as (url_b, requests_b),
    ):
        run_grid(
            out,
            agents=["react", "robust"],
            models=["vendor/model-a", "model-b"],
            base_url=url_a,
            model_urls={"model-b": url_b},
            prices={"vendor/model-a": (2.5, 10.0)},
            domains=["travel"],
            task_patterns=[TASK],
        )
    assert {r["model"] for r in requests_a} == {"vendor/model-a"}
    assert {r["model"] for r in requests_b} == {"model-b"}
    records = {r.agent: r for r in read_jsonl(out / EPISODES_FILE, EpisodeRecord)}
    assert set(records) == {"react.vendor_model-a", "react.model-b", "robust"}
    assert records["robust"].usage is None and records["robust"].model is None

    a = records["react.vendor_model-a"]
    # What the server sent, summed by hand: turns 0 and 1 carried usage, turn 2 none.
    assert sent_a == [
        {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105},
        {"prompt_tokens": 110, "completion_tokens": 6, "total_tokens": 116},
        None,
    ]
    assert a.model == "vendor/model-a" and a.model_calls == 3 and a.usage_missing == 1
    assert a.usage is not None
    assert (a.usage.prompt_tokens, a.usage.completion_tokens, a.usage.total_tokens) == (
        210,
        11,
        221,
    )
    assert a.cost_usd == pytest.approx((210 * 2.5 + 11 * 10.0) / 1e6)
    assert a.model_latency_s is not None and 0 < a.model_latency_s < a.duration_s
    assert a.mock_model is False
    b = records["react.model-b"]
    assert b.usage is not None and b.usage.total_tokens == 221 and b.cost_usd is None
    assert a.episode_key == b.episode_key, "models of one grid meet the same faults"

    config = RunConfig.model_validate_json((out / CONFIG_FILE).read_text())
    assert config.settings["model_endpoints"] == {"vendor/model-a": url_a, "model-b": url_b}
    assert config.settings["prices_per_million"] == {"vendor/model-a": [2.5, 10.0]}
    assert config.settings["mock_model"] == {"model-b": False, "vendor/model-a": False}
    table = "\n".join(usage_table(out / EPISODES_FILE))
    assert "react.vendor_model-a" in table and "0.0006" in table and "n/a" in table


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--price", "gpt-4o=2.5"], "MODEL=IN/OUT"),
        (["--price", "gpt-4o=a/b"], "MODEL=IN/OUT"),
        (["--model", "m", "--base-url", "other=http://x/v1"], "not among the --model values"),
        (["--base-url", "http://a/v1", "--base-url", "http://b/v1"], "use NAME=URL"),
    ],
)
def test_bad_model_flags(tmp_path: Path, arguments: list[str], message: str) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(
        main, ["run", "--agent", "react", *arguments, "--out", str(out), "--no-score"]
    )
    assert result.exit_code != 0 and message in result.output
    assert not out.exists()
