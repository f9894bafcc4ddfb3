"""The lean client's response-head parser (one regex check, one split): what it reads
from a head, and which error it raises first, on heads worked out by hand."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest
from yarl import URL

from chaosproxy.proxy import h1client
from chaosproxy.proxy.h1client import BadResponse, H1Response


class _Buffered:
    """A connection whose whole head is already buffered (and then closed)."""

    def __init__(self, data: bytes) -> None:
        self.buffer = bytearray(data)
        self.eof = True

    async def wait(self, timeout: float) -> None:
        raise AssertionError("the head was complete")


async def _head(fields: bytes, method: str = "GET") -> H1Response:
    data = b"HTTP/1.1 200 OK\r\n" + fields + b"\r\n"
    return await h1client._read_head(_Buffered(data), None, method, 1.0)  # type: ignore[arg-type]


async def test_values_lose_surrounding_blanks_and_keep_inner_ones() -> None:
    response = await _head(
        b"Content-Length: 5 \r\nX-A:\t a b\t \r\nX-B:\r\nX-C: caf\xc3\xa9\r\nX-D: \xff\r\n"
    )
    assert list(response.headers.items()) == [
        ("Content-Length", "5"),
        ("X-A", "a b"),
        ("X-B", ""),
        ("X-C", "café"),
        ("X-D", "\udcff"),
    ]
    assert (response._length, response._chunked, response._keep_alive) == (5, False, True)


@pytest.mark.parametrize(
    ("fields", "length", "chunked", "keep_alive"),
    [
        (b"Content-Length: 7\r\ncontent-length: 7\r\n", 7, False, True),
        (b"Transfer-Encoding: gzip, Chunked \r\n", None, True, True),
        (b"Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n", None, False, False),
        # a Kelvin sign lower-cases to "k" in Python text, never in the bytes on the wire
        (b"Transfer-Encoding: chun\xe2\x84\xaaed\r\n", None, False, False),
        (b"Content-Length: 3\r\nConnection: \xe2\x84\xaaeep-alive, Close\r\n", 3, False, False),
    ],
)
async def test_framing_headers(
    fields: bytes, length: int | None, chunked: bool, keep_alive: bool
) -> None:
    response = await _head(fields)
    assert (response._length, response._chunked, response._keep_alive) == (
        length,
        chunked,
        keep_alive,
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (b"Content-Length: \xd9\xa3\r\n", "bad Content-Length: b'\\xd9\\xa3'"),  # Arabic 3
        (b"Content-Length: 1\r\nContent-Length: 2\r\n", "bad Content-Length: b'2'"),
        (b"X A: b\r\n", "bad header line: b'X A: b'"),
        (b"X-A: b\x01c\r\n", "bad header line: b'X-A: b\\x01c'"),
        (b" folded: x\r\n", "bad header line: b' folded: x'"),
        (b"X-A: ok\r\nno colon\r\n", "bad header line: b'no colon'"),
        # the first problem in line order is the one named
        (b"Content-Length: x\r\nX A: b\r\n", "bad Content-Length: b'x'"),
        (b"X A: b\r\nContent-Length: x\r\n", "bad header line: b'X A: b'"),
    ],
)
async def test_bad_heads_name_their_first_problem(fields: bytes, message: str) -> None:
    with pytest.raises(BadResponse) as caught:
        await _head(fields)
    assert str(caught.value) == message


async def _serve(script: dict[str, bytes | None], pace_s: float) -> asyncio.Server:
    """A raw service: per path, the reply sent byte run by byte run `pace_s` apart (None:
    silence)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                reply = script[head.split(b" ")[1].decode()]
                if reply is None:
                    await asyncio.sleep(30)
                    return
                for piece in (reply[:10], reply[10:20], reply[20:]):
                    await asyncio.sleep(pace_s)
                    writer.write(piece)
                    await writer.drain()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"


async def test_the_read_timeout_is_silence_not_the_whole_reply() -> None:
    """Three pieces 0.15 s apart under a 0.4 s timeout arrive (0.45 s in all); a silent
    service times out; a short timeout after a long one on the same connection holds."""
    server = await _serve({"/slow": OK, "/silent": None}, pace_s=0.15)
    port = server.sockets[0].getsockname()[1]
    pool = h1client.H1Pool(connect_timeout_s=2, keepalive_s=5, max_idle=4)
    url = URL(f"http://127.0.0.1:{port}")
    try:
        response = await pool.request("GET", url / "slow", {}, b"", 0.4)
        assert response.status == 200 and await response.read() == b"{}"
        response.release()
        long = await pool.request("GET", url / "slow", {}, b"", 30)  # its timer: 30 s
        assert await long.read() == b"{}"
        long.release()
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await pool.request("GET", url / "silent", {}, b"", 0.3)  # the same connection
        assert time.monotonic() - started < 2
    finally:
        pool.close()
        server.close()
