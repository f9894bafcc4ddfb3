"""LLM paraphrase at ε ≥ 0.2, against a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from chaosproxy.records import EPISODES_FILE, EpisodeRecord, read_jsonl
from chaosproxy.runner.paraphrase import Paraphraser, missing_facts

PREFIX = "Could you sort this out for me? "


def chat_app(requests: list[dict[str, Any]], mode: str) -> web.Application:
    """A stand-in for a hosted model: rewrites deterministically, or drops facts on purpose."""

    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        requests.append(body)
        text = body["messages"][-1]["content"]
        content = (
            PREFIX + text if mode == "faithful" else "".join(c for c in text if not c.isdigit())
        )
        return web.json_response(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": content},
                    }
                ],
            }
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    return app


async def serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app)
    await runner.setup()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    site = web.SockSite(runner, sock)
    await site.start()
    return runner, f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


@pytest.mark.parametrize(
    ("original", "paraphrase", "lost"),
    [
        ("Book UA-1523 on 2026-03-10 for 2 people.", "Reserve UA-1523 for 2 on 2026-03-10.", []),
        ("Book UA-1523 on 2026-03-10.", "Book UA-1523 on March 10.", ["2026-03-10"]),
        ("Refund order ORD-50001 by 120.50 USD.", "Refund ORD-50001.", ["120.50"]),
    ],
)
def test_missing_facts(original: str, paraphrase: str, lost: list[str]) -> None:
    assert missing_facts(original, paraphrase) == lost


@pytest.mark.parametrize(("mode", "accepted"), [("faithful", True), ("lossy", False)])
async def test_paraphraser_checks_meaning(mode: str, accepted: bool) -> None:
    requests: list[dict[str, Any]] = []
    runner, url = await serve(chat_app(requests, mode))
    try:
        paraphraser = Paraphraser("scripted-model", url)
        text = "Book UA-1523 on 2026-03-10 for Ana Ruiz."
        result = await paraphraser.paraphrase(text, seed=42)
        await paraphraser.close()
    finally:
        await runner.cleanup()
    assert result.accepted is accepted
    assert result.text == (PREFIX + text if accepted else text)
    assert requests[0]["temperature"] == 0 and requests[0]["seed"] == 42


@pytest.fixture
def chat_server() -> Any:
    """A scripted chat server in its own thread, since the runner runs its own event loop."""
    import threading

    requests: list[dict[str, Any]] = []
    loop = asyncio.new_event_loop()
    started: dict[str, Any] = {}

    def run() -> None:
        asyncio.set_event_loop(loop)
        started["runner"], started["url"] = loop.run_until_complete(
            serve(chat_app(requests, "faithful"))
        )
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    while "url" not in started:
        thread.join(0.01)
    yield started["url"], requests
    asyncio.run_coroutine_threadsafe(started["runner"].cleanup(), loop).result(5)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def test_a_run_paraphrases_each_cell_once(
    tmp_path: Path, run_grid: Callable[..., Any], chat_server: tuple[str, list[dict[str, Any]]]
) -> None:
    url, requests = chat_server
    out = tmp_path / "run"
    run_grid(
        out,
        agents=["robust"],
        domains=["travel"],
        task_patterns=["travel-01*", "travel-03*"],
        epsilons=[0.0, 0.2],
        trials=2,
        paraphrase_model="scripted-model",
        paraphrase_base_url=url,
    )
    records = list(read_jsonl(out / EPISODES_FILE, EpisodeRecord))
    assert len(records) == 2 * 2 * 2
    assert len(requests) == 2
    for record in records:
        if record.epsilon == 0.2:
            assert record.task_text.startswith(PREFIX)
            assert record.perturbations[-1] == "paraphrase"
        else:
            assert "paraphrase" not in record.perturbations
        assert record.success is True
    config = json.loads((out / "config.json").read_text())
    assert config["settings"]["paraphrase_model"] == "scripted-model"
