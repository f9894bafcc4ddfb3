"""Task texts are computed once per grid (issue 27): `--prepare` paraphrases, shards
(`--texts`) and `--resume` read the stored texts and never ask the paraphraser again."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from chat_server import chat_server

from chaosproxy.records import EPISODES_FILE, TEXTS_FILE, EpisodeRecord, TaskText, read_jsonl

PREFIX = "Could you sort this out for me? "


def faithful(body: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": PREFIX + body["messages"][-1]["content"]}


def test_prepare_once_then_shards_and_resume_read_the_texts(
    tmp_path: Path, run_grid: Callable[..., Any]
) -> None:
    grid: dict[str, Any] = {
        "agents": ["robust"],
        "domains": ["travel"],
        "task_patterns": ["travel-01*", "travel-03*"],
        "epsilons": [0.0, 0.2],
        "paraphrase_model": "scripted-model",
        "concurrency": 2,
    }
    with chat_server(faithful) as (url, requests):
        grid["paraphrase_base_url"] = url
        run_grid(tmp_path / "prep", prepare_only=True, **grid)
        assert len(requests) == 2  # the two ε = 0.2 cells, once each
        assert not (tmp_path / "prep" / EPISODES_FILE).exists()
        texts = tmp_path / "prep" / TEXTS_FILE
        rows = list(read_jsonl(texts, TaskText))
        assert len(rows) == 4
        # an edit shows the shards read the file rather than computing the texts again
        texts.write_text(texts.read_text().replace(PREFIX, "Please: "))
        for index in (1, 2):
            run_grid(tmp_path / f"s{index}", shard=(index, 2), texts_file=texts, **grid)
        assert len(requests) == 2
        shard = tmp_path / "s1"
        assert (shard / TEXTS_FILE).read_bytes() == texts.read_bytes()
        lines = (shard / EPISODES_FILE).read_text().splitlines()
        (shard / EPISODES_FILE).write_text(lines[0] + "\n")
        run_grid(shard, shard=(1, 2), resume=True, **grid)
        assert len(requests) == 2
    records = [
        record
        for index in (1, 2)
        for record in read_jsonl(tmp_path / f"s{index}" / EPISODES_FILE, EpisodeRecord)
    ]
    assert sorted({(r.task_id, r.epsilon) for r in records}) == sorted(
        (row.task_id, row.epsilon) for row in rows
    )
    for record in records:
        assert record.task_text.startswith("Please: ") == (record.epsilon == 0.2)
