"""One call of each protocol walks the pipeline forward (issue 28).

A real proxy on 127.0.0.1, in this event loop, in front of the toy service (REST + MCP)
and the mock model, with λ0.2's mix at a rate that draws no fault (so replies are read,
as on a faulted call). `sys.setprofile` records, for every Python call (and coroutine
resumption) in the project while one call is answered, the module called and the module
calling it. Two things must hold:

- adapters are sans-I/O at run time too: no function of `proxy/protocols/*` calls into
  the pipeline, the relay, `finish`, the core, the listener or the upstream pool (before
  issue 28 each adapter's `reply()` called `Exchange.after` and `Core.send` itself);
- no module is re-entered (left, then entered again) more than `REENTRY_BUDGET` times.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import httpx
import pytest
from chaosproxy.profiles import load_profile
from proxy_helpers import ProxyFactory, read_log
from proxy_llm import serve_llm
from proxy_toy import serve_toy

import chaosproxy
from chaosproxy.faults import FaultEngine
from chaosproxy.proxy.protocols.rest import RestAdapter
from chaosproxy.proxy.server import ProxyServer

PACKAGE = str(Path(chaosproxy.__file__).parent)
REENTRY_BUDGET = 10
"""Times one call may come back to a project module it left. Measured here: REST and model
at most 6 (the engine: draw, then the reply), MCP over SSE at most 9 (the listener and the
upstream client: once per event relayed, an await each). Awaits resume the coroutine that
made them, so streaming keeps a floor of re-entries in the I/O modules."""
IO_SIDE = (
    "proxy/pipeline.py",
    "proxy/relay.py",
    "proxy/finish.py",
    "proxy/core.py",
    "proxy/exchange.py",
    "proxy/listener.py",
    "proxy/upstream.py",
    "proxy/h1client.py",
    "proxy/calllog.py",
)
"""Where adapters must never call: the I/O side of the proxy."""
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def reentries(modules: list[str]) -> Counter[str]:
    """How often the sequence comes back to a module it had left."""
    seen: set[str] = set()
    counts: Counter[str] = Counter()
    previous = None
    for module in modules:
        if module == previous:
            continue
        if module in seen:
            counts[module] += 1
        seen.add(module)
        previous = module
    return counts


def _module(frame: FrameType | None) -> str | None:
    if frame is None:
        return None
    filename = frame.f_code.co_filename
    return filename[len(PACKAGE) + 1 :] if filename.startswith(PACKAGE) else None


async def traced(
    call: Callable[[], Awaitable[httpx.Response]],
) -> tuple[httpx.Response, list[str], list[tuple[str, str]]]:
    """The reply; the project modules entered while it was made, in order; and every
    (caller, callee) pair of project modules."""
    modules: list[str] = []
    edges: list[tuple[str, str]] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and (module := _module(frame)) is not None:
            modules.append(module)
            caller = _module(frame.f_back)
            if caller is not None and caller != module:
                edges.append((caller, module))

    sys.setprofile(profile)
    try:
        reply = await call()
    finally:
        sys.setprofile(None)
    return reply, modules, edges


@asynccontextmanager
async def proxy_in_front(run_dir: Path) -> AsyncIterator[ProxyServer]:
    async with serve_toy() as (toy_url, _), serve_llm() as (llm_url, _):
        # λ0.2's mix at a rate that draws no fault: replies are read (StaleData may replay
        # them), so each call takes the whole path a fault would, but none is faulted
        quiet = load_profile("lambda0.2").model_copy(update={"failure_rate": 1e-9})
        engine = FaultEngine(default_profile=quiet, seed=3)
        proxy = ProxyServer(
            engine=engine, upstreams={"toy": toy_url, "llm": llm_url}, run_seed=3, run_dir=run_dir
        )
        await proxy.start()
        try:
            yield proxy
        finally:
            await proxy.stop()


@pytest.mark.asyncio
async def test_one_call_of_each_protocol_walks_the_pipeline_forward(tmp_path: Path) -> None:
    async with proxy_in_front(tmp_path) as proxy, httpx.AsyncClient(timeout=10) as http:
        base = f"{proxy.url}/e/ep"

        async def rest() -> httpx.Response:
            return await http.post(f"{base}/toy/tools/get_item", json={"item_id": "A1"})

        opened = await http.post(
            f"{base}/toy/mcp",
            headers=MCP_HEADERS,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "trace", "version": "1"},
                },
            },
        )
        session = {**MCP_HEADERS, "Mcp-Session-Id": opened.headers["Mcp-Session-Id"]}
        notified = await http.post(
            f"{base}/toy/mcp",
            headers=session,
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        )
        assert notified.status_code == 202

        async def mcp() -> httpx.Response:
            return await http.post(
                f"{base}/toy/mcp",
                headers=session,
                json={
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "get_item", "arguments": {"item_id": "A1"}},
                },
            )

        async def model() -> httpx.Response:
            return await http.post(
                f"{base}/llm/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            )

        results = {}
        for name, call in (("rest", rest), ("mcp", mcp), ("model", model)):
            await call()  # warm: connections, caches and imports are not the path
            reply, modules, edges = await traced(call)
            assert reply.status_code == 200, (name, reply.text)
            results[name] = (reply, modules, edges)

    assert results["rest"][0].json()["item_id"] == "A1"
    assert '"A1"' in results["mcp"][0].text
    for name, (_, path, edges) in results.items():
        assert f"proxy/protocols/{name}.py" in path, name
        assert "proxy/finish.py" in path, name
        callbacks = {
            (caller, callee)
            for caller, callee in edges
            if caller.startswith("proxy/protocols/") and callee in IO_SIDE
        }
        assert callbacks == set(), (name, callbacks)
        over = {module: n for module, n in reentries(path).items() if n > REENTRY_BUDGET}
        assert over == {}, (name, reentries(path).most_common(5))
    calls = [c for c in read_log(tmp_path) if c.kind in ("tool_call", "model_call")]
    assert [c.transport for c in calls] == ["rest", "rest", "mcp", "mcp", "rest", "rest"]


def test_reentries_counts_returns_to_a_module_left_earlier() -> None:
    path = ["a", "a", "b", "a", "c", "b", "b", "a"]
    assert reentries(path) == Counter({"a": 2, "b": 1})


async def test_a_crash_of_the_engine_or_an_adapter_is_still_answered_and_logged(
    make_proxy: ProxyFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call the agent saw is never missing from the log: the engine raising, or an
    adapter raising while it renders, ends in one logged 500 that says so."""
    async with make_proxy("lambda0.0", run_dir=tmp_path) as proxy, httpx.AsyncClient() as http:
        engine = proxy.core.engine

        def broken(context: Any) -> Any:
            raise RuntimeError("engine broke")

        monkeypatch.setattr(engine, "before_call", broken)
        first = await http.post(f"{proxy.url}/e/ep/toy/tools/get_item", json={"item_id": "A1"})
        monkeypatch.undo()

        def unrenderable(self: Any, reply: Any) -> Any:
            raise ValueError("adapter broke")

        monkeypatch.setattr(RestAdapter, "passed", unrenderable)
        second = await http.post(f"{proxy.url}/e/ep/toy/tools/get_item", json={"item_id": "B2"})
    assert (first.status_code, second.status_code) == (500, 500)
    assert first.json()["error"]["type"] == "proxy_error"
    calls = [c for c in read_log(tmp_path) if c.kind == "tool_call"]
    assert [(c.arguments, c.status, c.outcome) for c in calls] == [
        ({"item_id": "A1"}, 500, "http_error"),
        ({"item_id": "B2"}, 500, "http_error"),
    ]
    assert calls[0].error == "proxy error: RuntimeError('engine broke')"
    assert calls[1].error == "proxy error: ValueError('adapter broke')"
    assert [c.upstream_called for c in calls] == [False, True]
