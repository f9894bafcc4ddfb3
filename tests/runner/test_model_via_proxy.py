"""`chaosproxy run --model-via-proxy`: the model half of an agent's dependencies goes through
the run's proxy, under the episode's id, and draws model faults from the episode's profile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from chaosproxy.cli import main
from chaosproxy.records import CALLS_FILE, EPISODES_FILE, EpisodeRecord, read_jsonl

RATE_LIMITS = """\
name: model-rate-limits
failure_rate: 0.3
weights: {ModelRateLimit: 1.0}
params: {ModelRateLimit: {retry_after_s: 0}}
"""


def _run(tmp_path: Path, mock_model_url: str, *extra: str) -> tuple[list[Any], list[Any]]:
    (tmp_path / "model-rate-limits.yaml").write_text(RATE_LIMITS)
    profile = "model-rate-limits.yaml"  # relative: a path's slashes would enter episode ids
    out = tmp_path / ("via" if extra else "direct")
    result = CliRunner().invoke(
        main,
        [
            "run", "--agent", "react", "--model", "mock", "--base-url", mock_model_url,
            "--domains", "travel", "--tasks", "travel-0[1-3]*", "--profile", profile,
            "--out", str(out), "--no-score", *extra,
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    records = list(read_jsonl(out / EPISODES_FILE, EpisodeRecord))
    calls = [json.loads(line) for line in (out / CALLS_FILE).read_text().splitlines()]
    return records, calls


def test_model_calls_go_through_the_proxy_per_episode(
    tmp_path: Path, mock_model_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    records, calls = _run(tmp_path, mock_model_url, "--model-via-proxy")
    assert len(records) == 3
    episodes = {r.episode for r in records}
    model_calls = [c for c in calls if c["kind"] == "model_call"]
    assert {c["episode"] for c in model_calls} == episodes
    assert all(c["step"] is None and c["model"] == "mock" for c in model_calls)
    faulted = [c for c in model_calls if c["fault"]]
    assert faulted and {c["fault"]["name"] for c in faulted} == {"ModelRateLimit"}
    assert all(c["status"] == 429 and c["fault_delivered"] for c in faulted)
    assert all(not c["fault"] for c in calls if c["kind"] == "tool_call")
    for record in records:
        served = [c for c in model_calls if c["episode"] == record.episode and c["status"] == 200]
        assert record.model_calls == len(served), "every answered model call is accounted"
        assert record.usage is not None
        assert (record.usage.total_tokens > 0) == bool(served)
    assert sum(bool(r.usage and r.usage.total_tokens) for r in records) >= 2


def test_without_the_flag_no_model_call_is_logged(
    tmp_path: Path, mock_model_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    records, calls = _run(tmp_path, mock_model_url)
    assert len(records) == 3 and all(r.usage and r.usage.total_tokens > 0 for r in records)
    assert calls and not [c for c in calls if c["kind"] == "model_call"]
