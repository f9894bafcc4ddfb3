"""Issue 26 #6: large bodies are bounded in total across connections. Past the bound,
connections receiving a large body wait (their reading pauses) while small calls go on."""

from __future__ import annotations

import asyncio

from chaosproxy.proxy.listener import AgentPort, Request, Response, json_response
from chaosproxy.proxy.server import bind_socket
from chaosproxy.proxy.settings import ProxyLimits

MiB = 1024 * 1024
CLIENTS = 6
BODY = 2 * MiB
BOUND = 3 * MiB
READ_SLACK = 256 * 1024
"""What one connection may read past the bound: one socket read (asyncio reads ≤ 256 KiB)."""


async def test_large_bodies_wait_past_the_total_bound_and_small_calls_do_not() -> None:
    gate = asyncio.Event()
    peak = 0

    async def handler(request: Request) -> Response:
        nonlocal peak
        peak = max(peak, port.body_bytes)
        if len(request.body) > MiB:
            await gate.wait()  # a slow service: big bodies stay held while served
        return json_response(200, {"bytes": len(request.body)})

    limits = ProxyLimits(max_body_bytes=4 * MiB, max_bodies_in_flight_bytes=BOUND)
    port = AgentPort(handler, before_reply=lambda: None, limits=limits)
    sock = bind_socket("127.0.0.1", 0)
    address = sock.getsockname()
    await port.start(sock)
    try:

        async def send(size: int) -> bytes:
            reader, writer = await asyncio.open_connection(*address)
            head = f"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: {size}\r\n\r\n"
            writer.write(head.encode() + b"a" * size)
            reply = await reader.readuntil(b"\r\n\r\n")
            writer.close()
            return reply

        big = [asyncio.create_task(send(BODY)) for _ in range(CLIENTS)]
        await asyncio.sleep(1.0)
        held = port.body_bytes
        # six 2 MiB uploads: the proxy holds about the bound, not 12 MiB
        assert held <= BOUND + CLIENTS * READ_SLACK, held
        assert len(port.starved) >= 1
        small = await asyncio.wait_for(send(100), timeout=5)
        assert small.startswith(b"HTTP/1.1 200")
        gate.set()
        replies = await asyncio.wait_for(asyncio.gather(*big), timeout=30)
        assert all(reply.startswith(b"HTTP/1.1 200") for reply in replies)
        assert port.body_bytes == 0 and port.starved == []
        assert peak <= BOUND + CLIENTS * READ_SLACK
    finally:
        await port.stop()
