"""`chaosproxy run --otlp-endpoint`: each episode is a span with its task, agent, profile,
ε, trial and verdict, and the proxy's spans of its calls nest under it (the scripted agent
sends no trace context of its own). Exported over OTLP/HTTP to a real receiver on
127.0.0.1 (tests/tracing/otlp_receiver.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from click.testing import CliRunner
from otlp_receiver import OtlpReceiver

from chaosproxy.cli import main
from chaosproxy.records import CALLS_FILE

pytestmark = pytest.mark.timeout(180)
ALL_429 = "name: all-429\nfailure_rate: 1.0\nweights: {SoftRateLimit: 1.0}\n"


def test_run_exports_episode_spans_parenting_their_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "all-429.yaml").write_text(ALL_429)
    out = tmp_path / "run"
    with OtlpReceiver() as receiver:
        result = CliRunner().invoke(
            main,
            [
                "run", "--agent", "naive", "--domains", "travel", "--tasks", "travel-01*",
                "--profile", "all-429.yaml", "--out", str(out), "--no-score",
                "--otlp-endpoint", receiver.url, "--otlp-content", "none",
            ],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    calls = [json.loads(line) for line in (out / CALLS_FILE).read_text().splitlines()]
    tool_calls = [c for c in calls if c["kind"] == "tool_call"]
    assert tool_calls and all(c["fault"]["name"] == "SoftRateLimit" for c in tool_calls)
    episodes = [s for s in receiver.spans if s["name"].startswith("episode ")]
    assert len(episodes) == 1
    episode = episodes[0]
    attrs = episode["attributes"]
    assert episode["name"] == f"episode {attrs['chaosproxy.task']}"
    assert attrs["chaosproxy.agent"] == "naive"
    assert attrs["chaosproxy.profile"] == "all-429.yaml"
    assert attrs["chaosproxy.epsilon"] == 0.0 and attrs["chaosproxy.trial"] == 1
    assert attrs["chaosproxy.verdict"] == "failure"  # every call is a 429: nothing gets done
    assert attrs["session.id"] == attrs["chaosproxy.episode.id"] == tool_calls[0]["episode"]
    spans = [s for s in receiver.spans if s["name"].startswith("execute_tool ")]
    assert len(spans) == len(tool_calls)
    assert {s["parent_id"] for s in spans} == {episode["span_id"]}
    assert {s["trace_id"] for s in spans} == {episode["trace_id"]}
    assert all(s["attributes"]["chaosproxy.fault.name"] == "SoftRateLimit" for s in spans)
    assert not any("gen_ai.tool.call.arguments" in s["attributes"] for s in spans)
