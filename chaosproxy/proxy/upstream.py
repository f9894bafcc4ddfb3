"""The proxy's client side: a bounded connection pool with bounded waits.

A request that cannot get a connection within `pool_wait_s` fails with 503 instead of
queueing forever; connect and read timeouts give 502/504. Bodies are forwarded as bytes
(no decompression), so what the agent gets is what the service sent, unless a fault says
otherwise. Plain-http services are called through the lean keep-alive client of
`h1client` (the hot path); https services through aiohttp (TLS, CA files, pinned hosts).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
from collections import deque
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import aiohttp
import yaml
from aiohttp.abc import AbstractResolver, ResolveResult
from multidict import CIMultiDict
from yarl import URL

from chaosproxy.errors import ChaosError
from chaosproxy.proxy.h1client import BadResponse, H1Pool, H1Response
from chaosproxy.proxy.settings import ProxyLimits

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
        "expect",
    }
)


class ReplyContent(Protocol):
    def iter_any(self) -> AsyncIterator[bytes]: ...

    def is_eof(self) -> bool: ...


class UpstreamReply(Protocol):
    """A service's response as the proxy reads it: `h1client.H1Response` or aiohttp's."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def content(self) -> ReplyContent: ...

    async def read(self) -> bytes: ...


class UpstreamFailure(ChaosError):
    """The service could not be reached or did not answer in time."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


_SKIPPED: dict[tuple[str, ...], tuple[frozenset[str], bool, set[str]]] = {}
"""Header names not forwarded, whether `extra` can simply be appended (its names differ
even in case, and none is `Accept-Encoding`), and the names as spelled that were seen
forwarded, by the extra headers' names (a handful of combinations)."""
_NOT_RELAYED = HOP_BY_HOP | {"content-encoding"}
"""Reply header names the agent does not get (the proxy frames and decodes the body)."""
_RELAYED: set[str] = set()
"""Reply header names, as spelled, seen relayed."""
_SPELLINGS = 1024
"""At most this many spellings are remembered per set: a client inventing names cannot
grow it without bound (past it, each name is lowered as before)."""


def _learn(seen: set[str], key: str) -> bool:
    if len(seen) < _SPELLINGS:
        seen.add(key)
    return True


def _kept(
    headers: Mapping[str, str], skip: frozenset[str], seen: set[str]
) -> list[tuple[str, str]]:
    """`headers`' pairs whose lowered name is not in `skip`.

    A name as spelled that passed once passes again: a set lookup, not a `lower()` per
    header per request (the same few spellings come on every request)."""
    return [
        (key, value)
        for key, value in headers.items()
        if key in seen or (key.lower() not in skip and _learn(seen, key))
    ]


def forward_headers(headers: Mapping[str, str], extra: Mapping[str, str]) -> CIMultiDict[str]:
    """The agent's headers as sent upstream: hop-by-hop ones dropped, `extra` set."""
    names = tuple(extra)
    known = _SKIPPED.get(names)
    if known is None:
        lowered = {key.lower() for key in names}
        simple = len(lowered) == len(names) and "accept-encoding" not in lowered
        known = _SKIPPED[names] = (HOP_BY_HOP | lowered, simple, set())
    skip, simple, seen = known
    pairs = _kept(headers, skip, seen)
    # bodies are read and relayed as they come (faults parse them, `Content-Encoding` is
    # not relayed): without this header the service may compress (RFC 9110 12.5.3)
    pairs.append(("Accept-Encoding", "identity"))
    if simple:
        pairs.extend(extra.items())
        return CIMultiDict(pairs)
    out = CIMultiDict(pairs)
    for key, value in extra.items():
        out[key] = value
    return out


def response_headers(headers: Mapping[str, str]) -> CIMultiDict[str]:
    return CIMultiDict(_kept(headers, _NOT_RELAYED, _RELAYED))


class PinnedResolver(AbstractResolver):
    """Resolves the pinned `host:port`s to fixed addresses, everything else as usual."""

    def __init__(self, pins: Mapping[str, str]) -> None:
        self._pins: dict[tuple[str, int], tuple[str, int]] = {}
        for source, target in pins.items():
            host, _, port = source.rpartition(":")
            addr, _, target_port = target.rpartition(":")
            self._pins[(host.lower(), int(port))] = (addr.strip("[]"), int(target_port))
        self._default = aiohttp.DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        pin = self._pins.get((host.lower(), port))
        if pin is None:
            return await self._default.resolve(host, port, family)
        addr, pinned_port = pin
        return [
            ResolveResult(
                hostname=host,
                host=addr,
                port=pinned_port,
                family=socket.AF_INET6 if ":" in addr else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
        ]

    async def close(self) -> None:
        await self._default.close()


class DocumentError(ChaosError, ValueError):
    """A document that could not be fetched or parsed; the message says why."""


def parse_document(raw: bytes) -> Any:
    """JSON, else YAML (a safe loader: no Python objects); DocumentError when neither."""
    try:
        return json.loads(raw)
    except ValueError:
        pass
    try:
        return yaml.safe_load(raw)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1}: {exc.problem})" if mark else ""
        raise DocumentError(f"neither JSON nor YAML{where}") from None
    except yaml.YAMLError as exc:
        raise DocumentError(f"neither JSON nor YAML ({exc})") from None


class Upstream:
    """One pool for every service behind the proxy."""

    def __init__(self, limits: ProxyLimits) -> None:
        self.limits = limits
        self._slots = _Slots(limits.upstream_pool_size)
        self._session: aiohttp.ClientSession | None = None
        self._h1 = H1Pool(
            connect_timeout_s=limits.upstream_connect_timeout_s,
            keepalive_s=limits.upstream_keepalive_s,
            max_idle=limits.upstream_pool_size,
            pins=_pins(limits.upstream_resolve),
        )
        self._timeouts = {
            streaming: aiohttp.ClientTimeout(
                total=None,
                sock_connect=limits.upstream_connect_timeout_s,
                sock_read=limits.stream_idle_timeout_s
                if streaming
                else limits.upstream_read_timeout_s,
            )
            for streaming in (False, True)
        }

    async def start(self) -> None:
        context = ssl.create_default_context()
        if self.limits.upstream_ca_file:
            context.load_verify_locations(cafile=self.limits.upstream_ca_file)
        connector = aiohttp.TCPConnector(
            limit=self.limits.upstream_pool_size,
            keepalive_timeout=self.limits.upstream_keepalive_s,
            enable_cleanup_closed=False,
            ssl=context,
            resolver=PinnedResolver(self.limits.upstream_resolve),
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,
            skip_auto_headers=("Accept-Encoding", "User-Agent", "Content-Type"),
        )

    async def close(self) -> None:
        self._h1.close()
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def delete(self, url: str, headers: dict[str, str] | None = None) -> int:
        """A plain DELETE outside the pool's accounting (control traffic); 0 if it failed."""
        if self._session is None:
            raise RuntimeError("Upstream.start() was not awaited")
        timeout = aiohttp.ClientTimeout(total=self.limits.upstream_read_timeout_s)
        try:
            async with self._session.delete(url, timeout=timeout, headers=headers) as response:
                await response.read()
                return response.status
        except (aiohttp.ClientError, TimeoutError):
            return 0

    async def fetch_document(self, source: str) -> Any:
        """A JSON or YAML document by URL or local file; DocumentError says why not."""
        if not source.startswith(("http://", "https://")):
            try:
                text = Path(source).read_bytes()
            except FileNotFoundError:
                raise DocumentError("no such file") from None
            except OSError as exc:
                raise DocumentError(f"cannot read it: {exc.strerror or exc}") from None
            return parse_document(text)
        if self._session is None:
            raise RuntimeError("Upstream.start() was not awaited")
        timeout = aiohttp.ClientTimeout(total=self.limits.upstream_connect_timeout_s)
        try:
            async with self._session.get(source, timeout=timeout) as response:
                if response.status != 200:
                    raise DocumentError(f"GET answered HTTP {response.status}")
                raw = await response.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise DocumentError(f"GET failed: {exc or type(exc).__name__}") from None
        return parse_document(raw)

    def request(
        self,
        method: str,
        url: URL,
        headers: CIMultiDict[str],
        body: bytes,
        *,
        streaming: bool = False,
    ) -> UpstreamCall:
        """`async with upstream.request(...) as reply`: one request; the response stays open
        (and holds its pool slot) in the block."""
        if self._session is None:
            raise RuntimeError("Upstream.start() was not awaited")
        return UpstreamCall(self, method, url, headers, body, streaming)

    async def _wait_slot(self) -> None:
        """A pool slot when none was free: in turn, for up to `pool_wait_s`."""
        try:
            await self._slots.wait(self.limits.pool_wait_s)
        except TimeoutError:
            raise UpstreamFailure(
                503,
                "pool_exhausted",
                f"all {self.limits.upstream_pool_size} upstream connections busy for "
                f"{self.limits.pool_wait_s}s",
            ) from None

    @asynccontextmanager
    async def _send_aiohttp(
        self, method: str, url: URL, headers: CIMultiDict[str], body: bytes, streaming: bool
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        assert self._session is not None
        try:
            response = await self._session.request(
                method,
                url,
                headers=headers,
                data=body if body else None,
                timeout=self._timeouts[streaming],
                allow_redirects=False,
            )
        except (aiohttp.ServerTimeoutError, TimeoutError) as exc:
            raise UpstreamFailure(
                504, "timeout", f"{url.host}:{url.port}: {exc or 'timeout'}"
            ) from exc
        except aiohttp.ClientError as exc:
            raise UpstreamFailure(502, "unreachable", f"{url.host}:{url.port}: {exc}") from exc
        try:
            yield response
        finally:
            if response.content.is_eof():
                response.release()
            else:
                response.close()


class _Slots:
    """The pool's bound: a count of free slots, and the requests waiting for one in turn.

    What `asyncio.Semaphore` does, without its coroutine call and `locked()` generator on
    every request when a slot is free, which is nearly always."""

    __slots__ = ("_value", "waiters")

    def __init__(self, size: int) -> None:
        self._value = size
        """Free slots (`asyncio.Semaphore`'s name for it, which tests read)."""
        self.waiters: deque[asyncio.Future[None]] = deque()

    def take(self) -> bool:
        """A free slot, now (False: none, or others wait before us)."""
        if self._value > 0 and not self.waiters:
            self._value -= 1
            return True
        return False

    async def wait(self, timeout_s: float) -> None:
        """A slot, in turn; TimeoutError after `timeout_s`."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout_s):
                await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed a slot just as the wait ended: pass it on
            else:
                with contextlib.suppress(ValueError):
                    self.waiters.remove(waiter)
            raise

    def release(self) -> None:
        """The slot goes to the first request still waiting, else back to the count."""
        waiters = self.waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._value += 1


class UpstreamCall:
    """One request in flight: a pool slot, then the response, both released on exit.

    A class rather than an `asynccontextmanager` generator: it is on every call's path.
    """

    __slots__ = ("_aiohttp", "_args", "_h1", "_upstream")

    def __init__(
        self,
        upstream: Upstream,
        method: str,
        url: URL,
        headers: CIMultiDict[str],
        body: bytes,
        streaming: bool,
    ) -> None:
        self._upstream = upstream
        self._args = (method, url, headers, body, streaming)
        self._h1: H1Response | None = None
        self._aiohttp: AbstractAsyncContextManager[aiohttp.ClientResponse] | None = None

    async def __aenter__(self) -> UpstreamReply:
        upstream = self._upstream
        if not upstream._slots.take():
            await upstream._wait_slot()
        try:
            method, url, headers, body, streaming = self._args
            if url.scheme == "http":  # the lean client, awaited here (one frame less)
                limits = upstream.limits
                timeout = (
                    limits.stream_idle_timeout_s if streaming else limits.upstream_read_timeout_s
                )
                try:
                    self._h1 = await upstream._h1.request(method, url, headers, body, timeout)
                except TimeoutError as exc:
                    raise UpstreamFailure(
                        504, "timeout", f"{url.host}:{url.port}: {exc or 'timeout'}"
                    ) from exc
                except (OSError, BadResponse) as exc:
                    raise UpstreamFailure(
                        502, "unreachable", f"{url.host}:{url.port}: {exc}"
                    ) from exc
                return self._h1
            self._aiohttp = upstream._send_aiohttp(method, url, headers, body, streaming)
            return await self._aiohttp.__aenter__()
        except BaseException:
            upstream._slots.release()
            raise

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        try:
            response = self._h1
            if response is not None:
                if response.is_eof():
                    response.release()
                else:
                    response.close()
            elif self._aiohttp is not None:
                await self._aiohttp.__aexit__(kind, error, trace)
        finally:
            self._upstream._slots.release()


def _pins(resolve: Mapping[str, str]) -> dict[tuple[str, int], tuple[str, int]]:
    """`host:port` -> `addr:port` pins, as the lean client looks them up."""
    pins: dict[tuple[str, int], tuple[str, int]] = {}
    for source, target in resolve.items():
        host, _, port = source.rpartition(":")
        addr, _, target_port = target.rpartition(":")
        pins[(host.lower().strip("[]"), int(port))] = (addr.strip("[]"), int(target_port))
    return pins


def _too_large(limit: int) -> UpstreamFailure:
    return UpstreamFailure(502, "too_large", f"the response body is over {limit} bytes")


async def read_all(response: UpstreamReply, limit: int) -> bytes:
    """The whole body, at most `limit` bytes; failures and timeouts as UpstreamFailure."""
    try:
        length = response.headers.get("Content-Length", "")
        if length.isdigit():
            if int(length) > limit:
                raise _too_large(limit)
            return await response.read()
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_any():
            size += len(chunk)
            if size > limit:
                raise _too_large(limit)
            chunks.append(chunk)
        return b"".join(chunks)
    except (aiohttp.ServerTimeoutError, TimeoutError) as exc:
        raise UpstreamFailure(504, "timeout", f"reading the response timed out: {exc}") from exc
    except aiohttp.ClientError as exc:
        raise UpstreamFailure(502, "broken", f"reading the response failed: {exc}") from exc
