"""OpenTelemetry spans of proxied calls, read from the SDK's in-memory exporter.

A real Environment (proxy and travel service on 127.0.0.1), real HTTP and MCP clients, a
tiny real model server; only the exporter is in memory. Every call's 429 is injected by a
profile whose every call is a SoftRateLimit.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("opentelemetry.sdk")

from aiohttp import web
from chaosproxy.domains.kit.client import McpToolClient
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from threaded_app import ThreadedApp

import chaosproxy
from chaosproxy.tracing import NOOP, TraceSettings, settings_from
from chaosproxy.tracing.attributes import ALL_ATTRIBUTES, FAULT_EVENT
from chaosproxy.tracing.otel import OtelTracer, episode_trace_id

pytestmark = pytest.mark.timeout(120)

ALL_429 = """\
name: all-429
failure_rate: 1.0
weights: {SoftRateLimit: 1.0}
"""

ISSUE_ATTRIBUTES = {
    # issue 29, "What to build", word for word
    "gen_ai.operation.name",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "error.type",
    "mcp.method.name",
    "mcp.protocol.version",
    "mcp.session.id",
    "jsonrpc.request.id",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.request.stream",
    "gen_ai.response.finish_reasons",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.conversation.id",
    "session.id",
    "http.request.resend_count",
    "chaosproxy.retry_of",
    "chaosproxy.fault.name",
    "chaosproxy.fault.stage",
    "chaosproxy.fault.delivered",
    "chaosproxy.fault.fresh",
    "chaosproxy.fault.recoverable",
    "chaosproxy.profile",
    "chaosproxy.episode.id",
    "chaosproxy.step",
}

AGENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
AGENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{AGENT_TRACE}-{AGENT_SPAN}-01"


class _ModelServer(ThreadedApp):
    """An OpenAI-style /v1/chat/completions on 127.0.0.1 that keeps each request's headers."""

    def __init__(self) -> None:
        super().__init__()
        self.headers: list[dict[str, str]] = []

    def app(self) -> web.Application:
        async def chat(request: web.Request) -> web.Response:
            self.headers.append(dict(request.headers))
            return web.json_response(
                {
                    "id": "c1",
                    "model": "mock-2026",
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {}}],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
                }
            )

        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)
        return app


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, InMemorySpanExporter]]:
    """Travel (every tool call a 429) and a model upstream `llm` (tool faults spare it)."""
    folder = tmp_path_factory.mktemp("otel")
    (folder / "all-429.yaml").write_text(ALL_429)
    exporter = InMemorySpanExporter()
    with (
        _ModelServer() as model,
        chaosproxy.Environment(
            domains=["travel"],
            upstreams={"llm": model.url},
            profile=str(folder / "all-429.yaml"),
            run_dir=folder / "run",
        ) as env,
    ):
        env.model_server = model  # type: ignore[attr-defined]
        tracer = OtelTracer(TraceSettings(content="faults"), SimpleSpanProcessor(exporter))
        core = _core(env)  # the in-memory exporter instead of OTLP
        engine = core.engine
        tracer.attach(lambda episode: str(engine.episode_summary(episode).get("profile")))
        core.tracer = tracer
        yield env, exporter
        core.tracer = NOOP


def _core(env: chaosproxy.Environment) -> Any:
    """The running proxy's shared state, whose tracer the tests swap for an in-memory one."""
    proxy = env._running().proxy
    assert proxy is not None
    return proxy.core


def _spans(exporter: InMemorySpanExporter, episode: str) -> list[ReadableSpan]:
    return [
        s
        for s in exporter.get_finished_spans()
        if (s.attributes or {}).get("chaosproxy.episode.id") == episode
    ]


def test_issue_attribute_names_are_all_defined_and_documented() -> None:
    assert ISSUE_ATTRIBUTES <= ALL_ATTRIBUTES
    doc = (Path(__file__).parents[2] / "docs" / "observability.md").read_text()
    missing = sorted(name for name in ALL_ATTRIBUTES | {FAULT_EVENT} if f"`{name}`" not in doc)
    assert not missing, f"docs/observability.md does not list {missing}"


def test_rest_429_span_is_a_child_of_the_agents_span_with_the_fault(traced: Any) -> None:
    env, exporter = traced
    with env.episode(id="otel-rest") as episode:
        url = f"{episode.url('travel')}/tools/get_itinerary"
        headers = {"traceparent": TRACEPARENT, "tracestate": "vendor=x"}
        first = httpx.post(url, json={}, headers=headers, timeout=10)
        second = httpx.post(url, json={}, headers=headers, timeout=10)
    assert first.status_code == second.status_code == 429
    spans = _spans(exporter, "otel-rest")
    assert [s.name for s in spans] == ["execute_tool get_itinerary"] * 2
    span = spans[0]
    assert f"{span.context.trace_id:032x}" == AGENT_TRACE
    assert span.parent is not None and f"{span.parent.span_id:016x}" == AGENT_SPAN
    attrs = dict(span.attributes or {})
    assert set(attrs) <= ALL_ATTRIBUTES
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["gen_ai.tool.name"] == "get_itinerary"
    assert attrs["error.type"] == "429" and attrs["http.response.status_code"] == 429
    assert attrs["chaosproxy.fault.name"] == "SoftRateLimit"
    assert attrs["chaosproxy.fault.stage"] == "before"
    assert attrs["chaosproxy.fault.delivered"] is True
    assert attrs["chaosproxy.fault.fresh"] is True
    assert attrs["chaosproxy.fault.recoverable"] is True
    assert attrs["chaosproxy.profile"] == "all-429"
    assert attrs["chaosproxy.step"] == 1 and attrs["session.id"] == "otel-rest"
    assert attrs["gen_ai.conversation.id"] == "otel-rest"
    assert attrs["gen_ai.tool.call.arguments"] == "{}"  # content=faults: a faulted call
    assert span.status.status_code.name == "ERROR"
    events = [e for e in span.events if e.name == FAULT_EVENT]
    assert len(events) == 1
    params = {k: v for k, v in (events[0].attributes or {}).items() if ".params." in k}
    assert "chaosproxy.fault.params.retry_after_s" in params
    assert span.start_time is not None and span.end_time is not None
    assert span.end_time >= span.start_time
    retry = dict(spans[1].attributes or {})
    assert retry["chaosproxy.step"] == 2
    assert retry["chaosproxy.retry_of"] == f"{AGENT_TRACE}-{span.context.span_id:016x}"
    assert [link.context.span_id for link in spans[1].links] == [span.context.span_id]


def test_without_context_an_episodes_calls_share_a_derived_trace_as_roots(traced: Any) -> None:
    env, exporter = traced
    with env.episode(id="otel-bare") as episode:
        for _ in range(2):
            httpx.post(f"{episode.url('travel')}/tools/get_itinerary", json={}, timeout=10)
    spans = _spans(exporter, "otel-bare")
    assert len(spans) == 2
    assert {s.context.trace_id for s in spans} == {episode_trace_id("otel-bare")}
    assert all(s.parent is None for s in spans)


def test_mcp_call_reads_the_context_from_params_meta(traced: Any) -> None:
    env, exporter = traced

    async def call() -> Any:
        with env.episode(id="otel-mcp") as episode:
            client = McpToolClient(episode.endpoints()["travel"].mcp, episode="otel-mcp")
            await client.open()
            try:
                return await client._client.call_tool_mcp(
                    "get_itinerary", {}, meta={"traceparent": TRACEPARENT}
                )
            finally:
                await client.close()

    with pytest.raises(Exception):  # noqa: B017 - the 429 arrives as whatever the SDK raises
        asyncio.run(call())
    calls = [s for s in _spans(exporter, "otel-mcp") if s.name.startswith("tools/call")]
    assert [s.name for s in calls] == ["tools/call get_itinerary"]
    attrs = dict(calls[0].attributes or {})
    assert set(attrs) <= ALL_ATTRIBUTES
    assert f"{calls[0].context.trace_id:032x}" == AGENT_TRACE
    assert calls[0].parent is not None and f"{calls[0].parent.span_id:016x}" == AGENT_SPAN
    assert attrs["mcp.method.name"] == "tools/call"
    assert attrs["chaosproxy.fault.name"] == "SoftRateLimit"
    assert re.fullmatch(r"\S+", str(attrs["mcp.session.id"]))
    assert attrs["jsonrpc.request.id"] == attrs["gen_ai.tool.call.id"]
    assert "mcp.protocol.version" in attrs
    protocol = [s for s in _spans(exporter, "otel-mcp") if not s.name.startswith("tools/call")]
    lines = [json.loads(line) for line in env.log_path.read_text().splitlines()]
    logged = [c for c in lines if c["episode"] == "otel-mcp" and c["kind"] == "protocol"]
    assert logged, "the session's initialize and notifications went through the proxy"
    assert protocol == [], "protocol traffic gets a span only when a fault acted on it"


def test_model_call_span_and_the_context_forwarded_upstream(traced: Any) -> None:
    env, exporter = traced
    model = env.model_server
    with env.episode(id="otel-model") as episode:
        reply = httpx.post(
            f"{episode.endpoints()['llm'].rest}/v1/chat/completions",
            json={"model": "mock", "messages": [{"role": "user", "content": "hi"}]},
            headers={"traceparent": TRACEPARENT},
            timeout=10,
        )
    assert reply.status_code == 200
    (span,) = _spans(exporter, "otel-model")
    attrs = dict(span.attributes or {})
    assert span.name == "chat mock"
    assert set(attrs) <= ALL_ATTRIBUTES
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.request.model"] == "mock"
    assert attrs["gen_ai.response.model"] == "mock-2026"
    assert attrs["gen_ai.request.stream"] is False
    assert json.loads(str(attrs["gen_ai.response.finish_reasons"])) == ["stop"]
    assert attrs["gen_ai.usage.input_tokens"] == 11 and attrs["gen_ai.usage.output_tokens"] == 3
    assert "error.type" not in attrs and "chaosproxy.fault.name" not in attrs
    # the service sees the proxy's span as its parent, in the agent's trace
    sent = {k.lower(): v for k, v in model.headers[-1].items()}
    assert sent["traceparent"] == f"00-{AGENT_TRACE}-{span.context.span_id:016x}-01"


def test_content_none_keeps_arguments_out(traced: Any) -> None:
    env, _ = traced
    core = _core(env)
    before = core.tracer
    memory = InMemorySpanExporter()
    core.tracer = OtelTracer(TraceSettings(content="none"), SimpleSpanProcessor(memory))
    try:
        with env.episode(id="otel-quiet") as episode:
            httpx.post(
                f"{episode.url('travel')}/tools/search_flights",
                json={"origin": "SFO", "destination": "JFK", "date": "2026-03-10"},
                headers={"Authorization": "Bearer secret-token-123"},
                timeout=10,
            )
    finally:
        core.tracer = before
    (span,) = _spans(memory, "otel-quiet")
    text = json.dumps(dict(span.attributes or {}))
    assert "gen_ai.tool.call.arguments" not in text and "SFO" not in text
    assert "secret-token-123" not in text


def test_settings_follow_flags_and_the_standard_variables() -> None:
    assert settings_from(None, None, {}) is None
    on = settings_from(None, None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert on is not None and on.traces_url is None  # the SDK reads the variable itself
    off = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_SDK_DISABLED": "true"}
    assert settings_from(None, None, off) is None
    flag = settings_from("http://127.0.0.1:6006", "all", {})
    assert flag is not None and flag.traces_url == "http://127.0.0.1:6006/v1/traces"
    assert flag.content == "all"
    with pytest.raises(chaosproxy.SetupError, match="otlp content 'some'"):
        chaosproxy.Environment(domains=["travel"], otlp_endpoint="http://h:1", otlp_content="some")
    with pytest.raises(chaosproxy.SetupError, match="otlp endpoint"):
        chaosproxy.Environment(domains=["travel"], otlp_endpoint="127.0.0.1:4318")


def test_tracing_off_never_imports_the_sdk() -> None:
    """Off (no flag, no OTEL_* variable), every module on the call path loads without the SDK."""
    script = (
        "import sys\n"
        "import chaosproxy, chaosproxy.cli, chaosproxy.proxy.server, chaosproxy.runner.run\n"
        "from chaosproxy.tracing import NOOP, make_tracer, settings_from\n"
        "assert make_tracer(settings_from(None, None)) is NOOP\n"
        "print([m for m in sys.modules if m.startswith(('opentelemetry.sdk', "
        "'opentelemetry.exporter', 'chaosproxy.tracing.otel'))])\n"
    )
    env = {"PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_without_the_extra_a_flag_is_an_error_and_a_variable_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from chaosproxy.tracing import setup

    monkeypatch.setattr(setup, "sdk_available", lambda: False)
    with pytest.raises(chaosproxy.SetupError, match=r"pip install 'chaosproxy\[otel\]'"):
        setup.trace_settings("http://127.0.0.1:4318", None)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    with pytest.warns(RuntimeWarning, match="tracing stays off"):
        assert setup.trace_settings(None, None) is None
    monkeypatch.setattr(setup, "sdk_available", lambda: True)
    on = setup.trace_settings(None, None)
    assert on is not None and on.endpoint is None
