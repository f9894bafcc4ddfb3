"""Model endpoints behind the proxy: the faults hosted models really have, seen by the real
OpenAI client, streaming and not, and logged as model calls (not agent steps)."""

from __future__ import annotations

import contextlib
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
from proxy_llm import IN_OUT, USAGE, WORDS, serve_llm
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
    assert empty.choices[0].message.content == "" and not empty.choices[0].message.tool_calls
    (record,) = read_log(tmp_path)
    assert record.fault is not None and record.fault_delivered
    async with llm_proxy(tmp_path / "m", forced("MalformedToolCall")) as (base, _, _p):
        broken = await client(base).chat.completions.create(model="scripted-1", messages=MESSAGES)
    arguments = broken.choices[0].message.tool_calls[0].function.arguments
    with pytest.raises(json.JSONDecodeError):
        json.loads(arguments)
    assert '{"item_id": "A1"}'.startswith(arguments[: len(arguments) - 2])


WHOLE_OR_OVERLOADED = Profile.model_validate(
    {
        "name": "whole-or-overloaded",
        "failure_rate": 1.0,
        "weights": {"EmptyChoice": 1.0, "MalformedToolCall": 1.0, "ModelOverloaded": 1.0},
        "params": {"ModelOverloaded": {"statuses": [503]}},
    }
)


async def test_whole_reply_faults_are_repicked_on_streams_and_other_apis(tmp_path: Path) -> None:
    """EmptyChoice and MalformedToolCall cannot act on a streamed reply or on a reply that is
    not a chat completion: drawn there, they are re-picked, so the call still fails at the
    profile's rate (here every call, with the only fault that can land)."""
    async with llm_proxy(tmp_path, WHOLE_OR_OVERLOADED) as (base, seen, proxy):
        for _ in range(6):
            with pytest.raises(openai.InternalServerError):
                await _stream_words(base)
        async with httpx.AsyncClient(timeout=10) as http:
            for path, body in [
                ("/v1/responses", {"model": "scripted-1", "input": "hi"}),
                ("/v1/messages", {"model": "claude-x", "max_tokens": 9, "messages": MESSAGES}),
                ("/v1/embeddings", {"model": "embed-1", "input": "a"}),
            ]:
                for _ in range(3):
                    reply = await http.post(f"{proxy.url}/e/ep/llm{path}", json=body)
                    assert reply.status_code == 503, (path, reply.text)
    assert seen == []
    log = read_log(tmp_path)
    assert len(log) == 15
    assert {r.fault.name for r in log if r.fault is not None} == {"ModelOverloaded"}
    assert all(r.fault_delivered for r in log)
    repicked = [r for r in log if r.fault is not None and "repicked_from" in r.fault.params]
    assert repicked and {r.fault.params["repicked_from"] for r in repicked} <= {
        "EmptyChoice",
        "MalformedToolCall",
    }


async def test_whole_reply_faults_still_land_on_whole_chat_replies(tmp_path: Path) -> None:
    async with llm_proxy(tmp_path, WHOLE_OR_OVERLOADED) as (base, _, _p):
        for _ in range(12):
            with contextlib.suppress(openai.InternalServerError):
                await client(base).chat.completions.create(model="scripted-1", messages=MESSAGES)
    drawn = {r.fault.name for r in read_log(tmp_path) if r.fault is not None}
    assert drawn == {"EmptyChoice", "MalformedToolCall", "ModelOverloaded"}


async def test_malformed_tool_call_without_a_tool_call_says_why(tmp_path: Path) -> None:
    async with llm_proxy(tmp_path, forced("MalformedToolCall")) as (base, _, _p):
        words = await client(base).chat.completions.create(
            model="scripted-1", messages=MESSAGES, tool_choice="none"
        )
    assert words.choices[0].message.content == "".join(WORDS)
    (record,) = read_log(tmp_path)
    assert record.fault is not None and record.fault.name == "MalformedToolCall"
    assert not record.fault_delivered
    assert record.note == "MalformedToolCall not applied: the reply carries no tool call"


TOOL_FAULTS = Profile.model_validate(
    {
        "name": "tool-faults",
        "failure_rate": 1.0,
        "weights": {
            "SchemaDrift": 1.0,
            "PartialResponse": 1.0,
            "SoftRateLimit": 1.0,
            "ParameterCorruption": 1.0,
        },
    }
)

OTHER_APIS: list[tuple[str, dict[str, Any]]] = [
    ("/v1/responses", {"model": "scripted-1", "input": "is A1 in stock?"}),
    ("/v1/completions", {"model": "scripted-1", "prompt": "is A1 in stock?"}),
    ("/v1/messages", {"model": "claude-x", "max_tokens": 64, "messages": MESSAGES}),
    ("/api/chat", {"model": "llama3", "messages": MESSAGES, "stream": False}),
]


async def test_other_model_apis_are_model_calls_untouched_by_tool_faults(tmp_path: Path) -> None:
    async with llm_proxy(tmp_path, TOOL_FAULTS) as (_, seen, proxy):
        base = f"{proxy.url}/e/ep/llm"
        async with httpx.AsyncClient(timeout=10) as http:
            models = await http.get(f"{base}/v1/models")
            one = await http.get(f"{base}/v1/models/scripted-1")
            replies = [await http.post(base + path, json=body) for path, body in OTHER_APIS]
            tool = await http.post(f"{proxy.url}/e/ep/toy/tools/get_item", json={"item_id": "A1"})
    assert models.json()["data"][0]["id"] == "scripted-1" and one.json()["id"] == "scripted-1"
    assert [r.status_code for r in replies] == [200, 200, 200, 200]
    assert replies[0].json()["output"][0]["content"][0]["text"] == "".join(WORDS)
    assert replies[2].json()["content"][0]["text"] == "".join(WORDS)
    assert seen == [body for _, body in OTHER_APIS], "prompts reach the model unchanged"
    assert tool.status_code >= 400 or tool.json() != {}
    log = read_log(tmp_path)
    assert [(r.kind, r.tool, r.step, r.fault is None) for r in log] == [
        ("protocol", None, None, True),
        ("protocol", None, None, True),
        ("model_call", "responses", None, True),
        ("model_call", "completions", None, True),
        ("model_call", "messages", None, True),
        ("model_call", "ollama.chat", None, True),
        ("tool_call", "get_item", 1, False),
    ]
    assert [r.model for r in log[2:6]] == ["scripted-1", "scripted-1", "claude-x", "llama3"]
    assert log[2].usage == {**IN_OUT, "total_tokens": 17}
    assert log[3].usage == USAGE and log[4].usage == IN_OUT
    assert log[5].usage == {"prompt_eval_count": 9, "eval_count": 6}


async def test_status_faults_reach_every_model_api(tmp_path: Path) -> None:
    async with llm_proxy(tmp_path, forced("ModelRateLimit", retry_after_s=3)) as (_, seen, proxy):
        base = f"{proxy.url}/e/ep/llm"
        async with httpx.AsyncClient(timeout=10) as http:
            replies = [await http.post(base + path, json=body) for path, body in OTHER_APIS]
            listed = await http.get(f"{base}/v1/models")
    assert [r.status_code for r in replies] == [429, 429, 429, 429] and seen == []
    assert all(r.headers["Retry-After"] == "3" for r in replies)
    assert listed.status_code == 200, "a model listing is never faulted"
    log = read_log(tmp_path)
    assert [r.kind for r in log] == ["model_call"] * 4 + ["protocol"]
    assert all(r.fault_delivered for r in log[:4]) and log[4].fault is None


async def _stream_events(http: httpx.AsyncClient, url: str, body: dict[str, Any]) -> list[str]:
    """The SSE event names received before the stream ended (or broke)."""
    names: list[str] = []
    with contextlib.suppress(httpx.HTTPError):
        async with http.stream("POST", url, json={**body, "stream": True}) as reply:
            async for line in reply.aiter_lines():
                if line.startswith("event: "):
                    names.append(line.removeprefix("event: "))
    return names


async def test_streams_of_other_apis_are_relayed_cut_and_accounted(tmp_path: Path) -> None:
    responses = ("/v1/responses", OTHER_APIS[0][1])
    messages = ("/v1/messages", OTHER_APIS[2][1])
    async with llm_proxy(tmp_path) as (_, _s, proxy), httpx.AsyncClient(timeout=10) as http:
        base = f"{proxy.url}/e/ep/llm"
        whole = [
            await _stream_events(http, base + path, body) for path, body in (responses, messages)
        ]
    assert whole[0][-1] == "response.completed" and whole[1][-1] == "message_stop"
    passed = read_log(tmp_path)
    assert passed[0].usage == {**IN_OUT, "total_tokens": 17}
    assert passed[1].usage == IN_OUT, "message_start's input and message_delta's output tokens"
    profile = forced("StreamCut", min_events=2, max_events=2)
    async with llm_proxy(tmp_path / "cut", profile) as (_, _s, proxy):
        base = f"{proxy.url}/e/ep/llm"
        async with httpx.AsyncClient(timeout=10) as http:
            cut = [
                await _stream_events(http, base + path, body)
                for path, body in (responses, messages)
            ]
    assert cut == [whole[0][:2], whole[1][:2]]
    log = read_log(tmp_path / "cut")
    assert [(r.outcome, r.fault_delivered) for r in log] == [("reset", True), ("reset", True)]


async def test_tool_faults_never_reach_model_calls(tmp_path: Path) -> None:
    async with llm_proxy(tmp_path, forced("ServerError")) as (base, _, proxy):
        reply = await client(base).chat.completions.create(model="scripted-1", messages=MESSAGES)
        async with httpx.AsyncClient() as http:
            tool = await http.post(f"{proxy.url}/e/ep/toy/tools/get_item", json={"item_id": "A1"})
    assert reply.choices[0].finish_reason == "tool_calls" and tool.status_code >= 500
    model, call = read_log(tmp_path)
    assert model.fault is None and call.fault is not None


async def test_episode_view_lists_model_faults_as_no_step(tmp_path: Path) -> None:
    """GET /_chaos/episodes/{id}: model faults in `model_faults` (step null, as in the log);
    `faults` and `steps` count only tool calls, and the engine summary agrees."""
    profile = forced("ModelRateLimit", retry_after_s=0)
    async with llm_proxy(tmp_path, profile) as (base, _, proxy):
        for _ in range(2):
            with pytest.raises(openai.RateLimitError):
                await client(base).embeddings.create(model="embed-1", input="a")
        headers = {"Authorization": f"Bearer {proxy.token}"}
        async with httpx.AsyncClient(headers=headers) as http:
            view = (await http.get(f"{proxy.control_url}/_chaos/episodes/ep")).json()
    log = read_log(tmp_path)
    assert [(r.step, r.fault.name if r.fault else None) for r in log] == [
        (None, "ModelRateLimit"),
        (None, "ModelRateLimit"),
    ]
    assert view["steps"] == 0 and view["faults"] == []
    assert (
        view["model_faults"]
        == [{"step": None, "tool": "embeddings", "fault": "ModelRateLimit", "delivered": True}] * 2
    )
    assert [(f["step"], f["fault"]) for f in view["engine"]["faults"]] == [
        (None, "ModelRateLimit")
    ] * 2


async def test_ollama_ndjson_stream_is_counted_and_cut(tmp_path: Path) -> None:
    """Ollama streams NDJSON by default: relayed whole, its usage read from the last line; a
    StreamCut cuts its bytes; EmptyChoice cannot act on it and is re-picked."""
    chat = {"model": "llama3", "messages": MESSAGES}
    async with llm_proxy(tmp_path) as (_, _s, proxy), httpx.AsyncClient(timeout=10) as http:
        whole = await http.post(f"{proxy.url}/e/ep/llm/api/chat", json=chat)
    lines = [json.loads(line) for line in whole.text.splitlines()]
    assert "".join(line.get("message", {}).get("content", "") for line in lines) == "".join(WORDS)
    (passed,) = read_log(tmp_path)
    assert passed.kind == "model_call" and passed.usage == {"prompt_eval_count": 9, "eval_count": 6}
    profile = Profile.model_validate(
        {
            "name": "cut-or-empty",
            "failure_rate": 1.0,
            "weights": {"StreamCut": 1.0, "EmptyChoice": 3.0},
            "params": {"StreamCut": {"keep_fraction": 0.5}},
        }
    )
    async with (
        llm_proxy(tmp_path / "cut", profile) as (_, _s, proxy),
        httpx.AsyncClient(timeout=10) as http,
    ):
        cut = [await http.post(f"{proxy.url}/e/ep/llm/api/chat", json=chat) for _ in range(4)]
    assert all(whole.content.startswith(r.content) for r in cut)
    assert all(len(r.content) == len(whole.content) // 2 for r in cut)
    log = read_log(tmp_path / "cut")
    assert all(r.fault is not None and r.fault.name == "StreamCut" for r in log)
    assert all(r.fault_delivered and r.note is None for r in log)
