"""A hostile agent on the agent port, and a hostile service behind the proxy, on raw sockets.

The proxy sits in front of a raw asyncio server on 127.0.0.1 that records the exact bytes
it receives and answers each path with the bytes a test scripts (a well-behaved JSON reply
otherwise), so what reaches the service and what the agent gets back are both seen as
bytes. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest
from chaosproxy.profiles import load_profile
from proxy_helpers import read_reply

from chaosproxy.faults import FaultEngine, Profile
from chaosproxy.proxy.listener import Request, StreamResponse
from chaosproxy.proxy.server import ProxyServer
from chaosproxy.proxy.settings import ProxyLimits

Script = Callable[[asyncio.StreamWriter], Awaitable[None]]


@dataclass
class Service:
    """The raw service: requests as received (head and body), scripted replies by path."""

    seen: list[bytes] = field(default_factory=list)
    scripts: dict[str, Script] = field(default_factory=dict)


def answer(data: bytes) -> Script:
    async def script(writer: asyncio.StreamWriter) -> None:
        writer.write(data)
        await writer.drain()

    return script


@asynccontextmanager
async def hostile(
    tmp_path: Path,
    limits: ProxyLimits | None = None,
    profile: Profile | None = None,
    *,
    domain: bool = False,
) -> AsyncIterator[tuple[ProxyServer, Service]]:
    """A proxy (service name `up`) in front of a raw, scriptable service; `domain`: served
    as a built-in domain (whose tool calls are `POST /tools/{name}` only)."""
    service = Service()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                service.seen.append(head + await reader.readexactly(length))
                target = head.split(b" ")[1].decode("latin-1")
                script = service.scripts.get(target.partition("?")[0])
                if script is not None:
                    await script(writer)
                    continue
                reply = json.dumps({"target": target}).encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%b" % (len(reply), reply)
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    proxy = ProxyServer(
        engine=FaultEngine(default_profile=profile or load_profile("lambda0.0"), seed=1),
        upstreams={"up": f"http://127.0.0.1:{port}"},
        run_seed=1,
        run_dir=tmp_path,
        limits=limits,
        oracles={"up": f"http://127.0.0.1:{port}"} if domain else None,
    )
    await proxy.start()
    service.seen.clear()  # the proxy's own fetch of /openapi.json at start
    try:
        yield proxy, service
    finally:
        await proxy.stop()
        server.close()
        await server.wait_closed()


async def exchange(proxy: ProxyServer, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes on a new connection; the first reply."""
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    try:
        writer.write(request)
        await writer.drain()
        return await read_reply(reader)
    finally:
        writer.close()


def get(target: str, extra: bytes = b"") -> bytes:
    return b"GET " + target.encode() + b" HTTP/1.1\r\nHost: x\r\n" + extra + b"\r\n"


def _lines(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "calls.jsonl").read_text().splitlines()]


# ---- the agent's request as the service gets it ------------------------------------------


async def test_a_percent_encoded_query_reaches_the_service_as_sent(tmp_path: Path) -> None:
    """The query is relayed byte for byte: `%20` stays `%20` (it was re-encoded to `%2520`,
    so the service read `hello%20world` where the agent meant `hello world`)."""
    async with hostile(tmp_path) as (proxy, _service):
        status, _, body = await exchange(proxy, get("/up/search?q=hello%20world&p=a%2Fb+c"))
    assert status == 200
    assert json.loads(body)["target"] == "/search?q=hello%20world&p=a%2Fb+c"
    (line,) = _lines(tmp_path)
    assert line["arguments"] == {"q": "hello world", "p": "a/b c"}


async def test_a_query_rebuilt_by_parameter_corruption_is_encoded_once(tmp_path: Path) -> None:
    hints = {
        "up": {
            "critical_args": {
                "GET /search": {"status": {"kind": "choice", "values": ["open", "shipped"]}}
            }
        }
    }
    profile = Profile.model_validate(
        {
            "name": "force-ParameterCorruption",
            "failure_rate": 1.0,
            "weights": {"ParameterCorruption": 1.0},
            "hints": hints,
        }
    )
    async with hostile(tmp_path, profile=profile) as (proxy, _service):
        status, _, body = await exchange(proxy, get("/up/search?status=open&note=a%2Fb%20c"))
    assert status == 200
    query = json.loads(body)["target"].partition("?")[2]
    assert parse_qs(query) == {"status": ["shipped"], "note": ["a/b c"]}


# ---- the agent port's own answers -----------------------------------------------------------


async def test_a_body_over_the_limit_gets_its_413_while_the_client_still_sends(
    tmp_path: Path,
) -> None:
    """An HTTP client sends the whole body before it reads: the proxy's 413 (sent when the
    head announced too much) must survive. Closing with the rest of the body unread made
    the kernel reset the connection, and the client saw a reset instead of the 413."""
    limits = ProxyLimits(max_body_bytes=65536)
    async with hostile(tmp_path, limits) as (proxy, service), httpx.AsyncClient() as client:
        replies = [
            await client.post(f"{proxy.url}/up/x", content=b"a" * (4 << 20)) for _ in range(3)
        ]
    assert [reply.status_code for reply in replies] == [413] * 3
    assert all(reply.json()["error"]["type"] == "body_too_large" for reply in replies)
    assert service.seen == []


async def test_a_surrogate_sent_as_raw_utf8_bytes_is_bad_json(tmp_path: Path) -> None:
    """`json.loads` decodes bytes with `surrogatepass`: `ED A0 80` (a UTF-16 surrogate
    encoded as if it were a character; not UTF-8) became the lone surrogate that the
    `\\ud800` escape is refused for, and went on to the service and into the log."""
    async with hostile(tmp_path) as (proxy, service):
        body = b'{"text":"\xed\xa0\x80"}'
        status, _, reply = await exchange(
            proxy,
            b"POST /up/tools/add HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%b" % (len(body), body),
        )
    error = json.loads(reply)["error"]
    assert status == 400 and error["type"] == "bad_json" and "surrogate" in error["message"]
    assert service.seen == []
    (line,) = _lines(tmp_path)
    assert line["error"].startswith("bad_json:")


async def test_a_head_request_answered_as_a_stream_gets_no_body(tmp_path: Path) -> None:
    """A HEAD whose reply is an SSE stream (MCP endpoint) got the chunked stream's end,
    `0\\r\\n\\r\\n`, after its head: body bytes where a HEAD reply has none, read by
    the agent's client as the start of the next reply on the connection."""
    async with hostile(tmp_path) as (proxy, service):
        service.scripts["/mcp"] = answer(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
        )
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(b"HEAD /up/mcp HTTP/1.1\r\nHost: x\r\n\r\n" + get("/up/after"))
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        status, _, body = await read_reply(reader)
        writer.close()
    assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
    assert status == 200 and json.loads(body)["target"] == "/after"


async def test_a_percent_encoded_tool_path_is_still_a_tool_call(tmp_path: Path) -> None:
    """`/tools/add%5Fnote` is `/tools/add_note` to the service, but the proxy matched the
    raw path: on a built-in domain the call went through as protocol traffic, no step, no
    fault, and with the agent's own `X-Chaos-Step` header."""
    async with hostile(tmp_path, domain=True) as (proxy, service):
        status, _, _ = await exchange(
            proxy,
            b"POST /up/tools/add%5Fnote HTTP/1.1\r\nHost: x\r\nX-Chaos-Step: 999\r\n"
            b'Content-Type: application/json\r\nContent-Length: 13\r\n\r\n{"text":"hi"}',
        )
        # protocol traffic: the agent's own step header does not reach the service either
        other, _, _ = await exchange(proxy, get("/up/tools", b"X-Chaos-Step: 999\r\n"))
    assert status == other == 200
    seen, listed = service.seen
    assert b"X-Chaos-Step: 1\r\n" in seen and b"999" not in seen
    assert b"x-chaos-step" not in listed.lower()
    line = _lines(tmp_path)[0]
    assert line["kind"] == "tool_call" and line["tool"] == "add_note" and line["step"] == 1


async def test_nothing_pipelined_after_a_500_is_executed(tmp_path: Path) -> None:
    """The 500 says `Connection: close`, yet the POSTs pipelined after it still went to the
    service and were answered: a client that honours the close retries them, and each
    tool call runs twice."""
    async with hostile(tmp_path) as (proxy, service):
        port = proxy._agent_port
        assert port is not None
        real = port.handler
        calls = 0

        async def crash_once(request: Any) -> Any:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise RuntimeError("boom")
            return await real(request)

        port.handler = crash_once
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        post = b"POST /up/tools/add HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
        writer.write(get("/up/a") + post + post)
        status, headers, _ = await read_reply(reader)
        rest = await asyncio.wait_for(reader.read(), 5)
        writer.close()
    assert status == 500 and headers["connection"] == "close" and rest == b""
    assert service.seen == []


async def test_a_bad_request_pipelined_after_a_good_one_gets_its_400(tmp_path: Path) -> None:
    """The good request's reply said `Connection: close` (reading had stopped at the bad
    one) and the 400 came after it, where a client honouring the close never looks."""
    async with hostile(tmp_path) as (proxy, _service):
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(get("/up/a") + b"GET /up/b HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n")
        good, good_headers, _ = await read_reply(reader)
        bad, bad_headers, body = await read_reply(reader)
        writer.close()
    assert good == 200 and "connection" not in good_headers
    assert bad == 400 and bad_headers["connection"] == "close"
    assert json.loads(body)["error"]["type"] == "bad_request"


async def test_expect_100_continue_from_an_http10_client_is_ignored(tmp_path: Path) -> None:
    """RFC 9110 10.1.1: a server MUST ignore 100-continue in an HTTP/1.0 request (its
    client knows no interim replies and takes the first status line for the answer)."""
    async with hostile(tmp_path) as (proxy, _service):
        status, _, body = await exchange(
            proxy,
            b"POST /up/x HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}",
        )
    assert status == 200 and json.loads(body)["target"] == "/x"


async def test_the_service_is_asked_for_an_uncompressed_reply(tmp_path: Path) -> None:
    """The proxy drops the agent's `Accept-Encoding` and the reply's `Content-Encoding`
    (it reads bodies as they are, for faults), but sent no `Accept-Encoding` of its own,
    which says any coding is acceptable (RFC 9110 12.5.3): a service that gzipped its
    reply then reached the agent as gzip bytes labelled plain JSON."""
    async with hostile(tmp_path) as (proxy, service):
        await exchange(proxy, get("/up/x", b"Accept-Encoding: gzip, br\r\n"))
        await exchange(proxy, get("/up/y"))
    assert all(b"\r\nAccept-Encoding: identity\r\n" in seen for seen in service.seen)
    assert not any(b"gzip" in seen for seen in service.seen)


# ---- the agent port's own limits ------------------------------------------------------------


async def test_an_endless_header_line_is_refused_before_it_ends(tmp_path: Path) -> None:
    """httptools keeps a header's name and value until the line ends, so the per-line limit
    must fire while the line is still coming (it fired only at its end: a client could make
    the proxy hold, and copy over and over, any amount of header bytes)."""
    async with hostile(tmp_path, ProxyLimits(max_line_size=1000)) as (proxy, service):
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(b"GET /up/x HTTP/1.1\r\nHost: x\r\nX-Big: ")

        async def flood() -> None:
            with contextlib.suppress(ConnectionError):
                for _ in range(64):
                    writer.write(b"a" * 16384)
                    await writer.drain()

        sending = asyncio.create_task(flood())
        try:
            status, headers, body = await read_reply(reader)
        finally:
            sending.cancel()
            writer.close()
    error = json.loads(body)["error"]
    assert status == 400 and error["type"] == "bad_request" and "1000 bytes" in error["message"]
    assert headers["connection"] == "close" and service.seen == []


async def test_an_upgrade_request_with_a_body_is_refused_not_sent_without_it(
    tmp_path: Path,
) -> None:
    """llhttp treats the bytes after an `Upgrade` request's head as the new protocol, so the
    body never reached the handler: the service got the POST with an empty body (a tool
    call without its arguments). The port speaks only HTTP/1.1: such a request is a 400."""
    async with hostile(tmp_path) as (proxy, service):
        status, headers, body = await exchange(
            proxy,
            b"POST /up/tools/add HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n"
            b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n"
            b'Content-Type: application/json\r\nContent-Length: 13\r\n\r\n{"text":"hi"}',
        )
        # without a body the upgrade is just not taken: the request is answered over HTTP/1.1
        plain, _, _ = await exchange(
            proxy, get("/up/x", b"Connection: Upgrade\r\nUpgrade: h2c\r\n")
        )
    error = json.loads(body)["error"]
    assert status == 400 and "Upgrade" in error["message"] and headers["connection"] == "close"
    assert plain == 200 and len(service.seen) == 1 and service.seen[0].startswith(b"GET /x ")


async def test_chunked_trailers_do_not_become_request_headers(tmp_path: Path) -> None:
    """Trailer fields came in through the same parser callback as header fields and were
    merged into the request's headers: a trailer could choose the episode (or any header
    the proxy acts on) after the head was checked, and reached the service as a header."""
    async with hostile(tmp_path) as (proxy, service):
        status, _, _ = await exchange(
            proxy,
            b"POST /up/x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"5\r\nhello\r\n0\r\nX-Chaos-Episode: other\r\nX-Trailer: 1\r\n\r\n",
        )
    (seen,) = service.seen
    assert status == 200 and seen.endswith(b"\r\n\r\nhello")
    assert b"x-trailer" not in seen.lower() and b"X-Chaos-Episode: default" in seen
    (line,) = _lines(tmp_path)
    assert line["episode"] == "default"


async def test_read_ahead_of_pipelined_bodies_is_bounded_by_the_body_limit(
    tmp_path: Path,
) -> None:
    """Up to 16 pipelined requests were read ahead whatever their bodies: with a slow
    reply first, one connection made the proxy hold 16 bodies of `max_body_bytes`. Reading
    now pauses once the bodies waiting pass that limit (and the paused body deadline does
    not run out on the client, which is not the one holding things up)."""

    async def slow(writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(1.5)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        await writer.drain()

    limits = ProxyLimits(max_body_bytes=1 << 20, body_timeout_s=1)
    async with hostile(tmp_path, limits) as (proxy, service):
        service.scripts["/slow"] = slow
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        body = b"a" * (1 << 20)
        post = b"POST /up/x HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%b" % (
            len(body),
            body,
        )
        writer.write(get("/up/slow") + post * 12)
        await asyncio.sleep(0.5)
        port = proxy._agent_port
        assert port is not None
        (conn,) = port.connections
        held = sum(len(item.body) for item in conn.pending if isinstance(item, Request))
        statuses = [(await read_reply(reader))[0] for _ in range(13)]
        writer.close()
    assert held <= 2 << 20
    assert statuses == [200] * 13


# ---- a hostile service: the agent gets a clear 502/504, the connection stays in step -----


async def relayed(proxy: ProxyServer, target: str) -> tuple[int, Any, int]:
    """`target` then a plain request on the same kept-alive connection: (status, JSON
    body) of the first reply and the second reply's status."""
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    try:
        writer.write(get(target) + get("/up/after"))
        await writer.drain()
        status, _, body = await read_reply(reader)
        after, _, _ = await read_reply(reader)
    finally:
        writer.close()
    return status, json.loads(body), after


@pytest.mark.parametrize(
    "status_line",
    [b"HTTP/1.1 +20 OK", b"HTTP/1.1 -99 OK", b"HTTP/1.1 2_0 OK", b"HTTP/1.1 20x OK"],
)
async def test_a_status_that_is_not_three_digits_is_a_502(
    tmp_path: Path, status_line: bytes
) -> None:
    """`int()` read `+20` and `-99` as statuses: the agent got `HTTP/1.1 -99 Unknown`."""
    async with hostile(tmp_path) as (proxy, service):
        service.scripts["/bad"] = answer(status_line + b"\r\nContent-Length: 2\r\n\r\n{}")
        status, body, after = await relayed(proxy, "/up/bad")
    assert status == 502 and "status line" in body["error"]["message"] and after == 200


async def test_switching_protocols_unasked_is_a_502(tmp_path: Path) -> None:
    """The proxy never forwards `Upgrade`, so a 101 is the service breaking HTTP; relayed,
    it told the agent's client that its connection now spoke another protocol."""
    async with hostile(tmp_path) as (proxy, service):
        service.scripts["/switch"] = answer(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n"
        )
        status, body, after = await relayed(proxy, "/up/switch")
    assert status == 502 and "101" in body["error"]["message"] and after == 200


@pytest.mark.parametrize(
    "field",
    [b"X-A\nTransfer-Encoding: chunked", b"X A: 1", b"X-A: a\x00b", b"X-A: a\rb", b"X-\xff: 1"],
    ids=["lf_in_name", "space_in_name", "nul_in_value", "cr_in_value", "non_token_name"],
)
async def test_a_header_field_that_is_not_http_is_a_502(tmp_path: Path, field: bytes) -> None:
    """A name was relayed as it came (a bare LF in it started a new header line on the
    agent's side, next to the proxy's own framing) and control bytes in a value too."""
    async with hostile(tmp_path) as (proxy, service):
        service.scripts["/bad"] = answer(
            b"HTTP/1.1 200 OK\r\n" + field + b"\r\nContent-Length: 2\r\n\r\n{}"
        )
        status, body, after = await relayed(proxy, "/up/bad")
    assert status == 502 and "header" in body["error"]["message"] and after == 200


async def test_endless_interim_replies_are_a_502(tmp_path: Path) -> None:
    """Each 1xx was skipped and the next awaited, every one resetting the read timeout: a
    service sending `100 Continue` forever kept the agent waiting forever."""

    async def flood(writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            for _ in range(200):
                writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                await writer.drain()
                await asyncio.sleep(0.02)

    async with hostile(tmp_path, ProxyLimits(upstream_read_timeout_s=1)) as (proxy, service):
        service.scripts["/flood"] = flood
        status, body, after = await relayed(proxy, "/up/flood")
    assert status == 502 and "interim" in body["error"]["message"] and after == 200


async def test_a_reply_over_the_size_limit_is_a_502(tmp_path: Path) -> None:
    """A reply read whole had no bound: a service streaming forever (chunked, or under a
    huge Content-Length) grew the proxy's memory until it died, and the agent waited."""

    async def endless(writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        with contextlib.suppress(ConnectionError):
            for _ in range(64):  # 4 MiB, then the end (a bounded test before the fix)
                writer.write(b"10000\r\n" + b"a" * 0x10000 + b"\r\n")
                await writer.drain()
            writer.write(b"0\r\n\r\n")

    limits = ProxyLimits(max_response_bytes=1 << 20)
    async with hostile(tmp_path, limits) as (proxy, service):
        service.scripts["/endless"] = endless
        service.scripts["/huge"] = answer(
            b"HTTP/1.1 200 OK\r\nContent-Length: 100000000000\r\n\r\n" + b"a" * 1000
        )
        streamed, body, after = await relayed(proxy, "/up/endless")
        announced, announced_body, _ = await relayed(proxy, "/up/huge")
    assert streamed == announced == 502 and after == 200
    for error in (body["error"], announced_body["error"]):
        assert error["type"] == "upstream_too_large" and "1048576 bytes" in error["message"]


async def test_endless_trailers_of_a_chunked_reply_are_a_502(tmp_path: Path) -> None:
    """Trailer lines were read without a bound (not counted as body either): one endless
    trailer line grew the buffer, endless short ones kept the agent waiting."""

    async def trailers(writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n")
        with contextlib.suppress(ConnectionError):
            for i in range(4096):  # 160 KiB of trailers, then silence
                writer.write(b"X-T%d: %b\r\n" % (i, b"a" * 32))
                await writer.drain()

    limits = ProxyLimits(upstream_read_timeout_s=2)
    async with hostile(tmp_path, limits) as (proxy, service):
        service.scripts["/trailers"] = trailers
        status, body, after = await relayed(proxy, "/up/trailers")
    assert status == 502 and "trailer" in body["error"]["message"] and after == 200


async def test_an_endless_sse_event_cuts_the_stream(tmp_path: Path) -> None:
    """An SSE event was gathered without a bound, the whole of it searched again for its
    end on every read (20 MB took the proxy 5 s of CPU): one longer than
    `max_response_bytes` now breaks the stream like a broken body, logged."""

    async def endless(writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n"
        )
        with contextlib.suppress(ConnectionError):
            for _ in range(64):  # 4 MiB in one event, then its end
                writer.write(b"10000\r\n" + b"a" * 0x10000 + b"\r\n")
                await writer.drain()
            writer.write(b"2\r\n\n\n\r\n0\r\n\r\n")

    rpc = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
    limits = ProxyLimits(max_response_bytes=1 << 20)
    async with hostile(tmp_path, limits) as (proxy, service):
        service.scripts["/mcp"] = endless
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(
            b"POST /up/mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%b"
            % (len(rpc), rpc)
        )
        received = b""
        with contextlib.suppress(ConnectionError):
            received = await asyncio.wait_for(reader.read(), 5)
        writer.close()
    assert len(received) < 1 << 20
    (line,) = _lines(tmp_path)
    assert "1048576 bytes" in line["error"]


async def test_a_huge_response_head_is_a_502_even_when_it_arrives_whole(tmp_path: Path) -> None:
    """The 64 KiB head limit was only checked while the head's end was still missing: a
    larger head whose end came in the same read was taken whole."""
    async with hostile(tmp_path) as (proxy, service):
        service.scripts["/huge"] = answer(
            b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 100_000 + b"\r\nContent-Length: 2\r\n\r\n{}"
        )
        status, body, after = await relayed(proxy, "/up/huge")
    assert status == 502 and "head over" in body["error"]["message"] and after == 200


async def test_a_deeply_nested_model_stream_event_passes_untouched(tmp_path: Path) -> None:
    """A streamed model reply's event is parsed to find the end and the usage; JSON nested
    deeper than Python's parser allows raised RecursionError (not a ValueError): the
    handler crashed in the middle of the stream and no log line was written."""
    deep = b"data: " + b"[" * 100_000 + b"]" * 100_000 + b"\n\n"
    first = b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n'
    stream = first + deep + b"data: [DONE]\n\n"
    request = json.dumps({"model": "m", "stream": True, "messages": []}).encode()
    async with hostile(tmp_path) as (proxy, service):
        service.scripts["/v1/chat/completions"] = answer(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Content-Length: %d\r\n\r\n%b" % (len(stream), stream)
        )
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(
            b"POST /up/v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%b"
            % (len(request), request)
        )
        await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        relayed = b""
        while not relayed.endswith(b"0\r\n\r\n"):
            size = int(await asyncio.wait_for(reader.readuntil(b"\r\n"), 5), 16)
            relayed += await asyncio.wait_for(reader.readexactly(size + 2), 5)
            if size == 0:
                break
            relayed = relayed[:-2]
        writer.close()
    assert relayed.startswith(first) and b"data: [DONE]" in relayed and b"HTTP/1.1" not in relayed
    (line,) = _lines(tmp_path)
    assert line["kind"] == "model_call" and line["status"] == 200


async def test_a_crash_after_a_stream_began_breaks_it_off(tmp_path: Path) -> None:
    """A handler that crashed after its stream's head and first bytes went out got a
    whole 500 reply written into the middle of that chunked body."""

    async def crash_mid_stream(request: Request) -> StreamResponse:
        response = StreamResponse(200, {"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b"data: 1\n\n")
        raise RuntimeError("boom")

    async with hostile(tmp_path) as (proxy, _service):
        port = proxy._agent_port
        assert port is not None
        port.handler = crash_mid_stream
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(get("/up/x"))
        received = b""
        with contextlib.suppress(ConnectionError):
            received = await asyncio.wait_for(reader.read(), 5)
        writer.close()
    assert b"data: 1" in received and b"HTTP/1.1 500" not in received


async def test_a_tool_result_text_json_refuses_does_not_crash_the_proxy(tmp_path: Path) -> None:
    """When faults may act on replies, an MCP tool result's text is parsed as JSON; a
    number over 4,300 digits (a ValueError, not a JSONDecodeError) crashed the handler:
    the agent got a 500 for a tool that had answered."""
    reply = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"content": [{"type": "text", "text": "7" * 5000}]},
    }
    encoded = json.dumps(reply).encode()
    call = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "big"}}
    ).encode()
    profile = Profile.model_validate(
        {"name": "partial", "failure_rate": 1.0, "weights": {"PartialResponse": 1.0}}
    )
    async with hostile(tmp_path, profile=profile) as (proxy, service):
        service.scripts["/mcp"] = answer(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%b" % (len(encoded), encoded)
        )
        statuses = []
        for _ in range(3):
            try:
                status, _, _ = await exchange(
                    proxy,
                    b"POST /up/mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%b" % (len(call), call),
                )
            except (asyncio.IncompleteReadError, ConnectionError):
                status = 0
            statuses.append(status)
    assert statuses == [200] * 3 and len(_lines(tmp_path)) == 3


@pytest.mark.parametrize("fault", ["EmptyResponse", "SchemaDrift", "StaleData"])
async def test_a_reply_nested_too_deep_for_body_faults_passes_untouched(
    tmp_path: Path, fault: str
) -> None:
    """A reply Python parses (900 levels) but the body faults cannot walk (they recurse)
    crashed the handler with RecursionError: a 500 for a call the service had answered."""
    deep = b'{"a":' * 900 + b"1" + b"}" * 900
    profile = Profile.model_validate({"name": "deep", "failure_rate": 1.0, "weights": {fault: 1.0}})
    async with hostile(tmp_path, profile=profile) as (proxy, service):
        service.scripts["/tools/deep"] = answer(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%b" % (len(deep), deep)
        )
        status, _, body = await exchange(
            proxy, b"POST /up/tools/deep HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
        )
    assert status == 200 and body == deep
    (line,) = _lines(tmp_path)
    assert "nested too deeply" in line["note"]
