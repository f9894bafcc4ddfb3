"""The log: deterministic, complete under concurrency, and complete after a SIGKILL."""

from __future__ import annotations

import asyncio
import datetime
import json
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from proxy_helpers import ProxyFactory, read_log
from proxy_subprocess import start_up
from proxy_toy import serve_toy

from chaosproxy.faults import FaultEngine, Profile
from chaosproxy.proxy.calllog import encode
from chaosproxy.proxy.server import ProxyServer

MIXED = Profile.model_validate(
    {
        "name": "mixed-fast",
        "failure_rate": 0.6,
        "weights": {
            "TransientTimeout": 1,
            "ServerError": 1,
            "SoftRateLimit": 1,
            "PartialResponse": 1,
            "EmptyResponse": 1,
            "StaleData": 1,
            "ParameterCorruption": 1,
            "SchemaDrift": 1,
            "ConnectionReset": 1,
            "LostReply": 1,
        },
        "params": {
            "TransientTimeout": {"delay_s": 0.01},
            "LostReply": {"delay_s": 0.01},
            "SoftRateLimit": {"retry_after_s": 0},
        },
        "hints": {
            "toy": {
                "critical_args": {
                    "get_item": {"item_id": {"kind": "choice", "values": ["A1", "B2"]}}
                }
            }
        },
    }
)
TIMING_FIELDS = {"ts", "latency_ms"}


async def _one(client: httpx.AsyncClient, url: str, tool: str, args: dict[str, Any]) -> int:
    try:
        return (await client.post(url + f"/tools/{tool}", json=args)).status_code
    except httpx.TransportError:
        return 0


async def _sequence(tmp: Path) -> list[dict[str, Any]]:
    async with serve_toy() as (toy_url, _):
        engine = FaultEngine(default_profile=MIXED, seed=42)
        proxy = ProxyServer(engine=engine, upstreams={"toy": toy_url}, run_seed=42, run_dir=tmp)
        await proxy.start()
        try:
            async with httpx.AsyncClient() as client:
                for i in range(24):
                    episode = f"ep{i % 3}"
                    tool, args = (
                        ("get_item", {"item_id": "A1"})
                        if i % 2
                        else ("add_note", {"text": f"t{i}"})
                    )
                    await _one(client, f"{proxy.url}/e/{episode}/toy", tool, args)
        finally:
            await proxy.stop()
    return [
        {k: v for k, v in r.model_dump().items() if k not in TIMING_FIELDS} for r in read_log(tmp)
    ]


async def test_same_seed_same_calls_give_identical_logs(tmp_path: Path) -> None:
    first = await _sequence(tmp_path / "a")
    second = await _sequence(tmp_path / "b")
    assert len(first) == 24
    assert sum(1 for r in first if r["fault"]) >= 5
    assert first == second


async def test_every_call_is_logged_under_concurrency(
    make_proxy: ProxyFactory, tmp_path: Path
) -> None:
    async with make_proxy(MIXED) as proxy, httpx.AsyncClient(timeout=10) as client:
        jobs = [
            _one(client, f"{proxy.url}/e/c{i % 4}/toy", "add_note", {"text": f"n{i}"})
            for i in range(80)
        ]
        statuses = await asyncio.gather(*jobs)
    log = read_log(tmp_path)
    assert len(log) == len(statuses) == 80
    for episode in ("c0", "c1", "c2", "c3"):
        steps = sorted(r.step or 0 for r in log if r.episode == episode)
        assert steps == list(range(1, 21))
    assert sorted(r.arguments["text"] for r in log if r.arguments) == sorted(
        f"n{i}" for i in range(80)
    )


@pytest.mark.timeout(60)
async def test_sigkill_during_load_loses_no_answered_call(tmp_path: Path) -> None:
    async with serve_toy() as (toy_url, _):
        process, url = await asyncio.to_thread(
            start_up,
            ["--profile", "lambda0.0", "--domains", "none", "--upstream", f"toy={toy_url}"],
            tmp_path,
        )
        answered: list[str] = []

        async def worker(index: int, client: httpx.AsyncClient) -> None:
            for n in range(200):
                text = f"w{index}-{n}"
                try:
                    response = await client.post(f"{url}/toy/tools/add_note", json={"text": text})
                except httpx.TransportError:
                    return
                if response.status_code == 200:
                    answered.append(text)

        try:
            async with httpx.AsyncClient(timeout=5) as client:
                # the first call can take seconds on a loaded machine: not under test
                await client.post(f"{url}/toy/tools/add_note", json={"text": "warm"}, timeout=60)
                tasks = [asyncio.create_task(worker(i, client)) for i in range(8)]
                while len(answered) < 100 and not all(task.done() for task in tasks):
                    await asyncio.sleep(0.01)
                process.send_signal(signal.SIGKILL)
                await asyncio.gather(*tasks)
        finally:
            process.kill()
            process.wait()
    logged = {r.arguments["text"] for r in read_log(tmp_path) if r.arguments}
    assert len(answered) >= 100
    assert set(answered) <= logged


async def test_unencodable_text_is_still_logged(make_proxy: ProxyFactory, tmp_path: Path) -> None:
    """A lone surrogate (valid JSON escape, not encodable as UTF-8) never breaks the log.

    The call is refused at the edge (400, no step, the service untouched) and still logged.
    """
    async with make_proxy() as proxy, httpx.AsyncClient() as client:
        response = await client.post(
            f"{proxy.url}/toy/tools/add_note",
            content=b'{"text": "bad \\ud800 text"}',
            headers={"Content-Type": "application/json"},
        )
        after = await client.post(f"{proxy.url}/toy/tools/add_note", json={"text": "fine"})
    assert after.status_code == 200 and response.status_code == 400
    lines = (tmp_path / "calls.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and "\\ud800" in lines[0]
    assert [r.step for r in read_log(tmp_path)] == [None, 1]


_JSON = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), default=str)


@pytest.mark.parametrize(
    "arguments",
    [
        {"item_id": "A1", "quantity": 2, "price": 19.5, "tags": ["x", None, True]},
        {"text": "café ✓"},
        {"ratio": float("nan"), "deep": [{"big": float("-inf")}]},
        {"text": "bad \ud800 text"},
        {"id": 2**70},
        {"when": datetime.datetime(2026, 11, 24, 3, 40)},
        {"nested": {"a": {"b": [1, 2.25, {"c": "d"}]}}, "empty": {}},
    ],
)
def test_log_lines_are_the_json_encoders_lines(arguments: dict[str, Any]) -> None:
    """orjson writes a line only when it writes what `json` would; the rest falls back."""
    fields = {"ts": 1795491168.4855928, "step": 3, "fault": None, "arguments": arguments}
    assert encode(fields) == (_JSON.encode(fields) + "\n").encode("ascii")


async def test_non_ascii_and_nan_arguments_are_logged_as_before(
    make_proxy: ProxyFactory, tmp_path: Path
) -> None:
    async with make_proxy() as proxy, httpx.AsyncClient() as client:
        for body in (b'{"text": "caf\xc3\xa9"}', b'{"text": "n", "x": NaN}', b'{"text": "plain"}'):
            response = await client.post(
                f"{proxy.url}/toy/tools/add_note",
                content=body,
                headers={"Content-Type": "application/json"},
            )
            assert response.status_code == 200
    lines = (tmp_path / "calls.jsonl").read_bytes().splitlines()
    assert len(lines) == 3 and all(line.isascii() for line in lines)
    assert b'"text":"caf\\u00e9"' in lines[0] and b'"x":NaN' in lines[1]
    assert [r.arguments for r in read_log(tmp_path)][2] == {"text": "plain"}
