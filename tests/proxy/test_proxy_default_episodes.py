"""Calls without an episode id (issue 25 #10): `chaosproxy up --profile lambda0.2` cuts them
into rolling episodes of `--default-episode-calls` tool calls, so a persistent fault drawn
once (a drift, stale data) ends with its rolling episode instead of breaking the API for
good. Before, 300 calls to one tool without an episode header all carried a fault."""

from __future__ import annotations

import asyncio
import json
import math
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from proxy_helpers import read_log
from proxy_subprocess import start_up

from chaosproxy.proxy.episodes import DEFAULT_EPISODE_CALLS
from chaosproxy.records import CONFIG_FILE, CallRecord, RunConfig

CALLS = 1000
RATE = 0.175  # lambda0.2's failure_rate (profiles/lambda0.2.yaml)


class _Inventory(BaseHTTPRequestHandler):
    """One tool whose every reply differs (a stock counter): the worst case for the
    persistent faults, since a stale or drifted reply is always a visible change."""

    served = 0
    lock = threading.Lock()

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        arguments = json.loads(self.rfile.read(length) or b"{}")
        with _Inventory.lock:
            _Inventory.served += 1
            served = _Inventory.served
        data = json.dumps({"sku": arguments.get("sku"), "stock": served, "warehouse": "W1"})
        body = data.encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def fresh_and_affected(records: list[CallRecord]) -> tuple[int, int]:
    """Tool calls carrying a freshly drawn fault that reached the agent, and calls carrying
    any delivered fault (fresh, or a running incident applied again)."""
    fresh = affected = 0
    for record in records:
        fault = record.fault
        if fault is None or not record.fault_delivered or fault.params.get("applied") is False:
            continue
        affected += 1
        if fault.fresh is not False:
            fresh += 1
    return fresh, affected


async def _hammer(url: str) -> None:
    """CALLS identical tool calls, no episode header, 32 at a time (TransientTimeout holds a
    call 1 s; in parallel the holds overlap)."""
    gate = asyncio.Semaphore(32)
    async with httpx.AsyncClient(timeout=30) as client:

        async def one() -> None:
            async with gate:
                await client.post(f"{url}/inv/tools/get_inventory", json={"sku": "SKU-1"})

        await asyncio.gather(*(one() for _ in range(CALLS)))


@pytest.mark.timeout(120)
def test_up_without_episode_ids_keeps_lambda0_2_rates(tmp_path: Path) -> None:
    service = ThreadingHTTPServer(("127.0.0.1", 0), _Inventory)
    threading.Thread(target=service.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{service.server_address[1]}"
    args = ["--profile", "lambda0.2", "--domains", "none", "--upstream", f"inv={upstream}"]
    try:
        process, url = start_up(args, tmp_path)
        try:
            assert process.stdout is not None
            printed: list[str] = []
            while not printed or not printed[-1].startswith("Ctrl-C"):
                printed.append(process.stdout.readline())
            asyncio.run(_hammer(url))
        finally:
            process.send_signal(signal.SIGINT)
            _out, err = process.communicate(timeout=30)
    finally:
        service.shutdown()
        service.server_close()
    assert process.returncode == 0, err
    grouping = f"calls without one: rolling episodes of {DEFAULT_EPISODE_CALLS} tool calls"
    assert any(grouping in line for line in printed), printed
    config = RunConfig.model_validate_json((tmp_path / CONFIG_FILE).read_text())
    assert config.settings["default_episode_calls"] == DEFAULT_EPISODE_CALLS

    records = [r for r in read_log(tmp_path) if r.kind == "tool_call"]
    assert len(records) == CALLS
    assert {r.episode for r in records} == {"default"}
    assert sorted(r.step or 0 for r in records) == list(range(1, CALLS + 1))
    # each rolling episode has its own key and exactly N calls (steps (k-1)N+1 .. kN)
    for record in records:
        window = ((record.step or 0) - 1) // DEFAULT_EPISODE_CALLS
        assert record.episode_key == ("default" if window == 0 else f"default~{window + 1}")

    fresh, affected = fresh_and_affected(records)
    print(f"fresh {fresh}/{CALLS}, affected {affected}/{CALLS}")
    # Fresh draws are independent Bernoulli(RATE) per call (a hash of the call's key), so
    # the fresh count is Binomial(n, RATE): σ of the share = sqrt(RATE (1 - RATE) / n)
    # = sqrt(0.175 · 0.825 / 1000) = 0.0120, and 5σ = 0.060.
    sigma = math.sqrt(RATE * (1 - RATE) / CALLS)
    assert abs(fresh / CALLS - RATE) <= 5 * sigma, (fresh, sigma)
    # Affected also counts calls a running drift or stale cache reached again; with
    # rolling episodes it stays under twice the profile's rate (it was 300 of 300 before).
    assert affected / CALLS < 2 * RATE, affected
    assert affected > fresh  # persistent faults still outlive their call within an episode
