"""A lean HTTP/1.1 client for plain-http upstreams: keep-alive connections, one write each.

aiohttp's `ClientSession.request` spends most of the proxy's client-side time on what a
proxy never needs (cookies, redirects, tracing, auto headers, a task per request body);
here a request is one `transport.write` of head and body, the response head is parsed
from the connection's buffer, and the body is read to its framing (Content-Length,
chunked, or the connection's end). https upstreams (forward mode) stay on aiohttp.

Timeouts are idle timeouts (like aiohttp's `sock_read`): one timer per wait for bytes.
Errors keep aiohttp's types where the proxy's readers already catch them: a broken body
is an `aiohttp.ClientPayloadError`, a silent upstream a `TimeoutError`.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import cast

import aiohttp
from multidict import CIMultiDict
from yarl import URL

from chaosproxy.errors import ChaosError

MAX_HEAD_BYTES = 64 * 1024
"""A response head larger than this is refused (the server is not speaking HTTP sanely)."""
MAX_INTERIM = 16
"""1xx responses skipped before the final one; more is a 502 (each would reset the read
timeout, so a service sending them forever would hold the agent forever)."""
HIGH_WATER = 256 * 1024
"""Buffered body bytes beyond which reading from the socket pauses until they are taken."""
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
"""Methods retried once on a fresh connection when a kept-alive one was closed under us."""
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_TOKEN = b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
"""The characters of a header name (RFC 9110 token)."""
_CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
"""Bytes a header value may not hold (controls other than tab)."""
_FIELDS = re.compile(rb"(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[^\x00-\x08\x0a-\x1f\x7f]*\r\n)*")
"""Header lines that all pass the checks `_TOKEN` and `_CONTROL` make line by line."""
_FIELD = re.compile(r"([^:]+):[ \t]*([^\r]*)\r\n")
"""One checked header line: its name and its value without leading blanks."""


class BrokenBody(ChaosError, aiohttp.ClientPayloadError):
    """The upstream's body ended or broke before its framing said it would."""


class BadResponse(ChaosError):
    """The upstream's reply is not a readable HTTP/1.x response (or it closed first).

    `sent_nothing`: the connection closed before any byte of a response arrived.
    """

    def __init__(self, message: str, *, sent_nothing: bool = False) -> None:
        super().__init__(message)
        self.sent_nothing = sent_nothing


class _Connection(asyncio.Protocol):
    """One kept-alive connection: bytes in a buffer, a waiter for more, an idle timer."""

    def __init__(self, key: tuple[str, int]) -> None:
        self.key = key
        self.loop = asyncio.get_running_loop()
        """Kept: on Python 3.11 every `get_running_loop()` is a `getpid` system call."""
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.eof = False
        self.timed_out = False
        self.paused = False
        self.idle_since = 0.0
        self._waiter: asyncio.Future[None] | None = None
        self._deadline = 0.0
        """When the current wait times out (loop time)."""
        self._timeout = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0

    # ---- asyncio.Protocol ------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > HIGH_WATER and self._waiter is None and not self.paused:
            self.paused = True
            assert self.transport is not None
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self._wake()

    # ---- reading -----------------------------------------------------------------

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def _expire(self) -> None:
        """The timer fired: time out the wait whose deadline passed, or re-arm for the
        current one (a later wait moved it), or drop the timer when nothing waits."""
        self._timer = None
        waiter = self._waiter
        if waiter is None or waiter.done() or self.eof:
            return
        loop = self.loop
        if loop.time() < self._deadline:
            self._timer_at = self._deadline
            self._timer = loop.call_at(self._deadline, self._expire)
            return
        self.timed_out = True
        self._waiter = None
        waiter.set_exception(TimeoutError(f"no data from the upstream for {self._timeout:g}s"))
        self.close()

    def wait(self, timeout: float) -> asyncio.Future[None]:
        """A future to await for more bytes (or the end); it raises TimeoutError after
        `timeout` s of silence. A future, not a coroutine: one frame less per wait.

        One timer per connection, re-armed when it fires early, not one per wait (a timer
        handle and its cancel on every read are a good part of a request's loop work)."""
        loop = self.loop
        waiter: asyncio.Future[None] = loop.create_future()
        if self.eof:
            waiter.set_result(None)
            return waiter
        if self.paused and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
        self._deadline = deadline = loop.time() + timeout
        self._timeout = timeout
        timer = self._timer
        if timer is None or self._timer_at > deadline:
            if timer is not None:
                timer.cancel()
            self._timer_at = deadline
            self._timer = loop.call_at(deadline, self._expire)
        self._waiter = waiter
        return waiter

    @property
    def usable(self) -> bool:
        transport = self.transport
        return (
            not self.eof
            and not self.buffer
            and transport is not None
            and not transport.is_closing()
            and transport.get_write_buffer_size() == 0
        )

    def close(self) -> None:
        self.eof = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.transport is not None:
            self.transport.abort()


@dataclass(slots=True)
class H1Response:
    """One upstream response; the body is read with `read()` or `content.iter_any()`.

    `content` is the response itself (aiohttp's `ClientResponse.content` spelling).
    """

    status: int
    reason: str
    headers: CIMultiDict[str]
    _conn: _Connection
    _pool: H1Pool
    _timeout: float
    _length: int | None
    """Body bytes left; None: chunked or until the connection ends (`_chunked` says)."""
    _chunked: bool
    _keep_alive: bool
    _done: bool = False
    _chunk_left: int = 0
    _trailers: bool = False
    _trailer_bytes: int = 0
    _released: bool = field(default=False)

    @property
    def content(self) -> H1Response:
        return self

    def is_eof(self) -> bool:
        return self._done

    async def read(self) -> bytes:
        """The whole body."""
        if self._length is not None and not self._done:
            conn = self._conn
            while len(conn.buffer) < self._length:
                if conn.eof:
                    raise BrokenBody(
                        f"response body ended after {len(conn.buffer)} of {self._length} bytes"
                    )
                await conn.wait(self._timeout)
            body = bytes(conn.buffer[: self._length])
            del conn.buffer[: self._length]
            self._length = 0
            self._done = True
            return body
        return b"".join([chunk async for chunk in self.iter_any()])

    async def iter_any(self) -> AsyncIterator[bytes]:
        """Body bytes as they arrive (chunked framing removed)."""
        while not self._done:
            chunk = await self._next()
            if chunk:
                yield chunk

    async def _next(self) -> bytes:
        conn = self._conn
        while True:
            chunk = self._take_chunked() if self._chunked else self._take_plain()
            if chunk or self._done:
                return chunk
            if conn.eof:
                if self._length is None and not self._chunked:
                    self._done = True
                    return b""
                raise BrokenBody("the upstream closed the connection mid-body")
            await conn.wait(self._timeout)

    def _take_plain(self) -> bytes:
        buffer = self._conn.buffer
        if self._length is None:
            data = bytes(buffer)
            buffer.clear()
            return data
        data = bytes(buffer[: self._length])
        del buffer[: len(data)]
        self._length -= len(data)
        if self._length == 0:
            self._done = True
        return data

    def _take_chunked(self) -> bytes:
        buffer = self._conn.buffer
        out = bytearray()
        while True:
            if self._trailers:
                end = buffer.find(b"\r\n")
                if (end if end >= 0 else len(buffer)) + self._trailer_bytes > MAX_HEAD_BYTES:
                    raise BrokenBody(f"chunked body: trailers over {MAX_HEAD_BYTES} bytes")
                if end < 0:
                    return bytes(out)
                self._trailer_bytes += end + 2
                del buffer[: end + 2]
                if end == 0:
                    self._done = True
                    return bytes(out)
                continue
            if self._chunk_left > 0:
                if not buffer:
                    return bytes(out)
                take = min(self._chunk_left, len(buffer))
                out += buffer[:take]
                del buffer[:take]
                self._chunk_left -= take
                if self._chunk_left > 0:
                    return bytes(out)
                self._chunk_left = -2
            if self._chunk_left == -2:
                if len(buffer) < 2:
                    return bytes(out)
                if buffer[:2] != b"\r\n":
                    raise BrokenBody("chunked body: missing CRLF after a chunk")
                del buffer[:2]
                self._chunk_left = 0
            end = buffer.find(b"\r\n")
            if end < 0:
                if len(buffer) > 1024:
                    raise BrokenBody("chunked body: chunk size line too long")
                return bytes(out)
            line = bytes(buffer[:end]).split(b";", 1)[0].strip()
            del buffer[: end + 2]
            try:
                size = int(line, 16)
            except ValueError:
                raise BrokenBody(f"chunked body: bad chunk size {line[:20]!r}") from None
            if size < 0:
                raise BrokenBody("chunked body: negative chunk size")
            if size == 0:
                self._trailers = True
            else:
                self._chunk_left = size

    def release(self) -> None:
        """Back to the pool when the body was read to its end, else the connection closes."""
        if self._released:
            return
        self._released = True
        if self._done and self._keep_alive and self._conn.usable:
            self._pool.put(self._conn)
        else:
            self._conn.close()

    def close(self) -> None:
        if not self._released:
            self._released = True
            self._conn.close()


class H1Pool:
    """Idle keep-alive connections per `(host, port)`, newest first; idle ones expire."""

    def __init__(
        self,
        *,
        connect_timeout_s: float,
        keepalive_s: float,
        max_idle: int,
        pins: Mapping[tuple[str, int], tuple[str, int]] | None = None,
    ) -> None:
        self.connect_timeout_s = connect_timeout_s
        self.keepalive_s = keepalive_s
        self.max_idle = max_idle
        self.pins = dict(pins or {})
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._hosts: dict[tuple[str, int], bytes] = {}
        self._sweep: asyncio.TimerHandle | None = None

    def put(self, conn: _Connection) -> None:
        idle = self._idle.setdefault(conn.key, [])
        if len(idle) >= self.max_idle:
            conn.close()
            return
        conn.idle_since = time.monotonic()
        idle.append(conn)
        if self._sweep is None:
            self._sweep = asyncio.get_running_loop().call_later(self.keepalive_s, self._expire)

    def _take(self, key: tuple[str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        oldest = time.monotonic() - self.keepalive_s
        while idle:
            conn = idle.pop()
            if conn.usable and conn.idle_since > oldest:
                return conn
            conn.close()
        return None

    def _expire(self) -> None:
        self._sweep = None
        oldest = time.monotonic() - self.keepalive_s
        for key, idle in list(self._idle.items()):
            keep = [conn for conn in idle if conn.usable and conn.idle_since > oldest]
            for conn in idle:
                if conn not in keep:
                    conn.close()
            self._idle[key] = keep
        if any(self._idle.values()):
            self._sweep = asyncio.get_running_loop().call_later(self.keepalive_s, self._expire)

    def close(self) -> None:
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()

    async def _connect(self, key: tuple[str, int]) -> _Connection:
        host, port = self.pins.get(key, key)
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(self.connect_timeout_s):
            transport, conn = await loop.create_connection(lambda: _Connection(key), host, port)
        # uvloop calls `connection_made` in a later callback: the transport is known now
        conn.transport = cast(asyncio.Transport, transport)
        return conn

    def _host_header(self, url: URL) -> bytes:
        key = (url.raw_host or "", url.port or 80)
        host = self._hosts.get(key)
        if host is None:
            host = self._hosts[key] = (url.host_port_subcomponent or "").encode("idna")
        return host

    async def request(
        self,
        method: str,
        url: URL,
        headers: Mapping[str, str],
        body: bytes,
        read_timeout_s: float,
    ) -> H1Response:
        """Send one request; the response's body is still to be read (then `release()`)."""
        key = ((url.raw_host or "").lower(), url.port or 80)
        message = _encode_head(method, url.raw_path_qs, self._host_header(url), headers, body)
        conn = self._take(key)
        for attempt in (0, 1):
            fresh = conn is None
            if conn is None:
                conn = await self._connect(key)
            assert conn.transport is not None
            conn.transport.write(message)
            try:
                return await _read_head(conn, self, method, read_timeout_s)
            except BadResponse as exc:
                conn.close()
                if fresh or attempt or not exc.sent_nothing or method not in IDEMPOTENT:
                    raise
                conn = None
            except BaseException:
                conn.close()
                raise
        raise AssertionError("unreachable")


def _encode_head(
    method: str, target: str, host: bytes, headers: Mapping[str, str], body: bytes
) -> bytes:
    lines = [f"{method} {target or '/'} HTTP/1.1\r\nHost: "]
    for name, value in headers.items():
        if "\n" in value or "\r" in value or "\n" in name or "\r" in name or ":" in name:
            raise ValueError(f"header {name!r} has a line break or colon in its name/value")
        lines.append(f"\r\n{name}: {value}")
    if body or method in _BODY_METHODS:
        lines.append(f"\r\nContent-Length: {len(body)}")
    lines.append("\r\n\r\n")
    first, *rest = lines
    head = first.encode() + host + "".join(rest).encode("utf-8", "surrogateescape")
    return head + body if body else head


def _bad_field(head: bytes) -> None:
    """Raise for the first bad header line, or bad Content-Length before it, in order."""
    length: int | None = None
    for line in head.split(b"\r\n")[1:]:
        name, sep, value = line.partition(b":")
        # a name of token characters, a value without control bytes: what is relayed to
        # the agent must not start a line of its own there (a bare LF) or break its parser
        if not sep or not name or name.translate(None, _TOKEN) or _CONTROL.search(value):
            raise BadResponse(f"bad header line: {line[:40]!r}")
        value = value.strip(b" \t")
        if name.lower() == b"content-length":
            if not value.isdigit() or (length is not None and length != int(value)):
                raise BadResponse(f"bad Content-Length: {value[:20]!r}")
            length = int(value)
    raise AssertionError("unreachable: every header line passed")


async def _read_head(conn: _Connection, pool: H1Pool, method: str, timeout: float) -> H1Response:
    """Parse the status line and headers (skipping 1xx) and work out the body's framing."""
    for _ in range(MAX_INTERIM + 1):
        buffer = conn.buffer
        end = buffer.find(b"\r\n\r\n")
        while end < 0:
            if len(buffer) > MAX_HEAD_BYTES:
                raise BadResponse(f"response head over {MAX_HEAD_BYTES} bytes")
            if conn.eof:
                raise BadResponse(
                    "the upstream closed the connection before a complete response head",
                    sent_nothing=not buffer,
                )
            await conn.wait(timeout)
            end = buffer.find(b"\r\n\r\n")
        if end > MAX_HEAD_BYTES:
            raise BadResponse(f"response head over {MAX_HEAD_BYTES} bytes")
        head = bytes(buffer[:end])
        del buffer[: end + 4]
        status_line = head.partition(b"\r\n")[0]
        if not status_line.startswith(b"HTTP/1.") or len(status_line) < 12:
            raise BadResponse(f"not an HTTP/1.x status line: {status_line[:40]!r}")
        code = status_line[9:12]
        # three ASCII digits: int() alone would also read "+20", "-99" or "2_0"
        spaced = status_line[8:9] == b" " and status_line[12:13] in (b"", b" ")
        if not spaced or not code.isdigit() or code[:1] == b"0":
            raise BadResponse(f"bad status line: {status_line[:40]!r}")
        status = int(code)
        if status == 101:
            raise BadResponse(
                "the upstream switched protocols (101); the proxy asked for no upgrade"
            )
        if status < 200:
            continue
        break
    else:
        raise BadResponse(f"more than {MAX_INTERIM} interim (1xx) responses")
    fields = head[len(status_line) + 2 :] + b"\r\n" if len(head) > len(status_line) else b""
    if _FIELDS.fullmatch(fields) is None:
        _bad_field(head)
    # decoded whole: tokens, ':' and CRLF are ASCII, which UTF-8 never spends inside a
    # character, so each name and value reads as if decoded alone
    text = fields.decode("utf-8", "surrogateescape")
    pairs: list[tuple[str, str]] = _FIELD.findall(text)
    if " \r" in text or "\t\r" in text:  # blanks after a value: not part of it
        pairs = [(name, value.rstrip(" \t")) for name, value in pairs]
    headers: CIMultiDict[str] = CIMultiDict(pairs)
    length: int | None = None
    chunked = False
    connection = b""
    for text in headers.getall("Content-Length", ()):
        if not (text.isascii() and text.isdigit()) or (length is not None and length != int(text)):
            value = text.encode("utf-8", "surrogateescape")
            raise BadResponse(f"bad Content-Length: {value[:20]!r}")
        length = int(text)
    if "Transfer-Encoding" in headers:
        coding = headers.getall("Transfer-Encoding")[-1].encode("utf-8", "surrogateescape")
        chunked = coding.lower().rsplit(b",", 1)[-1].strip() == b"chunked"
    if "Connection" in headers:
        connection = headers.getall("Connection")[-1].encode("utf-8", "surrogateescape").lower()
    http10 = status_line[5:8] == b"1.0"
    keep_alive = b"keep-alive" in connection if http10 else b"close" not in connection
    if method == "HEAD" or status in (204, 304) or status < 200:
        length, chunked = 0, False
    elif chunked:
        length = None
    elif length is None:
        keep_alive = False
    response = H1Response(
        status=status,
        reason=status_line[13:].decode("latin-1"),
        headers=headers,
        _conn=conn,
        _pool=pool,
        _timeout=timeout,
        _length=length,
        _chunked=chunked,
        _keep_alive=keep_alive,
    )
    if length == 0:
        response._done = True
    return response
