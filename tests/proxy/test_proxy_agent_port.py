"""The agent port's own HTTP/1.1 server, on raw sockets: framing, keep-alive, limits.

What a real client relies on and the lean server (`chaosproxy.proxy.listener`) does
itself: pipelined requests answered in order, HTTP/1.0 and keep-alive, `Expect:
100-continue`, chunked request bodies, HEAD, the body deadline and the header limits,
a crashing handler, and a client that hangs up mid-call.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
from aiohttp import web
from chaosproxy.profiles import load_profile
from proxy_helpers import ProxyFactory, read_reply

from chaosproxy.faults import FaultEngine
from chaosproxy.proxy.listener import Response
from chaosproxy.proxy.server import ProxyServer
from chaosproxy.proxy.settings import ProxyLimits

NOTE = b'{"text":"hi"}'


def _post(path: str, body: bytes, extra: bytes = b"") -> bytes:
    return (
        b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n" + extra + b"\r\n" + body
    )


async def _open(proxy: ProxyServer) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", proxy.port)


def _lines(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "calls.jsonl").read_text().splitlines()]


async def test_pipelined_requests_are_answered_in_order(
    make_proxy: ProxyFactory, tmp_path: Path
) -> None:
    async with make_proxy(run_dir=tmp_path) as proxy:
        reader, writer = await _open(proxy)
        texts = [f"note {i}" for i in range(4)]
        writer.write(
            b"".join(_post("/toy/tools/add_note", json.dumps({"text": t}).encode()) for t in texts)
        )
        replies = [await read_reply(reader) for _ in texts]
        writer.close()
    assert [status for status, _, _ in replies] == [200] * 4
    assert [json.loads(body)["text"] for _, _, body in replies] == texts
    assert [line["step"] for line in _lines(tmp_path)] == [1, 2, 3, 4]


async def test_http10_closes_unless_kept_alive(make_proxy: ProxyFactory) -> None:
    async with make_proxy() as proxy:
        reader, writer = await _open(proxy)
        writer.write(b"GET /toy/openapi.json HTTP/1.0\r\n\r\n")
        status, headers, _ = await read_reply(reader)
        assert status == 200 and headers["connection"] == "close"
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()

        reader, writer = await _open(proxy)
        request = b"GET /toy/openapi.json HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
        writer.write(request)
        first, _, _ = await read_reply(reader)
        writer.write(request)
        second, _, _ = await read_reply(reader)
        writer.close()
    assert first == second == 200


async def test_expect_100_continue_then_the_reply(make_proxy: ProxyFactory) -> None:
    async with make_proxy() as proxy:
        reader, writer = await _open(proxy)
        head = _post("/toy/tools/add_note", NOTE, b"Expect: 100-continue\r\n")[: -len(NOTE)]
        writer.write(head)
        interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        writer.write(NOTE)
        status, _, body = await read_reply(reader)
        writer.close()
    assert interim.startswith(b"HTTP/1.1 100 Continue")
    assert status == 200 and json.loads(body)["text"] == "hi"


async def test_expect_100_continue_over_the_limit_is_a_413_at_once(
    make_proxy: ProxyFactory,
) -> None:
    async with make_proxy(limits=ProxyLimits(max_body_bytes=100)) as proxy:
        reader, writer = await _open(proxy)
        writer.write(
            b"POST /toy/tools/add_note HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n"
            b"Expect: 100-continue\r\n\r\n"
        )
        status, _, body = await read_reply(reader)
        writer.close()
    assert status == 413 and json.loads(body)["error"]["type"] == "body_too_large"


async def test_chunked_request_body_reaches_the_pipeline(
    make_proxy: ProxyFactory, tmp_path: Path
) -> None:
    async with make_proxy(run_dir=tmp_path) as proxy:
        reader, writer = await _open(proxy)
        writer.write(
            b"POST /toy/tools/add_note HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
            b'5\r\n{"tex\r\n8\r\nt":"hi"}\r\n0\r\n\r\n'
        )
        status, _, body = await read_reply(reader)
        writer.close()
    assert status == 200 and json.loads(body)["text"] == "hi"
    (line,) = _lines(tmp_path)
    assert line["arguments"] == {"text": "hi"} and line["bytes_in"] == len(NOTE)


async def test_chunked_body_over_the_limit_is_a_413(make_proxy: ProxyFactory) -> None:
    async with make_proxy(limits=ProxyLimits(max_body_bytes=64)) as proxy:
        reader, writer = await _open(proxy)
        writer.write(
            b"POST /toy/tools/add_note HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + b"40\r\n"
            + b"x" * 64
            + b"\r\n"
            + b"1\r\nx\r\n0\r\n\r\n"
        )
        status, headers, body = await read_reply(reader)
        writer.close()
    assert status == 413 and "64" in json.loads(body)["error"]["message"]
    assert headers["connection"] == "close"


async def test_head_has_a_length_and_no_body(make_proxy: ProxyFactory) -> None:
    async with make_proxy() as proxy:
        reader, writer = await _open(proxy)
        writer.write(b"HEAD /toy/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n")
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        writer.write(b"GET /toy/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n")
        status, _, body = await read_reply(reader)
        writer.close()
    assert head.startswith(b"HTTP/1.1 ")
    # the next reply starts right after the head: HEAD sent no body bytes
    assert status == 200 and json.loads(body)["openapi"].startswith("3.")


async def test_a_body_that_never_arrives_is_a_408(make_proxy: ProxyFactory) -> None:
    async with make_proxy(limits=ProxyLimits(body_timeout_s=0.3)) as proxy:
        reader, writer = await _open(proxy)
        writer.write(_post("/toy/tools/add_note", NOTE)[:-5])
        status, headers, body = await read_reply(reader)
        writer.close()
    assert status == 408 and json.loads(body)["error"]["type"] == "body_timeout"
    assert headers["connection"] == "close"


async def test_too_many_header_fields_is_a_json_400(make_proxy: ProxyFactory) -> None:
    async with make_proxy(limits=ProxyLimits(max_headers=5)) as proxy:
        reader, writer = await _open(proxy)
        fields = b"".join(b"X-%d: 1\r\n" % i for i in range(6))
        writer.write(b"GET /toy/openapi.json HTTP/1.1\r\nHost: x\r\n" + fields + b"\r\n")
        status, _, body = await read_reply(reader)
        writer.close()
    error = json.loads(body)["error"]
    assert status == 400 and error["type"] == "bad_request" and "5 header" in error["message"]


async def test_a_handler_crash_is_a_json_500_and_the_next_call_works(
    make_proxy: ProxyFactory,
) -> None:
    async with make_proxy() as proxy, httpx.AsyncClient() as client:
        port = proxy._agent_port
        assert port is not None
        real = port.handler
        calls = 0

        async def crash_once(request: Any) -> Response:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise RuntimeError("boom")
            return await real(request)  # type: ignore[return-value]

        port.handler = crash_once
        crashed = await client.get(f"{proxy.url}/toy/openapi.json")
        fine = await client.get(f"{proxy.url}/toy/openapi.json")
    assert crashed.status_code == 500 and crashed.json()["error"]["type"] == "proxy_error"
    assert fine.status_code == 200


async def test_client_hanging_up_mid_call_is_logged_499(
    make_proxy: ProxyFactory, tmp_path: Path
) -> None:
    async with make_proxy(run_dir=tmp_path) as proxy:
        _reader, writer = await _open(proxy)
        writer.write(b"GET /toy/slow?s=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(0.2)
        writer.close()
        await asyncio.sleep(0.3)
        (line,) = _lines(tmp_path)
    assert line["status"] == 499 and "disconnected" in line["error"]


async def test_idle_keep_alive_connection_is_closed(make_proxy: ProxyFactory) -> None:
    async with make_proxy(limits=ProxyLimits(idle_timeout_s=0.3)) as proxy:
        reader, writer = await _open(proxy)
        writer.write(b"GET /toy/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n")
        status, _, _ = await read_reply(reader)
        closed = await asyncio.wait_for(reader.read(), 3) == b""
        writer.close()
    assert status == 200 and closed


async def test_one_date_header_the_services_when_it_sent_one(make_proxy: ProxyFactory) -> None:
    async with make_proxy() as proxy:
        reader, writer = await _open(proxy)
        writer.write(b"GET /toy/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n")
        relayed = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        writer.close()
        reader, writer = await _open(proxy)
        writer.write(b"GET /nowhere/x HTTP/1.1\r\nHost: x\r\n\r\n")
        own = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        writer.close()
    assert relayed.lower().count(b"\r\ndate: ") == 1
    assert own.startswith(b"HTTP/1.1 404") and own.lower().count(b"\r\ndate: ") == 1


async def test_client_hanging_up_mid_sse_reply_is_logged_499(tmp_path: Path) -> None:
    """An MCP tools/call whose SSE reply is still pending when the agent hangs up."""

    async def slow_sse(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b": keep-alive\n\n")
        await asyncio.sleep(2)
        reply = {"jsonrpc": "2.0", "id": 7, "result": {"content": []}}
        await response.write(b"event: message\ndata: " + json.dumps(reply).encode() + b"\n\n")
        return response

    app = web.Application()
    app.router.add_post("/mcp", slow_sse)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    engine = FaultEngine(default_profile=load_profile("lambda0.0"))
    proxy = ProxyServer(
        engine=engine, upstreams={"m": f"http://127.0.0.1:{port}"}, run_seed=0, run_dir=tmp_path
    )
    await proxy.start()
    try:
        _reader, writer = await _open(proxy)
        body = json.dumps(
            {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "t"}}
        ).encode()
        writer.write(_post("/m/mcp", body, b"Accept: application/json, text/event-stream\r\n"))
        await writer.drain()
        await asyncio.sleep(0.3)
        writer.close()
        await asyncio.sleep(0.3)
        (line,) = _lines(tmp_path)
    finally:
        await proxy.stop()
        await runner.cleanup()
    assert line["rpc_method"] == "tools/call"
    assert line["status"] == 499 and "disconnected" in line["error"]


async def test_nothing_is_answered_after_connection_close(
    make_proxy: ProxyFactory, tmp_path: Path
) -> None:
    async with make_proxy(run_dir=tmp_path) as proxy:
        reader, writer = await _open(proxy)
        writer.write(
            _post("/toy/tools/add_note", b'{"text":"first"}', b"Connection: close\r\n")
            + _post("/toy/tools/add_note", b'{"text":"second"}')
        )
        status, headers, body = await read_reply(reader)
        rest = await asyncio.wait_for(reader.read(), 5)
        writer.close()
    assert status == 200 and json.loads(body)["text"] == "first"
    assert headers["connection"] == "close" and rest == b""
    assert [line["arguments"]["text"] for line in _lines(tmp_path)] == ["first"]
