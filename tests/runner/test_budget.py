"""--max-tokens / --max-cost stop starting new episodes once reached, and say so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chat_server import chat_server
from click.testing import CliRunner

from chaosproxy.cli import main
from chaosproxy.records import EPISODES_FILE, EpisodeRecord, read_jsonl

TASK = "travel-14-escalate-no-flight"


def escalate(body: dict[str, Any]) -> dict[str, Any]:
    """Escalate, then answer: two model calls of 100 tokens each per episode."""
    usage = {"prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 100}
    if not any(m["role"] == "tool" for m in body["messages"]):
        function = {"name": "escalate_to_human", "arguments": json.dumps({"reason": "none"})}
        call = {"id": "c0", "type": "function", "function": function}
        return {"role": "assistant", "content": None, "tool_calls": [call], "_usage": usage}
    return {"role": "assistant", "content": "Escalated.", "_usage": usage}


def test_max_tokens_stops_new_episodes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    flags = ["run", "--agent", "react", "--model", "m", "--domains", "travel", "--tasks", TASK,
             "--profile", "lambda0.0", "--trials", "4", "--concurrency", "1", "--no-score",
             "--price", "m=1000/1000", "--out", str(out)]  # fmt: skip
    with chat_server(escalate) as (url, requests):
        result = CliRunner().invoke(main, [*flags, "--base-url", url, "--max-tokens", "300"])
        assert result.exit_code == 0, result.output
        records = list(read_jsonl(out / EPISODES_FILE, EpisodeRecord))
        # 200 tokens after one episode (< 300: go on), 400 after two: no third starts
        assert [r.usage.total_tokens if r.usage else None for r in records] == [200, 200]
        assert len(requests) == 4
        assert "--max-tokens 300 reached (400 tokens used)" in result.output
        assert "2 not run" in result.output

        # resumed with a cost cap instead: US$0.2 per episode (200 tokens at US$1000/M)
        result = CliRunner().invoke(
            main, [*flags, "--base-url", url, "--resume", "--max-cost", "0.5"]
        )
        assert result.exit_code == 0, result.output
        assert len(list(read_jsonl(out / EPISODES_FILE, EpisodeRecord))) == 3
        assert "--max-cost 0.5 reached (US$0.6000 spent)" in result.output


def test_max_cost_needs_a_price(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["run", "--agent", "react", "--model", "m", "--tasks", TASK, "--domains", "travel",
         "--max-cost", "1", "--out", str(tmp_path / "run"), "--base-url", "http://127.0.0.1:9/v1"],
    )  # fmt: skip
    assert result.exit_code != 0
    assert "--max-cost needs a --price for m" in result.output
