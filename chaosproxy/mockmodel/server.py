"""The mock model's HTTP face: OpenAI-compatible chat completions, embeddings, models.

Every answer carries `system_fingerprint: chaosproxy-mock-model` and every listed model
`owned_by: chaosproxy-mock`, so runs made with it are labelled as such. Token usage is
counted, deterministically, as one token per 4 characters of the JSON sent and returned,
so accounting can be exercised offline; it is not any real tokenizer's count.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

from aiohttp import web

from chaosproxy.agents.embedding import LEXICAL, lexical_embedding
from chaosproxy.agents.llm import MOCK_FINGERPRINT, MOCK_OWNER
from chaosproxy.mockmodel.identify import identify
from chaosproxy.mockmodel.play import Habit, Move, Observation, Player, TextMove, parse_habits

MOCK_MODELS = ("mock", "mock+ignores-errors", "mock+retries-blindly", "mock+trusts-injections")


def _tokens(value: Any) -> int:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return max(1, math.ceil(len(text) / 4))


def _text(content: Any) -> str:
    """Message content as text (a string, or a list of text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def conversation(messages: list[dict[str, Any]]) -> tuple[str, list[Observation]]:
    """The task text (first user message) and the tool calls with what came back, in order."""
    task = next((_text(m.get("content")) for m in messages if m.get("role") == "user"), "")
    results = {
        m.get("tool_call_id"): _text(m.get("content")) for m in messages if m.get("role") == "tool"
    }
    observations: list[Observation] = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            if call.get("id") in results:
                name = str((call.get("function") or {}).get("name", ""))
                observations.append(Observation(name, results[call["id"]]))
    return task, observations


def reflection(observations: list[Observation]) -> str:
    """What the mock says when asked without tools (a reflection or a plan): the errors seen."""
    errors = [(o.tool, o.error()) for o in observations if o.error() is not None]
    if not errors:
        return "Reflection: no tool failed; re-check the results against the request."
    seen = "; ".join(f"{tool} failed ({failure})" for tool, failure in errors[:5] if failure)
    return (
        f"Reflection: {seen}. Next attempt: check the current state first, retry transient "
        "failures, and escalate to a human if a tool keeps failing."
    )


def decide(body: dict[str, Any], default_habits: frozenset[Habit]) -> Move:
    messages = body.get("messages") or []
    tools = [str((t.get("function") or {}).get("name", "")) for t in body.get("tools") or []]
    task_text, observations = conversation(messages)
    if not tools or body.get("tool_choice") == "none":
        return TextMove(reflection(observations))
    match = identify(task_text, tools)
    if match is None:
        return TextMove("I do not know which task this is.")
    habits = parse_habits(str(body.get("model", "")), default_habits)
    return Player(match.task.solve, habits).next_move(observations)


def completion(body: dict[str, Any], move: Move) -> dict[str, Any]:
    model = str(body.get("model", "mock"))
    if isinstance(move, TextMove):
        message: dict[str, Any] = {"role": "assistant", "content": move.text}
        finish = "stop"
    else:
        turn = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
        function = {"name": move.tool, "arguments": json.dumps(move.arguments)}
        call = {"id": f"call_{turn}", "type": "function", "function": function}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    prompt = _tokens(body.get("messages") or []) + _tokens(body.get("tools") or [])
    answer = _tokens(message)
    return {
        "id": f"chatcmpl-mock-{len(body.get('messages') or [])}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": MOCK_FINGERPRINT,
        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": answer,
            "total_tokens": prompt + answer,
        },
    }


def _bad_request(message: str) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": "invalid_request_error"}}, status=400
    )


def mock_app(habits: frozenset[Habit] = frozenset()) -> web.Application:
    async def chat(request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return _bad_request("the body is not valid JSON")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _bad_request("a chat completion needs a `messages` list")
        if body.get("stream"):
            return _bad_request("the mock model does not stream; send stream=false")
        try:
            move = decide(body, habits)
        except ValueError as bad:
            return _bad_request(str(bad))
        return web.json_response(completion(body, move))

    async def embeddings(request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return _bad_request("the body is not valid JSON")
        texts = body.get("input") if isinstance(body, dict) else None
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return _bad_request("`input` must be a string or a list of strings")
        data = [
            {"object": "embedding", "index": i, "embedding": lexical_embedding(t).tolist()}
            for i, t in enumerate(texts)
        ]
        tokens = sum(_tokens(t) for t in texts)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": str(body.get("model", LEXICAL)),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def models(_: web.Request) -> web.Response:
        listed = [*MOCK_MODELS, LEXICAL]
        data = [{"id": m, "object": "model", "created": 0, "owned_by": MOCK_OWNER} for m in listed]
        return web.json_response({"object": "list", "data": data})

    app = web.Application(client_max_size=32 * 1024**2)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/v1/embeddings", embeddings)
    app.router.add_get("/v1/models", models)
    return app
