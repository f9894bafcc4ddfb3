"""The ap-edm agent: memory built from a run, guided plans above 0.87, Safe Halt when the
task is unlike anything remembered, embeddings local or from /v1/embeddings."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from chaosproxy.agents.apedm.memory import EpisodicMemory
from chaosproxy.agents.embedding import lexical_embedding
from chat_server import chat_server
from click.testing import CliRunner

from chaosproxy.cli import main
from chaosproxy.records import (
    CALLS_FILE,
    CONFIG_FILE,
    EPISODE_DIR,
    EPISODES_FILE,
    EpisodeRecord,
    RunConfig,
    read_jsonl,
)

BOOKING = "travel-01-book-named-flight"
BY_TIME = "travel-02-book-by-departure-time"
UNLIKE = "travel-16-escalate-card-policy"


@pytest.fixture(scope="module")
def source_run(tmp_path_factory: pytest.TempPathFactory, run_grid: Callable[..., Any]) -> Path:
    """A robust run over two booking tasks: the experience memories are built from."""
    out = tmp_path_factory.mktemp("source") / "run"
    run_grid(out, agents=["robust"], domains=["travel"], task_patterns=[BOOKING, BY_TIME])
    return out


def _build(*arguments: str) -> str:
    result = CliRunner().invoke(main, ["memory", "build", *arguments])
    assert result.exit_code == 0, result.output
    return result.output


def _notes(out: Path, record: EpisodeRecord) -> list[str]:
    return json.loads((out / EPISODE_DIR / record.episode / "stdout.txt").read_text())["notes"]


def test_memory_round_trips_through_its_directory(source_run: Path, tmp_path: Path) -> None:
    memory_dir = tmp_path / "memory"
    assert "2 trajectories added" in _build(str(source_run), "--out", str(memory_dir))
    memory = EpisodicMemory.load(memory_dir)
    assert memory.index.ntotal == 2 and memory.manifest.embedding == "lexical-v1-512"
    by_task = {entry.task_id: (i, entry) for i, entry in enumerate(memory.entries)}
    position, booking = by_task[BOOKING]
    assert booking.pei >= 0.8 and [s.tool for s in booking.steps] == [
        "hold_flight",
        "confirm_booking",
    ]
    stored = memory.index.reconstruct(position)
    assert np.allclose(stored, lexical_embedding(booking.task_text), atol=1e-6)
    (hit, *rest) = memory.search(lexical_embedding(booking.task_text), "travel")
    assert hit.entry.task_id == BOOKING and hit.score == pytest.approx(1.0, abs=1e-5)
    assert all(other.score < hit.score for other in rest)
    assert memory.search(lexical_embedding(booking.task_text), "scheduling") == []
    # Building again from the same run adds nothing; `show` lists what is there.
    assert "0 trajectories added" in _build(str(source_run), "--out", str(memory_dir))
    shown = CliRunner().invoke(main, ["memory", "show", str(memory_dir)]).output
    assert BOOKING in shown and "hold_flight → confirm_booking" in shown


@pytest.mark.parametrize("transport", ["rest", "mcp"])
def test_ap_edm_against_the_mock_model_guided_and_halting(
    source_run: Path,
    tmp_path: Path,
    run_grid: Callable[..., Any],
    mock_model_url: str,
    transport: str,
) -> None:
    memory_dir = tmp_path / "memory"
    _build(str(source_run), "--out", str(memory_dir))
    out = tmp_path / transport
    run_grid(
        out,
        agents=["ap-edm"],
        model="mock",
        base_url=mock_model_url,
        domains=["travel"],
        task_patterns=[BOOKING, UNLIKE],
        transport=transport,
        memory=memory_dir,
    )
    records = {r.task_id: r for r in read_jsonl(out / EPISODES_FILE, EpisodeRecord)}
    guided = records[BOOKING]
    assert guided.outcome == "completed" and guided.success is True and guided.mock_model
    assert "memory guides the plan" in _notes(out, guided)
    halted = records[UNLIKE]
    assert halted.escalated and halted.model_calls == 0
    assert any(n.startswith("safe halt: confidence 0.") for n in _notes(out, halted))
    calls = [json.loads(line) for line in (out / CALLS_FILE).read_text().splitlines()]
    steps = [c["tool"] for c in calls if c["episode"] == halted.episode and c["step"]]
    assert steps == ["escalate_to_human"]
    config = RunConfig.model_validate_json((out / CONFIG_FILE).read_text())
    assert config.settings["memory"]["manifest"]["entries"] == 2
    assert set(config.settings["memory"]["sha256"]) == {
        "manifest.json",
        "entries.jsonl",
        "index.faiss",
    }


def test_ap_edm_without_memory_plans_like_react(
    tmp_path: Path, run_grid: Callable[..., Any], mock_model_url: str
) -> None:
    out = tmp_path / "run"
    run_grid(
        out,
        agents=["ap-edm"],
        model="mock",
        base_url=mock_model_url,
        domains=["travel"],
        task_patterns=[UNLIKE, BOOKING],
    )
    records = {r.task_id: r for r in read_jsonl(out / EPISODES_FILE, EpisodeRecord)}
    assert all(r.success for r in records.values())
    assert records[BOOKING].model_calls == 3 and not records[BOOKING].escalated


def embed(texts: list[str]) -> list[list[float]]:
    """A scripted embedding model: the named-flight task is one direction, all else another."""
    return [[1.0, 0.0, 0.0] if "UA-1523" in text else [0.0, 0.6, 0.8] for text in texts]


def guided_model(body: dict[str, Any]) -> dict[str, Any]:
    """Books from the plan in the system prompt, if there is one; otherwise gives up."""
    system = body["messages"][0]["content"]
    done = [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]
    usage = {"prompt_tokens": 30, "completion_tokens": 3, "total_tokens": 33}
    if 'hold_flight {"flight_id": "UA-1523"}' not in system or len(done) == 2:
        return {"role": "assistant", "content": "Stopping.", "_usage": usage}
    if not done:
        name, arguments = "hold_flight", {"flight_id": "UA-1523"}
    else:
        name = "confirm_booking"
        arguments = {
            "flight_id": "UA-1523",
            "passenger": "Ana Ruiz",
            "payment_info": "corp_amex_1004",
            "hold_id": done[0]["hold"]["hold_id"],
        }
    function = {"name": name, "arguments": json.dumps(arguments)}
    call = {"id": f"c{len(done)}", "type": "function", "function": function}
    return {"role": "assistant", "content": None, "tool_calls": [call], "_usage": usage}


@pytest.mark.parametrize("transport", ["rest", "mcp"])
def test_ap_edm_with_remote_embeddings_against_a_scripted_model(
    source_run: Path, tmp_path: Path, run_grid: Callable[..., Any], transport: str
) -> None:
    memory_dir = tmp_path / "memory"
    out = tmp_path / transport
    with chat_server(guided_model, embed=embed) as (url, requests):
        _build(
            str(source_run), "--out", str(memory_dir), "--embedding-model", "emb", "--base-url", url
        )
        built = len(requests)
        run_grid(
            out,
            agents=["ap-edm"],
            model="scripted",
            base_url=url,
            embedding_model="emb",
            domains=["travel"],
            task_patterns=[BOOKING],
            transport=transport,
            memory=memory_dir,
        )
    assert EpisodicMemory.load(memory_dir).manifest.embedding == "openai:emb"
    (record,) = read_jsonl(out / EPISODES_FILE, EpisodeRecord)
    assert record.success is True
    embedded = [r for r in requests[built:] if "input" in r]
    assert [r["model"] for r in embedded] == ["emb"] and embedded[0]["input"] == [record.task_text]
    chats = [r for r in requests[built:] if "messages" in r]
    assert "confirm_booking" in chats[0]["messages"][0]["content"]
    # usage: three chat turns of 30 + 3, and the embedding's one token per word.
    words = len(record.task_text.split())
    assert record.model_calls == 4
    assert record.usage is not None
    assert record.usage.prompt_tokens == 3 * 30 + words
    assert record.usage.total_tokens == 3 * 33 + words


def test_a_memory_is_queried_with_its_own_embedding(source_run: Path, tmp_path: Path) -> None:
    memory_dir = tmp_path / "memory"
    with chat_server(guided_model, embed=embed) as (url, _):
        _build(
            str(source_run), "--out", str(memory_dir), "--embedding-model", "emb", "--base-url", url
        )
    result = CliRunner().invoke(
        main,
        [
            *("run", "--agent", "ap-edm", "--model", "m", "--no-score"),
            *("--memory", str(memory_dir), "--out", str(tmp_path / "run")),
        ],
    )
    assert result.exit_code != 0 and "built with the openai:emb embedding" in result.output
