"""`chaosproxy run --otlp-endpoint`: each episode is a span with its task, agent, profile,
ε, trial and verdict, and the proxy's spans of its calls nest under it (the scripted agent
sends no trace context of its own). Exported over OTLP/HTTP to a real receiver on
127.0.0.1 (tests/tracing/otlp_receiver.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("opentelemetry.sdk")

from click.testing import CliRunner
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_receiver import OtlpReceiver

from chaosproxy.cli import main
from chaosproxy.records import CALLS_FILE
from chaosproxy.tracing import TraceSettings, trace_environment
from chaosproxy.tracing.otel import OtelTracer
from chaosproxy.tracing.runner import traced_episode

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


def test_an_agent_process_gets_the_episode_span_as_traceparent() -> None:
    """Inside a traced episode, `TRACEPARENT` names its span (what a command agent is given)."""
    exporter = InMemorySpanExporter()
    env = SimpleNamespace(tracer=OtelTracer(TraceSettings(), SimpleSpanProcessor(exporter)))
    spec = SimpleNamespace(
        agent="cmd", task_id="t-1", domain="travel", profile="lambda0.2", epsilon=0.1,
        trial=2, key="t-1~e0.1~lambda0.2~t2", episode_id="cmd~t-1~e0.1~lambda0.2~t2",
    )  # fmt: skip
    seen: dict[str, str] = {}

    async def episode() -> SimpleNamespace:
        seen.update(trace_environment())
        return SimpleNamespace(outcome="completed", success=True, t_success=3, escalated=False)

    asyncio.run(traced_episode(env, spec, episode()))
    (span,) = exporter.get_finished_spans()
    context = span.get_span_context()
    assert context is not None
    assert seen == {"TRACEPARENT": f"00-{context.trace_id:032x}-{context.span_id:016x}-01"}
    assert trace_environment() == {}, "only while the episode runs"
    attrs = dict(span.attributes or {})
    assert attrs["chaosproxy.verdict"] == "success" and attrs["chaosproxy.epsilon"] == 0.1
    assert attrs["chaosproxy.trial"] == 2 and attrs["chaosproxy.t_success"] == 3
    assert span.status.status_code.name == "UNSET"
