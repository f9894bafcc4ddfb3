"""The call log's group commit on the agent port: the lines of the replies that finish in
one loop turn reach the OS in one write, and each line is on disk before any byte of its
reply is written; held replies keep their order on a connection."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from chaosproxy.proxy import listener
from chaosproxy.proxy.calllog import CallLog
from chaosproxy.proxy.listener import AgentPort, Request, Response
from chaosproxy.proxy.server import bind_socket
from chaosproxy.proxy.settings import ProxyLimits

CLIENTS = 8


class _Watched:
    """A client connection's transport that looks at the log file (what the OS has) at
    every write, and notes what it found for each reply's tag."""

    def __init__(self, inner: Any, path: Path, seen: list[tuple[str, bool, int]]) -> None:
        self._inner = inner
        self._path = path
        self._seen = seen

    def write(self, data: bytes) -> None:
        on_disk = self._path.read_bytes()
        for tag in re.findall(rb"tag-\w+", data):
            self._seen.append((tag.decode(), b'"' + tag + b'"' in on_disk, len(on_disk)))
        self._inner.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[str, bool, int]]:
    seen: list[tuple[str, bool, int]] = []
    made = listener.Connection.connection_made

    def connection_made(self: listener.Connection, transport: Any) -> None:
        made(self, _Watched(transport, tmp_path / "calls.jsonl", seen))

    monkeypatch.setattr(listener.Connection, "connection_made", connection_made)
    return seen


async def _start(handler: listener.Handler, log: CallLog) -> tuple[AgentPort, tuple[str, int]]:
    """The agent port with the log's flush as its pre-reply hook, as `chaosproxy up` has."""
    port = AgentPort(handler, before_reply=log.flush, limits=ProxyLimits())
    sock = bind_socket("127.0.0.1", 0)
    await port.start(sock)
    return port, sock.getsockname()[:2]


async def _reply(reader: asyncio.StreamReader) -> bytes:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    length = int(re.search(rb"Content-Length: (\d+)", head).group(1))  # type: ignore[union-attr]
    return head + await asyncio.wait_for(reader.readexactly(length), 5)


async def test_replies_of_one_turn_share_one_log_write_after_their_lines(
    tmp_path: Path, watched: list[tuple[str, bool, int]]
) -> None:
    log = CallLog(tmp_path)
    gate = asyncio.Event()
    waiting = 0

    async def handler(request: Request) -> Response:
        nonlocal waiting
        waiting += 1
        await gate.wait()  # every handler resumes in the same loop turn
        tag = f"tag-{request.path.strip('/')}"
        log.write({"tag": tag})
        return Response(200, tag.encode(), {"Content-Type": "text/plain"})

    port, address = await _start(handler, log)
    try:
        streams = [await asyncio.open_connection(*address) for _ in range(CLIENTS)]
        for n, (_, writer) in enumerate(streams):
            writer.write(f"GET /{n} HTTP/1.1\r\nHost: a\r\n\r\n".encode())
        while waiting < CLIENTS:
            await asyncio.sleep(0.01)
        gate.set()
        replies = [await _reply(reader) for reader, _ in streams]
        for _, writer in streams:
            writer.close()
    finally:
        await port.stop()
        log.close()
    assert [reply.endswith(f"tag-{n}".encode()) for n, reply in enumerate(replies)] == [
        True
    ] * CLIENTS
    assert sorted(tag for tag, _, _ in watched) == sorted(f"tag-{n}" for n in range(CLIENTS))
    # every reply's line had reached the OS when its first byte was written ...
    assert all(on_disk for _, on_disk, _ in watched), watched
    # ... and all eight lines got there in one write (one file size seen by every reply)
    assert len({size for _, _, size in watched}) == 1, watched


async def test_held_replies_keep_their_order_before_a_refusal(
    tmp_path: Path, watched: list[tuple[str, bool, int]]
) -> None:
    """One connection pipelines two calls and then garbage while another call is in
    flight (so its replies are held): both replies, in order, then the 400, then EOF."""
    log = CallLog(tmp_path)
    gate, entered = asyncio.Event(), asyncio.Event()

    async def handler(request: Request) -> Response:
        if request.path == "/slow":
            entered.set()
            await gate.wait()
        tag = f"tag-{request.path.strip('/')}"
        log.write({"tag": tag})
        return Response(200, tag.encode(), {"Content-Type": "text/plain"})

    port, address = await _start(handler, log)
    try:
        slow_reader, slow_writer = await asyncio.open_connection(*address)
        slow_writer.write(b"GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
        await asyncio.wait_for(entered.wait(), 5)
        reader, writer = await asyncio.open_connection(*address)
        writer.write(
            b"GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n"
            b"G@RBAGE / HTTP/1.1\r\n\r\n"
        )
        first, second = await _reply(reader), await _reply(reader)
        refused = await asyncio.wait_for(reader.read(), 5)  # to the connection's end
        gate.set()
        slow = await _reply(slow_reader)
        slow_writer.close()
        writer.close()
    finally:
        await port.stop()
        log.close()
    assert first.startswith(b"HTTP/1.1 200") and first.endswith(b"tag-1")
    assert second.startswith(b"HTTP/1.1 200") and second.endswith(b"tag-2")
    assert refused.startswith(b"HTTP/1.1 400") and b"bad_request" in refused
    assert slow.endswith(b"tag-slow")
    assert [tag for tag, _, _ in watched] == ["tag-1", "tag-2", "tag-slow"]
    assert all(on_disk for _, on_disk, _ in watched), watched
