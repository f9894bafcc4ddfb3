"""Provider 429/5xx re-sent by the proxy, and `--rpm` pacing, against a real stub provider.

The stub is an OpenAI-compatible aiohttp server on 127.0.0.1 that answers from a script
(429s or 503s first, then a chat completion), so what the provider did is known exactly.
The agent is the real `openai` client with its own retries off: what it sees is what the
proxy gave it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
import pytest
from aiohttp import web

from chaosproxy import Environment
from chaosproxy.pacing import RatePacer
from chaosproxy.records import CALLS_FILE, CallRecord, read_jsonl
from chaosproxy.scoring.calls import collect

USAGE = {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
MESSAGES: list[Any] = [{"role": "user", "content": "hello"}]


@dataclass
class Provider:
    """What the stub answers, in order (then 200s), and when each request came."""

    script: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)


def _completion(model: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": "hi"}
    choice = {"index": 0, "finish_reason": "stop", "message": message}
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [choice],
        "usage": USAGE,
    }


def _chunk(delta: dict[str, Any], finish: str | None, usage: Any = None) -> bytes:
    body: dict[str, Any] = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        body = {**body, "choices": [], "usage": usage}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


@asynccontextmanager
async def provider(script: list[tuple[int, dict[str, str]]]) -> AsyncIterator[tuple[str, Provider]]:
    state = Provider(list(script))

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        state.arrivals.append(time.monotonic())
        if state.script:
            status, headers = state.script.pop(0)
            error = {"error": {"message": f"provider says {status}", "type": "server"}}
            return web.json_response(error, status=status, headers=headers)
        if not body.get("stream"):
            return web.json_response(_completion(body["model"]))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(_chunk({"role": "assistant", "content": "hi"}, None))
        await response.write(_chunk({}, "stop"))
        await response.write(_chunk({}, None, usage=USAGE))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}", state
    finally:
        await runner.cleanup()


def client(base: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base, api_key="test", max_retries=0, timeout=20)


def calls(run_dir: Path) -> list[CallRecord]:
    return list(read_jsonl(run_dir / CALLS_FILE, CallRecord))


@asynccontextmanager
async def proxied(
    script: list[tuple[int, dict[str, str]]], run_dir: Path, **options: Any
) -> AsyncIterator[tuple[str, Provider, Environment]]:
    """The stub provider behind a started Environment: (the agent's base URL, the stub, env)."""
    async with provider(script) as (url, state):
        env = Environment(upstreams={"llm": url}, profile="lambda0.0", run_dir=run_dir, **options)
        async with env:
            yield f"{env.url}/e/ep/llm/v1", state, env


RATE_LIMITED = (429, {"Retry-After": "0"})


async def test_two_provider_429s_are_resent_and_the_agent_sees_one_200(tmp_path: Path) -> None:
    async with proxied([RATE_LIMITED, RATE_LIMITED], tmp_path) as (base, state, env):
        reply = await client(base).chat.completions.create(model="m", messages=MESSAGES)
        service_errors = env.service_errors_of("ep")
    assert reply.choices[0].message.content == "hi"
    assert len(state.arrivals) == 3
    (record,) = calls(tmp_path)
    assert record.kind == "model_call" and record.status == 200 and record.outcome == "ok"
    assert record.upstream_status == 200 and record.fault is None and record.error is None
    assert record.provider_retries == 2 and record.provider_wait_ms == 0.0
    assert record.usage == USAGE and record.paced_ms is None  # no pacer: never asked
    (episode,) = collect([record]).values()
    assert episode.model_faults == [] and episode.model_faulted_calls == 0
    assert not episode.model_drawn and episode.uninjected_errors == 0
    assert service_errors == 0  # the episode is not an infra_error


async def test_provider_5xx_exhausted_reaches_the_agent_as_a_service_error(
    tmp_path: Path,
) -> None:
    overloaded = (503, {"Retry-After": "0"})
    async with proxied([overloaded] * 5, tmp_path, provider_retries=2) as (base, state, env):
        with pytest.raises(openai.InternalServerError) as caught:
            await client(base).chat.completions.create(model="m", messages=MESSAGES)
        service_errors = env.service_errors_of("ep")
    assert caught.value.status_code == 503 and "provider says 503" in caught.value.message
    assert len(state.arrivals) == 3  # the first send and 2 re-sends
    (record,) = calls(tmp_path)
    assert record.status == 503 and record.upstream_status == 503 and record.fault is None
    assert record.provider_retries == 2
    assert record.error is not None and "after 2 re-send(s)" in record.error
    (episode,) = collect([record]).values()
    assert episode.model_faults == [] and not episode.model_drawn
    assert service_errors == 1  # a completed episode is recorded as infra_error


async def test_exhausted_429_also_counts_as_a_service_error_and_0_disables(
    tmp_path: Path,
) -> None:
    async with proxied([RATE_LIMITED] * 3, tmp_path, provider_retries=0) as (base, state, env):
        with pytest.raises(openai.RateLimitError):
            await client(base).chat.completions.create(model="m", messages=MESSAGES)
        service_errors = env.service_errors_of("ep")
    assert len(state.arrivals) == 1
    (record,) = calls(tmp_path)
    assert record.status == 429 and record.provider_retries is None and record.fault is None
    assert service_errors == 0  # not re-sent: the agent met the provider's 429 itself
    async with proxied([RATE_LIMITED] * 3, tmp_path / "one", provider_retries=1) as (
        base,
        state,
        env,
    ):
        with pytest.raises(openai.RateLimitError):
            await client(base).chat.completions.create(model="m", messages=MESSAGES)
        assert env.service_errors_of("ep") == 1
    assert len(state.arrivals) == 2


async def test_a_stream_is_resent_before_any_byte_reached_the_agent(tmp_path: Path) -> None:
    async with proxied([RATE_LIMITED], tmp_path) as (base, state, _env):
        stream = await client(base).chat.completions.create(
            model="m", messages=MESSAGES, stream=True
        )
        words = [c.choices[0].delta.content async for c in stream if c.choices]
    assert words == ["hi", None] and len(state.arrivals) == 2
    (record,) = calls(tmp_path)
    assert record.status == 200 and record.provider_retries == 1 and record.usage == USAGE


async def test_backoff_without_retry_after_is_waited_and_logged(tmp_path: Path) -> None:
    async with proxied([(500, {})], tmp_path) as (base, state, _env):
        await client(base).chat.completions.create(model="m", messages=MESSAGES)
    (record,) = calls(tmp_path)
    assert record.provider_retries == 1 and record.provider_wait_ms == 500.0  # 0.5 s · 2^0
    assert state.arrivals[1] - state.arrivals[0] >= 0.45


async def test_rpm_spaces_model_calls_through_the_proxy(tmp_path: Path) -> None:
    """rpm=120: three calls sent at once reach the provider 0.5 s apart."""
    async with proxied([], tmp_path, model_pacer=RatePacer(rpm=120)) as (base, state, _env):
        agent = client(base)
        await asyncio.gather(
            *(agent.chat.completions.create(model="m", messages=MESSAGES) for _ in range(3))
        )
    gaps = [b - a for a, b in zip(state.arrivals, state.arrivals[1:], strict=False)]
    assert len(gaps) == 2 and all(0.4 <= gap <= 0.9 for gap in gaps), gaps
    paced = sorted(record.paced_ms or 0.0 for record in calls(tmp_path))
    assert paced[0] < 100 and 400 <= paced[1] <= 700 and 900 <= paced[2] <= 1300, paced


class RecordingPacer:
    """Any object with `acquire`/`settle` is a pacer (a cluster passes its own): this one
    lets every call through and records what the proxy told it."""

    def __init__(self) -> None:
        self.acquired: list[int] = []
        self.settled: list[tuple[int, int]] = []

    async def acquire(self, estimated_tokens: int) -> None:
        self.acquired.append(estimated_tokens)

    def settle(self, estimated_tokens: int, actual_tokens: int) -> None:
        self.settled.append((estimated_tokens, actual_tokens))


async def test_each_send_is_paced_and_settled_once(tmp_path: Path) -> None:
    """Two refused sends give their estimate back (0 spent); the served one is settled with
    the reply's usage (19 tokens), streamed or not."""
    pacer = RecordingPacer()
    body = {"model": "m", "messages": MESSAGES, "max_tokens": 50}
    estimate = len(json.dumps(body, separators=(",", ":"))) // 4 + 50
    async with proxied([RATE_LIMITED, RATE_LIMITED], tmp_path, model_pacer=pacer) as (
        base,
        _state,
        _env,
    ):
        await client(base).chat.completions.create(model="m", messages=MESSAGES, max_tokens=50)
        stream = await client(base).chat.completions.create(
            model="m", messages=MESSAGES, stream=True
        )
        _ = [chunk async for chunk in stream]
    first = pacer.acquired[0]
    assert abs(first - estimate) <= 3, (first, estimate)  # the client's JSON spacing may differ
    assert pacer.acquired[:3] == [first] * 3 and len(pacer.acquired) == 4
    assert pacer.settled[:3] == [(first, 0), (first, 0), (first, 19)]
    assert pacer.settled[3] == (pacer.acquired[3], 19)
    records = calls(tmp_path)
    assert [r.provider_retries for r in records] == [2, None]
    assert all(r.paced_ms is not None and r.paced_ms < 1000 for r in records)


async def test_up_rpm_flag_paces_and_resends(tmp_path: Path) -> None:
    """`chaosproxy up --rpm 120 --provider-retries 1` in its own process: a provider 429 is
    re-sent once, and three calls at once reach the provider 0.5 s apart."""
    async with provider([RATE_LIMITED]) as (url, state):
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "from chaosproxy.cli import main; main()", "up",
            "--port", "0", "--run-dir", str(tmp_path), "--domains", "none",
            "--profile", "lambda0.0", "--upstream", f"llm={url}",
            "--rpm", "120", "--provider-retries", "1",
            stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        assert process.stdout is not None
        try:
            printed: list[str] = []
            while not printed or not printed[-1].startswith("Ctrl-C"):
                line = await asyncio.wait_for(process.stdout.readline(), 60)
                assert line, f"up ended early: {printed}"
                printed.append(line.decode())
            proxy = printed[0].split()[1]
            agent = client(f"{proxy}/e/ep/llm/v1")
            await asyncio.gather(
                *(agent.chat.completions.create(model="m", messages=MESSAGES) for _ in range(3))
            )
        finally:
            process.send_signal(signal.SIGINT)
            await asyncio.wait_for(process.wait(), 30)
    assert any(line.startswith("pacing:   ") and "rpm=120" in line for line in printed)
    # the first call's two sends and the other two calls: four sends, 0.5 s apart
    gaps = [b - a for a, b in zip(state.arrivals, state.arrivals[1:], strict=False)]
    assert len(gaps) == 3 and all(0.4 <= gap <= 0.9 for gap in gaps), gaps
    records = calls(tmp_path)
    assert sorted(r.provider_retries or 0 for r in records) == [0, 0, 1]
    assert all(r.status == 200 for r in records)
