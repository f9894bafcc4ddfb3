"""The agent port's HTTP/1.1 server: a lean asyncio protocol on httptools' parser.

The agent port carries every tool call, so its server's own cost is the proxy's floor.
aiohttp's server spent more per request than the whole fault pipeline (request and
response objects, routing, signals, access-log plumbing, a writer per response); here a
connection parses with httptools (llhttp, the parser of Node and uvicorn), hands the
handler a complete `Request` (head and body), and writes a `Response` as one
`transport.write`. The handler returns a `Response`, or streams a `StreamResponse` (SSE).

What the server answers itself, always as JSON in the proxy's error shape: unparsable
requests and oversized heads (400), bodies over the limit (413), bodies that do not
arrive in time (408), `CONNECT` (405: this is no forward proxy), and a handler's crash
(500). Connections are kept alive (HTTP/1.1, or 1.0 with `Connection: keep-alive`),
pipelined requests are answered in order, and a connection that sends no complete head
within `idle_timeout_s` is closed (keep-alive timeout and slowloris guard in one). When
the client hangs up, the request's handler is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from email.utils import formatdate
from http import HTTPStatus
from typing import Any, cast

import httptools
from multidict import CIMultiDict

from chaosproxy.errors import ChaosError
from chaosproxy.proxy.settings import ProxyLimits

LISTEN_BACKLOG = 1024
"""Pending connections the kernel queues for the proxy (capped by net.core.somaxconn)."""

NOT_A_FORWARD_PROXY = (
    "CONNECT is for forward proxies; this port is chaosproxy's reverse proxy "
    "(/{service}/... or /e/{episode}/{service}/...). For a forward proxy, start "
    "`chaosproxy up --forward-port PORT`"
)
UPGRADE_WITH_BODY = (
    "a request with a body cannot ask to switch protocols (Upgrade): this port speaks "
    "HTTP/1.1 only; send it without `Connection: upgrade` and `Upgrade`"
)
_ALLOW = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
MAX_PIPELINED = 16
"""Requests read ahead on one connection before reading pauses until they are answered."""
LARGE_BODY = 64 * 1024
"""A body with a Content-Length past this reserves its whole length in the port's bound on
bodies in flight before it is read (`max_bodies_in_flight_bytes`); smaller and chunked
bodies are counted as they arrive and never wait."""
LINGER_S = 2.0
"""After its own refusal the server reads and drops what the client still sends for up to
this long before closing (closing with unread bytes resets the connection, reply and all)."""
_LINE_SLACK = 64
"""Raw bytes a header line may take beyond `max_line_size` (`: `, whitespace, CRLF)."""
_FRAMING = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive"})
_FRAMED = frozenset({"content-length", "expect", "transfer-encoding"})
"""Request header names that frame the body or ask for an interim reply."""
_PLAIN: set[str] = set()
"""Request header names, as spelled, seen that are none of `_FRAMED`: skipped without a
`lower()` per header per request."""
_OTHER: set[str] = set()
"""Reply header names, as spelled, seen that the head writes as they are (not framing,
`Content-Type` or `Date`)."""
_SPELLINGS = 1024
"""At most this many spellings are remembered (past it, names are lowered as before)."""
"""Reply headers the server sets itself from how it frames the body."""

log = logging.getLogger("chaosproxy.proxy")


class Request:
    """One complete request as the handler sees it.

    `path` and `query` are raw (percent-encoding as sent, no `?`); `headers` keep the
    client's spelling and order.
    """

    __slots__ = ("_conn", "body", "headers", "http10", "keep_alive", "method", "path", "query")

    def __init__(
        self,
        method: str,
        path: str,
        query: str,
        headers: CIMultiDict[str],
        body: bytes,
        *,
        keep_alive: bool = True,
        http10: bool = False,
        connection: Connection | None = None,
    ) -> None:
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.keep_alive = keep_alive
        self.http10 = http10
        self._conn = connection

    @property
    def transport(self) -> asyncio.Transport | None:
        """The client's connection (None once it is gone)."""
        return self._conn.transport if self._conn is not None else None


class Response:
    """A whole reply: status, headers and body, sent in one write."""

    __slots__ = ("body", "headers", "status")

    def __init__(
        self, status: int, body: bytes = b"", headers: Mapping[str, str] | None = None
    ) -> None:
        self.status = status
        self.body = body
        self.headers = headers


class StreamResponse:
    """A reply sent in pieces (SSE): chunked on HTTP/1.1, until close on HTTP/1.0.

    `head_with_first_chunk`: the head waits for the first `write` (one send, not two), so a
    reply that comes first can still be turned into a whole `Response` by a fault.
    """

    def __init__(
        self,
        status: int,
        headers: Mapping[str, str] | None = None,
        *,
        head_with_first_chunk: bool = False,
    ) -> None:
        self.status = status
        self.headers = headers
        self.head_with_first_chunk = head_with_first_chunk
        self.prepared = False
        self.ended = False
        self._conn: Connection | None = None
        self._head = b""
        self._bodiless = False
        """A reply to HEAD: the head goes out, the stream's bytes and its end do not."""

    async def prepare(self, request: Request) -> None:
        """Start the reply; the log is flushed first (no reply byte before its log line)."""
        if self.prepared:
            return
        conn = request._conn
        if conn is None:
            raise ConnectionResetError("the request has no connection")
        self.prepared = True
        self._conn = conn
        self._bodiless = request.method == "HEAD"
        conn.push()
        conn.port.before_reply()
        self._head = conn.head(self.status, self.headers, None, request)
        if not self.head_with_first_chunk:
            conn.write(self._head)
            self._head = b""

    async def write(self, data: bytes) -> None:
        conn = self._conn
        if conn is None:
            raise RuntimeError("write() before prepare()")
        if not data:
            return
        if self._bodiless:
            framed = b""
        else:
            framed = b"%x\r\n%b\r\n" % (len(data), data) if conn.chunked else data
        conn.write(self._head + framed)
        self._head = b""
        await conn.drain()

    async def write_eof(self, last: bytes = b"") -> None:
        """End the reply; `last` (the final data) goes out in the same write as the end."""
        conn = self._conn
        if conn is None or self.ended:
            return
        self.ended = True
        if self._bodiless:
            framed = b""
        elif conn.chunked:
            framed = b"%x\r\n%b\r\n0\r\n\r\n" % (len(last), last) if last else b"0\r\n\r\n"
        else:
            framed = last
        conn.write(self._head + framed)
        self._head = b""


Answer = Response | StreamResponse
Handler = Callable[[Request], Awaitable[Answer]]


def error_body(kind: str, message: str) -> dict[str, Any]:
    """The proxy's error shape, for its own answers (never a service's or a fault's)."""
    return {"error": {"type": kind, "message": message, "source": "chaosproxy"}}


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        status,
        json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode(),
        {"Content-Type": "application/json", **(headers or {})},
    )


def refusal(status: int, kind: str, message: str) -> Response:
    """A JSON error answered by the proxy itself."""
    return json_response(status, error_body(kind, message))


class _Refused(ChaosError):
    """Raised inside a parser callback: answer `reply` and close the connection."""

    def __init__(self, reply: Response) -> None:
        super().__init__(reply.status)
        self.reply = reply


_dates: tuple[int, str] = (0, "")


def _date() -> str:
    """The `Date` header line, formatted once per second."""
    global _dates
    now = int(time.time())
    if _dates[0] != now:
        _dates = (now, f"Date: {formatdate(now, usegmt=True)}\r\n")
    return _dates[1]


_REASONS = {status.value: status.phrase.encode() for status in HTTPStatus}


class Connection(asyncio.Protocol):
    """One client connection: parse requests, run the handler for each in turn, reply."""

    def __init__(self, port: AgentPort) -> None:
        self.port = port
        self.loop = asyncio.get_running_loop()
        """Kept: on Python 3.11 every `get_running_loop()` is a `getpid` system call."""
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.pending: deque[Request | Response] = deque()
        self.task: asyncio.Task[None] | None = None
        self.busy = False
        self._wakeup: asyncio.Future[None] | None = None
        self.chunked = True
        self.closing = False
        self._url = b""
        self._headers: list[tuple[str, str]] = []
        self._header_count = 0
        """len(self._headers), kept as a count: one call less per header."""
        self._body: list[bytes] = []
        self._body_size = 0
        self._idle: asyncio.TimerHandle | None = None
        self._head_deadline: float | None = None
        self._in_body = False
        self._body_timer: asyncio.TimerHandle | None = None
        self._paused_reading = False
        self._starved = 0
        """The Content-Length this connection waits to reserve (0: not waiting)."""
        self._reserved = False
        self._counted = 0
        """Body bytes of the current message counted in the port's total."""
        self._counts: dict[int, tuple[int, bool]] = {}
        """Bytes counted per queued request (by id), and whether it holds a large body's
        reservation; both released when it is answered."""
        self._paused_writing = False
        self._drain: asyncio.Future[None] | None = None
        self._streamed = False
        """Bytes of the current request's streamed reply went out."""
        self._quiet = 0
        """Bytes fed since the parser last called back: what httptools may be holding (it
        keeps a header's name and value until the line ends)."""
        self.held = b""
        """A whole reply waiting for the port's group commit (`AgentPort.hold`)."""

    # ---- asyncio.Protocol ------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.port.connections.add(self)
        self._arm_idle()

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        self._quiet += len(data)
        try:
            self.parser.feed_data(data)
            if self._quiet > self.port.max_line_size + _LINE_SLACK:
                line_limit = self.port.max_line_size
                self._queue(refusal(400, "bad_request", f"header line over {line_limit} bytes"))
                self._stop_reading()
                return
            if self._in_body and self._body_timer is None:
                self._body_timer = asyncio.get_running_loop().call_later(
                    self.port.body_timeout_s, self._body_late
                )
        except httptools.HttpParserUpgrade:
            self._stop_reading()
        except httptools.HttpParserCallbackError as exc:
            refused = exc.__context__
            if isinstance(refused, _Refused):
                self._queue(refused.reply)
            else:
                self._queue(refusal(400, "bad_request", "malformed request"))
            self._stop_reading()
        except httptools.HttpParserError as exc:
            message = str(exc) or "malformed request"
            self._queue(refusal(400, "bad_request", f"bad HTTP request: {message}"))
            self._stop_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.port.connections.discard(self)
        self.transport = None
        self.held = b""
        if self._starved:
            self.port.starved.remove(self)
            self._starved = 0
        for counted, large in [(self._counted, self._reserved), *self._counts.values()]:
            self.port.release(counted, large)
        self._counted, self._reserved = 0, False
        self._counts.clear()
        self.closing = True
        for timer in (self._idle, self._body_timer):
            if timer is not None:
                timer.cancel()
        if self.task is not None and not self.task.done():
            self.task.cancel()
        self._wake_drain()

    def pause_writing(self) -> None:
        self._paused_writing = True

    def resume_writing(self) -> None:
        self._paused_writing = False
        self._wake_drain()

    # ---- httptools callbacks -----------------------------------------------------

    def on_message_begin(self) -> None:
        self._quiet = 0
        if self._counted or self._reserved:  # a message never completed
            self.port.release(self._counted, self._reserved)
        self._counted = 0
        self._reserved = False
        self._url = b""
        self._headers = []
        self._header_count = 0
        self._body = []
        self._body_size = 0

    def on_url(self, url: bytes) -> None:
        self._quiet = 0
        self._url += url
        if len(self._url) > self.port.max_line_size:
            raise _Refused(
                refusal(400, "bad_request", f"request line over {self.port.max_line_size} bytes")
            )

    def on_header(self, name: bytes, value: bytes) -> None:
        self._quiet = 0
        if len(name) + len(value) > self.port.max_line_size:
            raise _Refused(
                refusal(400, "bad_request", f"header line over {self.port.max_line_size} bytes")
            )
        if self._in_body:
            return  # a chunked body's trailer fields: not headers, and not forwarded
        if self._header_count >= self.port.max_headers:
            raise _Refused(
                refusal(400, "bad_request", f"more than {self.port.max_headers} header fields")
            )
        self._header_count += 1
        self._headers.append((name.decode("latin-1"), value.decode("utf-8", "surrogateescape")))

    def on_headers_complete(self) -> None:
        self._quiet = 0
        self._head_deadline = None
        self._in_body = True
        limit = self.port.max_body_bytes
        length: int | None = None
        expect = chunked = False
        plain = _PLAIN
        for name, value in self._headers:
            if name in plain:
                continue
            lower = name.lower()
            if lower not in _FRAMED and len(plain) < _SPELLINGS:
                plain.add(name)
            if lower == "content-length" and value.strip().isdigit():
                length = int(value)
            elif lower == "expect" and value.lower() == "100-continue":
                expect = True
            elif lower == "transfer-encoding":
                chunked = True
        if length is not None and length > limit:
            raise _Refused(refusal(413, "body_too_large", f"request body over {limit} bytes"))
        if length is not None and length > LARGE_BODY:
            self._reserve(length)
        upgrade = self.parser.should_upgrade() and self.parser.get_method() != b"CONNECT"
        if upgrade and (length or chunked):
            # llhttp would take the body for the new protocol's bytes and drop it
            raise _Refused(refusal(400, "bad_request", UPGRADE_WITH_BODY))
        # an HTTP/1.0 client knows no interim replies: its expectation is ignored (RFC 9110)
        if expect and self.transport is not None and self.parser.get_http_version() != "1.0":
            self.push()
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, body: bytes) -> None:
        self._quiet = 0
        self._body_size += len(body)
        if self._body_size > self.port.max_body_bytes:
            raise _Refused(
                refusal(
                    413, "body_too_large", f"request body over {self.port.max_body_bytes} bytes"
                )
            )
        self._body.append(body)
        if not self._reserved:
            self._counted += len(body)
            self.port.body_bytes += len(body)

    def _reserve(self, length: int) -> None:
        """Reserve a large body's length in the port's bound, or stop reading until it can."""
        if self.port.can_reserve(self, length):
            self.grant(length)
        elif self.transport is not None:
            self._starved = length
            self.port.starved.append(self)
            self.transport.pause_reading()

    def grant(self, length: int) -> None:
        """The reservation is ours: count the whole body now, and read on."""
        self.port.body_bytes += length - self._counted
        self.port.large_bodies += 1
        self._counted = length
        self._reserved = True
        if self._starved:
            self._starved = 0
            if self.transport is not None and not self._paused_reading and not self.closing:
                self.transport.resume_reading()

    def on_message_complete(self) -> None:
        self._quiet = 0
        self._in_body = False
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        method = self.parser.get_method().decode("ascii", "replace")
        if method == "CONNECT":
            reply = refusal(405, "not_a_forward_proxy", NOT_A_FORWARD_PROXY)
            reply.headers = {"Content-Type": "application/json", "Allow": _ALLOW}
            raise _Refused(reply)
        url = self._url
        if url[:1] == b"/":
            path, _, query = url.partition(b"#")[0].partition(b"?")
        elif url == b"*":
            path, query = url, b""
        else:
            try:
                parsed = httptools.parse_url(url)
            except httptools.HttpParserInvalidURLError:
                bad = refusal(400, "bad_request", "unparsable request target")
                raise _Refused(bad) from None
            path, query = parsed.path or b"/", parsed.query or b""
        body = self._body[0] if len(self._body) == 1 else b"".join(self._body)
        counted, large = self._counted, self._reserved
        self._counted, self._reserved = 0, False
        if self._starved:  # the whole body had arrived already: nothing left to wait for
            self.port.starved.remove(self)
            self._starved = 0
            if self.transport is not None and not self._paused_reading and not self.closing:
                self.transport.resume_reading()
        request = Request(
            method,
            path.decode("latin-1"),
            query.decode("latin-1"),
            CIMultiDict(self._headers),
            body,
            keep_alive=self.parser.should_keep_alive(),
            http10=self.parser.get_http_version() == "1.0",
            connection=self,
        )
        self._body = []
        if counted:
            self._counts[id(request)] = (counted, large)
        self._queue(request)

    # ---- serving -------------------------------------------------------------------

    def _queue(self, item: Request | Response) -> None:
        pending = self.pending
        pending.append(item)
        if len(pending) > 1 and self._ahead_full() and self.transport and not self._paused_reading:
            self._paused_reading = True
            self.transport.pause_reading()
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._work())
        elif self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    def _ahead_full(self) -> bool:
        """Enough read ahead: MAX_PIPELINED requests, or bodies past the body limit
        together (else one connection could make the proxy hold 16 bodies that size)."""
        pending = self.pending
        return len(pending) > 1 and (
            len(pending) > MAX_PIPELINED
            or sum(len(item.body) for item in pending if isinstance(item, Request))
            > self.port.max_body_bytes
        )

    async def _work(self) -> None:
        """The connection's one task: answer queued requests in order, then wait for more.

        One task per connection, not one per request (a task costs more than a future).
        """
        loop = self.loop
        while self.transport is not None:
            if not self.pending:
                if self.closing:
                    self._linger()
                    return
                self._arm_idle()
                if self._paused_reading:
                    self._paused_reading = False
                    if not self._starved:
                        self.transport.resume_reading()
                self._wakeup = loop.create_future()
                try:
                    await self._wakeup
                except asyncio.CancelledError:
                    return
                continue
            if self.held:  # a pipelined request: its predecessor's reply goes first
                self.push()
            item = self.pending.popleft()
            if isinstance(item, Response):
                self.closing = True
                self.pending.clear()
                self.send(item, None)
                self._linger()
                return
            self.busy = True
            port = self.port
            port.serving += 1
            try:
                # the handler awaited here, not in a coroutine of its own: each resume
                # (the upstream's reply) passes one frame less
                self._streamed = False
                try:
                    reply: Answer = await port.handler(item)
                except asyncio.CancelledError:
                    return
                except Exception:
                    crashed = self._crashed(item)
                    if crashed is None:
                        return
                    reply = crashed
                if self.transport is None or self.transport.is_closing():
                    return
                if not item.keep_alive or port.stopping:
                    self._last()
                if isinstance(reply, StreamResponse):
                    if not await self._stream(item, reply):
                        return
                else:
                    self.send(reply, item)
            finally:
                self.busy = False
                port.serving -= 1
                if self._counts:  # only requests whose body counted are in it
                    self.port.release(*self._counts.pop(id(item), (0, False)))
            if self.closing and not self.pending:
                self._linger()  # the reply said `Connection: close`: nothing after it
                return

    def _crashed(self, request: Request) -> Response | None:
        """The handler raised: a 500 to send, or None when the connection was aborted."""
        log.exception("chaosproxy: the handler crashed on %s %s", request.method, request.path)
        if self._streamed and self.transport is not None:
            self.transport.abort()  # part of a stream is out: no whole reply can follow
            return None
        self._last()
        return refusal(500, "proxy_error", "internal error in chaosproxy (not an injected fault)")

    async def _stream(self, request: Request, reply: StreamResponse) -> bool:
        """Finish a streamed reply; False when the connection is gone or ended."""
        try:
            if not reply.prepared:
                await reply.prepare(request)
            await reply.write_eof()
        except ConnectionError:
            return False
        if request.http10:
            self._last()  # the stream's end was the connection's
        return True

    def _last(self) -> None:
        """This reply ends the connection (`Connection: close`): requests read after it
        are dropped unanswered and never reach a service (the client retries them)."""
        self.closing = True
        self.pending.clear()

    def head(
        self,
        status: int,
        headers: Mapping[str, str] | None,
        length: int | None,
        request: Request | None,
    ) -> bytes:
        """The reply's head; `length` None: a streamed body (chunked, or till close on 1.0).

        The caller flushes the log before the head is written (`send`, `StreamResponse`)."""
        reason = _REASONS.get(status, b"Unknown")
        lines: list[str] = []
        typed = dated = False
        if headers:
            other = _OTHER
            for name, value in headers.items():
                if name not in other:
                    lower = name.lower()
                    if lower in _FRAMING:
                        continue
                    if lower == "content-type":
                        typed = True
                    elif lower == "date":
                        dated = True
                    elif len(other) < _SPELLINGS:
                        other.add(name)
                if "\n" in value or "\r" in value:
                    value = value.replace("\r", " ").replace("\n", " ")
                lines.append(f"{name}: {value}\r\n")
        if not dated:
            lines.append(_date())
        if length is not None:
            if length and not typed:
                lines.append("Content-Type: application/octet-stream\r\n")
            lines.append(f"Content-Length: {length}\r\n")
        elif request is not None and request.http10:
            self.chunked = False
            self._last()  # the body ends with the connection
        else:
            self.chunked = True
            lines.append("Transfer-Encoding: chunked\r\n")
        if self.closing and not self.pending:  # the last reply (a refusal may follow)
            lines.append("Connection: close\r\n")
        lines.append("\r\n")
        status_line = b"HTTP/1.1 %d %b\r\n" % (status, reason)
        return status_line + "".join(lines).encode("utf-8", "surrogateescape")

    def send(self, reply: Response, request: Request | None) -> None:
        """A whole reply in one write (HEAD: the head only).

        Held for the port's group commit (the log lines of the loop turn in one write, then
        the replies) while other requests are being served, whose replies may come in the
        same turn. Alone (one agent waiting), it goes out now, after the log: holding would
        cost a loop turn and save nothing. The connection's last reply goes out now too
        (what follows it closes the connection)."""
        transport = self.transport
        if transport is None:
            return
        head = self.head(reply.status, reply.headers, len(reply.body), request)
        if (request is not None and request.method == "HEAD") or not reply.body:
            data = head
        else:
            data = head + reply.body
        port = self.port
        if self.closing or port.serving < 2:
            self.push()
            port.before_reply()
            transport.write(data)
        else:
            self.held += data
            port.hold(self)

    def push(self) -> None:
        """Write the held reply now, the log first: before anything else reaches this
        connection's transport (another reply, a stream, an end or a close)."""
        data = self.held
        if not data:
            return
        self.held = b""
        transport = self.transport
        if transport is not None and not transport.is_closing():
            self.port.before_reply()
            transport.write(data)

    def write(self, data: bytes) -> None:
        """A streamed reply's bytes (`StreamResponse`)."""
        if self.transport is None or self.transport.is_closing():
            raise ConnectionResetError("the client closed the connection")
        self._streamed = True
        if self.held:
            self.push()
        self.transport.write(data)

    async def drain(self) -> None:
        if self.transport is None:
            raise ConnectionResetError("the client closed the connection")
        if not self._paused_writing:
            return
        self._drain = asyncio.get_running_loop().create_future()
        await self._drain
        if self.transport is None:
            raise ConnectionResetError("the client closed the connection")

    def _wake_drain(self) -> None:
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)
        self._drain = None

    # ---- timers ------------------------------------------------------------------

    def _arm_idle(self) -> None:
        """A complete head is due within `idle_timeout_s` from now.

        One timer per connection, re-armed when it fires early, not one per request.
        """
        loop = self.loop
        self._head_deadline = loop.time() + self.port.idle_timeout_s
        if self._idle is None:
            self._idle = loop.call_at(self._head_deadline, self._idle_expired)

    def _idle_expired(self) -> None:
        self._idle = None
        if self.transport is None:
            return
        loop = asyncio.get_running_loop()
        deadline = self._head_deadline
        if deadline is None:
            deadline = loop.time() + self.port.idle_timeout_s
        elif loop.time() >= deadline:
            self.push()
            self.transport.close()
            return
        self._idle = loop.call_at(deadline, self._idle_expired)

    def _body_late(self) -> None:
        self._body_timer = None
        if self.transport is None:
            return
        if self._paused_reading or self._starved:  # the proxy stopped reading, not the client
            loop = asyncio.get_running_loop()
            self._body_timer = loop.call_later(self.port.body_timeout_s, self._body_late)
            return
        self._queue(
            refusal(
                408,
                "body_timeout",
                f"request body not received in {self.port.body_timeout_s:g}s",
            )
        )
        self._stop_reading()

    def _linger(self) -> None:
        """Close after a refusal without losing it: the client may still be sending (a body
        over the limit, the rest of a refused head). Our side ends now (FIN after the reply);
        what comes in is dropped (`closing`) until the client closes or `LINGER_S` passes."""
        self.push()
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if not transport.can_write_eof():
            transport.close()
            return
        transport.write_eof()
        transport.resume_reading()
        loop = asyncio.get_running_loop()
        self._head_deadline = loop.time() + LINGER_S
        if self._idle is not None:
            self._idle.cancel()
        self._idle = loop.call_at(self._head_deadline, self._idle_expired)

    def _stop_reading(self) -> None:
        """No more requests on this connection (it closes after the queued replies)."""
        self.push()
        self.closing = True
        if self.transport is not None and not self.transport.is_closing():
            self.transport.pause_reading()
        if not self.busy and not self.pending and self.transport is not None:
            self.transport.close()


class AgentPort:
    """The agent-facing listener: serves `handler` on a bound socket.

    `before_reply` runs before any reply byte is written (the call log's flush). Whole
    replies are held to the end of the loop turn (`hold`), then the log is flushed once
    and they are written: one log write per turn, not one per reply (a group commit).
    """

    def __init__(
        self, handler: Handler, *, before_reply: Callable[[], None], limits: ProxyLimits
    ) -> None:
        self.handler = handler
        self.before_reply = before_reply
        self.idle_timeout_s = limits.idle_timeout_s
        self.body_timeout_s = limits.body_timeout_s
        self.max_body_bytes = limits.max_body_bytes
        self.max_bodies_in_flight_bytes = limits.max_bodies_in_flight_bytes
        self.body_bytes = 0
        """Request body bytes all connections hold now: read, queued or being served."""
        self.large_bodies = 0
        """Large bodies held under a reservation (being received, queued or served)."""
        self.starved: list[Connection] = []
        """Connections waiting, in order, to reserve a large body."""
        self.max_line_size = limits.max_line_size
        self.max_headers = limits.max_headers
        self.connections: set[Connection] = set()
        self.serving = 0
        """Requests whose handler runs now (on all connections)."""
        self.stopping = False
        self._server: asyncio.Server | None = None
        self._held: list[Connection] = []
        """Connections whose reply waits for the turn's commit, in the order they came."""

    def hold(self, conn: Connection) -> None:
        """`conn.held` goes out at the turn's commit (scheduled by the first reply held)."""
        held = self._held
        held.append(conn)
        if len(held) == 1:
            conn.loop.call_soon(self.commit)

    def commit(self) -> None:
        """The log lines written so far reach the OS (one write), then the held replies."""
        held = self._held
        if not held:
            return
        self._held = []
        self.before_reply()
        for conn in held:
            data = conn.held
            if data:
                conn.held = b""
                transport = conn.transport
                if transport is not None and not transport.is_closing():
                    try:
                        transport.write(data)
                    except Exception:  # one connection's failure must not hold up the rest
                        log.exception("chaosproxy: writing a held reply failed")
                        transport.abort()

    def can_reserve(self, conn: Connection, length: int) -> bool:
        """A large body may be read: first come, first served, when it fits under the
        bound, or when no other large body is held (one always goes on: no deadlock)."""
        if self.starved and self.starved[0] is not conn:
            return False
        fits = self.body_bytes + length <= self.max_bodies_in_flight_bytes
        return fits or self.large_bodies == 0

    def release(self, size: int, large: bool = False) -> None:
        """Body bytes freed; the connections waiting to reserve go on, in order, while
        their bodies fit."""
        self.body_bytes -= size
        if large:
            self.large_bodies -= 1
        while self.starved and self.can_reserve(self.starved[0], self.starved[0]._starved):
            waiting = self.starved.pop(0)
            waiting.grant(waiting._starved)

    async def start(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: Connection(self), sock=sock, backlog=LISTEN_BACKLOG
        )

    async def stop(self, timeout_s: float = 2.0) -> None:
        """Stop accepting; idle connections close, busy ones after their reply (or timeout)."""
        self.stopping = True
        self.commit()
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            if not conn.busy and conn.transport is not None:
                conn.transport.close()
        deadline = time.monotonic() + timeout_s
        while any(conn.busy for conn in self.connections):
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.02)
        for conn in list(self.connections):
            if conn.task is not None:
                conn.task.cancel()
            if conn.transport is not None:
                conn.transport.abort()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
