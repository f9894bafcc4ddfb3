"""LLM paraphrase at ε ≥ 0.2, against a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from chat_server import chat_server

from chaosproxy.records import EPISODES_FILE, EpisodeRecord, read_jsonl
from chaosproxy.runner.paraphrase import Paraphraser, missing_facts

PREFIX = "Could you sort this out for me? "


def rewrite(mode: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The scripted model: a faithful rewrite, or one that drops every digit."""

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        text = body["messages"][-1]["content"]
        if mode == "faithful":
            return {"role": "assistant", "content": PREFIX + text}
        return {"role": "assistant", "content": "".join(c for c in text if not c.isdigit())}

    return reply


@pytest.mark.parametrize(
    ("original", "paraphrase", "lost"),
    [
        ("Book UA-1523 on 2026-03-10 for 2 people.", "Reserve UA-1523 for 2 on 2026-03-10.", []),
        ("Book UA-1523 on 2026-03-10.", "Book UA-1523 on March 10.", ["2026-03-10"]),
        ("Refund order ORD-50001 by 120.50 USD.", "Refund ORD-50001.", ["120.50"]),
    ],
)
def test_missing_facts(original: str, paraphrase: str, lost: list[str]) -> None:
    assert missing_facts(original, paraphrase) == lost


@pytest.mark.parametrize(("mode", "accepted"), [("faithful", True), ("lossy", False)])
async def test_paraphraser_checks_meaning(mode: str, accepted: bool) -> None:
    with chat_server(rewrite(mode)) as (url, requests):
        paraphraser = Paraphraser("scripted-model", url)
        text = "Book UA-1523 on 2026-03-10 for Ana Ruiz."
        result = await paraphraser.paraphrase(text, seed=42)
        await paraphraser.close()
    assert result.accepted is accepted
    assert result.text == (PREFIX + text if accepted else text)
    assert requests[0]["temperature"] == 0 and requests[0]["seed"] == 42


def test_a_run_paraphrases_each_cell_once(tmp_path: Path, run_grid: Callable[..., Any]) -> None:
    out = tmp_path / "run"
    with chat_server(rewrite("faithful")) as (url, requests):
        run_grid(
            out,
            agents=["robust"],
            domains=["travel"],
            task_patterns=["travel-01*", "travel-03*"],
            epsilons=[0.0, 0.2],
            trials=2,
            paraphrase_model="scripted-model",
            paraphrase_base_url=url,
        )
    records = list(read_jsonl(out / EPISODES_FILE, EpisodeRecord))
    assert len(records) == 2 * 2 * 2
    assert len(requests) == 2
    for record in records:
        if record.epsilon == 0.2:
            assert record.task_text.startswith(PREFIX)
            assert record.perturbations[-1] == "paraphrase"
        else:
            assert "paraphrase" not in record.perturbations
        assert record.success is True
    config = json.loads((out / "config.json").read_text())
    assert config["settings"]["paraphrase_model"] == "scripted-model"
