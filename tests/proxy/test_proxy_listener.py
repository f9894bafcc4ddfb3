"""The agent port before the handler: listen backlog, parser errors and CONNECT, as JSON."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from proxy_helpers import ProxyFactory, read_reply

from chaosproxy.proxy.listener import LISTEN_BACKLOG
from chaosproxy.proxy.server import ProxyServer


async def _raw(proxy: ProxyServer, request: bytes) -> tuple[int, dict[str, str], Any]:
    """Send bytes on a raw socket; (status, headers, JSON body) of the reply."""
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    try:
        writer.write(request)
        await writer.drain()
        status, headers, body = await read_reply(reader)
    finally:
        writer.close()
    return status, headers, json.loads(body)


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"G@RBAGE / HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n",
        b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    ],
    ids=["bad_method", "bad_header", "line_too_long"],
)
async def test_parser_errors_are_json(make_proxy: ProxyFactory, request_bytes: bytes) -> None:
    async with make_proxy() as proxy:
        status, headers, body = await _raw(proxy, request_bytes)
    assert 400 <= status < 500
    assert headers["content-type"].startswith("application/json")
    assert body["error"]["type"] == "bad_request" and body["error"]["message"]


async def test_connect_is_a_json_405_pointing_to_forward_port(make_proxy: ProxyFactory) -> None:
    async with make_proxy() as proxy:
        status, headers, body = await _raw(
            proxy, b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"
        )
    assert status == 405 and "CONNECT" not in headers["allow"]
    assert body["error"]["type"] == "not_a_forward_proxy"
    assert "--forward-port" in body["error"]["message"]


@pytest.mark.skipif(
    shutil.which("ss") is None and not os.environ.get("CI"), reason="needs ss (iproute2)"
)
async def test_listen_backlog_is_what_the_proxy_asks_for(make_proxy: ProxyFactory) -> None:
    somaxconn = int(Path("/proc/sys/net/core/somaxconn").read_text())
    async with make_proxy() as proxy:
        out = subprocess.run(
            ["ss", "-ltnH", f"sport = :{proxy.port}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    (line,) = [row for row in out.splitlines() if f":{proxy.port} " in row]
    send_q = int(line.split()[2])  # for a listening socket, Send-Q is its backlog
    assert send_q == min(LISTEN_BACKLOG, somaxconn)
