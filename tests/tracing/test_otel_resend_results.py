"""Issue 29 leftovers: `http.request.resend_count` only on the proxy's own upstream re-sends,
tool results under `--otlp-content all`, and `run --services --otlp-endpoint` spans.

A real Environment (travel service and a stub model provider on 127.0.0.1), real HTTP and
MCP clients; spans go to the SDK's in-memory exporter, or (the `run --services` case) over
OTLP/HTTP to the real receiver of tests/tracing/otlp_receiver.py.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("opentelemetry.sdk")

sys.path.insert(0, str(Path(__file__).parent))

from aiohttp import web
from chaosproxy.domains.kit.client import McpToolClient
from click.testing import CliRunner
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_receiver import OtlpReceiver
from threaded_app import ThreadedApp

import chaosproxy
from chaosproxy.cli import main
from chaosproxy.records import CALLS_FILE
from chaosproxy.tracing import NOOP, TraceSettings
from chaosproxy.tracing.attributes import ALL_ATTRIBUTES, CallExtras, plan_span, tool_result
from chaosproxy.tracing.otel import OtelTracer

pytestmark = pytest.mark.timeout(180)

CHAT = {"model": "mock", "messages": [{"role": "user", "content": "hi"}]}


class _Provider(ThreadedApp):
    """An OpenAI-style chat endpoint that answers 429 (Retry-After: 0) to every request
    whose model is `busy` the first time, then 200."""

    def __init__(self) -> None:
        super().__init__()
        self.refused: set[str] = set()

    def app(self) -> web.Application:
        async def chat(request: web.Request) -> web.Response:
            body = await request.json()
            episode = request.headers.get("X-Chaos-Episode", "")
            if body["model"] == "busy" and episode not in self.refused:
                self.refused.add(episode)
                error = {"error": {"message": "slow down", "type": "rate_limit"}}
                return web.json_response(error, status=429, headers={"Retry-After": "0"})
            return web.json_response(
                {
                    "id": "c1",
                    "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {}}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
                }
            )

        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)
        return app


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[chaosproxy.Environment]:
    folder = tmp_path_factory.mktemp("otel-leftovers")
    with (
        _Provider() as provider,
        chaosproxy.Environment(
            domains=["travel"],
            upstreams={"llm": provider.url},
            profile="lambda0.0",
            run_dir=folder / "run",
        ) as started,
    ):
        yield started


def _traced(env: chaosproxy.Environment, content: str) -> InMemorySpanExporter:
    """Swap the running proxy's tracer for one exporting to memory (undone by `_untraced`)."""
    proxy = env._running().proxy
    assert proxy is not None
    memory = InMemorySpanExporter()
    proxy.core.tracer = OtelTracer(TraceSettings(content=content), SimpleSpanProcessor(memory))  # type: ignore[arg-type]
    return memory


def _untraced(env: chaosproxy.Environment) -> None:
    proxy = env._running().proxy
    assert proxy is not None
    proxy.core.tracer = NOOP


def _spans(memory: InMemorySpanExporter, episode: str) -> list[ReadableSpan]:
    return [
        s
        for s in memory.get_finished_spans()
        if (s.attributes or {}).get("chaosproxy.episode.id") == episode
    ]


def test_resend_count_only_when_the_proxy_resent_upstream(env: chaosproxy.Environment) -> None:
    memory = _traced(env, "faults")
    try:
        with env.episode(id="otel-resend") as episode:
            base = episode.endpoints()["llm"].rest
            busy = httpx.post(f"{base}/v1/chat/completions", json={**CHAT, "model": "busy"})
            calm = httpx.post(f"{base}/v1/chat/completions", json=CHAT)
    finally:
        _untraced(env)
    assert busy.status_code == calm.status_code == 200
    resent, plain = _spans(memory, "otel-resend")
    assert resent.name == "chat busy" and plain.name == "chat mock"
    assert dict(resent.attributes or {})["http.request.resend_count"] == 1
    assert "error.type" not in dict(resent.attributes or {})  # the agent got a 200
    assert "http.request.resend_count" not in dict(plain.attributes or {})
    lines = [json.loads(line) for line in env.log_path.read_text().splitlines()]
    logged = [c for c in lines if c["episode"] == "otel-resend"]
    assert [c.get("provider_retries") for c in logged] == [1, None]


def test_plan_span_resend_count_follows_the_record() -> None:
    fields = {"kind": "model_call", "episode": "e", "path": "/v1/chat/completions"}
    extras = CallExtras()
    once = plan_span(fields, extras, profile=None, content="faults")
    assert "http.request.resend_count" not in once.attributes
    zero = plan_span({**fields, "provider_retries": 0}, extras, profile=None, content="faults")
    assert "http.request.resend_count" not in zero.attributes
    two = plan_span({**fields, "provider_retries": 2}, extras, profile=None, content="faults")
    assert two.attributes["http.request.resend_count"] == 2


def test_content_all_exports_rest_and_mcp_results(env: chaosproxy.Environment) -> None:
    memory = _traced(env, "all")

    async def mcp_call(url: str) -> Any:
        client = McpToolClient(url, episode="otel-results")
        await client.open()
        try:
            return await client._client.call_tool_mcp("get_itinerary", {})
        finally:
            await client.close()

    try:
        with env.episode(id="otel-results") as episode:
            rest = httpx.post(f"{episode.url('travel')}/tools/get_itinerary", json={})
            asyncio.run(mcp_call(episode.endpoints()["travel"].mcp))
    finally:
        _untraced(env)
    assert rest.status_code == 200
    tools = [s for s in _spans(memory, "otel-results") if "get_itinerary" in s.name]
    assert [s.name for s in tools] == ["execute_tool get_itinerary", "tools/call get_itinerary"]
    rest_attrs, mcp_attrs = (dict(s.attributes or {}) for s in tools)
    assert set(rest_attrs) <= ALL_ATTRIBUTES and set(mcp_attrs) <= ALL_ATTRIBUTES
    assert json.loads(str(rest_attrs["gen_ai.tool.call.result"])) == rest.json()
    mcp_result = json.loads(str(mcp_attrs["gen_ai.tool.call.result"]))
    assert mcp_result.get("isError") is not True and mcp_result["content"], mcp_result
    assert "gen_ai.tool.call.arguments" in rest_attrs  # all: arguments as before


def test_content_faults_keeps_an_unfaulted_result_out(env: chaosproxy.Environment) -> None:
    memory = _traced(env, "faults")
    try:
        with env.episode(id="otel-no-result") as episode:
            httpx.post(f"{episode.url('travel')}/tools/get_itinerary", json={})
    finally:
        _untraced(env)
    (span,) = _spans(memory, "otel-no-result")
    assert "gen_ai.tool.call.result" not in dict(span.attributes or {})


def test_tool_result_reads_json_bodies_and_sse_events() -> None:
    assert tool_result(b'{"a": 1}', mcp=False) == '{"a":1}'
    assert tool_result(b"plain text", mcp=False) == "plain text"
    message = b'{"jsonrpc":"2.0","id":3,"result":{"content":[],"isError":true}}'
    assert tool_result(message, mcp=True) == '{"content":[],"isError":true}'
    assert tool_result(b"event: message\ndata: " + message + b"\n\n", mcp=True) == (
        '{"content":[],"isError":true}'
    )
    error = b'{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad"}}'
    assert tool_result(error, mcp=True) == '{"code":-32602,"message":"bad"}'


ALL_429 = "name: all-429\nfailure_rate: 1.0\nweights: {SoftRateLimit: 1.0}\n"


def test_run_with_services_exports_episode_spans_parenting_the_remote_proxys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run --services --otlp-endpoint`: the runner's episode spans go out, and the running
    proxy (here `Environment` as `up --otlp-endpoint` starts it) nests its call spans under
    them (the runner sends its episode span with the episode's configuration)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "all-429.yaml").write_text(ALL_429)
    with (
        OtlpReceiver() as receiver,
        chaosproxy.Environment(
            domains=["travel"],
            profile="lambda0.0",
            run_dir=tmp_path / "up",
            otlp_endpoint=receiver.url,
        ) as env,
    ):
        oracle_token = env.oracle_headers["Authorization"].removeprefix("Bearer ")
        result = CliRunner().invoke(
            main,
            [
                "run", "--agent", "naive", "--tasks", "travel-01*", "--profile", "all-429.yaml",
                "--out", str(tmp_path / "run"), "--no-score",
                "--services", f"travel={env.oracle_urls['travel']}", "--proxy", env.url,
                "--control", env.control_url, "--control-token", env.token,
                "--oracle-token", oracle_token, "--proxy-log", str(env.log_path),
                "--otlp-endpoint", receiver.url,
            ],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    calls = [json.loads(line) for line in (tmp_path / "run" / CALLS_FILE).read_text().splitlines()]
    tool_calls = [c for c in calls if c["kind"] == "tool_call"]
    assert tool_calls
    (episode,) = [s for s in receiver.spans if s["name"].startswith("episode ")]
    assert episode["attributes"]["chaosproxy.episode.id"] == tool_calls[0]["episode"]
    spans = [s for s in receiver.spans if s["name"].startswith("execute_tool ")]
    assert len(spans) == len(tool_calls)
    assert {s["parent_id"] for s in spans} == {episode["span_id"]}
    assert {s["trace_id"] for s in spans} == {episode["trace_id"]}
