"""The lean upstream client against real loopback servers that send exactly chosen bytes.

Each server is a raw asyncio TCP server on 127.0.0.1 (port 0) answering every request
with the next scripted reply, so framing, keep-alive and failures are what the test says.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from multidict import CIMultiDict
from yarl import URL

from chaosproxy.proxy.h1client import BadResponse, BrokenBody, H1Pool


@asynccontextmanager
async def scripted(
    replies: list[bytes | None], *, close_after: bool = False
) -> AsyncIterator[tuple[URL, list[bytes], list[int]]]:
    """A server answering request i with `replies[i]` (None: close without a byte).

    Yields its URL, the raw requests it read and the port of each request's connection.
    """
    seen: list[bytes] = []
    peers: list[int] = []
    queue = list(replies)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while queue:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                seen.append(head + await reader.readexactly(length))
                peers.append(writer.get_extra_info("peername")[1])
                reply = queue.pop(0)
                if reply is None:
                    break
                writer.write(reply)
                await writer.drain()
                if close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield URL(f"http://127.0.0.1:{port}"), seen, peers
    finally:
        server.close()
        await server.wait_closed()


def pool(**overrides: float) -> H1Pool:
    settings: dict[str, float] = {"connect_timeout_s": 2.0, "keepalive_s": 5.0}
    settings.update(overrides)
    return H1Pool(
        connect_timeout_s=settings["connect_timeout_s"],
        keepalive_s=settings["keepalive_s"],
        max_idle=8,
    )


OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}'


async def test_request_head_body_and_keep_alive_reuse() -> None:
    async with scripted([OK, OK]) as (url, seen, peers):
        client = pool()
        headers = CIMultiDict({"X-Chaos-Episode": "e1", "Content-Type": "application/json"})
        for _ in range(2):
            response = await client.request("POST", url / "tools" / "echo", headers, b"{}", 5.0)
            assert response.status == 200
            assert response.headers["content-type"] == "application/json"
            assert await response.read() == b'{"ok":true}'
            response.release()
        client.close()
    first = seen[0]
    assert first.startswith(b"POST /tools/echo HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nX-Chaos-Episode: e1\r\n" in first and b"\r\nContent-Length: 2\r\n" in first
    assert first.endswith(b"\r\n\r\n{}")
    assert peers[0] == peers[1], "the second request must reuse the kept-alive connection"


async def test_chunked_body_streams_chunks_and_trailers() -> None:
    reply = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n"
        b"\r\n6;ext=1\r\ndata: \r\n4\r\nabc\n\r\n0\r\nX-Trailer: t\r\n\r\n"
    )
    async with scripted([reply, OK]) as (url, _, peers):
        client = pool()
        response = await client.request("GET", url / "sse", CIMultiDict(), b"", 5.0)
        chunks = [chunk async for chunk in response.iter_any()]
        assert b"".join(chunks) == b"data: abc\n"
        assert response.is_eof()
        response.release()
        again = await client.request("GET", url, CIMultiDict(), b"", 5.0)
        assert await again.read() == b'{"ok":true}'
        client.close()
    assert peers[0] == peers[1]


async def test_body_until_close_and_no_reuse() -> None:
    reply = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nplain text to the end"
    async with scripted([reply, OK], close_after=True) as (url, _, peers):
        client = pool()
        response = await client.request("GET", url, CIMultiDict(), b"", 5.0)
        assert await response.read() == b"plain text to the end"
        response.release()
        again = await client.request("GET", url, CIMultiDict(), b"", 5.0)
        assert again.status == 200
        client.close()
    assert peers[0] != peers[1]


async def test_head_204_and_interim_100_have_no_body() -> None:
    replies = [
        b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n",
    ]
    async with scripted(replies) as (url, _, _peers):
        client = pool()
        head = await client.request("HEAD", url, CIMultiDict(), b"", 5.0)
        assert head.headers["Content-Length"] == "1234" and await head.read() == b""
        head.release()
        empty = await client.request("DELETE", url / "x" / "1", CIMultiDict(), b"", 5.0)
        assert empty.status == 204 and empty.headers["X-A"] == "1" and await empty.read() == b""
        client.close()


async def test_short_body_is_a_broken_body() -> None:
    reply = b'HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{"cut'
    async with scripted([reply], close_after=True) as (url, _, _peers):
        client = pool()
        response = await client.request("GET", url, CIMultiDict(), b"", 5.0)
        with pytest.raises(BrokenBody, match="after 5 of 50 bytes"):
            await response.read()
        client.close()


async def test_silent_upstream_times_out() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1024)
        await asyncio.sleep(5)
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    url = URL(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
    client = pool()
    try:
        with pytest.raises(TimeoutError):
            await client.request("GET", url, CIMultiDict(), b"", 0.2)
    finally:
        client.close()
        server.close()


async def test_garbage_and_early_close_are_bad_responses() -> None:
    async with scripted([b"SSH-2.0-OpenSSH\r\n\r\n", None]) as (url, _, _peers):
        client = pool()
        with pytest.raises(BadResponse, match=r"not an HTTP/1\.x status line"):
            await client.request("GET", url, CIMultiDict(), b"", 5.0)
        with pytest.raises(BadResponse, match="before a complete response head"):
            await client.request("POST", url, CIMultiDict(), b"x", 5.0)
        client.close()


async def test_idempotent_request_retried_once_when_kept_connection_was_closed() -> None:
    """The server answers, then drops the kept-alive connection: a GET goes out again on a
    new connection; a POST is not repeated (the service may have acted on it)."""
    async with scripted([OK, None, OK, None]) as (url, seen, _peers):
        client = pool()
        first = await client.request("GET", url, CIMultiDict(), b"", 5.0)
        await first.read()
        first.release()
        retried = await client.request("GET", url, CIMultiDict(), b"", 5.0)
        assert await retried.read() == b'{"ok":true}'
        retried.release()
        with pytest.raises(BadResponse):
            await (await client.request("POST", url, CIMultiDict(), b"{}", 5.0)).read()
        client.close()
    assert len(seen) == 4


async def test_header_injection_is_refused() -> None:
    client = pool()
    with pytest.raises(ValueError, match="line break"):
        await client.request(
            "GET", URL("http://127.0.0.1:9"), CIMultiDict({"X-A": "a\r\nX-B: b"}), b"", 1.0
        )
    client.close()
