"""Model endpoints behind the proxy: the faults hosted models really have, seen by the real
OpenAI client, streaming and not, and logged as model calls (not agent steps)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from chaosproxy.profiles import load_profile
from proxy_helpers import read_log
from proxy_llm import USAGE, WORDS, serve_llm
from proxy_toy import serve_toy

from chaosproxy.faults import FaultEngine, Profile
from chaosproxy.proxy.server import ProxyServer

MESSAGES: list[Any] = [{"role": "user", "content": "is A1 in stock?"}]


def forced(fault: str, **params: Any) -> Profile:
    return Profile.model_validate(
        {
            "name": f"force-{fault}",
            "failure_rate": 1.0,
            "weights": {fault: 1.0},
            "params": {fault: params} if params else {},
        }
    )


@asynccontextmanager
async def llm_proxy(
    run_dir: Path, profile: Profile | None = None
) -> AsyncIterator[tuple[str, list[dict[str, Any]], ProxyServer]]:
    async with serve_llm() as (llm_url, seen), serve_toy() as (toy_url, _):
        engine = FaultEngine(default_profile=profile or load_profile("lambda0.0"), seed=5)
        proxy = ProxyServer(
            engine=engine,
            upstreams={"llm": llm_url, "toy": toy_url},
            run_seed=5,
            run_dir=run_dir,
        )
        await proxy.start()
        try:
            yield f"{proxy.url}/e/ep/llm/v1", seen, proxy
        finally:
            await proxy.stop()


def client(base: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base, api_key="test", max_retries=0, timeout=10)


async def _stream_words(base: str) -> list[str]:
    words: list[str] = []
    stream = await client(base).chat.completions.create(
        model="scripted-1",
        messages=MESSAGES,
        stream=True,
        stream_options={"include_usage": True},
    )
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            words.append(chunk.choices[0].delta.content)
    return words


async def test_model_calls_pass_and_are_logged_apart_from_steps(tmp_path: Path) -> None:
    async with llm_proxy(tmp_path) as (base, seen, proxy):
        reply = await client(base).chat.completions.create(model="scripted-1", messages=MESSAGES)
        words = await _stream_words(base)
        vectors = await client(base).embeddings.create(model="embed-1", input=["a", "b"])
        async with httpx.AsyncClient() as http:
            tool = await http.post(f"{proxy.url}/e/ep/toy/tools/get_item", json={"item_id": "A1"})
    assert reply.choices[0].message.tool_calls[0].function.name == "get_item"
    assert words == WORDS and len(vectors.data) == 2 and tool.status_code == 200
    assert len(seen) == 3
    log = read_log(tmp_path)
    assert [(r.kind, r.tool, r.step) for r in log] == [
        ("model_call", "chat.completions", None),
        ("model_call", "chat.completions", None),
        ("model_call", "embeddings", None),
        ("tool_call", "get_item", 1),
    ]
    assert [r.model for r in log[:3]] == ["scripted-1", "scripted-1", "embed-1"]
    assert log[0].usage == USAGE and log[1].usage == USAGE
    assert log[2].usage == {"prompt_tokens": 2, "total_tokens": 2}


async def test_rate_limit_looks_like_a_provider(tmp_path: Path) -> None:
    async with llm_proxy(tmp_path, forced("ModelRateLimit", retry_after_s=2)) as (base, seen, _):
        with pytest.raises(openai.RateLimitError) as caught:
            await client(base).chat.completions.create(model="scripted-1", messages=MESSAGES)
    response = caught.value.response
    assert response.status_code == 429 and response.headers["Retry-After"] == "2"
    assert response.headers["x-ratelimit-remaining-requests"] == "0"
    assert response.headers["x-ratelimit-reset-requests"] == "2s"
    assert caught.value.code == "rate_limit_exceeded" and seen == []
    (record,) = read_log(tmp_path)
    assert record.fault is not None and record.fault.name == "ModelRateLimit"
    assert record.fault_delivered and record.retry_after_s == 2


async def test_overloaded_and_timeout(tmp_path: Path) -> None:
    async with llm_proxy(tmp_path, forced("ModelOverloaded", statuses=[503])) as (base, _, _p):
        with pytest.raises(openai.InternalServerError) as caught:
            await client(base).chat.completions.create(model="scripted-1", messages=MESSAGES)
    assert caught.value.status_code == 503 and "overloaded" in caught.value.message
    profile = forced("ModelTimeout", delay_s=0.2)
    async with llm_proxy(tmp_path / "t", profile) as (base, seen, _p):
        with pytest.raises(openai.APIStatusError) as timed:
            await client(base).embeddings.create(model="embed-1", input="a")
    assert timed.value.status_code == 504 and seen == []


async def test_stream_cut_mid_stream(tmp_path: Path) -> None:
    profile = forced("StreamCut", min_events=3, max_events=3)
    async with llm_proxy(tmp_path, profile) as (base, _, _p):
        words: list[str] = []
        with pytest.raises((openai.APIError, httpx.HTTPError)):
            stream = await client(base).chat.completions.create(
                model="scripted-1", messages=MESSAGES, stream=True
            )
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    words.append(chunk.choices[0].delta.content)
        with pytest.raises((openai.APIError, json.JSONDecodeError)):
            await client(base).chat.completions.create(model="scripted-1", messages=MESSAGES)
    assert words == WORDS[:2]
    streamed, whole = read_log(tmp_path)
    assert streamed.outcome == "reset" and streamed.fault_delivered
    assert streamed.fault is not None and streamed.fault.name == "StreamCut"
    assert whole.fault_delivered and whole.status == 200


async def test_empty_choice_and_malformed_tool_call(tmp_path: Path) -> None:
    async with llm_proxy(tmp_path, forced("EmptyChoice", modes=["empty_content"])) as (b, _, _p):
        empty = await client(b).chat.completions.create(model="scripted-1", messages=MESSAGES)
        words = await _stream_words(b)
    assert empty.choices[0].message.content == "" and not empty.choices[0].message.tool_calls
    assert words == WORDS
    log = read_log(tmp_path)
    assert log[0].fault_delivered and not log[1].fault_delivered
    assert log[1].note == "streamed reply: EmptyChoice acts on whole replies only"
    async with llm_proxy(tmp_path / "m", forced("MalformedToolCall")) as (base, _, _p):
        broken = await client(base).chat.completions.create(model="scripted-1", messages=MESSAGES)
    arguments = broken.choices[0].message.tool_calls[0].function.arguments
    with pytest.raises(json.JSONDecodeError):
        json.loads(arguments)
    assert '{"item_id": "A1"}'.startswith(arguments[: len(arguments) - 2])


async def test_tool_faults_never_reach_model_calls(tmp_path: Path) -> None:
    async with llm_proxy(tmp_path, forced("ServerError")) as (base, _, proxy):
        reply = await client(base).chat.completions.create(model="scripted-1", messages=MESSAGES)
        async with httpx.AsyncClient() as http:
            tool = await http.post(f"{proxy.url}/e/ep/toy/tools/get_item", json={"item_id": "A1"})
    assert reply.choices[0].finish_reason == "tool_calls" and tool.status_code >= 500
    model, call = read_log(tmp_path)
    assert model.fault is None and call.fault is not None
