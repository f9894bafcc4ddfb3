"""`chaosproxy run --model-via-proxy`: the model half of an agent's dependencies goes through
the run's proxy, under the episode's id, and draws model faults from the episode's profile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from chaosproxy import Environment
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


def test_with_services_model_calls_go_through_the_running_proxy(
    tmp_path: Path, mock_model_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--services` (an environment already up, here `chaosproxy.Environment` as `up` starts
    it) with `--model-via-proxy`: each episode's agent gets the running proxy's
    /e/EPISODE/llm/v1, and the episode's profile (set by the runner) draws the model faults."""
    monkeypatch.chdir(tmp_path)
    root = mock_model_url.rstrip("/").removesuffix("/v1")
    with Environment(
        domains=["travel"], upstreams={"llm": root}, profile="lambda0.0", run_dir=tmp_path / "up"
    ) as env:
        oracle_token = env.oracle_headers["Authorization"].removeprefix("Bearer ")
        records, calls = _run(
            tmp_path, mock_model_url, "--model-via-proxy",
            "--services", f"travel={env.oracle_urls['travel']}", "--proxy", env.url,
            "--control", env.control_url, "--control-token", env.token,
            "--oracle-token", oracle_token, "--proxy-log", str(env.log_path),
        )  # fmt: skip
    episodes = {r.episode for r in records}
    model_calls = [c for c in calls if c["kind"] == "model_call"]
    assert len(records) == 3 and {c["episode"] for c in model_calls} == episodes
    assert all(c["domain"] == "llm" and c["step"] is None for c in model_calls)
    assert {c["fault"]["name"] for c in model_calls if c["fault"]} == {"ModelRateLimit"}
    for record in records:
        served = [c for c in model_calls if c["episode"] == record.episode and c["status"] == 200]
        assert record.model_calls == len(served) > 0


def test_with_services_but_no_model_upstream_says_how_to_start_up(
    tmp_path: Path, mock_model_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model-rate-limits.yaml").write_text(RATE_LIMITS)
    root = mock_model_url.rstrip("/").removesuffix("/v1")
    with Environment(domains=["travel"], profile="lambda0.0", run_dir=tmp_path / "up") as env:
        result = CliRunner().invoke(
            main,
            [
                "run", "--agent", "react", "--model", "mock", "--base-url", mock_model_url,
                "--domains", "travel", "--tasks", "travel-01*", "--profile", "lambda0.0",
                "--out", str(tmp_path / "run"), "--no-score", "--model-via-proxy",
                "--services", f"travel={env.oracle_urls['travel']}", "--proxy", env.url,
                "--control", env.control_url, "--control-token", env.token,
            ],
        )  # fmt: skip
        proxied = env.log_path.read_text() if env.log_path.exists() else ""
    assert result.exit_code == 1
    assert "has no upstream llm for the model endpoint" in result.output
    assert f"--upstream llm={root}" in result.output
    assert '"model_call"' not in proxied
